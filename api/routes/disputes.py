"""A player's part of a round: the dispute timeline and the round replayed as the player saw it.

* ``GET /rounds/{round_id}/players/{player_id}/timeline``: ``projections.dispute.timeline``
  (what ``roundaudit dispute ROUND --player P --json`` prints): every event that touched the
  player, with its actor, server and client time, the options open and the action taken, the
  balance seen and after, the rule of every consequence, the cards each decision led to.
* ``GET /rounds/{round_id}/players/{player_id}/replay``: the replay (``replays.steps``, the
  document of ``GET /rounds/{id}/replay``) focused on the player: a classic round's every step
  (one table, seen by everyone), a boundless round's shared hand and this player's
  participation only, so thousands of other players are never sent; in both, no other
  player's balance (``replays.steps.focus_steps``). Streamed step by step.

Who: admins, investigators and compliance for any player; supervisors on their tables; a
player key for its own part of its own rounds (another player's, or a round it did not play,
is a 403 like a round that does not exist). Both hide what the table has not shown: the hole
card of a round in play (``replays.disclosure``, ``domain.disclosure``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from api.auth import acting
from api.deps import AuditApp
from api.params import PlayerPath, RoundPath, check_id, only_parameters, problems
from api.read_schemas import ReplayDocument, TimelineModel
from api.routes.audit import parse_round_id
from domain.access import Action
from domain.disclosure import HIDDEN_MARK, Secrets
from domain.errors import PlayerNotInRound, UnknownPlayer
from domain.guarded import GuardedAudit
from projections.dispute import Timeline, timeline
from replays.bundle import StoreReader
from replays.disclosure import hidden_positions, redact_steps
from replays.steps import focus_steps, json_chunks, player_stream

router = APIRouter(prefix="/rounds", tags=["disputes"])
Json = dict[str, Any]
Disputes = Annotated[GuardedAudit, acting(Action.DISPUTE_READ)]
NoQuery = [Depends(only_parameters())]


def redact_timeline(t: Timeline, secrets: Secrets) -> Json:
    """The timeline's JSON with the cards the table has not shown taken out."""
    doc = t.as_json()
    if not secrets:
        return doc
    rid = parse_round_id(t.round_id)
    for entry in doc["entries"]:
        if entry["source"] in ("Round", "SharedHand") and secrets.hides_record(
            rid, int(entry["version"])
        ):
            entry["card"] = None
            entry["detail"] = "a face-down card to the dealer"
            entry[HIDDEN_MARK] = ["card"]
    return doc


@router.get(
    "/{round_id}/players/{player_id}/timeline",
    summary="A player's dispute timeline in a round",
    response_model=TimelineModel,
    response_model_exclude_unset=True,  # `redacted` only on what was hidden
    responses=problems(401, 403, 404, 422),
    dependencies=NoQuery,
)
def dispute_timeline(
    round_id: RoundPath, player_id: PlayerPath, guard: Disputes, audit: AuditApp
) -> Json:
    rid = parse_round_id(round_id)
    check_id(player_id, "player")
    guard.player_in_round(Action.DISPUTE_READ, rid, player_id)
    try:
        found = timeline(audit, rid, player_id)
    except UnknownPlayer as exc:
        raise PlayerNotInRound(exc.message) from None
    return redact_timeline(found, guard.round_secrets(rid))


@router.get(
    "/{round_id}/players/{player_id}/replay",
    summary="The round step by step as one player saw it (boundless: without the others)",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "`{round_id, steps: [...], stopped}`, as `GET /rounds/{id}/replay`, "
            "focused on the player",
            "model": ReplayDocument,
        },
        **problems(401, 403, 404, 422),
    },
    dependencies=NoQuery,
)
def player_replay(
    round_id: RoundPath, player_id: PlayerPath, guard: Disputes, audit: AuditApp
) -> StreamingResponse:
    rid = parse_round_id(round_id)
    check_id(player_id, "player")
    guard.player_in_round(Action.DISPUTE_READ, rid, player_id)
    bundle = StoreReader(audit).round_bundle(rid)
    secrets = guard.round_secrets(rid)
    steps = player_stream(bundle, player_id)
    shown = redact_steps(focus_steps(steps, player_id), hidden_positions(bundle, secrets), secrets)
    return StreamingResponse(
        json_chunks(steps.round_id, shown, lambda: steps.stopped), media_type="application/json"
    )


__all__ = ["redact_timeline", "router"]

"""Rounds: start, bets, the live card reader, decisions, timers, supervisor actions, views.

Every command answers with the round's view after it (``Round.view()``, the hole card hidden
until it is turned), the cards an RNG or test shoe owed the round already dealt. Every command
is idempotent (``api.idempotency``): by the ``Idempotency-Key`` header or, without it, the
body's ``request_id``; a repeat answers the first answer byte for byte. The request id a
command records is the body's, or else the header's key; a round records a request id once
(a second command bringing it is 409 ``request-id-reused``, never silently dropped).

Who may send what is the permission table (docs/api.md): the table's feed relays bets,
decisions, cards, timers and disconnections of its own tables; a player key bets and decides
as its own player only; supervisors pause, resume and cancel on their tables. The actor every
event records comes from the key (``domain.guarded``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Path, Request, Response
from starlette.concurrency import run_in_threadpool

from api.auth import acting
from api.idempotency import Command, Idempotent
from api.offload import reads_inline
from api.openapi import problems
from api.roundviews import RoundViews
from api.schemas import (
    BetPlace,
    CardDeal,
    CloseBetting,
    DecisionMake,
    Disconnection,
    InsuranceWindowClose,
    Preselection,
    RoundEvents,
    RoundStart,
    RoundView,
    Supervision,
    TimeOut,
)
from api.versions import NOTHING, Known, LoopVersions, last_versions
from api.wire import RoundId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.ids import round_uuid
from domain.round import Round

router = APIRouter(prefix="/rounds", tags=["rounds"])
Json = dict[str, Any]
RoundIdPath = Annotated[
    RoundId, Path(description="The round's id: its UUID, or TABLE#NUMBER ('#' as %23).")
]
COMMAND_PROBLEMS = problems(401, 403, 404, 409, 413, 422)


def round_render(round_id: str | UUID) -> Callable[[Mapping[UUID, Any]], Json | None]:
    """The answer from the round a transaction commits (a seated round records its command and
    the cards it made due in one transaction; a boundless round answers after its automatic
    work: None here, a claim until then)."""
    rid = round_uuid(round_id)

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        rnd = aggregates.get(rid)
        return rnd.view() if isinstance(rnd, Round) else None

    return render


def recover(audit: GuardedAudit, round_id: str) -> Callable[[], Json]:
    """A claim whose process died before it answered: finish the round's automatic work and
    answer the round as it is."""

    def run() -> Json:
        audit.catch_up(round_id)
        return audit.round_view(round_id)

    return run


def command(
    cmd: Command, audit: GuardedAudit, round_id: str, action: Callable[[], Json], key: str | None
) -> Response:
    return cmd.run(action, key=key, render=round_render(round_id), recover=recover(audit, round_id))


@router.post(
    "",
    status_code=201,
    summary="Start a round",
    response_model=RoundView,
    responses=problems(
        401,
        403,
        404,
        409,
        413,
        422,
        links={
            "GetRound": ("get_round", {"round_id": "$response.body#/round_id"}),
            "PlaceBet": ("place_bet", {"round_id": "$response.body#/round_id"}),
        },
    ),
)
def start_round(
    body: RoundStart, audit: Annotated[GuardedAudit, acting(Action.ROUND_START)], cmd: Idempotent
) -> Response:
    def start() -> Json:
        return audit.start_round(
            table_id=body.table_id,
            round_number=body.round_number,
            variant=body.variant,
            shoe_id=body.shoe_id,
            shoe_round=body.shoe_round,
            test_order=body.test_order,
        )

    rid = Round.create_id(body.table_id, body.round_number)
    return cmd.run(
        start,
        render=round_render(rid),
        status=201,
        location=lambda view: f"/rounds/{view['round_id']}",
        recover=lambda: audit.round_view(str(rid)),
    )


@router.post(
    "/{round_id}/bets",
    summary="Place a bet (main or side) during betting",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def place_bet(
    round_id: RoundIdPath,
    body: BetPlace,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_BET)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.place_bet(
            round_id,
            player=body.player,
            kind=body.kind,
            amount=body.amount,
            spot=body.spot,
            follow_double=body.follow_double,
            follow_split=body.follow_split,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/close-betting",
    summary="End the betting countdown; deal",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def close_betting(
    round_id: RoundIdPath,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DEAL)],
    cmd: Idempotent,
    body: CloseBetting | None = None,
) -> Response:
    body_id = body.request_id if body is not None else None
    sent_at = body.client_time if body is not None else None
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.close_betting(
            round_id, request_id=cmd.request_id(body_id), client_time=sent_at
        ),
        body_id,
    )


@router.post(
    "/{round_id}/cards",
    summary="A card from the live shoe's reader",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def deal_card(
    round_id: RoundIdPath,
    body: CardDeal,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DEAL)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.deal_card(
            round_id,
            body.card,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/decisions",
    summary="A player's decision on a hand",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def decide(
    round_id: RoundIdPath,
    body: DecisionMake,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DECIDE)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.decide(
            round_id,
            player=body.player,
            action=body.action,
            hand=body.hand,
            amount=body.amount,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/timeouts",
    summary="A decision timer expired (AUTO-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def time_out(
    round_id: RoundIdPath,
    body: TimeOut,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.time_out(
            round_id,
            player=body.player,
            hand=body.hand,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/disconnections",
    summary="A player disconnected (DISC-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def disconnect(
    round_id: RoundIdPath,
    body: Disconnection,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.disconnect(
            round_id,
            player=body.player,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/insurance-window/close",
    summary="The insurance timer ran out",
    response_model=RoundView,
    responses=problems(401, 403, 404, 409, 422),
)
def close_insurance_window(
    round_id: RoundIdPath,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_TIMER)],
    cmd: Idempotent,
    body: InsuranceWindowClose | None = None,
) -> Response:
    body_id = body.request_id if body is not None else None
    sent_at = body.client_time if body is not None else None
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.close_insurance_window(
            round_id, request_id=cmd.request_id(body_id), client_time=sent_at
        ),
        body_id,
    )


def _supervise(
    verb: str, round_id: str, body: Supervision, audit: GuardedAudit, cmd: Command
) -> Response:
    act = getattr(audit, verb)
    return command(
        cmd,
        audit,
        round_id,
        lambda: act(
            round_id,
            reason=body.reason,
            supervisor=body.supervisor,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )


@router.post(
    "/{round_id}/pause",
    summary="Supervisor: pause the round (ERR-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def pause(
    round_id: RoundIdPath,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
    cmd: Idempotent,
) -> Response:
    return _supervise("pause", round_id, body, audit, cmd)


@router.post(
    "/{round_id}/resume",
    summary="Supervisor: resume the round as it was (ERR-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def resume(
    round_id: RoundIdPath,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
    cmd: Idempotent,
) -> Response:
    return _supervise("resume", round_id, body, audit, cmd)


@router.post(
    "/{round_id}/cancel",
    summary="Supervisor: cancel and refund every stake (ERR-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def cancel(
    round_id: RoundIdPath,
    body: Supervision,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_SUPERVISE)],
    cmd: Idempotent,
) -> Response:
    return _supervise("cancel", round_id, body, audit, cmd)


@router.get(
    "/{round_id}",
    summary="The round now (the hole card hidden until it is turned)",
    response_model=RoundView,
    responses=problems(401, 403, 404, 422),
)
async def get_round(
    round_id: RoundIdPath,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_READ)],
    request: Request,
) -> Response:
    return await round_answer(request, round_id, lambda known: audit, None, lambda known: audit)


async def round_answer(
    request: Request,
    round_id: str,
    guard: Callable[[Known], GuardedAudit],
    key: UUID | None = None,
    kept_guard: Callable[[Known], GuardedAudit | None] | None = None,
) -> Response:
    """What ``GET /rounds/{id}`` answers (the route's, and the hot path's: ``api.hotpath``).
    ``guard(known)`` gives the request's checked key (the route's, already checked; the hot
    path's check, which reads the key's last version, or takes it from ``known``): it is
    called first, in the thread-pool trip that reads the view where the store takes no read
    on the event loop, so one trip does both; there the key's version (``key``, its stored
    id, when the check is still to be made) and the round's are read in one round trip
    (``api.versions``). Then the kept view, or the view made.

    On PostgreSQL that round trip is made on the event loop (``api.versions.LoopVersions``),
    and when ``kept_guard(known)`` checks the key without a store read (None: it cannot) and
    the round is kept at the version read, the kept answer is sent from the loop: no
    thread-pool trip. Anything else takes the trip, with the versions already read."""
    views: RoundViews = request.app.state.round_views
    app = request.app.state.audit
    # a kept view is two point queries: on the event loop where the store allows
    # (api.offload); on PostgreSQL one statement made from the loop without blocking it
    # (api.versions.LoopVersions); anything else (a miss) in one thread-pool trip
    if reads_inline(app):
        audit = guard(NOTHING)
        found = views.lookup(audit, round_id)
        body = found[1] if found is not None else None
        if body is None:  # a miss: the view made from what the lookup read, not read again
            body = await run_in_threadpool(views.build, audit, round_id, _view_bytes, found)
        return Response(body, media_type="application/json")
    ids = _version_ids(round_id, key)
    loop_versions: LoopVersions | None = getattr(request.app.state, "loop_versions", None)
    known = await loop_versions.read(ids) if loop_versions is not None else None
    if known is not None and kept_guard is not None:
        kept_audit = kept_guard(known)
        body = views.kept(kept_audit, round_id, known) if kept_audit is not None else None
        if body is not None:
            return Response(body, media_type="application/json")
    body = await run_in_threadpool(_guarded_view, app, views, round_id, guard, ids, known)
    return Response(body, media_type="application/json")


def _version_ids(round_id: str, key: UUID | None) -> list[UUID]:
    """The ids whose versions a read needs: the key's (when still to be checked) and the
    round's."""
    ids = [key] if key is not None else []
    with contextlib.suppress(ValueError):
        ids.append(UUID(round_id))
    return ids


def _guarded_view(
    app: Any,
    views: RoundViews,
    round_id: str,
    guard: Callable[[Known], GuardedAudit],
    ids: list[UUID],
    known: Known | None,
) -> bytes:
    if known is None:
        known = last_versions(app.recorder, ids)  # one round trip on PostgreSQL
    return views.view(guard(known), round_id, _view_bytes, known)


def _view_bytes(view: Json) -> bytes:
    """A round view's answer as the response model renders it (what an uncached read sent)."""
    dumped = RoundView.model_validate(view).model_dump(mode="json")
    return orjson.dumps(dumped, option=orjson.OPT_NON_STR_KEYS)


@router.get(
    "/{round_id}/events",
    summary="The round's stored events, in order (cards the table has not shown hidden)",
    response_model=RoundEvents,
    responses=problems(401, 403, 404, 422),
)
def round_events(
    round_id: RoundIdPath, audit: Annotated[GuardedAudit, acting(Action.ROUND_EVENTS)]
) -> Json:
    events = audit.round_events(round_id)  # RoundNotFound (or forbidden) for a bad id
    return {"round_id": str(round_uuid(round_id)), "events": events}


@router.post(
    "/{round_id}/preselections",
    summary="Choose or change a decision before the hand's turn (deluxe, PRE-1)",
    response_model=RoundView,
    responses=COMMAND_PROBLEMS,
)
def preselect(
    round_id: RoundIdPath,
    body: Preselection,
    audit: Annotated[GuardedAudit, acting(Action.ROUND_DECIDE)],
    cmd: Idempotent,
) -> Response:
    return command(
        cmd,
        audit,
        round_id,
        lambda: audit.preselect(
            round_id,
            player=body.player,
            action=body.action,
            hand=body.hand,
            request_id=cmd.request_id(body.request_id),
            client_time=body.client_time,
        ),
        body.request_id,
    )

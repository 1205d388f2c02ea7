"""Finding rounds: search, a player's round history, a round's players.

All three read the round index (``projections.round_index``), brought up to date first
(``api.readside``), and page with opaque cursors (newest round first; a round's players in id
order). Bound keys are held to their binding (``domain.access.narrow_search``): a table feed's
or supervisor's search covers its own tables only, a player key's search its own rounds only,
and naming another table or player is a 403. A player's history adds the player's money in each
round from the payouts ledger (``projections.ledger``).

* ``GET /rounds?round=&table=&player=&variant=&state=&number=&from=&to=&production=&cursor=&limit=``
* ``GET /players/{player_id}/rounds?cursor=&limit=``
* ``GET /rounds/{round_id}/players?prefix=&cursor=&limit=``: one player among thousands of a
  boundless round, found by the start of its id, without listing the others.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import WithJsonSchema

from api.auth import acting
from api.params import (
    PREFIX_PATTERN,
    Instant,
    InvalidCursor,
    InvalidQuery,
    PlayerPath,
    RoundPath,
    Variant,
    check_id,
    check_ids,
    decode_cursor,
    encode_cursor,
    only_parameters,
    problems,
)
from api.read_schemas import PlayerRoundPage, RoundPage, RoundPlayers
from api.readside import ReadSide
from api.routes.audit import parse_round_id
from api.wire import MAX_WIRE_NUMBER, Id, PlayerId, RoundId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.rules import VARIANTS
from projections import ledger
from projections.round_index import (
    RoundQuery,
    RoundRow,
    count_players,
    micros,
    round_players,
    search,
)

router = APIRouter(tags=["search"])
Json = dict[str, Any]
MAX_PAGE = 500
StateFilter = Literal["betting", "playing", "cancelling", "settled", "cancelled", "paused"]


def read_side(request: Request) -> ReadSide:
    side: ReadSide = request.app.state.read_side
    return side


Reads = Annotated[ReadSide, Depends(read_side)]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Rows per page (1-500).")]
Cursor = Annotated[
    str | None, Query(max_length=400, description="The `next` of the previous page.")
]


def _round_cursor(cursor: str | None) -> tuple[int, str] | None:
    if cursor is None:
        return None
    micros_text, rid = decode_cursor(cursor, 2)
    try:
        micros = int(micros_text)
        if not 0 <= micros <= MAX_WIRE_NUMBER:
            raise ValueError(micros)
        return micros, str(parse_round_id(rid))
    except Exception:
        raise InvalidCursor(
            "the cursor was not made by this service: pass back a page's `next`"
        ) from None


def _next(rows: list[RoundRow], limit: int) -> str | None:
    if len(rows) < limit:
        return None
    last = rows[-1]
    return encode_cursor(last.started_us, last.round_id)


@router.get(
    "/rounds",
    summary="Search rounds by table, player, variant, state and time",
    response_model=RoundPage,
    responses=problems(401, 403, 422, 503),
    dependencies=[
        Depends(
            only_parameters(
                "round",
                "table",
                "player",
                "variant",
                "state",
                "number",
                "from",
                "to",
                "production",
                "cursor",
                "limit",
            )
        )
    ],
)
def search_rounds(
    guard: Annotated[GuardedAudit, acting(Action.ROUND_SEARCH)],
    reads: Reads,
    round_id: Annotated[
        RoundId | None, Query(alias="round", description="One round (UUID or TABLE#NUMBER).")
    ] = None,
    table: Annotated[list[Id], Query(description="Table id (repeat for several).")] = [],  # noqa: B006
    player: Annotated[
        PlayerId | None, Query(description="Rounds this player had a bet in.")
    ] = None,
    variant: Annotated[list[Variant], Query(description="Variant (repeat for several).")] = [],  # noqa: B006
    state: Annotated[
        list[StateFilter],
        Query(description="betting, playing, cancelling, settled, cancelled, or paused."),
    ] = [],  # noqa: B006
    number: Annotated[
        int | None, Query(ge=1, le=MAX_WIRE_NUMBER, description="Round number (with a table).")
    ] = None,
    started_from: Annotated[
        Instant | None, Query(alias="from", description="Started at or after (RFC 3339).")
    ] = None,
    started_to: Annotated[
        Instant | None, Query(alias="to", description="Started before (RFC 3339).")
    ] = None,
    production: Annotated[bool | None, Query(description="Production tables only.")] = None,
    cursor: Cursor = None,
    limit: Limit = 50,
) -> Json:
    """Rounds newest first. A table feed's or supervisor's key searches its own tables (naming
    another is a 403); a player key its own rounds."""
    tables = check_ids(table, "table")
    if player is not None:
        check_id(player, "player")
    unknown = [v for v in variant if v not in VARIANTS]
    if unknown:
        raise InvalidQuery(f"unknown variant {unknown[0]!r}; known: {', '.join(VARIANTS)}")
    if started_from is not None and started_to is not None and started_to <= started_from:
        raise InvalidQuery("'to' must be after 'from'")
    tables, player = guard.search_filters(Action.ROUND_SEARCH, tables=tables, player=player)
    query = RoundQuery(
        round_ids=() if round_id is None else (str(parse_round_id(round_id)),),
        tables=tables,
        player=player,
        variants=tuple(dict.fromkeys(variant)),
        states=tuple(dict.fromkeys(state)),
        number=number,
        started_from=None if started_from is None else micros(started_from),
        started_to=None if started_to is None else micros(started_to),
        production=production,
    )
    after = _round_cursor(cursor)
    with reads.reading("rounds") as r:
        rows = search(r.tx, query, after=after, limit=limit)
        return {
            "rounds": [row.as_json() for row in rows],
            "next": _next(rows, limit),
            "projection": r.freshness(),
        }


@router.get(
    "/players/{player_id}/rounds",
    summary="A player's round history, newest first, with the player's money in each",
    response_model=PlayerRoundPage,
    responses=problems(401, 403, 422, 503),
    dependencies=[Depends(only_parameters("cursor", "limit"))],
)
def player_history(
    player_id: PlayerPath,
    guard: Annotated[GuardedAudit, acting(Action.PLAYER_ROUNDS)],
    reads: Reads,
    cursor: Cursor = None,
    limit: Limit = 50,
) -> Json:
    check_id(player_id, "player")
    guard.authorize_player(Action.PLAYER_ROUNDS, player_id)
    after = _round_cursor(cursor)
    with reads.reading("rounds", "ledger") as r:
        rows = search(r.tx, RoundQuery(player=player_id), after=after, limit=limit)
        money = ledger.player_round_totals(r.tx, player_id, [row.round_id for row in rows])
        out = []
        for row in rows:
            t = money.get(row.round_id)
            out.append(
                {
                    **row.as_json(),
                    "money": None
                    if t is None
                    else {k: v for k, v in t.as_json().items() if k != "key"},
                }
            )
        return {
            "player": player_id,
            "rounds": out,
            "next": _next(rows, limit),
            "projection": r.freshness(),
        }


@router.get(
    "/rounds/{round_id}/players",
    summary="A round's players whose id starts with a prefix (boundless: one among thousands)",
    response_model=RoundPlayers,
    responses=problems(401, 403, 404, 422, 503),
    dependencies=[Depends(only_parameters("prefix", "cursor", "limit"))],
)
def players_of_round(
    round_id: RoundPath,
    guard: Annotated[GuardedAudit, acting(Action.ROUND_PLAYERS)],
    reads: Reads,
    prefix: Annotated[
        str,
        Query(max_length=64, description="Start of the player id."),
        WithJsonSchema({"type": "string", "maxLength": 64, "pattern": PREFIX_PATTERN}),
    ] = "",
    cursor: Cursor = None,
    limit: Limit = 50,
) -> Json:
    rid = parse_round_id(round_id)
    if prefix and not all(c.isascii() and (c.isalnum() or c in "._:-") for c in prefix):
        raise InvalidQuery(f"prefix {prefix[:80]!r} cannot start a player id")
    facts = guard.authorize_round(Action.ROUND_PLAYERS, rid)
    after = None if cursor is None else check_id(decode_cursor(cursor, 1)[0], "cursor")
    with reads.reading("rounds") as r:
        found = round_players(r.tx, str(facts.round_id), prefix=prefix, after=after, limit=limit)
        return {
            "round_id": str(facts.round_id),
            "prefix": prefix,
            "players": found,
            "total": count_players(r.tx, str(facts.round_id)),
            "next": encode_cursor(found[-1]) if len(found) == limit else None,
            "projection": r.freshness(),
        }


__all__ = ["read_side", "router"]

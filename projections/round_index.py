"""The round index: every round with its table, variant, state and times, and its players.

This projection owns the searches of the read side (``GET /rounds``, a player's history, a
round's players). Tables (rebuild with ``roundaudit projections rebuild rounds``):

``rounds_index`` (key ``round_id``)
    One row per round, classic (``Round``) or boundless (``SharedHand``): table, round number,
    variant, rules key, production flag, shoe, ``boundless``; ``state`` (``betting``,
    ``playing``, ``cancelling``, ``settled``, ``cancelled``) and ``paused``; ``started_at`` /
    ``ended_at`` (ISO 8601, UTC) with the same instants as integer microseconds since the epoch
    (``started_us``, ``ended_us``: exact ordering and ranges on both stores).

``rounds_index_players`` (key ``round_id, player``)
    One row per player of a round: a classic round's bettors (``BetPlaced``, bets behind and
    side bets included), a boundless round's participations (``Participation.Joined``), with
    the round's ``started_us`` so that a player's history is read in time order by an index.

State moves with ``BettingClosed`` (playing), ``Paused``/``Resumed``, ``CancelRequested``
(cancelling), ``RoundSettled`` and ``RoundCancelled``. A batch is written with a handful of
statements whatever its size (rows gathered in memory, then ``Tx.insert`` / ``Tx.update``):
no query per event. Searches are keyset-paginated on ``(started_us, round_id)``, newest first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from projections.base import (
    Projection,
    Table,
    Tracked,
    id_text,
    round_events,
    rows_by_keys,
    upsert,
    variant_of,
)
from projections.recorded import moment
from projections.store import Tx

NAME = "rounds"
ROUNDS = "rounds_index"
PLAYERS = "rounds_index_players"
STATES = ("betting", "playing", "cancelling", "settled", "cancelled")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MOVES = {
    "BettingClosed": "playing",
    "CancelRequested": "cancelling",
    "RoundSettled": "settled",
    "RoundCancelled": "cancelled",
}
_ROUND_COLUMNS = (
    "round_id",
    "table_id",
    "round_number",
    "variant",
    "rules_key",
    "production",
    "boundless",
    "shoe_id",
    "state",
    "paused",
    "started_at",
    "started_us",
    "ended_at",
    "ended_us",
)


_ROUND_INDEX = {c: i for i, c in enumerate(_ROUND_COLUMNS)}


def _changed(row: tuple[Any, ...], change: dict[str, Any] | None) -> tuple[Any, ...]:
    """A round's row with ``change`` (column -> value) applied.

    >>> _changed(("r", "t", 1), None)
    ('r', 't', 1)
    >>> _changed(("r", "t", 1, "v", "k", 1, 0, None, "betting", 1), {"paused": 0})[-1]
    0
    """
    if not change:
        return row
    values = list(row)
    for column, value in change.items():
        values[_ROUND_INDEX[column]] = value
    return tuple(values)


def micros(ts: dt.datetime) -> int:
    """Exact microseconds since the epoch of an aware timestamp.

    >>> micros(dt.datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=dt.UTC))
    1000005
    """
    return (ts - _EPOCH) // dt.timedelta(microseconds=1)


class RoundIndex(Projection):
    """See the module docstring."""

    name = NAME
    version = 1
    handles = round_events(
        "Started",
        "Joined",
        "BetPlaced",
        "BettingClosed",
        "Paused",
        "Resumed",
        "CancelRequested",
        "RoundSettled",
        "RoundCancelled",
    )

    def tables(self) -> Sequence[Table]:
        return (
            Table(
                ROUNDS,
                f"CREATE TABLE IF NOT EXISTS {ROUNDS} ("
                " round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL,"
                " round_number BIGINT NOT NULL, variant TEXT NOT NULL, rules_key TEXT NOT NULL,"
                " production INTEGER NOT NULL, boundless INTEGER NOT NULL, shoe_id TEXT,"
                " state TEXT NOT NULL, paused INTEGER NOT NULL,"
                " started_at TEXT NOT NULL, started_us BIGINT NOT NULL,"
                " ended_at TEXT, ended_us BIGINT)",
                "round_id",
                (
                    f"CREATE INDEX IF NOT EXISTS {ROUNDS}_time ON {ROUNDS} (started_us, round_id)",
                    f"CREATE INDEX IF NOT EXISTS {ROUNDS}_table"
                    f" ON {ROUNDS} (table_id, started_us, round_id)",
                    f"CREATE INDEX IF NOT EXISTS {ROUNDS}_number"
                    f" ON {ROUNDS} (table_id, round_number)",
                    f"CREATE INDEX IF NOT EXISTS {ROUNDS}_variant"
                    f" ON {ROUNDS} (variant, started_us, round_id)",
                ),
            ),
            Table(
                PLAYERS,
                f"CREATE TABLE IF NOT EXISTS {PLAYERS} ("
                " round_id TEXT NOT NULL, player TEXT NOT NULL, started_us BIGINT NOT NULL,"
                " PRIMARY KEY (round_id, player))",
                "round_id, player",
                (
                    f"CREATE INDEX IF NOT EXISTS {PLAYERS}_player"
                    f" ON {PLAYERS} (player, started_us, round_id)",
                ),
            ),
        )

    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        started: list[tuple[Any, ...]] = []
        players: dict[tuple[str, str], None] = {}
        # per round: the changes of this batch, in log order (state, paused, ended)
        changes: dict[str, dict[str, Any]] = {}
        for _, e in events:
            name = e.name
            if name == "Started":
                started.append(
                    (
                        e.originator_id,
                        e.table_id,
                        int(e.round_number),
                        variant_of(e.rules_key),
                        e.rules_key,
                        int(bool(e.production)),
                        int(e.cls.__qualname__.startswith("SharedHand.")),
                        getattr(e, "shoe_id", None),
                        "betting",
                        0,
                        e.at,
                        micros(moment(e)),
                        None,
                        None,
                    )
                )
            elif name == "Joined":
                players[(id_text(e.round_id), str(e.player))] = None
            elif name == "BetPlaced":
                if e.cls.__qualname__.startswith("Round."):
                    players[(e.originator_id, str(e.player))] = None
            else:
                change = changes.setdefault(e.originator_id, {})
                if name == "Paused":
                    change["paused"] = 1
                elif name == "Resumed":
                    change["paused"] = 0
                else:
                    change["state"] = _MOVES[name]
                    if name in ("RoundSettled", "RoundCancelled"):
                        change["paused"] = 0
                        change["ended_at"] = e.at
                        change["ended_us"] = micros(moment(e))
        # A round started in this batch is not stored yet: its row goes in with the batch's
        # changes already applied, as a plain insert (on PostgreSQL a COPY: no conflict check,
        # no UPDATE; a round stored after all fails the batch, it is never overwritten).
        new = [_changed(row, changes.pop(row[0], None)) for row in started]
        tx.insert(ROUNDS, _ROUND_COLUMNS, new)
        # a player's row carries its round's start: from this batch's Started, else stored
        # (a round not in the index gets no player rows)
        start = {row[0]: row[11] for row in started}
        earlier = [rid for rid in dict.fromkeys(rid for rid, _ in players) if rid not in start]
        start.update(
            (str(rid), int(us))
            for rid, us in rows_by_keys(
                tx, ROUNDS, ("round_id",), ("round_id", "started_us"), earlier
            )
        )
        joined: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] = ([], [])
        fresh = {row[0] for row in started}
        for rid, player in players:
            if rid in start:
                joined[rid in fresh].append((rid, player, start[rid]))
        upsert(
            tx,
            PLAYERS,
            ("round_id", "player", "started_us"),
            joined[True],
            joined[False],
            "ON CONFLICT (round_id, player) DO NOTHING",
        )
        by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for rid, change in changes.items():
            cols = tuple(sorted(change))
            by_columns.setdefault(cols, []).append((*(change[c] for c in cols), rid))
        for cols, rows in by_columns.items():
            tx.update(ROUNDS, ("round_id",), cols, rows)


# ------------------------------------------------------------------------------ reading
@dataclass(frozen=True, slots=True)
class RoundRow:
    """One round of a search."""

    round_id: str
    table_id: str
    round_number: int
    variant: str
    rules_key: str
    production: bool
    boundless: bool
    shoe_id: str | None
    state: str
    paused: bool
    started_at: str
    ended_at: str | None
    players: int
    started_us: int

    def as_json(self) -> dict[str, Any]:
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "round_number": self.round_number,
            "variant": self.variant,
            "rules_key": self.rules_key,
            "production": self.production,
            "boundless": self.boundless,
            "shoe_id": self.shoe_id,
            "state": self.state,
            "paused": self.paused,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "players": self.players,
        }


@dataclass(frozen=True, slots=True)
class RoundQuery:
    """The filters of a search; empty ones match everything."""

    tables: tuple[str, ...] = ()
    player: str | None = None
    variants: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    number: int | None = None
    started_from: int | None = None  # microseconds, inclusive
    started_to: int | None = None  # microseconds, exclusive
    production: bool | None = None
    round_ids: tuple[str, ...] = ()


def _in(column: str, values: Sequence[Any], where: list[str], params: list[Any]) -> None:
    if values:
        where.append(f"{column} IN ({', '.join('?' for _ in values)})")
        params.extend(values)


def search(
    tx: Tx, query: RoundQuery, *, after: tuple[int, str] | None = None, limit: int = 50
) -> list[RoundRow]:
    """Rounds matching ``query``, newest first, after the keyset cursor ``after``
    (``(started_us, round_id)`` of the last row of the previous page)."""
    where: list[str] = []
    params: list[Any] = []
    source = f"{ROUNDS} r"
    if query.player is not None:
        source = f"{PLAYERS} p JOIN {ROUNDS} r ON r.round_id = p.round_id"
        where.append("p.player = ?")
        params.append(query.player)
    _in("r.round_id", query.round_ids, where, params)
    _in("r.table_id", query.tables, where, params)
    _in("r.variant", query.variants, where, params)
    if query.states:
        wanted = [s for s in query.states if s != "paused"]
        parts = []
        if wanted:
            parts.append(f"r.state IN ({', '.join('?' for _ in wanted)})")
            params.extend(wanted)
        if "paused" in query.states:
            parts.append("r.paused = 1")
        where.append("(" + " OR ".join(parts) + ")")
    if query.number is not None:
        where.append("r.round_number = ?")
        params.append(query.number)
    if query.started_from is not None:
        where.append("r.started_us >= ?")
        params.append(query.started_from)
    if query.started_to is not None:
        where.append("r.started_us < ?")
        params.append(query.started_to)
    if query.production is not None:
        where.append("r.production = ?")
        params.append(int(query.production))
    if after is not None:
        where.append("(r.started_us < ? OR (r.started_us = ? AND r.round_id < ?))")
        params.extend([after[0], after[0], after[1]])
    sql = (
        f"SELECT {', '.join('r.' + c for c in _ROUND_COLUMNS)},"
        f" (SELECT COUNT(*) FROM {PLAYERS} q WHERE q.round_id = r.round_id)"
        f" FROM {source}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY r.started_us DESC, r.round_id DESC LIMIT ?"
    )
    params.append(int(limit))
    return [_row(r) for r in tx.query(sql, params)]


def _row(r: Sequence[Any]) -> RoundRow:
    c = dict(zip(_ROUND_COLUMNS, r, strict=False))
    return RoundRow(
        round_id=str(c["round_id"]),
        table_id=str(c["table_id"]),
        round_number=int(c["round_number"]),
        variant=str(c["variant"]),
        rules_key=str(c["rules_key"]),
        production=bool(c["production"]),
        boundless=bool(c["boundless"]),
        shoe_id=None if c["shoe_id"] is None else str(c["shoe_id"]),
        state=str(c["state"]),
        paused=bool(c["paused"]),
        started_at=str(c["started_at"]),
        ended_at=None if c["ended_at"] is None else str(c["ended_at"]),
        players=int(r[len(_ROUND_COLUMNS)]),
        started_us=int(c["started_us"]),
    )


def round_players(
    tx: Tx, round_id: str, *, prefix: str = "", after: str | None = None, limit: int = 50
) -> list[str]:
    """The players of a round whose id starts with ``prefix``, in id order, after ``after``."""
    where = ["round_id = ?"]
    params: list[Any] = [round_id]
    if prefix:
        where.append("substr(player, 1, ?) = ?")
        params.extend([len(prefix), prefix])
    if after is not None:
        where.append("player > ?")
        params.append(after)
    params.append(int(limit))
    rows = tx.query(
        f"SELECT player FROM {PLAYERS} WHERE {' AND '.join(where)} ORDER BY player LIMIT ?",
        params,
    )
    return [str(r[0]) for r in rows]


def count_players(tx: Tx, round_id: str) -> int:
    row = tx.one(f"SELECT COUNT(*) FROM {PLAYERS} WHERE round_id = ?", (round_id,))
    return int(row[0]) if row else 0


__all__ = [
    "NAME",
    "PLAYERS",
    "ROUNDS",
    "STATES",
    "RoundIndex",
    "RoundQuery",
    "RoundRow",
    "count_players",
    "micros",
    "round_players",
    "search",
]

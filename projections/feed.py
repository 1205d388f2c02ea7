"""The reporting feed: settled wagers in one global, gap-free order, and daily aggregates.

Tables (rebuild with ``roundaudit projections rebuild feed``); money is integer cents:

``feed_entries`` (key ``seq``)
    One entry per ``WagerSettled`` event, numbered ``seq`` = 1, 2, 3 ... in log order. The
    runner applies batches one at a time, each in one transaction with its tracking position,
    and both stores commit the log in notification order, so a reader that has seen entry
    ``n`` has seen every entry before it, and a rebuild numbers them identically. A consumer
    keeps the last ``seq`` it processed as its cursor and calls :func:`read` with it.
    Each entry carries the round, table, variant, production flag, wager, player, the player's
    ``account_type`` (``real``, ``test`` or ``fun``: play money is kept apart), kind (bet type),
    stake, result, ratio, payout, net, rule, rounding, pattern, server time and UTC ``day``, and
    what it adds to the day's aggregates (``wagers_delta``, ``handle_delta``,
    ``payouts_delta``).

``feed_daily`` (key ``day, variant, table_id, kind, production, account_type``)
    Per UTC day of settlement: ``wagers``, ``handle`` (stakes), ``payouts`` (paid back,
    stakes included), ``refunds`` and ``refunded`` (voided wagers, ERR-1/D8). Gross gaming
    revenue is ``handle - payouts`` and observed RTP ``payouts / handle`` (:func:`daily`).
    :func:`daily` gives real money on production tables unless asked for the rest: test and
    play-for-fun accounts (which bet behind and on side bets at production tables, DLX-1)
    never count in revenue.

``feed_accounts`` (key ``player``)
    Each wallet's account type, from ``Wallet.Opened`` (it never changes).

A refunded wager is void: it counts in ``refunds`` but not in wagers, handle or payouts. When a
cancelled round refunds a wager that was already paid (even money, EVEN-1, then ERR-1), the
refund entry carries negative deltas that cancel the earlier entry's contribution, booked on
the day of the refund, as a correction is booked in accounting.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from domain.wallet import Wallet
from projections.base import (
    Projection,
    RoundIndex,
    Table,
    Tracked,
    cents,
    money,
    round_events,
    utc_day,
)
from projections.store import Tx

NAME = "feed"
ENTRIES = "feed_entries"
DAILY = "feed_daily"

_ENTRY_COLUMNS = (
    "seq",
    "notification_id",
    "round_id",
    "originator_id",
    "originator_version",
    "table_id",
    "round_number",
    "variant",
    "production",
    "wager_id",
    "player",
    "account_type",
    "kind",
    "hand",
    "stake",
    "result",
    "ratio",
    "payout",
    "net",
    "rule",
    "rounding",
    "pattern",
    "settled_at",
    "day",
    "wagers_delta",
    "handle_delta",
    "payouts_delta",
)
_DAILY_KEY = ("day", "variant", "table_id", "kind", "production", "account_type")
ACCOUNTS = "feed_accounts"
#: A wager whose player's wallet the feed never saw opened (a store from before wallets
#: were projected, or an imported round): counted as real money.
UNKNOWN_ACCOUNT = "real"
_DAILY_SUMS = ("wagers", "handle", "payouts", "refunds", "refunded")


class Feed(Projection):
    """See the module docstring."""

    name = NAME
    version = 2  # 2: the account type of each wager (play money kept apart)
    handles = (*round_events("Started", "Joined", "WagerSettled"), Wallet.Opened)

    def __init__(self) -> None:
        self.rounds = RoundIndex(NAME)
        self._accounts: dict[str, str] = {}

    def tables(self) -> Sequence[Table]:
        return (
            Table(self.rounds.table, self.rounds.ddl(), "originator_id"),
            Table(
                ACCOUNTS,
                f"CREATE TABLE IF NOT EXISTS {ACCOUNTS} ("
                " player TEXT PRIMARY KEY, account_type TEXT NOT NULL)",
                "player",
            ),
            Table(
                ENTRIES,
                f"CREATE TABLE IF NOT EXISTS {ENTRIES} ("
                " seq BIGINT PRIMARY KEY, notification_id BIGINT NOT NULL UNIQUE,"
                " round_id TEXT NOT NULL, originator_id TEXT NOT NULL,"
                " originator_version BIGINT NOT NULL,"
                " table_id TEXT NOT NULL, round_number BIGINT NOT NULL, variant TEXT NOT NULL,"
                " production INTEGER NOT NULL, wager_id TEXT NOT NULL, player TEXT NOT NULL,"
                " account_type TEXT NOT NULL,"
                " kind TEXT NOT NULL, hand TEXT, stake BIGINT NOT NULL, result TEXT NOT NULL,"
                " ratio TEXT, payout BIGINT NOT NULL, net BIGINT NOT NULL, rule TEXT NOT NULL,"
                " rounding TEXT NOT NULL, pattern TEXT, settled_at TEXT NOT NULL,"
                " day TEXT NOT NULL, wagers_delta INTEGER NOT NULL,"
                " handle_delta BIGINT NOT NULL, payouts_delta BIGINT NOT NULL)",
                "seq",
                (f"CREATE INDEX IF NOT EXISTS {ENTRIES}_wager ON {ENTRIES} (round_id, wager_id)",),
            ),
            Table(
                DAILY,
                f"CREATE TABLE IF NOT EXISTS {DAILY} ("
                " day TEXT NOT NULL, variant TEXT NOT NULL, table_id TEXT NOT NULL,"
                " kind TEXT NOT NULL, production INTEGER NOT NULL, account_type TEXT NOT NULL,"
                " wagers BIGINT NOT NULL,"
                " handle BIGINT NOT NULL, payouts BIGINT NOT NULL, refunds BIGINT NOT NULL,"
                " refunded BIGINT NOT NULL,"
                " PRIMARY KEY (day, variant, table_id, kind, production, account_type))",
                "day, variant, table_id, kind, production, account_type",
            ),
        )

    def _account(self, tx: Tx, player: str) -> str:
        found = self._accounts.get(player)
        if found is None:
            row = tx.one(f"SELECT account_type FROM {ACCOUNTS} WHERE player = ?", (player,))
            found = str(row[0]) if row else UNKNOWN_ACCOUNT
            self._accounts[player] = found
        return found

    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        self.rounds.begin(tx, events)
        self._accounts.clear()
        # An entry's seq is the stored MAX(seq) plus its number in the batch; the stored one
        # is read when the batch first writes entries (``_insert``), not before its work: the
        # COPY the previous projection ended is written by the server meanwhile (``Tx._copy``)
        seq = 0
        stored: list[int] = []
        entries: list[tuple[Any, ...]] = []
        daily: dict[tuple[Any, ...], list[int]] = {}
        opened: list[tuple[str, str]] = []
        for nid, e in events:
            if e.cls is Wallet.Opened:
                opened.append((e.player_id, e.account_type))
                self._accounts[e.player_id] = e.account_type
                continue
            name = e.name
            if name in ("Started", "Joined"):
                self.rounds.record(tx, e)
                continue
            if name != "WagerSettled":
                continue
            facts = self.rounds.of(tx, e)
            rid = facts.round_id
            stake, payout = cents(e.stake), cents(e.payout)
            refunds = refunded = 0
            if e.result == "refund":
                refunds, refunded = 1, payout
                _insert(tx, entries, stored)  # so that the wager's earlier entries can be summed
                entries = []
                before = _counted(tx, rid, e.wager_id)
                deltas = (-before[0], -before[1], -before[2])
            else:
                deltas = (1, stake, payout)
            seq += 1
            day = utc_day(e)
            account = self._account(tx, e.player)
            entries.append(
                (
                    seq,
                    nid,
                    rid,
                    e.originator_id,
                    int(e.originator_version),
                    facts.table_id,
                    facts.round_number,
                    facts.variant,
                    int(facts.production),
                    e.wager_id,
                    e.player,
                    account,
                    e.kind,
                    e.hand,
                    stake,
                    e.result,
                    e.ratio,
                    payout,
                    cents(e.net),
                    e.rule,
                    e.rounding,
                    e.pattern,
                    e.at,
                    day,
                    *deltas,
                )
            )
            key = (day, facts.variant, facts.table_id, e.kind, int(facts.production), account)
            sums = daily.setdefault(key, [0, 0, 0, 0, 0])
            for i, v in enumerate((*deltas, refunds, refunded)):
                sums[i] += v
        self.rounds.flush(tx)
        tx.insert(ACCOUNTS, ("player", "account_type"), opened, "ON CONFLICT (player) DO NOTHING")
        adds = ", ".join(f"{c} = {DAILY}.{c} + excluded.{c}" for c in _DAILY_SUMS)
        tx.insert(
            DAILY,
            (*_DAILY_KEY, *_DAILY_SUMS),
            [(*k, *v) for k, v in daily.items()],
            f"ON CONFLICT ({', '.join(_DAILY_KEY)}) DO UPDATE SET {adds}",
        )
        # the entries last: a COPY whose answer the next projection's first statement
        # collects (``Tx._copy``), so the server writes them meanwhile
        _insert(tx, entries, stored)


def _insert(tx: Tx, entries: Sequence[tuple[Any, ...]], stored: list[int]) -> None:
    """Write ``entries`` (each numbered from 1 in its batch): their seq is the stored
    MAX(seq), read once a batch into ``stored``, plus that number."""
    if not entries:
        return
    if not stored:
        row = tx.one(f"SELECT COALESCE(MAX(seq), 0) FROM {ENTRIES}")
        stored.append(int(row[0]) if row else 0)
    base = stored[0]
    tx.insert(ENTRIES, _ENTRY_COLUMNS, [(base + e[0], *e[1:]) for e in entries])


def _counted(tx: Tx, round_id: str, wager_id: str) -> tuple[int, int, int]:
    """What earlier entries of a wager added to the aggregates (committed batches)."""
    row = tx.one(
        "SELECT COALESCE(SUM(wagers_delta), 0), COALESCE(SUM(handle_delta), 0),"
        f" COALESCE(SUM(payouts_delta), 0) FROM {ENTRIES} WHERE round_id = ? AND wager_id = ?",
        (round_id, wager_id),
    )
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)


# ------------------------------------------------------------------------------ reading


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One settled wager of the feed; ``seq`` is the cursor. Money as exact Decimal."""

    seq: int
    notification_id: int
    round_id: str
    table_id: str
    round_number: int
    variant: str
    production: bool
    wager_id: str
    player: str
    account_type: str
    kind: str
    hand: str | None
    stake: Decimal
    result: str
    ratio: str | None
    payout: Decimal
    net: Decimal
    rule: str
    rounding: str
    pattern: str | None
    settled_at: str
    day: str

    def as_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(self).items()}


def read(tx: Tx, after_cursor: int = 0, limit: int = 1000) -> list[FeedEntry]:
    """Up to ``limit`` entries after ``after_cursor`` (0 = from the start), in order.

    The next cursor is the ``seq`` of the last entry returned (unchanged when none)."""
    rows = tx.query(
        "SELECT seq, notification_id, round_id, table_id, round_number, variant, production,"
        " wager_id, player, kind, hand, stake, result, ratio, payout, net, rule, rounding,"
        f" pattern, settled_at, day, account_type FROM {ENTRIES} WHERE seq > ? ORDER BY seq"
        " LIMIT ?",
        (int(after_cursor), int(limit)),
    )
    return [
        FeedEntry(
            seq=int(r[0]),
            notification_id=int(r[1]),
            round_id=str(r[2]),
            table_id=str(r[3]),
            round_number=int(r[4]),
            variant=str(r[5]),
            production=bool(r[6]),
            wager_id=str(r[7]),
            player=str(r[8]),
            account_type=str(r[21]),
            kind=str(r[9]),
            hand=None if r[10] is None else str(r[10]),
            stake=money(r[11]),
            result=str(r[12]),
            ratio=None if r[13] is None else str(r[13]),
            payout=money(r[14]),
            net=money(r[15]),
            rule=str(r[16]),
            rounding=str(r[17]),
            pattern=None if r[18] is None else str(r[18]),
            settled_at=str(r[19]),
            day=str(r[20]),
        )
        for r in rows
    ]


def last_cursor(tx: Tx) -> int:
    row = tx.one(f"SELECT COALESCE(MAX(seq), 0) FROM {ENTRIES}")
    return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class DailyAggregate:
    """One day of one variant, table, bet type and kind of money."""

    day: dt.date
    variant: str
    table_id: str
    kind: str
    production: bool
    account_type: str
    wagers: int
    handle: Decimal
    payouts: Decimal
    refunds: int
    refunded: Decimal

    @property
    def ggr(self) -> Decimal:
        """Gross gaming revenue: handle - payouts."""
        return self.handle - self.payouts

    @property
    def rtp(self) -> Decimal | None:
        """Observed return to player, payouts / handle (None without handle)."""
        if not self.handle:
            return None
        return (self.payouts / self.handle).quantize(Decimal("0.000001"))

    def as_record(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "variant": self.variant,
            "table_id": self.table_id,
            "kind": self.kind,
            "production": self.production,
            "account_type": self.account_type,
            "wagers": self.wagers,
            "handle": self.handle,
            "payouts": self.payouts,
            "ggr": self.ggr,
            "rtp": self.rtp,
            "refunds": self.refunds,
            "refunded": self.refunded,
        }


REPORT_COLUMNS = (
    "day",
    "variant",
    "table_id",
    "kind",
    "production",
    "account_type",
    "wagers",
    "handle",
    "payouts",
    "ggr",
    "rtp",
    "refunds",
    "refunded",
)


def daily(
    tx: Tx,
    date_from: dt.date,
    date_to: dt.date,
    *,
    include_test: bool = False,
    variant: str | None = None,
) -> list[DailyAggregate]:
    """Daily aggregates from ``date_from`` to ``date_to`` inclusive (UTC days of settlement):
    real money on production tables only, unless ``include_test`` (then test tables and
    play-money accounts too, each in its own rows)."""
    where = "day >= ? AND day <= ?"
    params: list[Any] = [date_from.isoformat(), date_to.isoformat()]
    if not include_test:
        where += " AND production = 1 AND account_type = 'real'"
    if variant is not None:
        where += " AND variant = ?"
        params.append(variant)
    rows = tx.query(
        f"SELECT {', '.join((*_DAILY_KEY, *_DAILY_SUMS))} FROM {DAILY} WHERE {where}"
        " ORDER BY day, variant, table_id, kind, production, account_type",
        params,
    )
    return [
        DailyAggregate(
            day=dt.date.fromisoformat(str(r[0])),
            variant=str(r[1]),
            table_id=str(r[2]),
            kind=str(r[3]),
            production=bool(r[4]),
            account_type=str(r[5]),
            wagers=int(r[6]),
            handle=money(r[7]),
            payouts=money(r[8]),
            refunds=int(r[9]),
            refunded=money(r[10]),
        )
        for r in rows
        if int(r[6]) or int(r[9])
    ]


# ------------------------------------------------------------------------------ exports


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(rows: Iterable[DailyAggregate], out: IO[str]) -> int:
    """Daily aggregates as CSV (header, decimal strings, ISO dates); returns rows written."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(REPORT_COLUMNS)
    n = 0
    for row in rows:
        record = row.as_record()
        writer.writerow([_text(record[c]) for c in REPORT_COLUMNS])
        n += 1
    return n


def write_parquet(rows: Iterable[DailyAggregate], path: str | Path | IO[bytes]) -> int:
    """Daily aggregates as Parquet (decimal128 money, date32 days) to a file path or a binary
    file object; returns rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    money_type = pa.decimal128(18, 2)
    schema = pa.schema(
        [
            ("day", pa.date32()),
            ("variant", pa.string()),
            ("table_id", pa.string()),
            ("kind", pa.string()),
            ("production", pa.bool_()),
            ("account_type", pa.string()),
            ("wagers", pa.int64()),
            ("handle", money_type),
            ("payouts", money_type),
            ("ggr", money_type),
            ("rtp", pa.decimal128(12, 6)),
            ("refunds", pa.int64()),
            ("refunded", money_type),
        ]
    )
    records = [r.as_record() for r in rows]
    table = pa.Table.from_pylist(records, schema=schema)
    pq.write_table(table, str(path) if isinstance(path, str | Path) else path)
    return len(records)


__all__ = [
    "ACCOUNTS",
    "DAILY",
    "ENTRIES",
    "REPORT_COLUMNS",
    "DailyAggregate",
    "Feed",
    "FeedEntry",
    "daily",
    "last_cursor",
    "read",
    "write_csv",
    "write_parquet",
]

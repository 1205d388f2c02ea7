"""What every tracked projection shares: the base class, money in minor units, round facts.

A projection is a class with a ``name``, a schema ``version``, the event classes it handles,
the DDL of its tables, and :meth:`Projection.apply`, which writes one batch of events through
an open :class:`~projections.store.Tx`. It never commits and never moves its tracking
position: the runner does both, in the same transaction (``projections.runner``).

Projections read only the stored events (the classes in ``domain.round`` and
``domain.wallet``), as :class:`~projections.recorded.Recorded` records (ids and times as
text); they never call the application, so a rebuild from zero gives the same rows as
following the log live.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.utils import get_topic

from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.kept import KeptValues
from domain.round import Round
from projections.recorded import Recorded, moment
from projections.store import Row, Tx

#: One notification of the log, decoded: (notification id, its record).
Tracked = tuple[int, Recorded]

_CENT = Decimal("0.01")


#: Minor units of the amount texts :func:`cents` has converted (a store's amounts are a few
#: hundred distinct texts: stakes, payouts, balances), emptied when full.
_CENTS: dict[str, int] = {}
_CENTS_MAX = 4096


def cents(amount: str | Decimal) -> int:
    """Exact integer minor units of a decimal amount (a text's remembered: the same
    ``Decimal`` arithmetic once a text, then a lookup).

    >>> cents("10.50"), cents("0.07"), cents(Decimal("-3.00")), cents("10.50")
    (1050, 7, -300, 1050)
    >>> cents("0.005")
    Traceback (most recent call last):
    ...
    ValueError: amount '0.005' is not a whole number of cents
    """
    if type(amount) is str:
        found = _CENTS.get(amount)
        if found is not None:
            return found
    value = Decimal(amount)
    scaled = value.scaleb(2)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"amount {amount!r} is not a whole number of cents")
    minor = int(scaled)
    if type(amount) is str:
        if len(_CENTS) >= _CENTS_MAX:
            _CENTS.clear()
        _CENTS[amount] = minor
    return minor


def money(minor: int | None) -> Decimal:
    """Decimal amount of integer minor units.

    >>> money(1050), money(-7), money(0)
    (Decimal('10.50'), Decimal('-0.07'), Decimal('0.00'))
    """
    return (Decimal(int(minor or 0)) * _CENT).quantize(_CENT)


#: Texts of the ids :func:`id_text` has seen (UUID as an integer -> its text), emptied when
#: full: at most 16,384 (about 2.7 MB; more than the distinct ids of a 5,000-event batch).
_ID_TEXTS: KeptValues[int, UUID, str] = KeptValues(str, most=16_384)


def id_text(value: Any) -> str:
    """``str(value)``, remembered for UUIDs: every projection names an event's aggregate by the
    text of its id, and a round's events share a few ids, so a batch would otherwise format
    the same UUID four times an event (about 0.4 µs each; a lookup by ``UUID.int`` is 0.07).

    >>> from uuid import UUID
    >>> id_text(UUID("12345678-1234-5678-1234-567812345678"))
    '12345678-1234-5678-1234-567812345678'
    >>> id_text("table-1")
    'table-1'
    """
    if type(value) is not UUID:
        return str(value)
    return _ID_TEXTS.kept(value.int, value)


def utc_day(e: Recorded) -> str:
    """The UTC day (``YYYY-MM-DD``) of an event's server time: the date of its ISO text when
    that is in UTC (the server's clock), else of the time converted to UTC.

    >>> from projections.recorded import of_event
    >>> class E: pass
    >>> e = E(); e.originator_id, e.originator_version = "r", 1
    >>> e.timestamp = dt.datetime(2026, 1, 1, 23, 30, tzinfo=dt.UTC)
    >>> utc_day(of_event(e))
    '2026-01-01'
    >>> e.timestamp = dt.datetime.fromisoformat("2026-01-02T00:30:00+01:00")
    >>> utc_day(of_event(e))
    '2026-01-01'
    """
    at = e.at
    if at.endswith("+00:00"):
        return at[:10]
    return moment(e).astimezone(dt.UTC).date().isoformat()


def variant_of(rules_key: str) -> str:
    """The variant a rules key belongs to (``"deluxe/1"`` -> ``"deluxe"``).

    >>> variant_of("lucky7/1")
    'lucky7'
    """
    return rules_key.split("/", 1)[0]


#: The aggregates whose events make up a round: a :class:`~domain.round.Round`, or for
#: boundless a :class:`~domain.boundless.shared.SharedHand` (same id) and one
#: :class:`~domain.boundless.participation.Participation` per player.
ROUND_AGGREGATES: tuple[type, ...] = (Round, SharedHand, Participation)
#: Their events' base classes.
_ROUND_EVENTS: tuple[type, ...] = (Round.Event, SharedHand.Event, Participation.Event)
#: Event class -> whether a round aggregate records it (decided once a class).
_IS_ROUND_EVENT: dict[type, bool] = {}


def is_round_event(cls: type) -> bool:
    """Whether ``cls`` is an event of a round aggregate (not of a wallet, say).

    >>> from domain.wallet import Wallet
    >>> is_round_event(Round.Started), is_round_event(Participation.Joined)
    (True, True)
    >>> is_round_event(Wallet.Opened)
    False
    """
    found = _IS_ROUND_EVENT.get(cls)
    if found is None:
        found = _IS_ROUND_EVENT[cls] = issubclass(cls, _ROUND_EVENTS)
    return found


def round_events(*names: str) -> tuple[type, ...]:
    """The event classes of that name in every round aggregate (where one exists).

    Projections handle the events of a Round and of a boundless round alike, by name: the
    classes have the same fields where they mean the same thing.

    >>> [c.__qualname__ for c in round_events("Started", "Joined")]
    ['Round.Started', 'SharedHand.Started', 'Participation.Joined']
    """
    found: list[type] = []
    for name in names:
        for aggregate in ROUND_AGGREGATES:
            cls = aggregate.__dict__.get(name)
            if isinstance(cls, type):
                found.append(cls)
    return tuple(found)


def name_of(event: Any) -> str:
    """The event's class name (``BetPlaced``), whichever round aggregate recorded it."""
    return type(event).__name__


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """What a projection remembers about a round from its ``Started`` event."""

    round_id: str
    table_id: str
    round_number: int
    variant: str
    rules_key: str
    production: bool
    started_at: str

    @classmethod
    def of(cls, e: Recorded) -> RoundFacts:
        return cls(
            round_id=e.originator_id,
            table_id=e.table_id,
            round_number=int(e.round_number),
            variant=variant_of(e.rules_key),
            rules_key=e.rules_key,
            production=bool(e.production),
            started_at=e.at,
        )


_FACT_COLUMNS = "round_id, table_id, round_number, variant, rules_key, production, started_at"
_ROUND_INDEX_COLUMNS = ("originator_id", *_FACT_COLUMNS.split(", "), "player")


#: Values per ``IN (...)`` list of a prefetch query (well under SQLite's and PostgreSQL's
#: parameter limits).
IN_CHUNK = 500


def chunks(items: Sequence[Any], size: int = IN_CHUNK) -> Iterable[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size``.

    >>> [list(c) for c in chunks([1, 2, 3], 2)]
    [[1, 2], [3]]
    """
    for i in range(0, len(items), size):
        yield items[i : i + size]


def placeholders(n: int) -> str:
    """``?, ?, ...`` for ``n`` parameters.

    >>> placeholders(3)
    '?, ?, ?'
    """
    return ", ".join("?" for _ in range(n))


def upsert(
    tx: Tx,
    table: str,
    columns: Sequence[str],
    new: Sequence[Sequence[Any]],
    other: Sequence[Sequence[Any]],
    conflict: str,
) -> None:
    """Write a batch's rows of ``table``: the ``new`` ones, whose keys the batch knows are not
    stored (their round started in this batch, or the batch's prefetch found no row), as
    plain inserts, the ``other`` ones with ``conflict`` (``ON CONFLICT ... DO UPDATE``).

    On PostgreSQL the new rows go by one ``COPY`` straight into the table: no conflict
    check, about half the server's work a row of the upsert (a catch-up from zero writes
    nearly every row this way). A row thought new whose key is stored after all
    fails the batch (a unique violation, the batch rolled back): it is never overwritten.
    """
    tx.insert(table, columns, new)
    tx.insert(table, columns, other, conflict)


def rows_by_keys(
    tx: Tx, table: str, key_columns: Sequence[str], columns: Sequence[str], keys: Iterable[Any]
) -> list[Row]:
    """The rows of ``table`` whose ``key_columns`` equal one of ``keys`` (tuples, or single
    values for one key column), as ``columns``: one query per :data:`IN_CHUNK` parameters
    (row values, ``(a, b) IN (VALUES (?, ?), ...)``: SQLite 3.15+ and PostgreSQL)."""
    wanted = list(dict.fromkeys(keys))
    width = len(key_columns)
    per = max(1, IN_CHUNK // width)
    out: list[Row] = []
    for part in chunks(wanted, per):
        if width == 1:
            where = f"{key_columns[0]} IN ({placeholders(len(part))})"
            params: list[Any] = list(part)
        else:
            one = f"({placeholders(width)})"
            where = f"({', '.join(key_columns)}) IN (VALUES {', '.join(one for _ in part)})"
            params = [v for key in part for v in key]
        out.extend(tx.query(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", params))
    return out


class RoundIndex:
    """A projection's own table of round facts (``<prefix>_rounds``), with a per-batch cache.

    Keyed by the id of the aggregate that records the events: a round (``Started``), or a
    boundless participation (``Joined``), whose row repeats its round's facts. Each projection
    keeps its own copy so that it can be dropped and rebuilt alone.

    No query per event (issue 15): :meth:`begin` reads the facts of every aggregate of a batch
    in a few ``IN (...)`` queries, :meth:`record` only remembers a new row, and :meth:`flush`
    writes the batch's new rows with one :meth:`~projections.store.Tx.insert` (call it before
    the batch's transaction commits; the projection's other writes may come before or after
    it: nothing reads this table with SQL during a batch).
    """

    def __init__(self, prefix: str) -> None:
        self.table = f"{prefix}_rounds"
        self._cache: dict[str, RoundFacts] = {}
        self._pending: list[tuple[Any, ...]] = []
        self._new: dict[str, str] = {}  # aggregates started or joined in this batch -> round
        self._started: set[str] = set()  # rounds started in this batch

    def ddl(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            " originator_id TEXT PRIMARY KEY,"
            " round_id TEXT NOT NULL,"
            " table_id TEXT NOT NULL,"
            " round_number BIGINT NOT NULL,"
            " variant TEXT NOT NULL,"
            " rules_key TEXT NOT NULL,"
            " production INTEGER NOT NULL,"
            " started_at TEXT NOT NULL,"
            " player TEXT)"
        )

    def clear_cache(self) -> None:
        self._cache.clear()
        self._pending.clear()
        self._new.clear()
        self._started.clear()

    def begin(self, tx: Tx, events: Sequence[Tracked]) -> None:
        """Start a batch: forget the last one and read the stored facts of every round
        aggregate the batch's events belong to (and of the rounds its ``Joined`` events name).
        Events of other aggregates (a wallet's, which the ledger and the feed handle too) have
        no round facts: nothing is asked for them (before branch ``pgproj3`` their ids were,
        a query of the ledger's and the feed's that found nothing, at the start of their
        batch)."""
        self.clear_cache()
        wanted: dict[str, None] = {}
        is_round = _IS_ROUND_EVENT.get
        for _nid, e in events:
            if not (is_round(e.cls) or is_round_event(e.cls)):
                continue
            name = e.name
            originator = e.originator_id
            if name == "Started":
                self._new[originator] = originator
                self._started.add(originator)
                continue
            if name == "Joined":
                self._new[originator] = id_text(e.round_id)
                wanted[id_text(e.round_id)] = None
                continue
            wanted[originator] = None
        self.prefetch(tx, [k for k in wanted if k not in self._new])

    def round_id_in_batch(self, originator_id: str) -> str | None:
        """The round of an aggregate of this batch (no query): from its stored facts read by
        :meth:`begin`, or from its ``Started`` / ``Joined`` event in the batch."""
        facts = self._cache.get(originator_id)
        return facts.round_id if facts is not None else self._new.get(originator_id)

    def started_in_batch(self, round_id: str) -> bool:
        """Whether the round started in this batch (so nothing of it is stored yet)."""
        return round_id in self._started

    def prefetch(self, tx: Tx, originator_ids: Sequence[str]) -> None:
        """Read the stored facts of ``originator_ids`` not cached yet (a few queries)."""
        missing = [o for o in originator_ids if o not in self._cache]
        columns = ["originator_id", *_FACT_COLUMNS.split(", ")]
        for row in rows_by_keys(tx, self.table, ["originator_id"], columns, missing):
            self._cache[str(row[0])] = _facts(row[1:])

    def record(self, tx: Tx, e: Recorded) -> RoundFacts:
        """Remember a ``Started`` (round) or ``Joined`` (participation) event (written by
        :meth:`flush`)."""
        originator = e.originator_id
        if e.name == "Joined":
            facts = self.get(tx, id_text(e.round_id))
            player: str | None = e.player
        else:
            facts = RoundFacts.of(e)
            player = None
        if originator in self._cache:
            raise ValueError(f"round facts of {originator} recorded twice in the log")
        self._pending.append(
            (
                originator,
                facts.round_id,
                facts.table_id,
                facts.round_number,
                facts.variant,
                facts.rules_key,
                int(facts.production),
                facts.started_at,
                player,
            )
        )
        self._cache[originator] = facts
        return facts

    def flush(self, tx: Tx) -> None:
        """Write the rows :meth:`record` remembered in this batch (one ``Tx.insert``)."""
        tx.insert(self.table, _ROUND_INDEX_COLUMNS, self._pending)
        self._pending = []

    def of(self, tx: Tx, e: Recorded) -> RoundFacts:
        """The facts of the round an event belongs to."""
        return self.get(tx, e.originator_id)

    def get(self, tx: Tx, originator_id: str) -> RoundFacts:
        facts = self._cache.get(originator_id)
        if facts is not None:
            return facts
        row = tx.one(
            f"SELECT {_FACT_COLUMNS} FROM {self.table} WHERE originator_id = ?", (originator_id,)
        )
        if row is None:
            raise LookupError(f"round of {originator_id} was not started in the projected log")
        facts = _facts(row)
        self._cache[originator_id] = facts
        return facts


def _facts(row: Sequence[Any]) -> RoundFacts:
    return RoundFacts(
        round_id=str(row[0]),
        table_id=str(row[1]),
        round_number=int(row[2]),
        variant=str(row[3]),
        rules_key=str(row[4]),
        production=bool(row[5]),
        started_at=str(row[6]),
    )


@dataclass(frozen=True, slots=True)
class Table:
    """A projection table: its name, DDL and the columns that order a dump of it."""

    name: str
    ddl: str
    order_by: str
    indexes: tuple[str, ...] = ()


class Projection(ABC):
    """A tracked projection (see the module docstring)."""

    #: Unique name; the tracking row and the CLI use it.
    name: ClassVar[str]
    #: Bump when the tables or their meaning change: the runner then asks for a rebuild.
    version: ClassVar[int] = 1
    #: Event classes this projection reads (the runner asks the log for these topics only).
    handles: ClassVar[tuple[type, ...]]

    @abstractmethod
    def tables(self) -> Sequence[Table]:
        """The projection's tables (created in order, dropped in reverse)."""

    @abstractmethod
    def apply(self, tx: Tx, events: Sequence[Tracked]) -> None:
        """Write one batch of events (in notification order) through ``tx``."""

    def topics(self) -> list[str]:
        return [get_topic(cls) for cls in self.handles]

    def create(self, tx: Tx) -> None:
        for table in self.tables():
            tx.execute(table.ddl)
            for index in table.indexes:
                tx.execute(index)

    def drop(self, tx: Tx) -> None:
        for table in reversed(list(self.tables())):
            tx.execute(f"DROP TABLE IF EXISTS {table.name}")

    def dump(self, tx: Tx) -> dict[str, list[Row]]:
        """Every row of every table, in a stable order (for tests and audits)."""
        return {
            t.name: tx.query(f"SELECT * FROM {t.name} ORDER BY {t.order_by}") for t in self.tables()
        }


def period_filter(
    date_from: Any, date_to: Any, *, include_test: bool, **equal: str | None
) -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) of a daily table read: ``day`` from ``date_from``
    to ``date_to`` inclusive, production rows only unless ``include_test``, and each given
    column equal to its value (None: any).

    >>> where, params = period_filter("2026-01-01", "2026-01-31", include_test=False, variant="x")
    >>> where
    'day >= ? AND day <= ? AND production = 1 AND variant = ?'
    >>> params
    ['2026-01-01', '2026-01-31', 'x']
    """
    where = "day >= ? AND day <= ?"
    params: list[Any] = [str(date_from), str(date_to)]
    if not include_test:
        where += " AND production = 1"
    for column, value in equal.items():
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    return where, params


__all__ = [
    "ROUND_AGGREGATES",
    "Projection",
    "RoundFacts",
    "RoundIndex",
    "Table",
    "Tracked",
    "cents",
    "id_text",
    "money",
    "name_of",
    "period_filter",
    "round_events",
    "utc_day",
    "variant_of",
]

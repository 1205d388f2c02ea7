"""The in-transaction commit hook: rows that the transaction recording events writes too.

This module owns the hook every :class:`~domain.application.RoundAudit` store runs: the
application's recorder (SQLite, PostgreSQL, or the in-memory store) calls each installed
**commit writer** inside the database transaction that inserts the events of one
``app.save(...)``, after the events are inserted and numbered, before the commit. What a
writer inserts commits or rolls back with the events: never one without the other. The Merkle
leaf of every transaction (``domain.leaf_writer.MerkleLeafWriter``) is the first writer; a
second kind of row (issue 12: an idempotency record, the request fingerprint and the original
response) is added without touching this module.

Interface (for a new writer)::

    class CommitWriter(Protocol):
        purposes: tuple[str, ...]   # the tables it writes, one per purpose
        def write(self, tx: CommitTransaction, events: Sequence[CommittedEvent],
                  kwargs: Mapping[str, Any]) -> None: ...

    app.install_commit_writer(writer)          # RoundAudit: creates its tables, installs it
    app.save(a, b, my_row=...)                 # kwargs reach every writer's ``write``
    app.commit_table(purpose)                  # read the table outside a transaction

* **Tables.** Each purpose is one append-only table with the library's aggregate-recorder
  shape, keyed by (originator id, version) with a topic and a byte state
  (``stored_<purpose>`` on SQLite, ``roundaudit_<purpose>`` on PostgreSQL, created like the
  events table, honouring ``CREATE_TABLE``; in memory for the in-memory store). The primary
  key makes a second row under the same key an :class:`~eventsourcing.persistence.
  IntegrityError`, which rolls the whole transaction back: the events are not recorded either
  (``RoundAudit`` retries such a conflict on fresh state, then reports ``concurrent-update``).
* **When.** ``write`` is called once per ``insert_events`` call, i.e. once per
  ``app.save(...)``, with the transaction's events in insertion order as
  :class:`CommittedEvent` (notification id, originator id, version, topic, and the state
  **exactly as stored**), and with the keyword arguments given to ``app.save`` (the library
  adds ``tracking``). Also for a save with no events (``events`` is then empty): a writer that
  has nothing to do for it returns.
* **Order and locks.** With events, a writer runs while the transaction holds the events
  table's write lock: on PostgreSQL the library's ``LOCK TABLE ... IN EXCLUSIVE MODE`` (which
  keeps commit order equal to notification order; DB functions are refused, DESIGN.md); on
  SQLite the database's write lock; in memory the recorder's lock. So writers see and number
  their rows in commit order. With no events no lock is taken on PostgreSQL.
* **The transaction** (:class:`CommitTransaction`) gives ``insert(purpose, rows)``,
  ``append(purpose, originator_id, topic, state)`` (a row at the next version of that
  originator, numbered by the database in the insert itself), ``last(purpose, originator_id)``
  (the row with the highest version) and ``events(after=, before=, limit=)`` (the events table
  as this transaction sees it, by notification id).
  :meth:`CommitHook.transact` runs a function in such a transaction without events, holding the
  events table's write lock (the Merkle log's one-time migration uses it).
* **Failure.** Any exception a writer raises aborts the transaction: nothing of it is recorded
  and the exception reaches the caller of ``app.save``.

The hooked SQLite recorder reads an aggregate's events as ``domain.sqlite_reads`` does; every
hooked recorder reads the log's tail as ``domain.log_tail`` does; the SQLite one sets its
store's pool as ``domain.sqlite_pool`` says.

**Group commit.** On SQLite and PostgreSQL the saves of concurrent threads share one database
transaction, each with its own writers' rows (its own leaf): ``domain.group_commit``. The group
is first inserted with no savepoint (on PostgreSQL all in one pipeline: ``domain.pg_group``);
after a conflict there it is rolled back and inserted again with a savepoint per save, so that
the conflict is its save's alone (on SQLite: ``domain.sqlite_group``).
A save alone is committed exactly as before. A group's leader may wait up to the store's
``commit_delay`` for the saves of the other commands in flight.

The hook subclasses the library's recorders (eventsourcing 9.5) and is chosen by
:func:`hooked_recorder` from the application's infrastructure factory, so every RoundAudit
store has it whatever environment it was given.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar, cast
from uuid import UUID

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.popo import POPOAggregateRecorder, POPOFactory
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresFactory
from eventsourcing.sqlite import (
    SQLiteAggregateRecorder,
    SQLiteCursor,
    SQLiteFactory,
    SQLiteTransaction,
)
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

from domain.group_commit import (
    COMMIT_DELAY_ENV,
    DEFAULT_WAIT,
    GroupCommitter,
    Pending,
    commit_or_fall_back,
    wait_from,
)
from domain.log_tail import PopoTail, PostgresTail, SQLiteTail
from domain.log_tail import stored_uuid as _uuid
from domain.pg_group import (
    commit_alone,
    commit_pipelined,
    commit_with_savepoints,
    insert_rows,
    statement,
)
from domain.sqlite_group import commit_together
from domain.sqlite_pool import newest_first
from domain.sqlite_reads import LeanReads

T = TypeVar("T")

__all__ = [
    "CommitHook",
    "CommitTransaction",
    "CommitWriter",
    "CommittedEvent",
    "hooked_recorder",
]


class CommittedEvent(NamedTuple):
    """One event as the transaction inserted it: its notification id and its stored record.

    Immutable, compared and hashed by its fields, as the frozen dataclass it was; a named
    tuple because a transaction makes one for each of its events and a verification one for
    each stored event it reads: 0.3 us to make where the dataclass's ``__init__`` took 1.8
    (its fields set one by one through ``object.__setattr__``)."""

    notification_id: int
    originator_id: UUID
    originator_version: int
    topic: str
    state: bytes  # exactly as stored (ciphertext, should a cipher ever be configured)


class CommitTransaction(Protocol):
    """What a writer can do inside the transaction (see the module docstring)."""

    def insert(self, purpose: str, rows: Sequence[StoredEvent]) -> None:
        """Insert rows into the purpose's table (a duplicate key aborts the transaction)."""

    def last(self, purpose: str, originator_id: UUID) -> StoredEvent | None:
        """The row of ``originator_id`` with the highest version in the purpose's table."""

    def append(self, purpose: str, originator_id: UUID, topic: str, state: bytes) -> None:
        """Insert a row of ``originator_id`` at the version after its highest (1 for the
        first), numbered by the database in the same statement (no round trip to read it)."""

    def events(self, *, after: int, before: int | None, limit: int) -> list[CommittedEvent]:
        """Events with ``after < notification id < before``, by notification id."""


class CommitWriter(Protocol):
    """Writes rows of its own in the transaction that records events."""

    purposes: tuple[str, ...]

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None: ...


def _committed(stored: Sequence[StoredEvent], ids: Sequence[int] | None) -> list[CommittedEvent]:
    if not stored:
        return []
    if ids is None or len(ids) != len(stored):
        raise ProgrammingError(
            f"the store numbered {0 if ids is None else len(ids)} of {len(stored)} events: "
            "the commit hook cannot seal them"
        )
    made, uuid = tuple.__new__, UUID  # the named tuple made without its __new__ in Python
    return [
        made(CommittedEvent, (int(n), o if type(o := s.originator_id) is uuid else _uuid(o),
                              int(s.originator_version), s.topic, bytes(s.state)))
        for s, n in zip(stored, ids, strict=True)
    ]  # fmt: skip


class CommitHook:
    """The part every hooked recorder shares: its writers and their tables."""

    _writers: list[CommitWriter]
    _tables: dict[str, AggregateRecorder]

    def _init_hook(self) -> None:
        self._writers = []
        self._tables = {}

    @property
    def writers(self) -> tuple[CommitWriter, ...]:
        return tuple(self._writers)

    def install(self, writer: CommitWriter, tables: Mapping[str, AggregateRecorder]) -> None:
        """Run ``writer`` in every transaction from now on; ``tables`` gives, for each of its
        purposes, the aggregate recorder of that table (``factory.aggregate_recorder``)."""
        for purpose in writer.purposes:
            table = tables.get(purpose)
            if table is None:
                raise ProgrammingError(f"no table given for the writer's purpose {purpose!r}")
            held = self._tables.get(purpose)
            if held is not None and held is not table:
                raise ProgrammingError(f"another table is already installed for {purpose!r}")
            self._check_table(table)
            self._tables[purpose] = table
        if writer not in self._writers:
            self._writers.append(writer)

    def table(self, purpose: str) -> AggregateRecorder:
        return self._tables[purpose]

    def _check_table(self, table: AggregateRecorder) -> None:
        raise NotImplementedError

    def _run_writers(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        for writer in self._writers:
            writer.write(tx, events, kwargs)

    def transact(self, fn: Callable[[CommitTransaction], T]) -> T:
        """Run ``fn`` in one transaction holding the events table's write lock, no events."""
        raise NotImplementedError


# ------------------------------------------------------------------------------ SQLite
class _ImmediateTransaction(SQLiteTransaction):
    """A transaction that takes SQLite's write lock at once (``BEGIN IMMEDIATE``), so that
    what it reads cannot change before it writes."""

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        return cursor


class _SQLiteTx:
    def __init__(self, recorder: HookedSQLiteApplicationRecorder, cursor: SQLiteCursor) -> None:
        self.recorder, self.c = recorder, cursor

    def _table(self, purpose: str) -> SQLiteAggregateRecorder:
        return cast(SQLiteAggregateRecorder, self.recorder.table(purpose))

    def insert(self, purpose: str, rows: Sequence[StoredEvent]) -> None:
        if rows:
            self._table(purpose)._insert_events(self.c, rows)

    def last(self, purpose: str, originator_id: UUID) -> StoredEvent | None:
        table = self._table(purpose).events_table_name
        self.c.execute(
            f"SELECT originator_version, topic, state FROM {table} WHERE originator_id=? "
            "ORDER BY originator_version DESC LIMIT 1",
            (originator_id.hex,),
        )
        row = self.c.fetchone()
        if row is None:
            return None
        return StoredEvent(originator_id, int(row[0]), str(row[1]), bytes(row[2]))

    def append(self, purpose: str, originator_id: UUID, topic: str, state: bytes) -> None:
        table = self._table(purpose).events_table_name
        # a scalar subquery, not INSERT ... SELECT: SQLite materialises a SELECT from the table
        # it inserts into (measured: 26 us more per transaction)
        self.c.execute(
            f"INSERT INTO {table} (originator_id, originator_version, topic, state) VALUES (?, "
            f"(SELECT COALESCE(MAX(originator_version), 0) + 1 FROM {table} "
            "WHERE originator_id = ?), ?, ?)",
            (originator_id.hex, originator_id.hex, topic, state),
        )

    def events(self, *, after: int, before: int | None, limit: int) -> list[CommittedEvent]:
        table = self.recorder.events_table_name
        sql = f"SELECT rowid, originator_id, originator_version, topic, state FROM {table} "
        sql += "WHERE rowid>? " + ("AND rowid<? " if before is not None else "")
        sql += "ORDER BY rowid LIMIT ?"
        params = (after, before, limit) if before is not None else (after, limit)
        self.c.execute(sql, params)
        return [
            CommittedEvent(int(r[0]), _uuid(r[1]), int(r[2]), str(r[3]), bytes(r[4]))
            for r in self.c.fetchall()
        ]


class HookedSQLiteApplicationRecorder(CommitHook, LeanReads, SQLiteTail):
    """The library's SQLite application recorder, with the commit hook."""

    def __init__(self, datastore: Any, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name)
        self._init_hook()
        newest_first(datastore.pool)
        self.group_commit = GroupCommitter(self._commit_group, wait=DEFAULT_WAIT)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The events of one ``app.save``, committed with those of the concurrent saves of
        this process in one transaction (:class:`GroupCommitter`): one commit, one sync of
        the write-ahead log, for the group."""
        return self.group_commit.submit(stored_events, kwargs)

    def _commit_group(self, batch: list[Pending]) -> None:
        """One transaction for the group (``domain.sqlite_group``; a savepoint for each save
        once one conflicts): a save that meets a conflict (an event or a writer's row at a
        version taken) is rolled back to its savepoint and raises it alone. Any other error
        before the commit rolls the group back, and its saves are committed one by one
        instead, each in its own transaction as without grouping (so one save's fault is its
        own), except an operational error (the database locked by another process beyond the
        timeout, a failing disk), which every save of the group raises, as each would have
        alone (:func:`_commit_or_fall_back`)."""
        commit_or_fall_back(
            batch,
            self._commit_together,
            self._commit_alone,
            fatal=(sqlite3.OperationalError, OperationalError),
        )

    def _commit_together(self, batch: list[Pending], inserted: list[bool]) -> None:
        commit_together(self, batch, inserted)  # domain.sqlite_group

    def _commit_alone(self, item: Pending) -> Sequence[int] | None:
        with self.datastore.transaction(commit=True) as c:
            return self._insert_events(c, item.events, **item.kwargs)

    def _check_table(self, table: AggregateRecorder) -> None:
        if not isinstance(table, SQLiteAggregateRecorder) or table.datastore is not self.datastore:
            raise ProgrammingError("a commit table must be a table of the same SQLite database")

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        self._run_writers(_SQLiteTx(self, c), _committed(stored_events, ids), kwargs)
        return ids

    def transact(self, fn: Callable[[CommitTransaction], T]) -> T:
        with (
            self.datastore.get_connection(commit=True) as conn,
            _ImmediateTransaction(conn, commit=True) as cursor,
            cursor,
        ):
            try:
                return fn(_SQLiteTx(self, cursor))
            except sqlite3.IntegrityError as exc:
                raise IntegrityError(exc) from exc


# ------------------------------------------------------------------------------ PostgreSQL
class _PgTx:
    def __init__(self, recorder: HookedPostgresApplicationRecorder, curs: Any) -> None:
        self.recorder, self.curs = recorder, curs

    def _table(self, purpose: str) -> PostgresAggregateRecorder:
        return cast(PostgresAggregateRecorder, self.recorder.table(purpose))

    def insert(self, purpose: str, rows: Sequence[StoredEvent]) -> None:
        insert_rows(self.curs, self._table(purpose), rows, ids=False)

    def _statement(self, purpose: str, text: str) -> bytes:
        """``text`` with ``{0}.{1}`` the purpose's table, composed once (``pg_group``)."""
        schema = self.recorder.datastore.schema
        table = self._table(purpose).events_table_name
        return statement(
            self.curs,
            (text, schema, table),
            lambda: SQL(text).format(Identifier(schema), Identifier(table)),
        )

    def last(self, purpose: str, originator_id: UUID) -> StoredEvent | None:
        query = self._statement(
            purpose,
            "SELECT originator_version, topic, state FROM {0}.{1} WHERE originator_id = %s "
            "ORDER BY originator_version DESC LIMIT 1",
        )
        self.curs.execute(query, (originator_id,), prepare=True)
        row = self.curs.fetchone()
        if row is None:
            return None
        return StoredEvent(
            originator_id, int(row["originator_version"]), str(row["topic"]), bytes(row["state"])
        )

    def append(self, purpose: str, originator_id: UUID, topic: str, state: bytes) -> None:
        query = self._statement(
            purpose,
            "INSERT INTO {0}.{1} (originator_id, originator_version, topic, state) VALUES "
            "(%s, (SELECT COALESCE(MAX(originator_version), 0) + 1 FROM {0}.{1} "
            "WHERE originator_id = %s), %s, %s)",
        )
        self.curs.execute(query, (originator_id, originator_id, topic, state), prepare=True)

    def events(self, *, after: int, before: int | None, limit: int) -> list[CommittedEvent]:
        schema = Identifier(self.recorder.datastore.schema)
        table = Identifier(self.recorder.events_table_name)
        query = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state FROM {}.{} "
            "WHERE notification_id > %s"
        ).format(schema, table)
        params: list[Any] = [after]
        if before is not None:
            query += SQL(" AND notification_id < %s")
            params.append(before)
        query += SQL(" ORDER BY notification_id LIMIT %s")
        params.append(limit)
        self.curs.execute(query, params)
        return [
            CommittedEvent(
                int(r["notification_id"]),
                _uuid(r["originator_id"]),
                int(r["originator_version"]),
                str(r["topic"]),
                bytes(r["state"]),
            )
            for r in self.curs.fetchall()
        ]


class HookedPostgresApplicationRecorder(CommitHook, PostgresTail):
    """The library's PostgreSQL application recorder, with the commit hook. Its inserts take
    the library's table lock and NOTIFY, then one multi-row INSERT ... RETURNING
    notification_id (``domain.pg_group.insert_rows``), then the writers run, in the same
    transaction; DB functions (which drop the lock) are refused."""

    def __init__(self, datastore: Any, *, events_table_name: str = "stored_events") -> None:
        if datastore.enable_db_functions:
            raise ProgrammingError(
                "POSTGRES_ENABLE_DB_FUNCTIONS drops the table lock that keeps commit order "
                "equal to notification order (DESIGN.md): the commit hook refuses it"
            )
        super().__init__(datastore, events_table_name=events_table_name)
        self._init_hook()
        self.group_commit = GroupCommitter(self._commit_group, wait=DEFAULT_WAIT)

    def _create_table(self, curs: Any) -> None:
        """The library's schema statements, one start at a time across processes (an advisory
        lock for their transaction): its ``CREATE OR REPLACE FUNCTION``, run at every start,
        fails one of two sessions running it at once (``tuple concurrently updated``)."""
        curs.execute("SELECT pg_advisory_xact_lock(hashtext('roundaudit-schema'))")
        super()._create_table(curs)

    def _check_table(self, table: AggregateRecorder) -> None:
        if (
            not isinstance(table, PostgresAggregateRecorder)
            or table.datastore is not self.datastore
        ):
            raise ProgrammingError("a commit table must be a table of the same PostgreSQL store")

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The events of one ``app.save``, committed with those of the concurrent saves of
        this process in one transaction (:class:`GroupCommitter`)."""
        return self.group_commit.submit(stored_events, kwargs)

    def _commit_group(self, batch: list[Pending]) -> None:
        """As on SQLite (:meth:`HookedSQLiteApplicationRecorder._commit_group`): one
        transaction, holding the table lock from its first insert to its commit (so commit
        order stays notification order), in one pipeline (``domain.pg_group``), or after a
        conflict there with a savepoint per save, so that the conflict is its save's alone;
        any other error before the commit, and the saves are committed one by one (each
        retried on a lost connection, as without grouping)."""
        commit_or_fall_back(batch, self._commit_together, self._commit_alone)

    def _commit_alone(self, item: Pending) -> Sequence[int] | None:
        return cast("Sequence[int] | None", self._insert_alone(item.events, **item.kwargs))

    def _insert_stored_events(
        self, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        """The library's (the table lock, NOTIFY, the insert returning the notification ids),
        the events inserted by ``domain.pg_group.insert_rows``: the same rows and ids."""
        self._lock_table(curs)
        self._notify_channel(curs)
        insert_rows(curs, self, stored_events, ids=True)

    def _commit_together(self, batch: list[Pending], inserted: list[bool]) -> None:
        if not commit_pipelined(self, batch, inserted, self._run_committed, CommittedEvent):
            commit_with_savepoints(self, batch, inserted, self._write_in)

    def _run_committed(
        self, tx: CommitTransaction, events: Sequence[StoredEvent], ids: Any, kwargs: Any
    ) -> None:
        self._run_writers(tx, _committed(events, ids), kwargs)

    def _write_in(
        self, curs: Any, events: Sequence[StoredEvent], ids: Any, kwargs: Mapping[str, Any]
    ) -> None:
        self._run_committed(_PgTx(self, curs), events, ids, kwargs)

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _insert_alone(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """A save alone, in the group's two round trips (``domain.pg_group.commit_alone``:
        the lock, NOTIFY and the insert, a sync for the ids, then the writers' rows with the
        COMMIT); retried on a lost connection."""
        return commit_alone(
            self, Pending(stored_events, kwargs), self._run_committed, CommittedEvent
        )

    def transact(self, fn: Callable[[CommitTransaction], T]) -> T:
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            self._lock_table(curs)
            return fn(_PgTx(self, curs))


# ------------------------------------------------------------------------------ in memory
class _POPOTx:
    """Buffers the writers' rows; they are checked, then applied with the events."""

    def __init__(self, recorder: HookedPOPOApplicationRecorder, pending: list[StoredEvent]):
        self.recorder = recorder
        self.pending = pending  # events of this transaction, not yet in the table
        self.rows: dict[str, list[StoredEvent]] = {}

    def _table(self, purpose: str) -> POPOAggregateRecorder:
        return cast(POPOAggregateRecorder, self.recorder.table(purpose))

    def insert(self, purpose: str, rows: Sequence[StoredEvent]) -> None:
        self.rows.setdefault(purpose, []).extend(rows)

    def last(self, purpose: str, originator_id: UUID) -> StoredEvent | None:
        mine = [r for r in self.rows.get(purpose, ()) if _uuid(r.originator_id) == originator_id]
        held = self._table(purpose).select_events(originator_id, desc=True, limit=1)
        found = [*held, *mine]
        return max(found, key=lambda r: r.originator_version) if found else None

    def append(self, purpose: str, originator_id: UUID, topic: str, state: bytes) -> None:
        last = self.last(purpose, originator_id)
        version = 1 if last is None else last.originator_version + 1
        self.insert(purpose, [StoredEvent(originator_id, version, topic, state)])

    def events(self, *, after: int, before: int | None, limit: int) -> list[CommittedEvent]:
        table = [*self.recorder._stored_events, *self.pending]
        out: list[CommittedEvent] = []
        for n in range(after + 1, len(table) + 1):
            if (before is not None and n >= before) or len(out) >= limit:
                break
            s = table[n - 1]
            out.append(
                CommittedEvent(
                    n, _uuid(s.originator_id), s.originator_version, s.topic, bytes(s.state)
                )
            )
        return out

    def check(self) -> None:
        for purpose, rows in self.rows.items():
            self._table(purpose)._assert_uniqueness(rows)

    def apply(self) -> None:
        for purpose, rows in self.rows.items():
            self._table(purpose)._update_table(rows)


class HookedPOPOApplicationRecorder(CommitHook, PopoTail):
    """The library's in-memory application recorder, with the commit hook."""

    def __init__(self) -> None:
        super().__init__()
        self._init_hook()

    def _check_table(self, table: AggregateRecorder) -> None:
        if not isinstance(table, POPOAggregateRecorder):
            raise ProgrammingError("a commit table of the in-memory store must be in memory")

    def _insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        with self._database_lock:
            self._assert_uniqueness(stored_events, **kwargs)
            first = len(self._stored_events) + 1
            ids = list(range(first, first + len(stored_events)))
            tx = _POPOTx(self, list(stored_events))
            self._run_writers(tx, _committed(stored_events, ids), kwargs)
            tx.check()
            numbered = self._update_table(stored_events, **kwargs)
            tx.apply()
            return numbered

    def transact(self, fn: Callable[[CommitTransaction], T]) -> T:
        with self._database_lock:
            tx = _POPOTx(self, [])
            out = fn(tx)
            tx.check()
            tx.apply()
            return out


# ------------------------------------------------------------------------------ choice
def hooked_recorder(factory: InfrastructureFactory[Any]) -> ApplicationRecorder:
    """The application recorder, with the commit hook, of the factory's store (the same table
    and settings as ``factory.application_recorder()`` would give; its group commit's wait)."""
    recorder: HookedSQLiteApplicationRecorder | HookedPostgresApplicationRecorder
    if isinstance(factory, SQLiteFactory):
        recorder = HookedSQLiteApplicationRecorder(factory.datastore)
    elif isinstance(factory, PostgresFactory):
        prefix = factory.env.name.lower() or "stored"
        recorder = HookedPostgresApplicationRecorder(
            factory.datastore, events_table_name=prefix + "_events"
        )
    elif isinstance(factory, POPOFactory):
        return HookedPOPOApplicationRecorder()
    else:
        raise ProgrammingError(
            f"no commit hook for the store {type(factory).__module__}: SQLite, PostgreSQL or "
            "in memory"
        )
    recorder.group_commit.wait = wait_from(factory.env.get(COMMIT_DELAY_ENV))
    if factory.env_create_table():
        recorder.create_table()
    return recorder

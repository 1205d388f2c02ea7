"""Where projections keep their rows: tables in the event store's own database.

This module owns the connection a projection runner (or a reader) holds to the database that
the URL names, and hides the two dialects behind one small interface:

* **SQLite** (``sqlite3``): a connection in autocommit mode; a write transaction is
  ``BEGIN IMMEDIATE`` (it takes the database's write lock at once, so the positions it reads
  cannot be changed by another runner before it commits). The file is in WAL mode (the event
  recorder sets it), so readers are never blocked.
* **PostgreSQL** (``psycopg`` 3): an autocommit connection; a write transaction is a psycopg
  transaction block; the ``?schema=`` of the URL becomes the ``search_path``. Every projection
  transaction first takes a transaction-level advisory lock: exclusive for schema changes
  (create, drop, rebuild: concurrent ``CREATE TABLE IF NOT EXISTS`` can fail, and ``CREATE
  INDEX IF NOT EXISTS`` locks the table), shared for batches and reads. Taken before anything
  else, it rules out deadlocks between a runner starting up, one applying a batch, a rebuild
  and a reader.

SQL is written once with ``?`` placeholders (translated to ``%s`` for psycopg) and portable
statements only (``INSERT ... ON CONFLICT ... DO UPDATE``, ``BIGINT``, ``TEXT``). Money is kept
as integer minor units (``BIGINT`` cents) so that sums are exact on both stores.

The table ``projection_tracking(name PRIMARY KEY, position, version, updated_at)`` holds each
projection's position in the notification log; :class:`Tx` reads and moves it in the same
transaction as the rows (see ``projections.runner``).
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any, Literal

import psycopg
from psycopg.copy import LibpqWriter
from psycopg.generators import fetch_many
from psycopg.waiting import Wait

from domain import sqlite_params
from domain.persistence import environment_for
from domain.pgcluster import CLUSTER_FACTORY_TOPIC, TARGET_SESSION_ATTRS_ENV

sqlite_params.install()  # NULL columns bound without the driver's failed look-ups

Dialect = Literal["sqlite", "postgres"]
Row = tuple[Any, ...]

TRACKING_DDL = (
    "CREATE TABLE IF NOT EXISTS projection_tracking ("
    " name TEXT PRIMARY KEY,"
    " position BIGINT NOT NULL,"
    " version INTEGER NOT NULL,"
    " updated_at TEXT NOT NULL)"
)


class ProjectionStoreError(RuntimeError):
    """The projection tables could not be used (not a domain error: an operational one)."""


class Tx:
    """One open transaction (or read) on a :class:`ProjectionStore`; SQL uses ``?``."""

    def __init__(self, store: ProjectionStore, cursor: Any) -> None:
        self._store = store
        self._cur = cursor

    @property
    def _cursor(self) -> Any:
        """The transaction's cursor, once the answer of a ``COPY`` sent before has been
        collected (:meth:`ProjectionStore.collect`: every statement waits for it)."""
        self._store.collect()
        return self._cur

    @property
    def dialect(self) -> Dialect:
        return self._store.dialect

    def _sql(self, sql: str) -> str:
        if self._store.dialect == "postgres":
            return sql.replace("%", "%%").replace("?", "%s")
        return sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed (-1 when unknown)."""
        self._cursor.execute(self._sql(sql), tuple(params))
        return int(self._cursor.rowcount)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._many(sql, rows)

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._cursor.executemany(self._sql(sql), [tuple(r) for r in rows])

    def insert(
        self,
        table: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        conflict: str = "",
    ) -> None:
        """``INSERT INTO table (columns)`` each of ``rows`` (values in ``columns`` order),
        followed by ``conflict`` (an ``ON CONFLICT ...`` clause, or nothing).

        SQLite: one ``executemany``. PostgreSQL: without ``conflict``, from
        :data:`COPY_MIN_ROWS` rows on, one ``COPY`` straight into the table; with
        ``conflict``, **one** ``INSERT ... SELECT`` from the rows sent as one array a column
        (:meth:`_unnest`), so the server runs one statement, not one a row, and makes no
        table for them. That statement must not meet a key twice under ``DO UPDATE``
        (PostgreSQL refuses to update a row twice in one command): the rows of a ``DO
        UPDATE`` have distinct keys.
        """
        if not rows:
            return
        cols = ", ".join(columns)
        if self._store.dialect == "postgres":
            if conflict:
                source, params = self._unnest(table, columns, rows)
                self._cursor.execute(
                    f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {source}"
                    f" {conflict.replace('%', '%%')}",
                    params,
                )
                return
            if len(rows) >= COPY_MIN_ROWS:  # straight into the table
                self._copy(table, columns, rows)
                return
        marks = ", ".join("?" for _ in columns)
        self._many(f"INSERT INTO {table} ({cols}) VALUES ({marks}) {conflict}", rows)

    def update(
        self,
        table: str,
        keys: Sequence[str],
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """``UPDATE table SET columns WHERE keys`` for each of ``rows`` (the values of
        ``columns``, then of ``keys``; distinct keys). PostgreSQL: **one** ``UPDATE ...
        FROM`` the rows sent as arrays (:meth:`_unnest`), as :meth:`insert`."""
        if not rows:
            return
        if self._store.dialect == "postgres":
            source, params = self._unnest(table, (*columns, *keys), rows)
            sets = ", ".join(f"{c} = s.{c}" for c in columns)
            where = " AND ".join(f"{table}.{k} = s.{k}" for k in keys)
            self._cursor.execute(f"UPDATE {table} SET {sets} FROM {source} WHERE {where}", params)
            return
        sets = ", ".join(f"{c} = ?" for c in columns)
        where = " AND ".join(f"{k} = ?" for k in keys)
        self._many(f"UPDATE {table} SET {sets} WHERE {where}", rows)

    def _unnest(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[list[Any]]]:
        """PostgreSQL: ``rows`` as a relation ``s`` with ``table``'s ``columns``: the SQL
        ``unnest(%s::type[], ...) AS s(columns)``, each array cast to its column's type
        (:meth:`ProjectionStore.column_types`), and its parameters, one list a column.
        Before branch ``pgproj2`` the rows were copied into a temporary staging table made
        on a connection's first use: for tens of rows about three times the server's work of
        this, and four round trips a table instead of one (docs/performance-history.md)."""
        types = self._store.column_types(self._cursor, table)
        arrays = ", ".join(f"%s::{types[c]}[]" for c in columns)
        params = [list(values) for values in zip(*rows, strict=True)]
        return f"unnest({arrays}) AS s({', '.join(columns)})", params

    def _copy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """PostgreSQL: ``COPY`` the rows straight into the table, its answer **collected
        late**: the rows and the copy's end are sent, and the server's answer is waited for
        only by the next statement on the connection (:meth:`ProjectionStore.collect`: the
        next ``COPY`` or query, the commit, a rollback), so the server writes them while the
        client computes what comes next (the next projection's rows). An error of the copy
        (a unique violation) is raised by that next statement, inside the same transaction:
        the batch fails and rolls back as it did when the copy waited."""
        writer = _AnsweredLater(self._cursor)
        with self._cur.copy(
            f"COPY {table} ({', '.join(columns)}) FROM STDIN", writer=writer
        ) as copy:
            for row in rows:
                copy.write_row(row)
        self._store._unanswered = writer.ended

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        self._cursor.execute(self._sql(sql), tuple(params))
        return [tuple(r) for r in self._cursor.fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def columns(self) -> list[str]:
        """Column names of the last query."""
        return [d[0] for d in self._cursor.description or ()]

    @property
    def for_update(self) -> str:
        """Suffix that locks the selected rows until commit (PostgreSQL; SQLite's
        ``BEGIN IMMEDIATE`` already holds the write lock)."""
        return " FOR UPDATE" if self._store.dialect == "postgres" else ""

    # ---------------------------------------------------------------- tracking
    def positions(self) -> dict[str, tuple[int, int]]:
        """name -> (position, version) of every tracked projection."""
        return _positions(self.query(_POSITIONS))

    def lock_positions(self, names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """name -> (position, version) of each of ``names`` that is tracked, every row locked
        until commit by **one** statement, in name order (``ORDER BY`` is applied before the
        locks are taken: two runners lock in the same order and never deadlock)."""
        if not names:
            return {}
        rows = self.query(
            "SELECT name, position, version FROM projection_tracking"
            f" WHERE name IN ({', '.join('?' for _ in names)}) ORDER BY name" + self.for_update,
            sorted(names),
        )
        return _positions(rows)

    def set_position(self, name: str, position: int, version: int) -> None:
        self.set_positions([(name, position, version)])

    def set_positions(self, moves: Sequence[tuple[str, int, int]]) -> None:
        """Move each (name, position, version) of ``moves`` (distinct names) with **one**
        statement."""
        if not moves:
            return
        now = datetime.now(UTC).isoformat()
        self.execute(
            "INSERT INTO projection_tracking (name, position, version, updated_at) VALUES "
            + ", ".join("(?, ?, ?, ?)" for _ in moves)
            + " ON CONFLICT (name) DO UPDATE SET"
            " position = excluded.position, version = excluded.version,"
            " updated_at = excluded.updated_at",
            [v for name, position, version in moves for v in (name, position, version, now)],
        )

    def track(self, name: str, version: int) -> None:
        """Start tracking ``name`` at position 0 unless it is tracked already."""
        self.execute(
            "INSERT INTO projection_tracking (name, position, version, updated_at)"
            " VALUES (?, 0, ?, ?) ON CONFLICT (name) DO NOTHING",
            (name, version, datetime.now(UTC).isoformat()),
        )

    def forget(self, name: str) -> None:
        self.execute("DELETE FROM projection_tracking WHERE name = ?", (name,))


class ProjectionStore:
    """One connection to the database of the event store, for projection tables.

    Not shared between threads: each runner or reader opens its own
    (:meth:`open` / :meth:`from_env`). Use as a context manager or call :meth:`close`.
    """

    #: PostgreSQL: a ``COPY`` ended whose answer is not collected yet (:meth:`Tx._copy`);
    #: a class default, so that a subclass made without this ``__init__`` has it too.
    _unanswered: bool = False

    def __init__(self, dialect: Dialect, conn: Any) -> None:
        self.dialect: Dialect = dialect
        self._conn = conn
        self._lock = threading.Lock()  # guards against accidental sharing between threads
        # PostgreSQL: table -> column -> type, read on this connection's first need of it
        self._types: dict[str, dict[str, str]] = {}
        with self.transaction(ddl=True) as tx:
            tx.execute(TRACKING_DDL)

    # ---------------------------------------------------------------- opening
    @classmethod
    def open(cls, url: str) -> ProjectionStore:
        """Connect to the database a ``ROUNDAUDIT_DATABASE_URL`` value names."""
        return cls.from_env(environment_for(url))

    @classmethod
    def from_env(cls, env: dict[str, str]) -> ProjectionStore:
        """Connect using the ``eventsourcing`` environment of the application
        (:func:`domain.persistence.environment_for`)."""
        module = env.get("PERSISTENCE_MODULE", "")
        if module == "eventsourcing.sqlite":
            name = env["SQLITE_DBNAME"]
            timeout = float(env.get("SQLITE_LOCK_TIMEOUT") or 5)
            conn = sqlite3.connect(
                name,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=name.startswith("file:"),
            )
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if not name.startswith("file:") and name != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            return cls("sqlite", conn)
        if module in ("eventsourcing.postgres", CLUSTER_FACTORY_TOPIC):
            kwargs: dict[str, Any] = {
                "dbname": env["POSTGRES_DBNAME"],
                "host": env["POSTGRES_HOST"],  # "h1,h2" with a multi-host URL
                "port": env.get("POSTGRES_PORT") or "5432",
                "user": env["POSTGRES_USER"],
                "password": env.get("POSTGRES_PASSWORD", ""),
                "connect_timeout": int(env.get("POSTGRES_CONNECT_TIMEOUT") or 10),
                "autocommit": True,
            }
            if env.get(TARGET_SESSION_ATTRS_ENV):
                kwargs["target_session_attrs"] = env[TARGET_SESSION_ATTRS_ENV]
            schema = env.get("POSTGRES_SCHEMA")
            if schema:
                kwargs["options"] = f"-c search_path={schema}"
            try:
                pg = psycopg.connect(**kwargs)
            except psycopg.OperationalError as e:
                raise ProjectionStoreError(f"cannot connect to PostgreSQL: {e}") from None
            return cls("postgres", pg)
        raise ProjectionStoreError(f"projections need SQLite or PostgreSQL, not {module!r}")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ProjectionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------- transactions
    @contextmanager
    def transaction(self, *, ddl: bool = False) -> Iterator[Tx]:
        """A write transaction: everything done through the yielded :class:`Tx` commits
        together when the block ends, or not at all when it raises."""
        with self._lock:
            if self.dialect == "sqlite":
                cur = self._conn.cursor()
                cur.execute("BEGIN IMMEDIATE")
                try:
                    yield Tx(self, cur)
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
                return
            # Schema changes (create, drop, rebuild) take the advisory lock alone; batches and
            # reads share it. Taken first, it orders every projection transaction, so a runner
            # starting up never deadlocks with one applying a batch. ``BEGIN`` and the lock go
            # in one round trip (:meth:`_begin`).
            lock = "pg_advisory_xact_lock" if ddl else "pg_advisory_xact_lock_shared"
            with self._begin("BEGIN", lock) as cur:
                if ddl:
                    self._types.clear()  # a table may be dropped and made again
                yield Tx(self, cur)

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read-only snapshot (one transaction), for queries that must agree."""
        with self._lock:
            if self.dialect == "sqlite":
                cur = self._conn.cursor()
                cur.execute("BEGIN")
                try:
                    yield Tx(self, cur)
                finally:
                    cur.execute("ROLLBACK")
                return
            with self._begin(_READ_ONLY, "pg_advisory_xact_lock_shared", writes=False) as cur:
                yield Tx(self, cur)

    @contextmanager
    def _begin(self, begin: str, lock: str, *, writes: bool = True) -> Iterator[Any]:
        """PostgreSQL: a transaction on this connection's cursor, opened by ``begin`` with
        the advisory ``lock`` taken in the same round trip (one simple query: a batch's
        statements are its cost on a loaded machine, where each round trip waits for the
        server and then for the client to be scheduled); committed when the block ends,
        rolled back when it raises (or when the commit fails: either way a table whose
        column types were read in the transaction may be gone)."""
        with self._conn.cursor() as cur:
            try:
                cur.execute(f"{begin}; SELECT {lock}({_DDL_LOCK})")
                yield cur
                self.collect()
                cur.execute("COMMIT")
            except BaseException:
                if writes:
                    self._types.clear()  # a table's creation may be rolled back
                self._rollback()
                raise

    def _rollback(self) -> None:
        """PostgreSQL: end the open (or failed) transaction, if any. A connection that
        cannot even roll back is lost: the server rolls the transaction back, and the error
        that led here is the one raised."""
        if self._unanswered:
            with suppress(psycopg.Error):
                self.collect()  # its error, if any, is the transaction's: rolled back below
        status = self._conn.info.transaction_status
        if status in (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR):
            with suppress(psycopg.Error):
                self._conn.execute("ROLLBACK")

    def collect(self) -> None:
        """PostgreSQL: wait for the answer of the ``COPY`` sent last, when it has not been
        collected yet (:meth:`Tx._copy`), and raise its error if it failed; else nothing."""
        if not self._unanswered:
            return
        self._unanswered = False
        conn = self._conn
        for result in conn.wait(fetch_many(conn.pgconn)):
            if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding)

    def column_types(self, cursor: Any, table: str) -> dict[str, str]:
        """PostgreSQL: column -> SQL type of ``table`` (as ``format_type`` names it), read
        from the catalog on this connection's first need of ``table`` (see :meth:`Tx.insert`)
        and kept until a schema change or a rolled-back write transaction."""
        types = self._types.get(table)
        if types is None:
            cursor.execute(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
                " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
                (table,),
            )
            types = {str(name): str(kind) for name, kind in cursor.fetchall()}
            self._types[table] = types
        return types

    def positions(self) -> dict[str, tuple[int, int]]:
        """name -> (position, version) of every tracked projection, read in a snapshot under
        the shared advisory lock (as :meth:`read`); on PostgreSQL in **one** round trip (the
        transaction, the lock, the query and the commit as one simple query: a runner reads
        the positions before every batch and after it)."""
        if self.dialect == "sqlite":
            with self.read() as tx:
                return tx.positions()
        with self._lock, self._conn.cursor() as cur:
            try:
                cur.execute(
                    f"{_READ_ONLY}; SELECT pg_advisory_xact_lock_shared({_DDL_LOCK});"
                    f" {_POSITIONS}; COMMIT"
                )
                while [d.name for d in cur.description or ()] != ["name", "position", "version"]:
                    if not cur.nextset():
                        raise ProjectionStoreError("no result for the positions' query")
                rows = cur.fetchall()
            except BaseException:
                self._rollback()
                raise
        return _positions(rows)

    def table_exists(self, table: str) -> bool:
        with self.read() as tx:
            if self.dialect == "sqlite":
                row = tx.one(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                )
            else:
                row = tx.one("SELECT to_regclass(?) IS NOT NULL", (table,))
                return bool(row and row[0])
            return row is not None


_DDL_LOCK = zlib.crc32(b"roundaudit-projections-ddl")
_READ_ONLY = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_POSITIONS = "SELECT name, position, version FROM projection_tracking"


def _positions(rows: Sequence[Row]) -> dict[str, tuple[int, int]]:
    return {str(n): (int(p), int(v)) for n, p, v in rows}


class _AnsweredLater(LibpqWriter):
    """A ``COPY``'s writer that sends the rows and the copy's end and returns without
    waiting for the server's answer (``ended``); :meth:`ProjectionStore.collect` waits for it.
    A copy that raised is ended as psycopg ends it (the error sent, its answer awaited)."""

    def __init__(self, cursor: Any) -> None:
        super().__init__(cursor)
        self.ended = False

    def finish(self, exc: BaseException | None = None) -> None:
        if exc is not None:
            super().finish(exc)
            return
        self.connection.wait(_end_copy(self._pgconn))
        self.ended = True


def _end_copy(pgconn: Any) -> Any:
    """psycopg's ``copy_end`` up to its answer: the end queued and flushed, not awaited."""
    while pgconn.put_copy_end(None) == 0:
        while not (yield Wait.W):
            continue
    while True:
        while not (yield Wait.W):
            continue
        if pgconn.flush() == 0:
            break


#: From this many rows on, :meth:`Tx.insert` without a conflict clause copies them straight
#: into the table (PostgreSQL; fewer go as one pipelined statement a row).
COPY_MIN_ROWS = 8

__all__ = ["COPY_MIN_ROWS", "Dialect", "ProjectionStore", "ProjectionStoreError", "Row", "Tx"]

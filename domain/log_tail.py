"""Reading the log's tail: which aggregates changed after a notification id.

This module owns ``log_tail(after, limit)`` of each store's application recorder (SQLite,
PostgreSQL, in memory; the hooked recorders of ``domain.commits`` are built on these): the
notification id, originator id and version of every event after ``after``, in notification
order, at most ``limit``, without their states. It is what the repository's cache catches up
with once a command (``domain.store.Watched``). One statement each, in a snapshot of its own;
read in notification order, the log never skips a commit (commit order is notification order:
PostgreSQL's inserts hold the table's exclusive lock from their ids to their commit, SQLite's
the database's write lock, the in-memory store's its recorder's lock). On PostgreSQL
``log_tail``, and ``rows_and_tail`` (a commit table's rows of one id and the tail in one
statement: one round trip, one snapshot: a command's idempotency record and its catch-up,
``domain.idempotency``), are each one statement prepared once per pooled connection and sent
through libpq's own calls with its rows in the binary format (:func:`run_prepared`, which
this module owns too, on a connection the pool lends without the library's context managers:
:func:`read_prepared`), as ``api.versions`` reads versions: through psycopg's pipeline and
cursors the two statements cost about 130 us of the client's CPU, one statement through
libpq's calls about 30; ``log_tail`` through a psycopg cursor 38.5 us, through libpq's calls 15.6
(an empty tail; 52.5 and 19.9 with 14 rows), measured alone (``tests/integration/
test_idempotency_record.py``, ``test_cache_current.py``: the same rows and tail as the
library's reads, a statement deallocated since, connections lost); on
SQLite ``rows_and_tail`` reads the same two on one connection of the pool, in two autocommit
statements (one checkout, no transaction around them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final
from uuid import UUID

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from eventsourcing.utils import retry
from psycopg.pq import ExecStatus
from psycopg.sql import SQL, Identifier

from domain.group_commit import library_error
from domain.pg_group import (
    NO_SUCH_STATEMENT,
    PREPARED,
    PSYCOPG_ERRORS,
    SQLSTATE,
    prepared_name,
    raise_for,
)

Tail = list[tuple[int, UUID, int]]
#: Originator ids as SQLite stores them (32 hex digits), or as PostgreSQL sends them in the
#: binary format (16 bytes) -> the UUID: the same aggregates (a round, its wallets, its shoe)
#: come back in every catch-up of every thread (with group commit, about 14 rows of the other
#: tables' saves a command), and building a UUID costs about 1 us where a look-up costs 0.03.
#: Emptied when it reaches ``IDS_KEPT``.
_IDS: dict[str | bytes, UUID] = {}
IDS_KEPT = 100_000


def stored_uuid(value: object) -> UUID:
    """An originator id as a store gives it (a UUID, or its text), as a UUID."""
    return value if isinstance(value, UUID) else UUID(str(value))


class SQLiteTail(SQLiteApplicationRecorder):
    """The library's SQLite application recorder, with :meth:`log_tail`."""

    def log_tail(self, after: int, limit: int) -> Tail:
        """The events after ``after`` (see the module docstring), in one autocommit statement
        (as ``domain.sqlite_reads`` reads an aggregate's)."""
        try:
            with self.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
                c.execute(self._tail_statement(), (after, limit))
                return self._tail_rows(c.fetchall())
        except sqlite3.Error as exc:
            raise library_error(exc) from exc

    def rows_and_tail(
        self, table: str, originator_id: UUID, after: int | None, limit: int
    ) -> tuple[list[StoredEvent], Tail | None]:
        """The rows of ``originator_id`` in the commit table ``table`` (by version), then,
        unless ``after`` is None, the log's tail after ``after`` (as :meth:`log_tail`): two
        autocommit statements on one connection of the pool (``domain.idempotency``: a
        command's idempotency record and its catch-up, ``domain.store.Watched.offer_tail``).
        The library's own read of the rows takes a connection and a transaction of its own
        (``BEGIN``, the ``SELECT``, ``ROLLBACK``); a lone ``SELECT`` reads one snapshot of
        its own all the same (``domain.sqlite_reads``), and the tail, read after it, is as
        current as the catch-up's own read would be."""
        rows_query = (
            f"SELECT originator_version, topic, state FROM {table} WHERE originator_id=? "
            "ORDER BY originator_version"
        )
        try:
            with self.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
                c.execute(rows_query, (originator_id.hex,))
                rows = [
                    StoredEvent(originator_id, int(r[0]), str(r[1]), bytes(r[2]))
                    for r in c.fetchall()
                ]
                if after is None:
                    return rows, None
                c.execute(self._tail_statement(), (after, limit))
                return rows, self._tail_rows(c.fetchall())
        except sqlite3.Error as exc:
            raise library_error(exc) from exc

    def _tail_statement(self) -> str:
        return (
            f"SELECT rowid, originator_id, originator_version FROM {self.events_table_name} "
            "WHERE rowid>? ORDER BY rowid LIMIT ?"
        )

    def _tail_rows(self, rows: Sequence[Any]) -> Tail:
        ids = _IDS
        out: Tail = []
        for nid, text, version in rows:
            oid = ids.get(text)
            if oid is None:
                if len(ids) >= IDS_KEPT:
                    ids.clear()
                oid = ids[text] = stored_uuid(self.convert_originator_id(text))
            out.append((nid, oid, version))
        return out


class PostgresTail(PostgresApplicationRecorder):
    """The library's PostgreSQL application recorder, with :meth:`log_tail`."""

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def log_tail(self, after: int, limit: int) -> Tail:
        """The events after ``after`` (see the module docstring): one prepared statement
        through libpq's own calls, its rows in the binary format (as :meth:`rows_and_tail`)."""
        name, text = self._tail_statement()
        params = [after.to_bytes(8, "big", signed=True), limit.to_bytes(8, "big", signed=True)]
        result = read_prepared(self.datastore, name, text, _TAIL_TYPES, params)
        value, ids = result.get_value, _IDS
        tail: Tail = []
        for r in range(result.ntuples):
            raw = value(r, 1)
            oid = ids.get(raw)
            if oid is None:
                oid = _kept_uuid(raw)
            tail.append((_int(value(r, 0)), oid, _int(value(r, 2))))
        return tail

    def _tail_statement(self) -> tuple[bytes, bytes]:
        """The name and text of :meth:`log_tail`'s statement (made once per process)."""
        schema = self.datastore.schema
        key = (schema, "", self.events_table_name)
        found = _STATEMENTS.get(key)
        if found is None:
            text = (
                SQL(
                    "SELECT notification_id, originator_id, originator_version FROM {}.{} "
                    "WHERE notification_id > $1 ORDER BY notification_id LIMIT $2"
                )
                .format(Identifier(schema), Identifier(self.events_table_name))
                .as_string()
                .encode()
            )
            found = _STATEMENTS[key] = (prepared_name(text), text)
        return found

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def rows_and_tail(
        self, table: str, originator_id: UUID, after: int, limit: int
    ) -> tuple[list[StoredEvent], Tail]:
        """The rows of ``originator_id`` in the commit table ``table`` (by version), and the
        log's tail after ``after`` (as :meth:`log_tail`): one statement, in one snapshot, one
        round trip (``domain.idempotency``: a command's idempotency record and its catch-up,
        ``domain.store.Watched.offer_tail``), sent through libpq's own calls (see the module
        docstring)."""
        name, text = self._rows_and_tail_statement(table)
        params = [originator_id.bytes, after.to_bytes(8, "big"), limit.to_bytes(8, "big")]
        result = read_prepared(self.datastore, name, text, _ROWS_AND_TAIL_TYPES, params)
        return _rows_and_tail(result, originator_id)

    def _rows_and_tail_statement(self, table: str) -> tuple[bytes, bytes]:
        """The name and text of :meth:`rows_and_tail`'s statement: the record's rows (a first
        column 0, its version, its topic and state), then the tail's (1, the notification id,
        the version, the originator id), ordered by those first two columns. Its name is made
        from a digest of its text, so another schema's or table's statement has another."""
        schema = self.datastore.schema
        key = (schema, table, self.events_table_name)
        found = _STATEMENTS.get(key)
        if found is None:
            text = (
                SQL(
                    "SELECT 0, originator_version, NULL::bigint, NULL::uuid, topic, state "
                    "FROM {}.{} WHERE originator_id = $1 UNION ALL "
                    "SELECT 1, notification_id, originator_version, originator_id, NULL, NULL "
                    "FROM (SELECT notification_id, originator_version, originator_id "
                    "FROM {}.{} WHERE notification_id > $2 ORDER BY notification_id LIMIT $3) "
                    "AS tail ORDER BY 1, 2"
                )
                .format(
                    Identifier(schema),
                    Identifier(table),
                    Identifier(schema),
                    Identifier(self.events_table_name),
                )
                .as_string()
                .encode()
            )
            found = _STATEMENTS[key] = (prepared_name(text), text)
        return found


#: The names and texts of :class:`PostgresTail`'s statements, by schema and tables (the
#: commit table's name, or "" for :meth:`PostgresTail.log_tail`'s; made once per process).
_STATEMENTS: dict[tuple[str, str, str], tuple[bytes, bytes]] = {}
#: Their parameters' types (uuid, bigint, bigint; bigint, bigint), all sent, and their rows
#: read, in the binary format.
_ROWS_AND_TAIL_TYPES: Final = [2950, 20, 20]
_TAIL_TYPES: Final = [20, 20]


def run_prepared(
    conn: Any, name: bytes, text: bytes, types: Sequence[int], params: Sequence[bytes]
) -> Any:
    """The rows (binary) of the statement ``text``, prepared as ``name`` once per pooled
    connection ``conn`` (``domain.pg_group.PREPARED``), run with the binary ``params`` of
    ``types`` in one round trip through libpq's own calls, outside a pipeline. A statement
    found deallocated since (``DISCARD ALL``, or psycopg's ``DEALLOCATE ALL`` after a
    ``ROLLBACK`` on the connection) is prepared again, once; anything else the database
    refuses is raised as psycopg's error (``domain.pg_group.raise_for``)."""
    pgconn = conn.pgconn
    prepared = PREPARED.setdefault(conn, set())
    for attempt in range(2):
        if name not in prepared:
            ready = pgconn.prepare(name, text, types)
            if ready.status != ExecStatus.COMMAND_OK:
                raise_for(ready, pgconn)
            prepared.add(name)
        result = pgconn.exec_prepared(name, params, [1] * len(params), 1)
        if result.status == ExecStatus.TUPLES_OK:
            break
        if attempt or result.error_field(SQLSTATE) != NO_SUCH_STATEMENT:
            raise_for(result, pgconn)
        prepared.discard(name)  # deallocated since: prepared again
    return result


def read_prepared(
    datastore: Any, name: bytes, text: bytes, types: Sequence[int], params: Sequence[bytes]
) -> Any:
    """:func:`run_prepared` on a connection of ``datastore``'s pool, taken and given back
    without the library's ``get_connection`` (two generator context managers and psycopg's
    transaction block around a statement that opens no transaction: libpq's calls outside a
    pipeline run it alone, the connection idle again after it, so there is nothing to commit
    or roll back). What that context manager does for it is kept: the pool opened as it opens
    it, the connection given back to the pool whatever happens (which replaces a broken one),
    and psycopg's errors raised as the library's (``domain.pg_group.PSYCOPG_ERRORS``), so that
    the recorders' retry on a lost connection still takes another. The result (libpq's own,
    independent of the connection) is read after the connection is back in the pool."""
    pool = datastore.pool
    timeout = datastore.pool_open_timeout
    try:
        pool.open(timeout is not None, timeout or 30.0)
        conn = pool.getconn()
    except psycopg.Error as exc:
        raise library_error(exc, PSYCOPG_ERRORS) from exc
    try:
        return run_prepared(conn, name, text, types, params)
    except psycopg.Error as exc:
        raise library_error(exc, PSYCOPG_ERRORS) from exc
    finally:
        pool.putconn(conn)


def _int(data: Any) -> int:
    return int.from_bytes(data, "big", signed=True)


def _kept_uuid(raw: Any) -> UUID:
    """The UUID of a binary originator id, kept in ``_IDS`` (emptied at ``IDS_KEPT``)."""
    raw = bytes(raw)
    if len(_IDS) >= IDS_KEPT:
        _IDS.clear()
    oid = _IDS[raw] = UUID(bytes=raw)
    return oid


def _rows_and_tail(result: Any, originator_id: UUID) -> tuple[list[StoredEvent], Tail]:
    """The record's rows and the tail of :meth:`PostgresTail.rows_and_tail`'s binary rows."""
    value, ids = result.get_value, _IDS
    rows: list[StoredEvent] = []
    tail: Tail = []
    for r in range(result.ntuples):
        number = int.from_bytes(value(r, 1), "big", signed=True)
        if value(r, 0) == _RECORD:
            topic, state = value(r, 4), value(r, 5)
            rows.append(StoredEvent(originator_id, number, bytes(topic).decode(), bytes(state)))
            continue
        raw = value(r, 3)
        oid = ids.get(raw)
        if oid is None:
            oid = _kept_uuid(raw)
        tail.append((number, oid, _int(value(r, 2))))
    return rows, tail


_RECORD: Final = (0).to_bytes(4, "big")  # the first column of a record's row (an int4 0)


class PopoTail(POPOApplicationRecorder):
    """The library's in-memory application recorder, with :meth:`log_tail`."""

    def log_tail(self, after: int, limit: int) -> Tail:
        """The events after ``after`` (see the module docstring)."""
        return [
            (n.id, stored_uuid(n.originator_id), n.originator_version)
            for n in self.select_notifications(after, limit, inclusive_of_start=False)
        ]


__all__ = ["PopoTail", "PostgresTail", "SQLiteTail", "Tail", "stored_uuid"]

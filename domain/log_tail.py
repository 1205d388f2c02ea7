"""Reading the log's tail: which aggregates changed after a notification id.

This module owns ``log_tail(after, limit)`` of each store's application recorder (SQLite,
PostgreSQL, in memory; the hooked recorders of ``domain.commits`` are built on these): the
notification id, originator id and version of every event after ``after``, in notification
order, at most ``limit``, without their states. It is what the repository's cache catches up
with once a command (``domain.store.Watched``). One statement each, in a snapshot of its own;
read in notification order, the log never skips a commit (commit order is notification order:
PostgreSQL's inserts hold the table's exclusive lock from their ids to their commit, SQLite's
the database's write lock, the in-memory store's its recorder's lock). On PostgreSQL
``rows_and_tail`` reads a commit table's rows of one id and the tail in one pipeline (one
round trip: a command's idempotency record and its catch-up, ``domain.idempotency``); on
SQLite ``rows_and_tail`` reads the same two on one connection of the pool, in two autocommit
statements (one checkout, no transaction around them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.popo import POPOApplicationRecorder
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composed, Identifier

from domain.group_commit import library_error

Tail = list[tuple[int, UUID, int]]
#: Originator ids as SQLite stores them (32 hex digits) -> the UUID: the same aggregates (a
#: round, its wallets, its shoe) come back in every catch-up of every thread (with group
#: commit, about 14 rows of the other tables' saves a command), and building a UUID from text
#: costs about 1 us where a look-up costs 0.03. Emptied when it reaches ``IDS_KEPT``.
_IDS: dict[str, UUID] = {}
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
        """The events after ``after`` (see the module docstring), one prepared statement."""
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(self._tail_query(), (after, limit), prepare=True)
            return self._tail_rows(curs.fetchall())

    def _tail_query(self) -> SQL | Composed:
        return SQL(
            "SELECT notification_id, originator_id, originator_version FROM {}.{} "
            "WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(Identifier(self.datastore.schema), Identifier(self.events_table_name))

    @staticmethod
    def _tail_rows(rows: Sequence[Any]) -> Tail:
        return [
            (
                int(r["notification_id"]),
                stored_uuid(r["originator_id"]),
                int(r["originator_version"]),
            )
            for r in rows
        ]

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def rows_and_tail(
        self, table: str, originator_id: UUID, after: int, limit: int
    ) -> tuple[list[StoredEvent], Tail]:
        """The rows of ``originator_id`` in the commit table ``table`` (by version), then the
        log's tail after ``after`` (as :meth:`log_tail`): two statements in one pipeline,
        one round trip (``domain.idempotency``: a command's idempotency record and its
        catch-up, ``domain.store.Watched.offer_tail``)."""
        schema = Identifier(self.datastore.schema)
        rows_query = SQL(
            "SELECT originator_version, topic, state FROM {}.{} WHERE originator_id = %s "
            "ORDER BY originator_version"
        ).format(schema, Identifier(table))
        with (
            self.datastore.get_connection() as conn,
            conn.pipeline(),
            conn.cursor() as first,
            conn.cursor() as second,
        ):
            first.execute(rows_query, (originator_id,), prepare=True)
            second.execute(self._tail_query(), (after, limit), prepare=True)
            rows = [
                StoredEvent(
                    originator_id,
                    int(r["originator_version"]),
                    str(r["topic"]),
                    bytes(r["state"]),
                )
                for r in first.fetchall()
            ]
            return rows, self._tail_rows(second.fetchall())


class PopoTail(POPOApplicationRecorder):
    """The library's in-memory application recorder, with :meth:`log_tail`."""

    def log_tail(self, after: int, limit: int) -> Tail:
        """The events after ``after`` (see the module docstring)."""
        return [
            (n.id, stored_uuid(n.originator_id), n.originator_version)
            for n in self.select_notifications(after, limit, inclusive_of_start=False)
        ]


__all__ = ["PopoTail", "PostgresTail", "SQLiteTail", "Tail", "stored_uuid"]

"""Reading an aggregate's events from SQLite in one statement.

This module owns :class:`LeanReads`, the ``select_events`` of the hooked SQLite recorder
(``domain.commits.HookedSQLiteApplicationRecorder``): the library's query for an aggregate's
events, run as one statement in autocommit mode, and its :meth:`LeanReads.last_version`, an
aggregate's last version alone; and its ``_insert_events`` (a transaction's events inserted
by the library's statement on the driver's own cursor, its last id noted for the store's
:class:`~domain.sqlite_watch.LogWatch`) and :meth:`LeanReads.log_end`, the log's end when that
watch knows it without a query. SQLite runs a lone ``SELECT`` in a
read transaction of its own (one snapshot of the database), so the library's ``BEGIN`` and
``ROLLBACK`` around it add two statements and a transaction object and change nothing it
reads (a cached ``get`` 21 -> 11 us when every ``get`` fast-forwarded by one; inside a command
a cached aggregate is now read by none: ``domain.store.Watched``). Errors are the library's,
as its transaction maps them (``domain.group_commit.library_error``).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteCursor

from domain import sqlite_params
from domain.group_commit import library_error
from domain.sqlite_pool import LOG_WATCH

sqlite_params.install()  # the events' state (bytes) bound without the driver's failed look-ups


class LeanReads(SQLiteAggregateRecorder):
    """The library's SQLite recorder, reading an aggregate's events in one statement (and,
    as the hooked application recorder's base, inserting a transaction's events)."""

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The rows of the library's query (see the module docstring), in one statement."""
        statement = self.select_events_statement
        params: list[Any] = [
            originator_id.hex if isinstance(originator_id, UUID) else originator_id
        ]
        if gt is not None:
            statement += "AND originator_version>? "
            params.append(gt)
        if lte is not None:
            statement += "AND originator_version<=? "
            params.append(lte)
        statement += "ORDER BY originator_version " + ("DESC " if desc else "ASC ")
        if limit is not None:
            statement += "LIMIT ? "
            params.append(limit)
        try:
            with self.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
                c.execute(statement, params)
                rows = c.fetchall()
        except sqlite3.Error as exc:
            raise library_error(exc) from exc
        convert = self.convert_originator_id
        return [StoredEvent(convert(r[0]), r[1], r[2], r[3]) for r in rows]

    def last_version(self, originator_id: UUID | str) -> int | None:
        """The version of ``originator_id``'s last stored event (None: nothing stored): what
        ``select_events(originator_id, desc=True, limit=1)`` reads, by the table's primary
        key alone (no row's topic and state read, no event made): every command checks its
        API key at its key's last version (``api.versions``)."""
        try:
            with self.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
                stored = originator_id.hex if isinstance(originator_id, UUID) else originator_id
                c.execute(self._last_version_statement, (stored,))
                row = c.fetchone()
        except sqlite3.Error as exc:
            raise library_error(exc) from exc
        return None if row is None else int(row[0])

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The library's SQLite application recorder's insert (``SQLiteApplicationRecorder.
        _insert_events``: its statement, one execution an event in their order, each event's
        notification id the row id it got), run on the driver's own cursor: without the
        library's cursor wrapper's ``execute`` and ``lastrowid`` calls an event. The same rows
        and ids (``tests/integration/test_record_paths.py``, ``test_event_store.py``)."""
        cursor = c.sqlite_cursor
        execute, statement = cursor.execute, self.insert_events_statement
        returning: list[Any] = []  # row ids, as the library's
        for s in stored_events:
            oid = s.originator_id
            execute(
                statement,
                (oid.hex if isinstance(oid, UUID) else oid, s.originator_version, s.topic, s.state),
            )
            returning.append(cursor.lastrowid)
        watch = getattr(self.datastore, LOG_WATCH, None)
        if watch is not None and returning:  # the transaction's last id so far
            watch.inserted = returning[-1]
        return returning

    def log_end(self) -> int | None:
        """The log's last notification id when this store knows it without a query (nothing
        committed to the database since its own last commit: ``domain.sqlite_watch``), else
        None."""
        watch = getattr(self.datastore, LOG_WATCH, None)
        return None if watch is None else watch.log_end()

    @functools.cached_property
    def _last_version_statement(self) -> str:
        return (
            f"SELECT originator_version FROM {self.events_table_name} WHERE originator_id=? "
            "ORDER BY originator_version DESC LIMIT 1"
        )


__all__ = ["LeanReads"]

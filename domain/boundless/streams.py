"""The queries of the event table that the library's recorders do not offer, on SQLite and
PostgreSQL.

This module owns :class:`StreamRows`: many streams' records read by one query (a few hundred
streams a query, each stream in version order, with or without their notification ids), the
records of one topic in a range of notification ids, one stream's records after a version
(:meth:`StreamRows.after`: the verifier's read of the Merkle log's leaf rows), and the log's
last notification id, each written for SQLite and for PostgreSQL (:meth:`StreamRows.fetch` is
the one place that picks the statement of the store for a query given whole; ``_sqlite_rows``
and ``_postgres_rows`` the one place that runs :meth:`StreamRows.many`'s,
:meth:`StreamRows.after`'s and :meth:`StreamRows.topic_between`'s: a lone ``SELECT`` in
autocommit mode, without the library's transaction around it, its rows plain tuples). Every
method answers None when the store is neither (the in-memory store, or a store that keys its
streams by text): its callers then read another way.

Its users: the round index's read of a boundless round by its own streams
(``domain.boundless.index.RoundIndex.read_by_streams``: the service's round log and the
verifier's bundle) and the verifier's reader of shoes, wallets and many rounds at once
(``replays.bundle.StoreReader``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier
from psycopg.types.string import ByteaBinaryLoader

from domain.event_store import frozen
from domain.group_commit import library_error

#: Streams read by one query (SQLite's limit of host parameters is 32,766 since 3.32).
MANY = 500

#: A stored event with its notification id.
Row = tuple[int, StoredEvent]


class StreamRows:
    """The queries of one store's event table (see the module docstring); ``rows_read``
    counts the rows the queries of many streams and of a topic's range returned."""

    def __init__(self, recorder: AggregateRecorder) -> None:
        self.recorder = recorder
        self.rows_read = 0

    def fetch(
        self, sqlite: tuple[str, Sequence[Any]], postgres: tuple[str, Sequence[Any]]
    ) -> list[Any] | None:
        """The rows of one query of the events table, written for each store (``{table}`` in
        it names the table), with its parameters: ``sqlite`` on SQLite, ``postgres`` on
        PostgreSQL; None when the store is neither (or keys its streams by text). The
        statements are constants of this module's callers."""
        rec = self.recorder
        if isinstance(rec, SQLiteAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            with rec.datastore.transaction(commit=False) as c:
                c.execute(sqlite[0].format(table=rec.events_table_name), list(sqlite[1]))
                return list(c.fetchall())
        if isinstance(rec, PostgresAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            query = SQL(postgres[0]).format(
                table=Identifier(rec.datastore.schema, rec.events_table_name)
            )
            with rec.datastore.transaction(commit=False) as curs:
                curs.execute(query, tuple(postgres[1]))
                return list(curs.fetchall())
        return None

    def last_id(self) -> int | None:
        """The log's last notification id (0 when empty); None when the store is neither
        SQLite nor PostgreSQL. Both commit in notification-id order (SQLite has one writer,
        the PostgreSQL recorder locks the table to insert), so every record up to it is
        committed."""
        rows = self.fetch(
            ("SELECT MAX(rowid) AS last FROM {table}", []),
            ("SELECT MAX(notification_id) AS last FROM {table}", []),
        )
        return None if rows is None else int(rows[0]["last"] or 0)

    def many(
        self,
        ids: list[UUID],
        columns: str,
        tail: str,
        *,
        after: list[int] | None = None,
        recorder: AggregateRecorder | None = None,
    ) -> list[tuple[UUID, Sequence[Any]]] | None:
        """``SELECT originator_id, columns FROM <events> WHERE originator_id IN ids tail``,
        ``MANY`` ids a query, each row with the UUID of ``ids`` it belongs to (that very
        object: the rows of one stream share it) and its values by position (``row[0]`` the
        stored id, then ``columns``' in their order; ``{nid}`` in ``columns`` names the
        notification id; with ``after``: only the rows of ``ids[i]`` whose version is above
        ``after[i]``, by a join with the pairs); None when the recorder is neither SQLite's
        nor PostgreSQL's (or keys its streams by text). ``recorder``: another table of the
        store than the events' (default). PostgreSQL sends the rows in its binary format
        (the ids as their 16 bytes, the states as they are), as plain tuples."""
        chunks = self._chunks(ids, columns, tail, after=after, recorder=recorder)
        if chunks is None:
            return None
        out = [(by_key[row[0]], row) for by_key, rows in chunks for row in rows]
        self.rows_read += len(out)
        return out

    def _chunks(
        self,
        ids: list[UUID],
        columns: str,
        tail: str,
        *,
        after: list[int] | None = None,
        recorder: AggregateRecorder | None = None,
    ) -> list[tuple[dict[Any, UUID], list[Any]]] | None:
        """:meth:`many`'s queries, ``MANY`` ids each: for each, the UUIDs of its ids by the
        stored id a row begins with (the hex text on SQLite, the 16 bytes on PostgreSQL)
        and its rows as they came (not counted in ``rows_read``)."""
        rec = self.recorder if recorder is None else recorder
        out: list[tuple[dict[Any, UUID], list[Any]]] = []
        if isinstance(rec, SQLiteAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            columns = columns.format(nid="rowid")
            for at in range(0, len(ids), MANY):
                chunk = {i.hex: i for i in ids[at : at + MANY]}
                if after is None:
                    statement = (
                        f"SELECT originator_id, {columns} FROM {rec.events_table_name} "
                        f"WHERE originator_id IN ({','.join('?' * len(chunk))}){tail}"
                    )
                    params: list[Any] = list(chunk)
                else:
                    statement = (
                        f"WITH t(id, gt) AS (VALUES {','.join(['(?,?)'] * len(chunk))}) "
                        f"SELECT originator_id, {columns} FROM {rec.events_table_name} JOIN t "
                        f"ON originator_id = t.id AND originator_version > t.gt{tail}"
                    )
                    params = [
                        x for pair in zip(chunk, after[at : at + MANY], strict=True) for x in pair
                    ]
                out.append((chunk, _sqlite_rows(rec, statement, params)))
            return out
        if isinstance(rec, PostgresAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            where = (
                SQL(" WHERE originator_id = ANY(%s)")
                if after is None
                else SQL(
                    " JOIN unnest(%s::uuid[], %s::bigint[]) AS t(id, gt)"
                    " ON originator_id = t.id AND originator_version > t.gt"
                )
            )
            query = SQL("SELECT originator_id, {} FROM {}.{}{}{}").format(
                SQL(columns.format(nid="notification_id")),  # the constants of the callers
                Identifier(rec.datastore.schema),
                Identifier(rec.events_table_name),
                where,
                SQL(tail),
            )
            for at in range(0, len(ids), MANY):
                chunk_ids = ids[at : at + MANY]
                args: tuple[Any, ...] = (
                    (chunk_ids,) if after is None else (chunk_ids, after[at : at + MANY])
                )
                # the id column as its 16 bytes: the UUID of ``ids`` is found by them, no
                # UUID is built a row
                rows = _postgres_rows(rec, query, args, uuid_bytes=True)
                out.append(({i.bytes: i for i in chunk_ids}, rows))
            return out
        return None

    def after(
        self, oid: UUID, columns: str, version: int, *, limit: int | None = None
    ) -> list[Sequence[Any]] | None:
        """``SELECT columns FROM <table> WHERE originator_id = oid AND originator_version >
        version ORDER BY originator_version [LIMIT limit]``: one stream's rows after a version
        (the first ``limit`` of them), in version
        order, as plain tuples (PostgreSQL's in its binary format); None as :meth:`many`. A
        range of the primary key, read in its order: :meth:`many` of one stream joins it
        with its pairs and sorts the rows it found, which for the Merkle log's leaf rows (the
        whole log, read by a verifier without state) cost more than reading them."""
        rec = self.recorder
        rows: list[Sequence[Any]]
        if isinstance(rec, SQLiteAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            statement = (
                f"SELECT {columns} FROM {rec.events_table_name} WHERE originator_id = ? "
                "AND originator_version > ? ORDER BY originator_version"
            ) + (" LIMIT ?" if limit is not None else "")
            params: list[Any] = [oid.hex, version]
            rows = _sqlite_rows(rec, statement, params if limit is None else [*params, limit])
        elif isinstance(rec, PostgresAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            query = SQL(
                "SELECT {} FROM {}.{} WHERE originator_id = %s AND originator_version > %s "
                "ORDER BY originator_version" + (" LIMIT %s" if limit is not None else "")
            ).format(
                SQL(columns),  # the constants of the callers
                Identifier(rec.datastore.schema),
                Identifier(rec.events_table_name),
            )
            args = (oid, version) if limit is None else (oid, version, limit)
            rows = _postgres_rows(rec, query, args)
        else:
            return None
        self.rows_read += len(rows)
        return rows

    def streams(self, ids: list[UUID]) -> dict[UUID, list[Row]] | None:
        """Every stored event of the streams ``ids`` with its notification id, each stream in
        version order (``MANY`` streams a query; a stream with no record is absent); None when
        the store is neither SQLite nor PostgreSQL."""
        chunks = self._chunks(
            ids,
            "{nid}, originator_version, topic, state",
            " ORDER BY originator_id, originator_version",
        )
        if chunks is None:
            return None
        found: dict[UUID, list[Row]] = {}
        topics: dict[str, str] = {}  # each topic one string, not one a row
        stream: list[Row] = []
        for by_key, rows in chunks:
            self.rows_read += len(rows)
            current: Any = None
            for key, nid, version, topic, state in rows:
                if key != current:  # the rows of one stream come one after the other
                    current = key
                    oid = by_key[key]
                    stream = found.setdefault(oid, [])
                event = stored_event(
                    oid, version, topics.setdefault(topic, topic), stored_bytes(state)
                )
                stream.append((nid, event))
        return found

    def topic_between(self, topic: str, first: int, last: int) -> list[Row] | None:
        """The records of ``topic`` whose notification id is from ``first`` to ``last``, with
        those ids, in their order: one query of an indexed range of notification ids, the
        topic filtered in the database; None when the store is neither SQLite nor
        PostgreSQL (or keys its streams by text). The rows come as plain tuples (no
        ``sqlite3.Row`` a row), each stored event built by :func:`stored_event` (as
        :meth:`streams`'), its id made once from the stored one (PostgreSQL's binary rows
        give it as a ``UUID`` already)."""
        rec = self.recorder
        rows: list[Any]
        if isinstance(rec, SQLiteAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            rows = _sqlite_rows(
                rec,
                "SELECT rowid, originator_id, originator_version, topic, state FROM "
                f"{rec.events_table_name} WHERE topic = ? AND rowid >= ? AND rowid <= ? "
                "ORDER BY rowid",
                [topic, first, last],
            )
        elif isinstance(rec, PostgresAggregateRecorder):
            if rec.datastore.originator_id_type != "uuid":
                return None
            query = SQL(
                "SELECT notification_id, originator_id, originator_version, topic, state "
                "FROM {}.{} WHERE topic = %s AND notification_id >= %s AND "
                "notification_id <= %s ORDER BY notification_id"
            ).format(Identifier(rec.datastore.schema), Identifier(rec.events_table_name))
            rows = _postgres_rows(rec, query, (topic, first, last))
        else:
            return None
        self.rows_read += len(rows)
        return [
            (
                int(nid),
                stored_event(
                    oid if type(oid) is UUID else UUID(str(oid)),
                    version,
                    topic,
                    stored_bytes(state),
                ),
            )
            for nid, oid, version, _, state in rows
        ]


def _sqlite_rows(rec: SQLiteAggregateRecorder, statement: str, params: list[Any]) -> list[Any]:
    """The rows of one ``SELECT`` of :meth:`StreamRows.many` and :meth:`StreamRows.after` on
    SQLite, as plain tuples (no ``sqlite3.Row`` a row), run alone in autocommit mode on a
    connection of the pool: SQLite reads a lone statement in a read transaction of its own
    (one snapshot, as ``domain.sqlite_reads``), so the library's ``BEGIN`` and ``ROLLBACK``
    around it would change nothing it reads. Errors are the library's
    (``domain.group_commit.library_error``)."""
    try:
        with rec.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
            c.row_factory = None  # plain tuples (this statement's own cursor)
            c.execute(statement, params)
            rows: list[Any] = c.fetchall()
            return rows
    except sqlite3.Error as exc:
        raise library_error(exc) from exc


def _postgres_rows(
    rec: PostgresAggregateRecorder,
    query: Composed,
    args: Sequence[Any],
    *,
    uuid_bytes: bool = False,
) -> list[Any]:
    """The rows of one ``SELECT`` of :meth:`StreamRows.many` and :meth:`StreamRows.after` on
    PostgreSQL, in the binary format, as plain tuples (``uuid_bytes``: a ``uuid`` column as its
    16 bytes), sent alone on a connection of the pool, which the library keeps in autocommit
    mode: one statement is one snapshot of its own (any isolation level), so the library's
    transaction around it (``BEGIN``, the query, ``ROLLBACK``: three round trips where one
    does) would change nothing it reads. Errors are the library's (its ``get_connection``
    maps psycopg's)."""
    with (
        rec.datastore.get_connection() as conn,
        conn.cursor(binary=True, row_factory=tuple_row) as binary,
    ):
        if uuid_bytes:
            binary.adapters.register_loader("uuid", ByteaBinaryLoader)
        binary.execute(query, args)
        return list(binary.fetchall())


def stored_event(originator_id: UUID, version: int, topic: str, state: bytes) -> StoredEvent:
    """``StoredEvent(originator_id, version, topic, state)``, the same object (equal, the same
    fields, the same class) built by ``domain.event_store.frozen``, without the frozen
    dataclass's ``__init__``, which sets each field through ``object.__setattr__``: half the
    cost, for the tens of thousands of rows of a boundless round and its players' wallets.

    >>> from uuid import UUID
    >>> u = UUID(int=7)
    >>> stored_event(u, 1, "t", b"{}") == StoredEvent(u, 1, "t", b"{}")
    True
    """
    return frozen(
        StoredEvent,
        {"originator_id": originator_id, "originator_version": version, "topic": topic,
         "state": state},
    )  # fmt: skip


def stored_bytes(state: Any) -> bytes:
    """A stored state as ``bytes`` (SQLite and PostgreSQL's binary rows give them already)."""
    return state if type(state) is bytes else bytes(state)


__all__ = ["MANY", "Row", "StreamRows", "stored_bytes", "stored_event"]

"""PostgreSQL: a group of concurrent saves committed in one pipeline, two round trips.

This module owns the two ways ``domain.commits``' PostgreSQL recorder commits a group
(``domain.group_commit``). First :func:`commit_pipelined`: BEGIN, the events table's lock
(``LOCK TABLE ... IN EXCLUSIVE MODE``, which keeps commit order equal to notification order)
and NOTIFY once for the group, every save's insert (a cursor each), one sync for the
notification ids they got; then every save's writers' rows (its Merkle leaf, its idempotency
record) and the COMMIT, sent together. Without a pipeline, with a savepoint per save, a group
made eight round trips a save, most of them under the lock.

When the database refuses one of the statements (an event at a version another writer took,
a writer's row under a key taken, which it reports only with the COMMIT), nothing of the group
is stored: :func:`commit_pipelined` answers False and the recorder commits the group again
with a savepoint per save (:func:`commit_with_savepoints`), so that the conflict is its
save's alone. Any other failure before
the COMMIT was sent is raised as one before the commit (each save is then committed alone);
after it, as the commit's (``inserted``: the group fails). ``tests/integration/
test_pg_pipelined_group.py``.

It also owns how the hooked PostgreSQL recorders **insert rows** (:func:`insert_rows`: the
events of a save, and the commit writers' rows, ``domain.commits``): up to
:data:`VALUES_ROWS` rows by one prepared ``INSERT ... VALUES`` with plain parameters (an id, a
version, a topic, the state's bytes), whose text is made once (:func:`statement`); more by the
library's own statement, one array of its composite type. The rows stored, their order and
their notification ids are the same either way; the library's composite array is dumped
value by value in Python, about three times the CPU of the plain parameters (measured: 80-100
against 30-45 us for one row, 590 against 210 us for 20). ``tests/integration/
test_pg_pipelined_group.py`` (the same rows and ids as the library's statement).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final

import psycopg
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder
from psycopg.sql import SQL, Composable, Identifier

from domain.group_commit import Pending

#: Runs a save's writers in the open transaction: (cursor, its events, their ids, its kwargs).
Write = Callable[[Any, Sequence[StoredEvent], Any, Mapping[str, Any]], None]


#: The most rows :func:`insert_rows` inserts by ``VALUES`` (four parameters a row); a save of
#: more rows (a boundless round's) is inserted by the library's composite array.
VALUES_ROWS: Final = 32

_STATEMENTS: dict[Hashable, bytes] = {}


def statement(curs: Any, key: Hashable, build: Callable[[], Composable]) -> bytes:
    """The text of the statement ``build`` composes, composed once per ``key`` (a statement's
    ``Composed.as_bytes`` otherwise runs at each execution) and kept for the process: the
    inserts here, and ``api.versions``' statement of several ids' last versions."""
    text = _STATEMENTS.get(key)
    if text is None:
        text = _STATEMENTS[key] = build().as_bytes(curs)
    return text


def insert_rows(
    curs: Any, table: PostgresAggregateRecorder, rows: Sequence[StoredEvent], *, ids: bool
) -> None:
    """Insert ``rows`` into ``table``'s events table, in their order, by one statement (with
    ``ids``, ``RETURNING notification_id``: the application recorder's table, whose ids the
    library's ``_fetch_ids_after_insert_events`` then reads); see the module docstring."""
    n = len(rows)
    if n == 0:
        return
    if n > VALUES_ROWS:
        PostgresAggregateRecorder._insert_stored_events(table, curs, rows)
        return
    schema, name = table.datastore.schema, table.events_table_name

    def build() -> Composable:
        return (
            SQL(
                "INSERT INTO {}.{} (originator_id, originator_version, topic, state) VALUES "
            ).format(Identifier(schema), Identifier(name))
            + SQL(", ").join([SQL("(%s, %s, %s, %s)")] * n)
            + SQL(" RETURNING notification_id" if ids else "")
        )

    query = statement(curs, ("insert", schema, name, n, ids), build)
    params: list[Any] = []
    for r in rows:
        params += (r.originator_id, r.originator_version, r.topic, r.state)
    curs.execute(query, params, prepare=True)


def commit_pipelined(
    recorder: Any, batch: list[Pending], inserted: list[bool], write: Write
) -> bool:
    """Commit ``batch`` in one pipeline on ``recorder`` (the library's PostgreSQL application
    recorder): True when committed (each save's ids set), False when the database refused a
    statement (nothing stored, each save's outcome still to decide); see the module
    docstring."""
    refused = False
    sent: list[bool] = []
    with recorder.datastore.get_connection() as conn:
        try:
            with conn.pipeline() as pipeline, conn.transaction(), conn.cursor() as curs:
                cursors = [conn.cursor() for _ in batch]
                if any(item.events for item in batch):
                    recorder._lock_table(curs)
                    recorder._notify_channel(curs)
                for item, c in zip(batch, cursors, strict=True):
                    insert_rows(c, recorder, item.events, ids=True)
                pipeline.sync()
                for item, c in zip(batch, cursors, strict=True):
                    ids = None
                    if item.events:
                        ids = recorder._fetch_ids_after_insert_events(c, item.events)
                    write(c, item.events, ids, item.kwargs)
                    item.ids, item.error = ids, None
                sent.append(True)  # the writers' rows go with the COMMIT, at the exit
        except (psycopg.IntegrityError, IntegrityError):
            refused = True
        except Exception:
            if sent:
                inserted.append(True)
            raise
    if refused:
        for item in batch:
            item.ids = item.error = None
        return False
    inserted.append(True)
    return True


def commit_with_savepoints(
    recorder: Any, batch: list[Pending], inserted: list[bool], write: Write
) -> None:
    """Commit ``batch`` in one transaction, a savepoint per save, each statement its own round
    trip (errors surface in their save's savepoint): a save that meets a conflict is rolled
    back to its savepoint and gets it as its error; the others commit."""
    with recorder.datastore.get_connection() as conn, conn.transaction():
        for item in batch:
            try:
                with conn.transaction(), conn.cursor() as curs:  # a savepoint
                    ids = None
                    if item.events:
                        recorder._insert_stored_events(curs, item.events, **item.kwargs)
                        ids = recorder._fetch_ids_after_insert_events(curs, item.events)
                    write(curs, item.events, ids, item.kwargs)
            except (psycopg.IntegrityError, IntegrityError) as exc:
                item.ids, item.error = None, IntegrityError(str(exc))
                item.error.__cause__ = exc
            else:
                item.ids = ids
        inserted.append(True)


__all__ = [
    "VALUES_ROWS",
    "Write",
    "commit_pipelined",
    "commit_with_savepoints",
    "insert_rows",
    "statement",
]

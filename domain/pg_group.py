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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder

from domain.group_commit import Pending

#: Runs a save's writers in the open transaction: (cursor, its events, their ids, its kwargs).
Write = Callable[[Any, Sequence[StoredEvent], Any, Mapping[str, Any]], None]


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
                    if item.events:
                        PostgresAggregateRecorder._insert_stored_events(recorder, c, item.events)
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


__all__ = ["Write", "commit_pipelined", "commit_with_savepoints"]

"""SQLite: a group of concurrent saves committed in one transaction.

This module owns the way ``domain.commits``' SQLite recorder commits a group
(``domain.group_commit``): :func:`commit_together` inserts every save of the group (its events,
then its writers' rows: its Merkle leaf, its side rows) in one transaction with no savepoint
(:func:`commit_plainly`). When one of them conflicts (an event at a version another writer
took, a writer's row under a key taken), nothing of the group is stored: the transaction is
rolled back and the group inserted again with a savepoint per save
(:func:`commit_with_savepoints`), so that the conflict is its save's alone, as PostgreSQL's
pipelined group does (``domain.pg_group``). A group that meets no conflict runs two statements a
save fewer (``SAVEPOINT``, ``RELEASE``). ``inserted`` is marked once every save is in, before the
commit: a failure after it is the commit's (the group fails, ``commit_or_fall_back``).
``tests/integration/test_group_commit.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.sqlite import SQLiteCursor

from domain.group_commit import Pending, library_error

CONFLICTS = (sqlite3.IntegrityError, IntegrityError)


class GroupRecorder(Protocol):
    """What the group's transaction needs of the hooked SQLite recorder."""

    datastore: Any

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None: ...


def commit_together(recorder: GroupRecorder, batch: list[Pending], inserted: list[bool]) -> None:
    """The group in one transaction, with a savepoint a save only after a conflict."""
    if not commit_plainly(recorder, batch, inserted):
        commit_with_savepoints(recorder, batch, inserted)


def commit_plainly(recorder: GroupRecorder, batch: list[Pending], inserted: list[bool]) -> bool:
    """The group's saves in one transaction, committed: False, with nothing of the group
    stored, when one of them conflicts."""
    try:
        with recorder.datastore.transaction(commit=True) as c:
            for item in batch:
                item.ids = recorder._insert_events(c, item.events, **item.kwargs)
            inserted.append(True)
    except CONFLICTS:
        if inserted:  # the commit itself: not a save's conflict
            raise
        for item in batch:
            item.ids = None
        return False
    return True


def commit_with_savepoints(
    recorder: GroupRecorder, batch: list[Pending], inserted: list[bool]
) -> None:
    """The group in one transaction, each save in a savepoint of its own: a save that
    conflicts is rolled back to its savepoint and given its conflict alone."""
    with recorder.datastore.transaction(commit=True) as c:
        for item in batch:
            c.execute("SAVEPOINT grouped_save")
            try:
                item.ids = recorder._insert_events(c, item.events, **item.kwargs)
            except CONFLICTS as exc:
                c.execute("ROLLBACK TO grouped_save")
                item.ids, item.error = None, library_error(exc)
            c.execute("RELEASE grouped_save")
        inserted.append(True)


__all__ = ["commit_plainly", "commit_together", "commit_with_savepoints"]

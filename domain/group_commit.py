"""Group commit: the saves of concurrent threads of one process share a database transaction.

This module owns :class:`GroupCommitter` (who commits which saves together, and when each
caller is released) and :func:`commit_or_fall_back` (a group's transaction, or its saves one
by one when the group fails before its commit). The stores' hooked recorders
(``domain.commits``) give it their way of committing a group: a savepoint per save inside one
transaction, the commit hook's writers run per save (one Merkle leaf per ``app.save``).

What it guarantees (``tests/integration/test_group_commit.py``, real threads, SQLite and
PostgreSQL): every caller returns only after the transaction holding its events committed
(durable as the store is configured: SQLite's write-ahead log synced, PostgreSQL with
synchronous commit on), or raises and nothing of its save is stored; a conflict is its own
save's; the calls that arrive during a commit form the next group, so no caller waits for
more than the commit in progress and its own.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    StoredEvent,
)


@dataclass(eq=False)
class Pending:
    """One ``insert_events`` call waiting for its group's commit."""

    events: Sequence[StoredEvent]
    kwargs: Mapping[str, Any]
    ids: Sequence[int] | None = None
    error: BaseException | None = None
    done: bool = False
    #: held while its caller waits; released once, by a leader: its group committed (``done``)
    #: or its turn to lead the next group
    wake: Any = None


class GroupCommitter:
    """Concurrent ``insert_events`` calls of one process share a database transaction.

    The first caller to find no commit running becomes the *leader*: it takes every call
    queued so far (its own among them) and runs them in one transaction, each in a savepoint
    of its own (``commit_group``): a call whose insert or writer fails (a conflict: another
    writer's event at the same version) is rolled back to its savepoint and gets its own
    error, the others go on. The calls that arrive while that commit runs queue up and form
    the next group, so a call waits at most for the commit in progress and then its own; a
    caller alone commits at once (a group of one). Every caller returns (or raises) only
    once its group's transaction has committed (or failed: then every call of the group that
    had not failed alone raises the commit's error, and nothing of the group is recorded).
    Each call still runs the commit writers once, with its own events and keyword arguments:
    one Merkle leaf per ``app.save``, exactly as without grouping (``domain.commit_leaf``).

    Each waiting caller sleeps on a lock of its own (:attr:`Pending.wake`), released once by
    the leader that committed its group, or, for the first call queued during a commit, to
    make it the next group's leader: a commit wakes the threads of its group and that one,
    never the others still queued (one shared condition woke every waiting thread on every
    commit, to find most of them not done: 5 % of an HTTP deposit's CPU).
    """

    def __init__(self, commit_group: Callable[[list[Pending]], None]) -> None:
        self._commit_group = commit_group
        self._lock = threading.Lock()
        self._queue: list[Pending] = []  # calls waiting for the next group (arrival order)
        self._leading = False  # a leader is committing (or about to): the queue waits for it
        #: groups committed and the calls they carried (for tests and benchmarks)
        self.groups = 0
        self.calls = 0

    def submit(
        self, events: Sequence[StoredEvent], kwargs: Mapping[str, Any]
    ) -> Sequence[int] | None:
        item = Pending(events, kwargs)
        interrupted: BaseException | None = None
        with self._lock:
            if self._leading:
                item.wake = threading.Lock()
                item.wake.acquire()
                self._queue.append(item)
            else:
                self._leading = True
        if item.wake is not None:
            interrupted = _wait(item.wake)  # released: done, or this call leads the next group
            if not item.done:
                with self._lock:
                    batch, self._queue = self._queue, []  # this call first
        else:
            batch = [item]  # the queue is empty when no one leads
        if not item.done:
            self._lead(batch)
        if interrupted is not None:
            raise interrupted
        if item.error is not None:
            raise item.error
        return item.ids

    def _lead(self, batch: list[Pending]) -> None:
        """Commit ``batch``, release each of its callers, hand the lead to the first call
        queued meanwhile (or give it up)."""
        try:
            self._commit_group(batch)
        except BaseException as exc:  # the group's transaction failed: none of it is stored
            for other in batch:
                if other.error is None:
                    other.ids, other.error = None, exc
        finally:
            with self._lock:
                for other in batch:
                    other.done = True
                self.groups += 1
                self.calls += len(batch)
                after = self._queue[0] if self._queue else None
                if after is None:
                    self._leading = False
            if after is not None:  # first: the next group's commit starts at once
                after.wake.release()
            for other in batch:
                if other.wake is not None:
                    other.wake.release()


def _wait(wake: Any) -> BaseException | None:
    """Acquire ``wake`` whatever interrupts the wait; the interruption (a signal's exception
    in the main thread), for the caller to raise once its call's outcome is settled: a leader
    may be committing its save, or hand it the next group's lead, which must not be lost."""
    interrupted: BaseException | None = None
    while True:
        try:
            wake.acquire()
        except BaseException as exc:
            interrupted = exc
            continue
        return interrupted


SQLITE_ERRORS: tuple[tuple[type[Exception], type[Exception]], ...] = (
    (sqlite3.IntegrityError, IntegrityError),
    (sqlite3.InterfaceError, InterfaceError),
    (sqlite3.DataError, DataError),
    (sqlite3.OperationalError, OperationalError),
    (sqlite3.InternalError, InternalError),
    (sqlite3.ProgrammingError, ProgrammingError),
    (sqlite3.NotSupportedError, NotSupportedError),
    (sqlite3.DatabaseError, DatabaseError),
)


def library_error(exc: Exception) -> Exception:
    """The library's exception for a sqlite3 one (as its transaction would raise it)."""
    for raw, ours in SQLITE_ERRORS:
        if isinstance(exc, raw):
            error = ours(exc)
            error.__cause__ = exc
            return error
    return exc


def commit_or_fall_back(
    batch: list[Pending],
    together: Callable[[list[Pending], list[bool]], None],
    alone: Callable[[Pending], Sequence[int] | None],
    *,
    fatal: tuple[type[BaseException], ...] = (),
) -> None:
    """Commit ``batch`` in one transaction (``together``, which sets each save's ids or its
    conflict, and marks ``inserted`` once every save is in, before the commit); if that fails
    before the commit (with no ``fatal`` error), roll it back and commit each save alone
    (``alone``), each with its own outcome. A failed commit fails the whole group."""
    if len(batch) > 1:
        inserted: list[bool] = []
        try:
            together(batch, inserted)
        except fatal:
            raise
        except Exception:
            if inserted:  # the commit itself failed: the group's callers all raise it
                raise
            for item in batch:  # rolled back before the commit: none of it is stored
                item.ids = item.error = None
        else:
            return
    for item in batch:
        try:
            item.ids = alone(item)
        except Exception as exc:
            item.ids, item.error = None, exc


__all__ = ["SQLITE_ERRORS", "GroupCommitter", "Pending", "commit_or_fall_back", "library_error"]

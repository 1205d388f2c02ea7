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
    """

    def __init__(self, commit_group: Callable[[list[Pending]], None]) -> None:
        self._commit_group = commit_group
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[Pending] = []
        self._leading = False
        #: groups committed and the calls they carried (for tests and benchmarks)
        self.groups = 0
        self.calls = 0

    def submit(
        self, events: Sequence[StoredEvent], kwargs: Mapping[str, Any]
    ) -> Sequence[int] | None:
        item = Pending(events, kwargs)
        with self._cond:
            self._queue.append(item)
            while self._leading and not item.done:
                self._cond.wait()
            if not item.done:
                self._leading = True
                batch, self._queue = self._queue, []
        if not item.done:
            try:
                self._commit_group(batch)
            except BaseException as exc:  # the group's transaction failed: none of it is stored
                for other in batch:
                    if other.error is None:
                        other.ids, other.error = None, exc
            finally:
                with self._cond:
                    for other in batch:
                        other.done = True
                    self.groups += 1
                    self.calls += len(batch)
                    self._leading = False
                    self._cond.notify_all()
        if item.error is not None:
            raise item.error
        return item.ids


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

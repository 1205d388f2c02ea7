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
more than the commit in progress and its own, and, when other commands are in flight, the
bounded wait of the group's leader for them (:attr:`GroupCommitter.wait`, the store URL's
``commit_delay``; never more than :data:`MAX_WAIT`, never when no other command is in flight).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
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

#: How long, by default, a group's leader waits for the saves of the other commands in flight
#: before it commits (seconds; chosen by measurement: docs/performance-history.md, branch
#: ``savepath``). The store URL's ``commit_delay`` (microseconds) sets it.
DEFAULT_WAIT = 0.0005
#: The longest wait a store may be given (microseconds, and seconds): an acknowledgement is
#: never delayed more than a few milliseconds by it.
MAX_WAIT_US = 5000
MAX_WAIT = MAX_WAIT_US / 1e6
#: (notification id, originator id, version) of a committed event, as a group's leader tells
#: them (:attr:`GroupCommitter.committed`).
Row = tuple[int, Any, int]
#: The keyword argument of a save (``app.save(..., **{CARRIED: ...})``) that its group's leader
#: gives back to :attr:`GroupCommitter.committed` with the save's events (the application's
#: repository: the aggregates the save records, ``domain.services.base.AuditBase._record``).
CARRIED = "group_commit_carried"
#: One save as a group's leader tells it: its events' rows and what it carried.
Told = tuple[list[Row], Any]
_log = logging.getLogger(__name__)
#: The environment key of the wait, in microseconds (the store URL's ``commit_delay``:
#: ``domain.persistence.environment_for``; read by ``domain.commits.hooked_recorder``).
COMMIT_DELAY_ENV = "COMMIT_DELAY_US"


def wait_from(text: str | None) -> float:
    """The wait in seconds that ``COMMIT_DELAY_ENV``'s value sets (absent: ``DEFAULT_WAIT``)."""
    if text is None or text == "":
        return DEFAULT_WAIT
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_WAIT_US:
        raise ValueError(f"{COMMIT_DELAY_ENV}: whole microseconds to {MAX_WAIT_US}, not {text!r}")
    return int(text) / 1e6


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

    **Waiting for the commands in flight** (``wait`` seconds, at most :data:`MAX_WAIT`): the
    application tells the committer when a command begins and ends (:meth:`begin`,
    :meth:`end`: ``domain.store.Watched.current``). Before it commits, a leader that finds
    more commands in flight than calls gathered (its group and the calls queued since) waits,
    at most ``wait`` from when it took the lead, for them to submit their saves or end; the
    calls that arrive meanwhile join its group. It commits as soon as every command in flight
    has submitted or ended, or the time is up: a command alone never waits, and a call waits
    at most ``wait`` more than without it (at a moderate rate, the groups are larger: the
    commit's sync is shared by more commands). Commits made outside a command (counted by no
    :meth:`begin`) never make a leader wait. With ``wait`` 0 the grouping is as described in
    the first paragraph alone.

    Each waiting caller sleeps on a lock of its own (:attr:`Pending.wake`), released once by
    the leader that committed its group, or, for the first call queued during a commit, to
    make it the next group's leader: a commit wakes the threads of its group and that one,
    never the others still queued (one shared condition woke every waiting thread on every
    commit, to find most of them not done: 5 % of an HTTP deposit's CPU).

    **Telling the cache** (:attr:`committed`): once a group of more than one save has
    committed, its leader gives each recorded save that carries :data:`CARRIED` (its events'
    notification ids, originator ids and versions, and what it carried), in notification
    order, to :attr:`committed` (``domain.store.Watched.committed``) before it releases any
    caller, so that the repository's cache holds the saves and its mark passes them at the
    commit itself: the catch-ups of the commands that begin meanwhile do not read them back
    from the log (about 14 rows a command with 8 tables, when each save reached the cache
    only as its caller woke). A group of one is not told: its only caller is the leader,
    which reports its save at once. A failure of :attr:`committed` is logged and changes
    nothing for the callers (their saves are committed and they report them themselves).
    """

    def __init__(self, commit_group: Callable[[list[Pending]], None], *, wait: float = 0.0) -> None:
        self._commit_group = commit_group
        self.wait = wait
        self._lock = threading.Lock()
        self._joined = threading.Condition(self._lock)  # a leader gathering waits on it
        self._gathering = False  # a leader waits on _joined: tell it of a call or an end
        self._queue: list[Pending] = []  # calls waiting for the next group (arrival order)
        self._leading = False  # a leader is committing (or about to): the queue waits for it
        self._active = 0  # commands in flight (begun, not ended)
        #: groups committed and the calls they carried, and the groups whose leader waited
        #: (for tests and benchmarks)
        self.groups = 0
        self.calls = 0
        self.waited = 0
        #: told the events of each group of more than one save once it has committed, before
        #: its callers are released (see the class docstring)
        self.committed: Callable[[list[Told]], None] | None = None

    @property
    def wait(self) -> float:
        """Seconds a leader waits at most for the commands in flight (0: never)."""
        return self._wait

    @wait.setter
    def wait(self, seconds: float) -> None:
        if not 0 <= seconds <= MAX_WAIT:
            raise ValueError(f"a group commit waits 0 to {MAX_WAIT} s, not {seconds!r}")
        self._wait = seconds

    def begin(self) -> None:
        """A command that may save has begun (its leader may wait for its save)."""
        with self._lock:
            self._active += 1

    def end(self) -> None:
        """The command has ended (saved, refused or failed): no leader waits for it."""
        with self._lock:
            self._active -= 1
            if self._gathering:
                self._joined.notify()

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
                if self._gathering:
                    self._joined.notify()
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
            if self.wait > 0:
                interrupted = self._gather(batch) or interrupted
            self._lead(batch)
        if interrupted is not None:
            raise interrupted
        if item.error is not None:
            raise item.error
        return item.ids

    def _gather(self, batch: list[Pending]) -> BaseException | None:
        """While more commands are in flight than calls gathered, wait (up to ``wait``) for
        their calls, then add the calls queued meanwhile to ``batch``. An interruption of the
        wait (a signal's exception) ends it; it is returned, for the caller to raise once its
        call's outcome is settled."""
        deadline = time.monotonic() + self.wait
        interrupted: BaseException | None = None
        with self._lock:
            waited = False
            while self._active > len(batch) + len(self._queue):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                waited = True
                self._gathering = True
                try:
                    self._joined.wait(remaining)
                except BaseException as exc:
                    interrupted = exc
                    break
                finally:
                    self._gathering = False
            if waited:
                self.waited += 1
            batch.extend(self._queue)
            self._queue = []
        return interrupted

    def _lead(self, batch: list[Pending]) -> None:
        """Commit ``batch``, release each of its callers, hand the lead to the first call
        queued meanwhile (or give it up)."""
        try:
            self._commit_group(batch)
        except BaseException as exc:  # the group's transaction failed: none of it is stored
            for other in batch:
                if other.error is None:
                    other.ids, other.error = None, exc
        else:
            if self.committed is not None and len(batch) > 1:
                self._tell(self.committed, batch)
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

    @staticmethod
    def _tell(committed: Callable[[list[Told]], None], batch: list[Pending]) -> None:
        """Give ``committed`` the saves of the group ``batch`` that were recorded and carry
        :data:`CARRIED`, in notification order."""
        saves: list[Told] = []
        for item in batch:
            carried = item.kwargs.get(CARRIED)
            if item.error is not None or not item.events or carried is None:
                continue
            if item.ids is None or len(item.ids) != len(item.events):
                return  # not numbered as expected: the callers report their own saves
            rows = [
                (int(n), e.originator_id, e.originator_version)
                for e, n in zip(item.events, item.ids, strict=True)
            ]
            saves.append((rows, carried))
        saves.sort(key=lambda save: save[0][0][0])
        try:
            committed(saves)
        except Exception:  # committed: the callers report their own saves, as without it
            _log.exception("telling the cache of a group commit's saves failed")


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


#: The library's errors, each the one a DB-API driver's error of the same name becomes (the
#: more specific first, ``DatabaseError`` after its subclasses).
LIBRARY_ERRORS: tuple[type[Exception], ...] = (
    IntegrityError,
    InterfaceError,
    DataError,
    OperationalError,
    InternalError,
    ProgrammingError,
    NotSupportedError,
    DatabaseError,
)


def driver_errors(driver: Any) -> tuple[tuple[type[Exception], type[Exception]], ...]:
    """Each of the DB-API module ``driver``'s errors with the library's of its name
    (:data:`LIBRARY_ERRORS`' order)."""
    return tuple((getattr(driver, ours.__name__), ours) for ours in LIBRARY_ERRORS)


SQLITE_ERRORS = driver_errors(sqlite3)


def library_error(
    exc: Exception, errors: Sequence[tuple[type[Exception], type[Exception]]] = SQLITE_ERRORS
) -> Exception:
    """The library's exception for a sqlite3 one (as its transaction would raise it), or for
    one of another driver's ``errors`` (``domain.pg_group.PSYCOPG_ERRORS``: as the library's
    ``get_connection`` raises it)."""
    for raw, ours in errors:
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


__all__ = [
    "CARRIED",
    "COMMIT_DELAY_ENV",
    "DEFAULT_WAIT",
    "MAX_WAIT",
    "MAX_WAIT_US",
    "SQLITE_ERRORS",
    "GroupCommitter",
    "Pending",
    "Row",
    "Told",
    "commit_or_fall_back",
    "library_error",
    "wait_from",
]

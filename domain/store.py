"""Reading and writing aggregates: the plain projector, the copies, the application's
repository (its cache kept current with the log) and the retry on a writer's conflict.

* :func:`project` rebuilds an aggregate from its events. The library's default projector checks
  every event against a Protocol at run time, which made loading a round about 2.9x slower
  (measured on a 51-event multihand round: 2.0 ms against 0.7 ms; DESIGN.md pitfalls).
* :func:`fork` is the copy of a cached aggregate a command works on. The library's cache
  deep-copies every aggregate on every ``get`` (so a refused command leaves the cached one as
  the store has it), which walked every card of a shoe and every seat of a table for each
  command (``copy.deepcopy`` was 16 % of a deluxe round's profile). An aggregate whose state
  is *flat* (atomic values, one-level lists, dicts and sets of atomic values, and the game
  core's immutable state objects, which are shared) is copied one level deep instead: a new
  object, new containers, the same immutable contents. Any other aggregate is deep-copied
  (or copies itself: ``Wallet.__deepcopy__``). ``tests/integration/test_cache_copies.py``
  holds every aggregate of each variant's rounds to that shape, and shows a refused or failed
  command leaving the cached aggregate as the store has it.
* :func:`keep_saved` puts a copy of each aggregate a save has just committed into the cache.
  The library's cache, fast-forwarded on every ``get`` (so another process's writes are seen),
  keeps the version it last read: each command's save was read back by the next command's
  ``get``, and its events decoded and applied again (european rounds: 5 % of the samples of
  a profile), and a round or shoe just created was read whole. A saved aggregate is the
  state of its stored events at its version (its events are applied as a rebuild applies
  them; ``tests/integration/test_cache_saved.py`` compares every one with a rebuild, on
  every store), and the next catch-up still brings it up to date with what other writers
  added after it. Only a committed save is kept: a refused command or a failed or
  conflicting save never reaches the cache.
* :class:`Watched` is the application's repository: its cache is caught up with the log once
  a command (one query: the ids and versions written since its mark) instead of a
  fast-forward query per cached aggregate (18 % of a recorded round's samples outside the
  commit), under the invariant its docstring states; ``tests/integration/
  test_cache_current.py`` holds it to it with two writers on SQLite and PostgreSQL (and
  ``test_start_checks.py`` the ids it remembers absent). It tells
  the store's group commit when a command attempt begins and ends (:class:`InFlight`), so
  that a commit may wait a moment for the saves of the commands in flight. Within a request's
  scope (:func:`read_ahead`) the tail for the command's first catch-up may be read ahead, in
  the same round trip as another read (on PostgreSQL, the command's idempotency record):
  ``tests/api/test_read_ahead.py``. The saves of a group commit are reported by its leader
  at the commit, before their callers wake (:meth:`Watched.committed`).
* :func:`retry` runs a whole command again, on fresh state, when its save met another writer's
  record (optimistic concurrency), and reports :class:`~domain.errors.ConcurrentUpdate` when it
  keeps meeting one: nothing of the command was recorded.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Cache, LRUCache, Repository
from eventsourcing.persistence import EventStore, IntegrityError, RecordConflictError

from domain.errors import ConcurrentUpdate

T = TypeVar("T")
CONFLICTS = (IntegrityError, RecordConflictError)


def project(aggregate: Any, events: Iterable[Any]) -> Any:
    """The aggregate ``events`` make of ``aggregate`` (None for a new one)."""
    for e in events:
        aggregate = e.mutate(aggregate)
    return aggregate


_FLAT: dict[tuple[type, tuple[type, ...]], bool] = {}
#: Whether ``copy.deepcopy`` of an instance of a class is its own ``__deepcopy__`` (by class).
_COPIES_ITSELF: dict[type, bool] = {}


def _copies_itself(cls: type) -> bool:
    """Whether ``copy.deepcopy(x)`` of an instance of ``cls`` is ``x.__deepcopy__(memo)`` with
    a new memo: a class (not a metaclass) with its own ``__deepcopy__`` and no copier of the
    ``copy`` module's own, which it keeps for built-in types only (``Wallet.__deepcopy__``)."""
    return (
        callable(getattr(cls, "__deepcopy__", None))
        and not issubclass(cls, type)
        and cls not in copy._deepcopy_dispatch  # type: ignore[attr-defined]
    )


def fork(aggregate: T, flat: tuple[type, ...]) -> T:
    """The copy of ``aggregate`` a command may change: one level deep if it is one of the
    ``flat`` types (new containers, shared atomic or immutable contents), else a deep copy."""
    cls = type(aggregate)
    is_flat = _FLAT.get((cls, flat))
    if is_flat is None:  # an isinstance of the aggregates' abstract classes is slow: once a type
        is_flat = _FLAT[(cls, flat)] = issubclass(cls, flat)
    if not is_flat:
        itself = _COPIES_ITSELF.get(cls)
        if itself is None:
            itself = _COPIES_ITSELF[cls] = _copies_itself(cls)
        # what ``copy.deepcopy`` returns for such a class (its ``__deepcopy__`` with a new
        # memo), without its memo's own steps (``_keep_alive``): a wallet's every command
        return aggregate.__deepcopy__({}) if itself else copy.deepcopy(aggregate)  # type: ignore[attr-defined]
    clone = object.__new__(cls)
    state = aggregate.__dict__.copy()
    for name, value in state.items():
        kind = type(value)
        if kind is list or kind is dict or kind is set:
            state[name] = value.copy()
    clone.__dict__.update(state)
    return clone


def keep_saved(
    cache: Cache[Any, Any] | None,
    saved: Mapping[Any, Any],
    flat: tuple[type, ...],
    new: tuple[type, ...],
) -> None:
    """After a save has committed, the cache holds a copy (:func:`fork`) of each aggregate of
    ``saved`` (id -> aggregate) that it held at an older version, and of each one of the
    ``new`` types it did not hold (a round or shoe just created is read by the next command).
    A version the cache already holds, or a newer one, is left as it is."""
    if cache is None:
        return
    for ident, aggregate in saved.items():
        try:
            cached = cache.get(ident)
        except KeyError:
            if not isinstance(aggregate, new):
                continue
        else:
            if cached is None or cached.version >= aggregate.version:
                continue
        cache.put(ident, fork(aggregate, flat))


#: Rows of the log read at a time when catching up (``Watched.catch_up``); a tail longer than
#: ``TAIL_PAGES`` pages empties the cache instead of reading on.
TAIL_PAGE = 500
TAIL_PAGES = 4
#: How many of the log's latest events (id, originator, version) the repository remembers, to
#: tell whether a read or a save that the mark overtook is still current (``Watched._unchanged``).
HISTORY = 10_000
#: How many saves beyond the mark wait for it at most (``Watched.saved``).
WAITING = 1_000
#: Inside :meth:`Watched.current`: the repository whose cache has been caught up with the log
#: since this command began, so that its cached aggregates are used without a query each
#: (another application's repository, called meanwhile, still queries).
_CURRENT: ContextVar[object] = ContextVar("caught_up", default=None)
Row = tuple[int, UUID, int]  # notification id, originator id, version
#: Inside :meth:`Watched.ahead`: the tail of the log read ahead for this command's first
#: catch-up (:meth:`Watched.offer_tail`), as [(the mark it was read after, its rows)].
_AHEAD: ContextVar[list[tuple[int, list[Row]]] | None] = ContextVar("tail_ahead", default=None)


@dataclass(slots=True)
class Saving:
    """A save's aggregates as it carries them to the store's group commit (``domain.
    group_commit.CARRIED``); ``told`` once its group's leader has given them to the
    repository (:meth:`Watched.committed`), after which its caller does not report them."""

    aggregates: Mapping[UUID, Any]
    told: bool = False


class InFlight(Protocol):
    """Told when a command attempt begins and ends (``domain.group_commit.GroupCommitter``:
    a group's leader may wait for the saves of the commands in flight)."""

    def begin(self) -> None: ...

    def end(self) -> None: ...


class LogTail(Protocol):
    """What :class:`Watched` reads of the store's log (the hooked recorders give it)."""

    def log_tail(self, after: int, limit: int) -> Sequence[Row]:
        """(notification id, originator id, version) of the events after ``after``, in
        notification order, at most ``limit``."""

    def max_notification_id(self) -> int | None: ...


@runtime_checkable
class LogEnd(Protocol):
    """A log that may know its end without a query (``domain.sqlite_reads.LeanReads``, with
    ``domain.sqlite_watch``): :meth:`Watched.catch_up` reads no tail when it is the mark."""

    def log_end(self) -> int | None:
        """The log's last notification id, known without a query; None when not known
        (something may have been committed since: read the log)."""


def log_end_of(log: object) -> Callable[[], int | None] | None:
    """``log``'s :meth:`LogEnd.log_end`, bound once (None when ``log`` cannot know its end)."""
    return log.log_end if isinstance(log, LogEnd) else None


def ends_at(log_end: Callable[[], int | None] | None, position: int | None) -> bool:
    """Whether the store knows without a query that its log ends at ``position``: a read of
    the log after ``position`` would return no row (``log_end``: from :func:`log_end_of`)."""
    return position is not None and log_end is not None and log_end() == position


class Watched(Repository[UUID]):
    """The library's repository with a cache kept current with the log, not per aggregate.

    Invariant (under ``_lock``): every aggregate the cache holds includes every event of its
    own that the log holds up to notification id ``_mark``; ``_history`` holds every event
    (id, originator, version) from ``_history_from`` to the mark (the latest ``HISTORY``).
    Each way a copy enters the cache, or the mark moves, keeps it:

    * **catching up** (:meth:`catch_up`, once per command attempt): the events after the
      mark (only their ids and versions), read in one query (none when the store knows
      without a query that its log ends at the mark: :class:`LogEnd`, a SQLite file store
      to which nothing was committed since its own last commit, ``domain.sqlite_watch``);
      an aggregate cached at a lower version than one of them is dropped, and the mark
      moves to the last one read. A log
      that is read in notification order never skips a commit: on PostgreSQL every insert
      holds the table's exclusive lock from its ids to its commit, on SQLite the database's
      write lock, in memory the recorder's lock (commit order is notification order: the
      projections' runners rely on it the same way). A tail longer than
      ``TAIL_PAGES * TAIL_PAGE`` events empties the cache and moves the mark to the log's end;
    * **a read** (a miss, or a fast-forward outside a caught-up command) is current to the
      mark it began at; it is put if the mark has not moved since, or if the history shows no
      newer event of that aggregate since (``_unchanged``); else it is only used;
    * **a committed save** (:meth:`saved`): its aggregates are put as ``keep_saved`` says,
      and those a catch-up dropped (for this very write, or an earlier one the save includes)
      are put back; when a catch-up already passed the save's events, only those of which the
      history shows no newer event since (another writer may have followed). When its events
      directly follow the mark, the mark moves past them (they are in the cache now); a save
      whose events lie further on (the saves of a group commit report in any order) waits
      until the mark reaches it. So a process writing alone catches up reading nothing, also
      with many threads;
    * **an absence** (``_absent``): an id of which a read found no event is remembered as
      absent when that is current to the mark (as a read's result is put); every move of the
      mark forgets the ids of the events it passes, and a save forgets its own. So every id
      it holds has no event in the log up to the mark (a table that a european round's start
      asks for and that is never opened is asked of the store once, not once a round).

    Inside :meth:`current` (a command attempt, after its catch-up) a cached aggregate, or an
    id remembered absent, is then used as it is: the mark is at or beyond where the log stood
    when the command began, so the copy is current, whichever other process or thread wrote.
    Outside it, ``get`` reads an aggregate's new events as the library does (one query each),
    on a copy (a cached object is never changed in place), and asks the store for an absent
    one. A conflicting save is retried on fresh state as before.
    """

    def __init__(
        self,
        event_store: EventStore[UUID],
        log: LogTail,
        *,
        cache_maxsize: int,
        flat: tuple[type, ...],
        new: tuple[type, ...],
        flight: InFlight | None = None,
    ) -> None:
        super().__init__(event_store, cache_maxsize=cache_maxsize)
        self._log = log
        #: the log's end when the store knows it without a query (``LogEnd``), else None
        self._log_end = log_end_of(log)
        self._flight = flight
        self._maxsize = cache_maxsize
        self._flat = flat
        self._new = new
        self._lock = threading.Lock()
        self._mark: int | None = None  # None: not caught up yet (the first catch-up empties)
        self._history: deque[Row] = deque()
        self._history_from = 0
        self._waiting: dict[int, list[Row]] = {}  # saves beyond the mark, by their first id
        self._dropped: dict[UUID, None] = {}  # dropped by a catch-up, not cached since
        self._absent: dict[UUID, None] = {}  # no event in the log up to the mark

    # ------------------------------------------------------------------ the mark
    @contextmanager
    def current(self) -> Iterator[None]:
        """Catch up with the log, then use cached aggregates without a query of their own
        until the block ends (one command attempt); ``flight`` is told when it begins and
        ends (a block inside another of this repository is part of the same command)."""
        flight = self._flight if _CURRENT.get() is not self else None  # the outermost only
        if flight is not None:
            flight.begin()
        try:
            self.catch_up()
            token = _CURRENT.set(self)
            try:
                yield
            finally:
                _CURRENT.reset(token)
        finally:
            if flight is not None:
                flight.end()

    @contextmanager
    def ahead(self) -> Iterator[None]:
        """A scope (one request's command) in which the tail of the log may be read ahead,
        with another read in the same round trip (:meth:`offer_tail`), for the scope's first
        catch-up; what is not used is dropped at its end."""
        token = _AHEAD.set([])
        try:
            yield
        finally:
            _AHEAD.reset(token)

    def tail_wanted(self) -> int | None:
        """The mark to read the log's tail after, for the first catch-up of this scope
        (:meth:`ahead`); None when none is wanted (outside a scope, not caught up yet, or the
        store knows its log ends at the mark: :class:`LogEnd`, which the catch-up asks again
        itself)."""
        if _AHEAD.get() is None:
            return None
        with self._lock:
            mark = self._mark
        return None if ends_at(self._log_end, mark) else mark

    def offer_tail(self, after: int, rows: Sequence[Row]) -> None:
        """The events after ``after`` (at most ``TAIL_PAGE``), read just now: the scope's
        next catch-up uses them instead of reading (a full page is not kept: more may follow).
        A tail read after the command began is as current as one its catch-up reads."""
        held = _AHEAD.get()
        if held is not None:
            held.clear()
            if len(rows) < TAIL_PAGE:
                held.append((after, list(rows)))

    def _read_ahead(self, mark: int) -> list[Row] | None:
        """The rows after ``mark`` of a tail read ahead in this scope (once), if any."""
        held = _AHEAD.get()
        if not held:
            return None
        after, rows = held.pop()
        if after > mark:  # the mark only moves forward: not expected
            return None
        return [r for r in rows if r[0] > mark]

    def catch_up(self) -> None:
        """Bring the cache up to the log's end (see the class docstring)."""
        with self._lock:
            mark = self._mark
        if mark is None:
            self._restart(self._log.max_notification_id() or 0)
            return
        ahead = self._read_ahead(mark)
        if ahead is None and ends_at(self._log_end, mark):
            return  # the log ends at the mark: its query would read no row
        rows: list[Row] = [] if ahead is None else ahead
        while ahead is None:
            page = self._log.log_tail(rows[-1][0] if rows else mark, TAIL_PAGE)
            rows.extend(page)
            if len(page) < TAIL_PAGE:
                break
            if len(rows) >= TAIL_PAGE * TAIL_PAGES:
                self._restart(self._log.max_notification_id() or 0)
                return
        if not rows:
            return
        with self._lock:
            if self._mark is None or rows[-1][0] <= self._mark:
                return
            new = [r for r in rows if r[0] > self._mark]
            latest: dict[UUID, int] = {}
            for _, oid, version in new:
                if version > latest.get(oid, 0):
                    latest[oid] = version
            cache = self._cache()
            for oid, version in latest.items():
                try:
                    cached = cache.get(oid)
                except KeyError:
                    continue
                if cached is None or cached.version < version:
                    cache.get(oid, evict=True)
                    self._dropped[oid] = None  # a save of it by this process puts it back
                    if len(self._dropped) > HISTORY:
                        del self._dropped[next(iter(self._dropped))]
            self._advance(new)

    def committed(self, saves: Sequence[tuple[Sequence[Row], Saving]]) -> None:
        """The saves of a group commit of this process's store, just committed, told by its
        leader before it releases any of their callers (``domain.group_commit.
        GroupCommitter.committed``): each save's events (id, originator, version) and what
        it carried (:class:`Saving`), in notification order, each taken as its caller's
        :meth:`saved` takes it (its copies into the cache, the mark past its events when they
        follow it), then marked ``told``. So the catch-ups of the commands that begin before
        the callers wake do not read the group's rows back from the log, and a caller whose
        save was told does not report it again."""
        for rows, saving in saves:
            self.saved(rows, saving.aggregates)
            saving.told = True

    def _advance(self, rows: Sequence[Row]) -> None:
        """Move the mark over ``rows`` (the events right after it, in order), then over the
        saves waiting right after it (under ``_lock``)."""
        while rows:
            if self._absent:  # each now has an event up to the mark
                for _, oid, _ in rows:
                    self._absent.pop(oid, None)
            self._history.extend(rows)
            self._mark = rows[-1][0]
            while len(self._history) > HISTORY:
                self._history_from = self._history.popleft()[0]
            mark = self._mark
            for first in [f for f in self._waiting if self._waiting[f][-1][0] <= mark]:
                del self._waiting[first]  # passed by a catch-up
            rows = []
            for first, waiting in self._waiting.items():
                if first <= mark + 1:
                    del self._waiting[first]
                    rows = [r for r in waiting if r[0] > mark]
                    break

    def _restart(self, top: int) -> None:
        """An empty cache, current to ``top`` (a notification id read before this call)."""
        with self._lock:
            if self._mark is not None and self._mark >= top:
                return
            self.cache = LRUCache(maxsize=self._maxsize) if self._maxsize > 0 else Cache()
            self._mark = self._history_from = top
            self._history.clear()
            self._waiting.clear()
            self._dropped.clear()
            self._absent.clear()

    def _unchanged(self, ident: UUID, version: int, since: int | None) -> bool:
        """Whether no event of ``ident`` after ``version`` is in the log from ``since`` to the
        mark, as far as the history tells (under ``_lock``)."""
        if self._mark is None or since is None:
            return self._mark is None and since is None
        if since >= self._mark:
            return True
        if since < self._history_from:
            return False
        for nid, oid, v in reversed(self._history):
            if nid <= since:
                break
            if oid == ident and v > version:
                return False
        return True

    def _cache(self) -> Cache[UUID, Any]:
        assert self.cache is not None
        return self.cache

    # ------------------------------------------------------------------ reading
    def get(
        self,
        aggregate_id: UUID,
        *,
        version: int | None = None,
        projector_func: Any = project,
        fastforward_skipping: bool = False,
        deepcopy_from_cache: bool = True,
    ) -> Any:
        """An aggregate: from the cache as it is inside :meth:`current`, else fast-forwarded
        by a query of its own (on a copy), else rebuilt from the store; a copy (``fork``)
        unless ``deepcopy_from_cache`` is false (the caller copies it)."""
        if version is not None:
            return super().get(aggregate_id, version=version, projector_func=projector_func)
        inside = _CURRENT.get() is self
        with self._lock:
            mark = self._mark
            try:
                cached = self._cache().get(aggregate_id)
            except KeyError:
                cached = None
            absent = inside and cached is None and aggregate_id in self._absent
        if absent:  # no event of it in the log up to the mark: current inside the block
            raise AggregateNotFoundError(aggregate_id)
        if cached is None:
            try:
                aggregate = self._reconstruct_aggregate(aggregate_id, None, projector_func)
            except AggregateNotFoundError:
                self._put_absent(aggregate_id, mark)
                raise
            self._put(aggregate_id, aggregate, mark)
        elif inside:
            aggregate = cached
        else:
            new = list(self.event_store.get(originator_id=aggregate_id, gt=cached.version))
            aggregate = cached
            if new:
                aggregate = projector_func(fork(cached, self._flat), new)
                if aggregate is None:
                    raise AggregateNotFoundError(aggregate_id)
                self._put(aggregate_id, aggregate, mark)
        if deepcopy_from_cache and self.deepcopy_from_cache:
            return fork(aggregate, self._flat)
        return aggregate

    def __contains__(self, item: UUID) -> bool:
        try:
            self.get(item, deepcopy_from_cache=False)
        except AggregateNotFoundError:
            return False
        return True

    def _put(self, ident: UUID, aggregate: Any, mark: int | None) -> None:
        """Put what a read that began at ``mark`` made, if it is current to the mark now and
        the cache holds no newer version."""
        with self._lock:
            if mark != self._mark and not self._unchanged(ident, aggregate.version, mark):
                return
            cache = self._cache()
            try:
                cached = cache.get(ident)
            except KeyError:
                cached = None
            if cached is None or cached.version < aggregate.version:
                cache.put(ident, aggregate)

    def _put_absent(self, ident: UUID, mark: int | None) -> None:
        """Remember that a read that began at ``mark`` found no event of ``ident``, if that is
        still so up to the mark now (as :meth:`_put` decides for what a read found)."""
        with self._lock:
            if self._mark is None or mark is None:
                return
            if mark != self._mark and not self._unchanged(ident, 0, mark):
                return
            self._absent[ident] = None
            if len(self._absent) > HISTORY:
                del self._absent[next(iter(self._absent))]

    # ------------------------------------------------------------------ writing
    def saved(self, rows: Sequence[Row], aggregates: Mapping[UUID, Any]) -> None:
        """After a save committed the events ``rows`` (id, originator, version, in order): its
        aggregates into the cache (:func:`keep_saved`), and the mark past them when they
        directly follow it (or once it reaches them)."""
        if not rows:
            return
        first, last = rows[0][0], rows[-1][0]
        with self._lock:
            mark = self._mark
            if self._absent:  # written by this process: not absent whatever the mark
                for _, oid, _ in rows:
                    self._absent.pop(oid, None)
            if mark is not None and mark >= last:  # passed by a catch-up: another writer may
                aggregates = {  # have followed; the history tells
                    i: a for i, a in aggregates.items() if self._unchanged(i, a.version, last)
                }
            cache = self._cache()
            keep_saved(cache, aggregates, self._flat, self._new)
            back = {i: a for i, a in aggregates.items() if self._dropped.pop(i, 0) is None}
            keep_saved(cache, back, self._flat, (object,))  # dropped for a write: this one
            if mark is None or mark >= last or last - first + 1 != len(rows):
                return
            if mark >= first - 1:
                self._advance([r for r in rows if r[0] > mark])
            else:
                self._waiting[first] = list(rows)
                if len(self._waiting) > WAITING:  # no catch-up for long: forget the oldest
                    del self._waiting[min(self._waiting)]


def read_ahead(app: object) -> AbstractContextManager[None]:
    """The scope of one request's command on ``app``, in which the log's tail may be read
    ahead for its catch-up (:meth:`Watched.ahead`; nothing on an application without
    :class:`Watched`)."""
    repository = getattr(app, "repository", None)
    return repository.ahead() if isinstance(repository, Watched) else nullcontext()


def retry(fn: Callable[[], T], attempts: int = 5) -> T:
    """``fn()``, run again (up to ``attempts`` times) when its save meets a conflict."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            return fn()
        except CONFLICTS as exc:
            last = exc
    raise ConcurrentUpdate(
        f"another writer kept changing the same records; nothing was recorded ({last})"
    )


__all__ = [
    "CONFLICTS",
    "InFlight",
    "LogEnd",
    "LogTail",
    "Saving",
    "Watched",
    "fork",
    "keep_saved",
    "project",
    "read_ahead",
    "retry",
]

"""Reading and writing aggregates: the plain projector and the retry on a writer's conflict.

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
  every store), and fast-forwarding still brings it up to date with what other writers
  added after it. Only a committed save is kept: a refused command or a failed or
  conflicting save never reaches the cache.
* :func:`retry` runs a whole command again, on fresh state, when its save met another writer's
  record (optimistic concurrency), and reports :class:`~domain.errors.ConcurrentUpdate` when it
  keeps meeting one: nothing of the command was recorded.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from eventsourcing.application import Cache
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.errors import ConcurrentUpdate

T = TypeVar("T")
CONFLICTS = (IntegrityError, RecordConflictError)


def project(aggregate: Any, events: Iterable[Any]) -> Any:
    """The aggregate ``events`` make of ``aggregate`` (None for a new one)."""
    for e in events:
        aggregate = e.mutate(aggregate)
    return aggregate


def fork(aggregate: T, flat: tuple[type, ...]) -> T:
    """The copy of ``aggregate`` a command may change: one level deep if it is one of the
    ``flat`` types (new containers, shared atomic or immutable contents), else a deep copy."""
    if not isinstance(aggregate, flat):
        return copy.deepcopy(aggregate)
    clone = object.__new__(type(aggregate))
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


__all__ = ["CONFLICTS", "fork", "keep_saved", "project", "retry"]

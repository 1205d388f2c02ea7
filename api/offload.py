"""Where a route's short store read runs: on the event loop, or in the thread pool.

A synchronous FastAPI dependency or route runs in AnyIO's thread pool: a trip that costs the
service more CPU than a point query on a local SQLite file (measured under the HTTP benchmark:
the hand-over to a worker thread and back, its locks, queue and wake-ups, about a tenth of a
``GET /rounds/{id}``'s CPU per trip). :func:`reads_inline` says whether the application's store
lets a short read (one indexed query by id: the API key's last version, a round's last version)
run on the event loop itself:

* a **file SQLite database in WAL mode**: a reader never waits for a writer (the library's pool
  takes no writer lock for a reader of a file database), so the query does not hold the loop
  for longer than it takes;
* never an in-memory SQLite database (its readers wait for the writer), PostgreSQL (a network
  round trip; several worker processes are the way to scale it) or the in-memory store.

:func:`store_read` calls a function on the loop when the store allows it, else in the thread
pool. What is read, and what is decided from it, is the same either way: the query runs when
the request is served, so a revocation or a new round version recorded by any process is seen
by the very next request, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from eventsourcing.sqlite import SQLiteConnectionPool
from starlette.concurrency import run_in_threadpool

T = TypeVar("T")


def reads_inline(app: Any) -> bool:
    """Whether ``app``'s store takes a short read on the event loop (see the module
    docstring)."""
    datastore = getattr(getattr(app, "recorder", None), "datastore", None)
    pool = getattr(datastore, "pool", None)
    return (
        isinstance(pool, SQLiteConnectionPool)
        and not pool.is_sqlite_memory_mode
        and pool.is_journal_mode_wal
    )


async def store_read(app: Any, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the event loop when ``app``'s store allows it, else in the thread
    pool."""
    if reads_inline(app):
        return fn(*args)
    return await run_in_threadpool(fn, *args)


__all__ = ["reads_inline", "store_read"]

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
  ``GET /rounds/{id}`` on PostgreSQL reads its versions on the loop all the same, without
  blocking it: asynchronously, on connections of its own (``api.versions.LoopVersions``).

:func:`store_read` calls a function on the loop when the store allows it, else in the thread
pool. What is read, and what is decided from it, is the same either way: the query runs when
the request is served, so a revocation or a new round version recorded by any process is seen
by the very next request, as before.

:class:`CommandWorkers` is the single commands' own thread pool (``api.hotpath``):
``ROUNDAUDIT_THREADS`` worker threads taking calls in order from one queue, each call's
outcome handed back to the event loop with ``loop.call_soon_threadsafe``. AnyIO's hand-over
(a cancel scope, the capacity limiter, its own queue and a task check per call) cost 30 us of
the process's CPU a call, ``loop.run_in_executor`` on a ``concurrent.futures`` executor 13
(its futures, each with a condition, chained to the loop's), this pool 3 (50 tasks handing
over an empty function, uvloop); under the HTTP benchmark AnyIO's took 7-8 % of a deposit's
samples. It behaves as AnyIO's default hand-over does for a route: at most that many commands
run at once (the others wait in the queue, in order), the function runs in a copy of the
caller's context variables, and a cancelled request (the server shutting down) does not
abandon its command: the cancellation is raised once the command has finished, so a command
is never left half-seen (AnyIO shields the worker's cancel scope the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
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


class CommandWorkers:
    """The single commands' thread pool (see the module docstring): ``threads`` workers taking
    calls in order from one queue; :meth:`close` at the service's shutdown lets the running
    calls finish."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._workers = [
            threading.Thread(target=self._work, name=f"roundaudit-command-{i}", daemon=True)
            for i in range(threads)
        ]
        for worker in self._workers:
            worker.start()

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker, in a copy of the caller's context; a
        cancellation while it waits or runs is raised after it finished (its result is then
        lost, as with AnyIO's). The caller awaits the trip's future itself: a cancellation
        cancels that future, and the caller then waits on a new one until the worker's
        answer comes (:func:`_settle`, on the loop, answers whichever future the trip holds
        then), so no ``asyncio.shield`` (a second future and two callbacks a call) is
        needed for it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        trip = _Trip(future)
        self._calls.put((loop, trip, contextvars.copy_context(), fn, args, kwargs))
        try:
            return await future
        except asyncio.CancelledError:
            pass  # this request's (or the command's own CancelledError): raised below
        while not trip.finished:  # the command still runs: its end is awaited first
            trip.future = loop.create_future()
            with contextlib.suppress(asyncio.CancelledError):
                await trip.future
        raise asyncio.CancelledError

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            loop, trip, context, fn, args, kwargs = call
            try:
                result, error = context.run(fn, *args, **kwargs), None
            except BaseException as exc:  # the caller's to raise
                result, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: no one waits
                loop.call_soon_threadsafe(_settle, trip, result, error)
            del call, trip, result, error  # nothing of a call is kept while idle

    def close(self) -> None:
        """Stop the workers once the calls queued so far have run."""
        for _ in self._workers:
            self._calls.put(None)
        for worker in self._workers:
            worker.join()


class _Trip:
    """One call's way back to its caller: the future the caller awaits now (a new one after
    a cancellation) and whether the call has finished; both read and set on the loop only."""

    __slots__ = ("finished", "future")

    def __init__(self, future: asyncio.Future[Any]) -> None:
        self.future = future
        self.finished = False


_Call = tuple[
    asyncio.AbstractEventLoop,
    _Trip,
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
]


def _settle(trip: _Trip, result: Any, error: BaseException | None) -> None:
    trip.finished = True
    future = trip.future
    if future.done():  # cancelled: its caller sees ``finished`` and raises its cancellation
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


__all__ = ["CommandWorkers", "reads_inline", "store_read"]

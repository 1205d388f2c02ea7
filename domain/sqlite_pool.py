"""The SQLite connection pool of a RoundAudit store: which idle connection a read or a
transaction gets, and how many stay open.

This module owns :func:`newest_first`, which the hooked SQLite recorder
(``domain.commits.HookedSQLiteApplicationRecorder``) applies to its store's pool (the
library's ``SQLiteConnectionPool``): idle connections are taken newest first
(:class:`NewestFirst`), up to :data:`SQLITE_IDLE_CONNECTIONS` of them stay open, each new
connection keeps :data:`SQLITE_CACHED_STATEMENTS` prepared statements
(:func:`cached_connection`), every checkout queues on a lock where the library's pool has
a semaphore written in Python (:func:`queue_on_a_lock`), and a checkout and its return take
the library's steps without its Python frames when nothing has to wait
(:func:`quick_checkouts`: a command makes three, its key's version, its idempotency record
and its group's commit; the library's pool and its conditions took about 900 of a
deposit's 10,000 opcodes). SQLite drops a connection's whole page cache when it finds the
database changed by another connection since its last read, so a read on a connection idle
since the latest commit pays to read its pages again (a point read 20-40 us against 7 on a
current cache); the connection returned last is the most likely to have a current cache.
What a read sees does not depend on the connection: every read is a snapshot of the
committed database.

It also owns :func:`plain_checkouts`, which an application's SQLite store
(``domain.services.base.AuditBase.construct_recorder``) applies to its datastore: the
datastore's ``get_connection`` and ``transaction`` as context managers of their own
(:class:`Checkout`, :class:`Transaction`) doing the library's steps in the library's order,
where the library nests three generator context managers for a transaction and one for a
checkout (``contextlib``'s machinery was about 3 % of a recorded round's samples outside the
commit; a command makes two checkouts, its catch-up's and its commit's). A file store's write
transactions tell its :class:`~domain.sqlite_watch.LogWatch` (made by :func:`plain_checkouts`,
the datastore's ``LOG_WATCH``) when they begin, commit or fail, so that a command's catch-up
can know the log's end without its query (and without its checkout).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections import deque
from typing import Any

from eventsourcing.persistence import (
    ConnectionNotFromPoolError,
    ConnectionPoolClosedError,
    InterfaceError,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteTransaction,
)

from domain.sqlite_watch import LogWatch

#: Idle connections the SQLite pool keeps open (the library's default 5, its overflow 10
#: beyond it): a command's worker threads (8) and the event loop's reads use more at once,
#: and a connection returned above the pool's size was closed and, soon after, opened again
#: (a new connection reads the schema and every page it needs anew).
SQLITE_IDLE_CONNECTIONS = 16

#: Prepared statements each connection keeps for its next execution of the same SQL (Python's
#: own default). The library opens its connections with ``cached_statements=True``, which
#: Python takes as 1: a command's transaction runs some ten different statements (its
#: begin, inserts of two or three tables, the Merkle leaf, the index rows, the commit, the
#: log's tail), so nearly every execution prepared its statement anew (``sqlite3_prepare_v2``
#: about 7 % of a recorded round's instructions). The statements are the same text either
#: way; only their compilation is kept.
SQLITE_CACHED_STATEMENTS = 128


class NewestFirst(deque[Any]):
    """The SQLite pool's idle connections, the one returned last taken first: the library's
    pool takes them oldest first (``popleft``), so a read got the connection that had been
    idle longest, whose page cache another connection's commit had most likely made stale
    (SQLite drops a connection's whole cache when it finds the database changed by another
    connection since its last read: a point read then costs 2-4x its time on a warm cache).
    The connection returned last is most often the one whose cache is current: the group
    commit's own, or the one a read used just before, with no commit since."""

    def popleft(self) -> Any:
        return self.pop()


def cached_connection(pool: Any) -> SQLiteConnection:
    """A new connection of ``pool`` (the library's SQLite connection pool), made by the steps
    of the library's ``SQLiteConnectionPool._create_connection`` (``eventsourcing~=9.5.6``:
    autocommit, any thread, the pool's lock timeout, the journal switched to WAL on a file
    store, rows as ``sqlite3.Row``, the pool's ``max_age``) but keeping
    :data:`SQLITE_CACHED_STATEMENTS` prepared statements where the library keeps one."""
    try:
        c = sqlite3.connect(
            database=pool.db_name,
            uri=True,
            check_same_thread=False,
            isolation_level=None,
            cached_statements=SQLITE_CACHED_STATEMENTS,
            timeout=pool.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
        )
    except (sqlite3.Error, TypeError) as e:
        raise InterfaceError(e) from e
    if not pool.is_sqlite_memory_mode and not pool.is_journal_mode_wal:
        cursor = c.cursor()
        cursor.execute("PRAGMA journal_mode;")
        if cursor.fetchone()[0].lower() != "wal":
            cursor.execute("PRAGMA journal_mode=WAL;")
            pool.journal_mode_was_changed_to_wal = True
        pool.is_journal_mode_wal = True
    c.row_factory = sqlite3.Row
    return SQLiteConnection(sqlite_conn=c, max_age=pool.max_age)


def newest_first(pool: Any) -> None:
    """Make ``pool`` (the library's SQLite connection pool) take its idle connections newest
    first (:class:`NewestFirst`), keep up to :data:`SQLITE_IDLE_CONNECTIONS` of them, make
    its new connections by :func:`cached_connection`, and queue its checkouts on a lock
    (:func:`queue_on_a_lock`)."""
    pool._pool = NewestFirst(pool._pool)
    pool.pool_size = max(pool.pool_size, SQLITE_IDLE_CONNECTIONS)
    pool._create_connection = lambda: cached_connection(pool)
    queue_on_a_lock(pool)
    quick_checkouts(pool)


def queue_on_a_lock(pool: Any) -> None:
    """Make the queue every checkout of ``pool`` (the library's connection pool) joins first
    (its ``_get_semaphore``, a ``threading.Semaphore()`` of one: ``get_connection`` acquires
    it with the pool's timeout, gets its connection, and releases it in a ``finally``) a
    ``threading.Lock``: the same mutual exclusion and the same timeout (``acquire(timeout=)``
    and ``release()``, always in pairs), where the semaphore is written in Python (a
    ``Condition``: its lock, a ``notify`` a release), about 9,500 of the 40,000 instructions
    a checkout and its return took (callgrind). Left as it is when the pool waits without a
    timeout (``pool_timeout`` None: a lock takes -1 for that, not None) or the queue is no
    longer the library's semaphore."""
    timeout = pool.pool_timeout
    queue = pool._get_semaphore
    if type(queue) is threading.Semaphore and isinstance(timeout, int | float) and timeout >= 0:
        pool._get_semaphore = threading.Lock()


def quick_checkouts(pool: Any) -> bool:
    """Give ``pool`` (the library's SQLite connection pool, after :func:`newest_first`'s
    changes) its ``get_connection`` and ``put_connection`` by :func:`_quick_pair`, when it is
    a pool they serve: a file store's (reads and writes not mutually exclusive), its queue a
    lock (:func:`queue_on_a_lock`), its idle connections :class:`NewestFirst`, no
    ``pre_ping`` and no ``max_age``. Anything else keeps the library's methods. True when
    installed."""
    if (
        pool._mutually_exclusive_read_write
        or pool.pre_ping
        or pool.max_age is not None
        or type(pool._get_semaphore) is not _LOCK
        or type(pool._pool) is not NewestFirst
        or "get_connection" in vars(pool)
    ):
        return False
    pool.get_connection, pool.put_connection = _quick_pair(pool)
    return True


_LOCK = type(threading.Lock())


def _quick_pair(pool: Any) -> tuple[Any, Any]:
    """A checkout and a return for ``pool`` (see :func:`quick_checkouts`) that do the
    library's ``ConnectionPool.get_connection`` / ``_get_connection`` / ``put_connection``
    (``eventsourcing~=9.5.6``) steps, in its order, under its locks, without its Python
    frames (``with`` on its conditions, its properties, ``time()`` and
    ``_time_remaining``), when nothing has to wait: the queue free (a non-blocking
    ``acquire`` of the lock every checkout joins first), for a writer the writer lock free,
    an idle connection in the pool. When any of these is not so (another thread queued or
    writing, no idle connection, the pool closed, a connection found closed), the fast path
    takes nothing (or drops the closed connection, as the library does) and the library's
    own ``get_connection`` runs, with its waiting, its timeout, its new connection and its
    errors. The return is the library's ``put_connection`` step for step (its errors, the
    idle bound ``pool_size``, the writer lock released, the readers counted, one waiter
    notified), with its locks taken by their C ``acquire``/``release``."""
    library = type(pool)
    queue, idle, in_use = pool._get_semaphore, pool._pool, pool._in_use
    put_condition, no_readers, writer = pool._put_condition, pool._no_readers, pool._writer_lock
    take_queue, leave_queue = queue.acquire, queue.release
    take_pool, leave_pool = put_condition.acquire, put_condition.release
    take_readers, leave_readers = no_readers.acquire, no_readers.release

    def get_connection(timeout: float | None = None, *, is_writer: bool | None = None) -> Any:
        if not pool._closed and take_queue(False):
            try:
                if is_writer is not True or writer.acquire(False):
                    conn = None
                    take_pool()
                    try:
                        if idle:
                            conn = idle.pop()  # NewestFirst: the one returned last
                            conn.in_use.acquire()
                            if conn._closed:  # closed by its timer: dropped, as the library
                                conn = None
                            else:
                                in_use[id(conn)] = conn
                    finally:
                        leave_pool()
                    if conn is not None:
                        if is_writer is True:
                            pool._num_writers += 1
                        elif is_writer is False:
                            take_readers()
                            pool._num_readers += 1
                            leave_readers()
                        conn.is_writer = is_writer
                        return conn
                    if is_writer is True:
                        writer.release()
            finally:
                leave_queue()
        return library.get_connection(pool, timeout, is_writer=is_writer)

    def put_connection(conn: Any) -> None:
        is_writer, conn.is_writer = conn.is_writer, None
        take_pool()
        try:
            if pool._closed:
                raise ConnectionPoolClosedError("Pool is closed")
            try:
                del in_use[id(conn)]
            except KeyError:
                raise ConnectionNotFromPoolError("Connection not in use in this pool") from None
            if not conn._closed:
                if len(idle) < pool.pool_size:  # no max_age: never closing
                    idle.append(conn)
                else:
                    conn.close()
            conn.in_use.release()
            if is_writer is True:
                pool._num_writers -= 1
                writer.release()
            elif is_writer is False:
                take_readers()
                pool._num_readers -= 1  # no one waits for none: not mutually exclusive
                leave_readers()
            put_condition.notify()
        finally:
            leave_pool()

    return get_connection, put_connection


class Checkout:
    """``datastore.get_connection(commit=commit)`` as the library's generator does it: a
    connection of the pool (``is_writer=commit``) on entry, given back to the pool on exit,
    whatever happened inside."""

    __slots__ = ("_commit", "_conn", "_pool")

    def __init__(self, pool: SQLiteConnectionPool, *, commit: bool) -> None:
        self._pool, self._commit = pool, commit

    def __enter__(self) -> SQLiteConnection:
        self._conn: SQLiteConnection = self._pool.get_connection(is_writer=self._commit)
        return self._conn

    def __exit__(self, *exc: object) -> None:
        self._pool.put_connection(self._conn)


class Transaction:
    """``datastore.transaction(commit=commit)`` as the library's three nested generators do
    it (``with checkout as conn, conn.transaction(commit) as curs``, that transaction being
    ``with SQLiteTransaction(conn, commit) as curs, curs``): a connection of the pool, its
    ``BEGIN``, the cursor; on exit the cursor closed, then the transaction's own exit (commit,
    or rollback and the error as the library's), then the connection given back. A write
    transaction of a watched store tells its :class:`~domain.sqlite_watch.LogWatch` when it
    begins, is about to commit, has committed, or failed."""

    __slots__ = ("_commit", "_conn", "_curs", "_pool", "_tx", "_watch")

    def __init__(
        self, pool: SQLiteConnectionPool, watch: LogWatch | None = None, *, commit: bool
    ) -> None:
        self._pool, self._commit = pool, commit
        self._watch = watch if commit else None

    def __enter__(self) -> SQLiteCursor:
        pool = self._pool
        conn = pool.get_connection(is_writer=self._commit)
        try:
            tx = SQLiteTransaction(conn, commit=self._commit)
            curs = tx.__enter__()
        except BaseException:
            pool.put_connection(conn)
            raise
        self._conn, self._tx, self._curs = conn, tx, curs
        if self._watch is not None:
            self._watch.begin()
        return curs

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        watch = self._watch
        try:
            try:
                self._curs.__exit__(kind, error, trace)  # with tx as curs, curs: the inner one
            except BaseException as closing:  # the close's error is the transaction's
                self._tx.__exit__(type(closing), closing, closing.__traceback__)
                raise
            if watch is not None and error is None:
                watch.committing()
            self._tx.__exit__(kind, error, trace)  # never suppresses: None, or it raises
        except BaseException:
            if watch is not None:
                watch.forget()
            raise
        else:  # committed (before the writer's connection is given back: the next may begin)
            if watch is not None:
                watch.committed()
        finally:
            self._pool.put_connection(self._conn)


def plain_checkouts(datastore: SQLiteDatastore) -> LogWatch | None:
    """Make ``datastore``'s ``get_connection`` and ``transaction`` :class:`Checkout` and
    :class:`Transaction` (see the module docstring), on its pool (the pool, not the datastore:
    no reference cycle keeps the datastore from being closed when it is let go). A file store's
    write transactions tell a :class:`~domain.sqlite_watch.LogWatch`, returned (kept as the
    datastore's ``LOG_WATCH`` attribute, closed with the pool); a store in memory has none."""
    pool = datastore.pool
    watch = None if pool.is_sqlite_memory_mode else LogWatch(pool.db_name)
    checkout, transaction = (
        functools.partial(Checkout, pool),
        functools.partial(Transaction, pool, watch),
    )
    datastore.get_connection = checkout  # type: ignore[method-assign,assignment]
    datastore.transaction = transaction  # type: ignore[method-assign,assignment]
    setattr(datastore, LOG_WATCH, watch)
    if watch is not None:
        pool.close = functools.partial(_close_both, pool.close, watch)  # type: ignore[method-assign]
    return watch


#: The attribute of a datastore that holds its :class:`~domain.sqlite_watch.LogWatch`.
LOG_WATCH = "roundaudit_log_watch"


def _close_both(close: Any, watch: LogWatch) -> None:
    """The pool's own ``close``, then its watch's."""
    try:
        close()
    finally:
        watch.close()


__all__ = [
    "LOG_WATCH",
    "SQLITE_CACHED_STATEMENTS",
    "SQLITE_IDLE_CONNECTIONS",
    "Checkout",
    "NewestFirst",
    "Transaction",
    "cached_connection",
    "newest_first",
    "plain_checkouts",
    "queue_on_a_lock",
    "quick_checkouts",
]

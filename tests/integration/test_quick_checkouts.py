"""A RoundAudit file store's SQLite pool checks its connections out and takes them back by
``domain.sqlite_pool.quick_checkouts``: the library's steps without its Python frames when
nothing has to wait, and the library's own ``get_connection`` whenever something does. These
tests hold it to the library's pool: the same connections in the same order, the same
counts, one writer at a time, the same waits, timeouts and errors (the queue taken, the
writer out, the pool exhausted, the pool closed, a connection not its own, a connection
closed while idle), and many threads at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import (
    ConnectionNotFromPoolError,
    ConnectionPoolClosedError,
    ConnectionUnavailableError,
)
from eventsourcing.sqlite import SQLiteConnectionPool

from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.sqlite_pool import newest_first, quick_checkouts


def _pool(
    tmp_path: Path, quick: bool = True, size: int | None = None, **kwargs: Any
) -> SQLiteConnectionPool:
    tmp_path.mkdir(parents=True, exist_ok=True)
    pool = SQLiteConnectionPool(db_name=str(tmp_path / "q.db"), **kwargs)
    newest_first(pool)
    if size is not None:  # newest_first keeps SQLITE_IDLE_CONNECTIONS at least
        pool.pool_size = size
    if not quick:  # the library's methods again, all else newest_first's
        del pool.get_connection
        del pool.put_connection
    return pool


def _quick(pool: SQLiteConnectionPool) -> bool:
    return "get_connection" in vars(pool)


def _state(pool: SQLiteConnectionPool) -> tuple[int, int, int, int, bool, bool]:
    return (
        len(pool._pool),
        len(pool._in_use),
        pool._num_readers,
        pool._num_writers,
        pool._writer_lock.locked(),
        pool._get_semaphore.locked(),  # type: ignore[attr-defined]
    )


def test_a_file_stores_pool_has_the_quick_checkouts_and_others_keep_the_librarys(
    tmp_path: Path,
) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        assert _quick(app.recorder.datastore.pool)  # type: ignore[attr-defined]
    finally:
        app.close()
    memory = SQLiteConnectionPool(db_name="file:quick?mode=memory&cache=shared")
    newest_first(memory)  # reads and writes mutually exclusive: the library's
    assert not _quick(memory)
    memory.close()
    for kwargs in ({"pre_ping": True}, {"max_age": 60.0}, {"pool_timeout": None}):
        other = _pool(tmp_path, **kwargs)
        assert not _quick(other), kwargs
        other.close()
    plain = SQLiteConnectionPool(db_name=str(tmp_path / "plain.db"))
    assert not quick_checkouts(plain)  # not newest first, its queue a semaphore
    assert not _quick(plain)
    plain.close()
    pool = _pool(tmp_path)
    assert not quick_checkouts(pool)  # once is enough
    pool.close()


def test_the_same_connections_and_counts_as_the_librarys_pool(tmp_path: Path) -> None:
    """One sequence of checkouts and returns, readers and writers, on a quick pool and on the
    same pool with the library's methods: the same connection each time (by its place in
    the order they were made) and the same pool state after every step."""
    runs = []
    for quick in (True, False):
        pool = _pool(tmp_path / str(quick), quick=quick, size=3, max_overflow=2)
        assert _quick(pool) is quick
        made: list[Any] = []
        out: list[Any] = []
        log: list[object] = []

        def number(conn: Any, made: list[Any] = made) -> int:
            if not any(conn is m for m in made):
                made.append(conn)
            return next(i for i, m in enumerate(made) if m is conn)

        for step in "rrwrPrPPPwPrrrrPPPPPwrP":  # r read, w write, P return the last out
            if step == "P":
                conn = out.pop()
                pool.put_connection(conn)
                assert conn.is_writer is None
                log.append(("put", number(conn), conn.closed))
            else:
                conn = pool.get_connection(is_writer=step == "w")
                assert conn.is_writer is (step == "w")
                out.append(conn)
                log.append((step, number(conn)))
            log.append(_state(pool))
        runs.append(log)
        pool.close()
    assert runs[0] == runs[1]
    assert ("put", 1, True) in runs[0]  # above pool_size: closed, not kept


def test_one_writer_at_a_time_and_the_next_waits_then_times_out(tmp_path: Path) -> None:
    pool = _pool(tmp_path, pool_timeout=5.0)
    writer = pool.get_connection(is_writer=True)
    with pytest.raises(ConnectionUnavailableError, match="return of writer"):
        pool.get_connection(timeout=0.05, is_writer=True)
    assert _state(pool) == (0, 1, 0, 1, True, False)
    reader = pool.get_connection(is_writer=False)  # readers do not wait for the writer
    pool.put_connection(reader)
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(pool.get_connection(is_writer=True)))
    waiter.start()
    waiter.join(0.1)
    assert not got  # waiting for the writer's return
    pool.put_connection(writer)
    waiter.join(5)
    assert len(got) == 1
    assert got[0].is_writer is True
    pool.put_connection(got[0])
    assert _state(pool) == (2, 0, 0, 0, False, False)
    pool.close()


def test_a_checkout_while_another_holds_the_queue_waits_for_it_then_times_out(
    tmp_path: Path,
) -> None:
    pool = _pool(tmp_path, pool_timeout=5.0)
    pool.put_connection(pool.get_connection(is_writer=False))  # one idle
    assert pool._get_semaphore.acquire()
    try:
        with pytest.raises(ConnectionUnavailableError, match="semaphore"):
            pool.get_connection(timeout=0.05, is_writer=False)
        got: list[Any] = []
        waiter = threading.Thread(target=lambda: got.append(pool.get_connection()))
        waiter.start()
        waiter.join(0.1)
        assert not got  # queued behind the holder, though a connection is idle
    finally:
        pool._get_semaphore.release()
    waiter.join(5)
    assert len(got) == 1
    pool.put_connection(got[0])
    assert _state(pool) == (1, 0, 0, 0, False, False)
    pool.close()


def test_an_exhausted_pool_refuses_cleanly_and_a_return_wakes_a_waiter(tmp_path: Path) -> None:
    pool = _pool(tmp_path, size=2, max_overflow=1, pool_timeout=5.0)
    held = [pool.get_connection(is_writer=False) for _ in range(3)]
    with pytest.raises(ConnectionUnavailableError, match="return of connection"):
        pool.get_connection(timeout=0.05, is_writer=False)
    assert _state(pool)[:2] == (0, 3)
    assert not pool._get_semaphore.locked()  # type: ignore[attr-defined]
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(pool.get_connection(is_writer=False)))
    waiter.start()
    waiter.join(0.1)
    assert not got  # waiting in the library's pool for a return
    pool.put_connection(held[1])  # the quick return notifies it
    waiter.join(5)
    assert len(got) == 1
    assert got[0] is held[1]
    for conn in (held[0], held[2], got[0]):
        pool.put_connection(conn)
    # the library's own get_connection counts the refused reader and never uncounts it:
    # as it was before the quick checkouts (they fell back to it)
    assert _state(pool) == (2, 0, 1, 0, False, False)
    pool.close()


def test_a_closed_pool_and_a_stranger_are_refused(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    other = _pool(tmp_path / "other")
    conn = pool.get_connection(is_writer=False)
    stranger = other.get_connection(is_writer=False)
    with pytest.raises(ConnectionNotFromPoolError):
        pool.put_connection(stranger)
    other.put_connection(stranger)
    pool.close()
    with pytest.raises(ConnectionPoolClosedError):
        pool.get_connection(is_writer=False)
    with pytest.raises(ConnectionPoolClosedError):
        pool.put_connection(conn)
    other.close()


def test_a_connection_closed_while_idle_is_dropped_and_another_made(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    first, second = pool.get_connection(is_writer=False), pool.get_connection(is_writer=False)
    pool.put_connection(first)
    pool.put_connection(second)
    second.close()  # as its timer would: idle, then closed
    assert pool.get_connection(is_writer=True) is first
    assert _state(pool) == (0, 1, 0, 1, True, False)
    fresh = pool.get_connection(is_writer=False)  # none idle: the library makes one
    assert fresh is not second
    assert not fresh.closed
    assert _state(pool) == (0, 2, 1, 1, True, False)
    pool.close()


def test_many_threads_never_share_a_connection_and_write_one_at_a_time(tmp_path: Path) -> None:
    pool = _pool(tmp_path, size=4, max_overflow=4, pool_timeout=30.0)
    guard = threading.Lock()
    holders: dict[int, int] = {}
    writers = [0]
    errors: list[BaseException] = []

    def work(me: int) -> None:
        try:
            for n in range(150):
                is_writer = (me + n) % 5 == 0
                conn = pool.get_connection(is_writer=is_writer)
                with guard:
                    assert id(conn) not in holders, "a connection lent twice"
                    holders[id(conn)] = me
                    writers[0] += is_writer
                    assert writers[0] <= 1, "two writers"
                conn.cursor().execute("SELECT 1")
                with guard:
                    del holders[id(conn)]
                    writers[0] -= is_writer
                pool.put_connection(conn)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _state(pool)[1:] == (0, 0, 0, False, False)
    assert 1 <= len(pool._pool) <= 4
    pool.close()

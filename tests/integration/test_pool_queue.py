"""The queue every checkout of a RoundAudit store's SQLite pool joins first is a lock
(``domain.sqlite_pool.queue_on_a_lock``, applied by ``newest_first``): the same mutual
exclusion and the same timeout as the library's semaphore of one, and a pool that waits
without a timeout keeps the semaphore."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest
from eventsourcing.persistence import ConnectionUnavailableError
from eventsourcing.sqlite import SQLiteConnectionPool

from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.sqlite_pool import newest_first, queue_on_a_lock

LOCK = type(threading.Lock())


def _pool(tmp_path: Path, **kwargs: object) -> SQLiteConnectionPool:
    return SQLiteConnectionPool(db_name=str(tmp_path / "p.db"), **kwargs)  # type: ignore[arg-type]


def test_a_stores_pool_queues_on_a_lock_and_times_out_as_before(tmp_path: Path) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        pool = app.recorder.datastore.pool  # type: ignore[attr-defined]
        assert type(pool._get_semaphore) is LOCK
        # a checkout while another thread is in the queue waits for it, then times out
        assert pool._get_semaphore.acquire()
        try:
            with pytest.raises(ConnectionUnavailableError, match="semaphore"):
                pool.get_connection(timeout=0.05, is_writer=False)
        finally:
            pool._get_semaphore.release()
        conn = pool.get_connection(is_writer=True)  # the queue left free after each checkout
        pool.put_connection(conn)
        assert pool._get_semaphore.acquire(blocking=False)
        pool._get_semaphore.release()
    finally:
        app.close()


def test_a_checkout_waiting_in_the_queue_gets_its_connection_once_it_is_free(
    tmp_path: Path,
) -> None:
    pool = _pool(tmp_path, pool_timeout=5.0)
    newest_first(pool)
    got: list[object] = []
    assert pool._get_semaphore.acquire()
    waiter = threading.Thread(target=lambda: got.append(pool.get_connection(is_writer=True)))
    waiter.start()
    waiter.join(0.1)
    assert not got  # queued behind the holder
    pool._get_semaphore.release()
    waiter.join(5)
    assert len(got) == 1
    pool.put_connection(got[0])  # type: ignore[arg-type]
    pool.close()


def test_a_pool_without_a_timeout_keeps_its_semaphore(tmp_path: Path) -> None:
    """``Lock.acquire`` takes no ``timeout=None``: such a pool keeps the library's queue (a
    lock there would raise ``TypeError`` at the first checkout)."""
    pool = _pool(tmp_path, pool_timeout=None)
    newest_first(pool)
    assert type(pool._get_semaphore) is threading.Semaphore
    assert pool._get_semaphore.acquire(timeout=None)
    pool._get_semaphore.release()
    pool.close()
    other = _pool(tmp_path, pool_timeout=2)
    queue_on_a_lock(other)
    assert type(other._get_semaphore) is LOCK
    queue_on_a_lock(other)  # once is enough: a lock stays
    assert type(other._get_semaphore) is LOCK
    other.close()


def test_eight_threads_commit_through_the_queue(tmp_path: Path) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    players = [f"q{i}" for i in range(8)]
    for p in players:
        app.open_wallet(p, account_type="test")
    errors: list[BaseException] = []

    def work(p: str) -> None:
        try:
            for n in range(15):
                app.deposit(p, "1.00", transaction_id=f"{p}-{n}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,)) for p in players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        for p in players:
            assert Decimal(app.balance(p)) == Decimal("15.00")
    finally:
        app.close()

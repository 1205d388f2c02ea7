"""The SQLite connection pool of a RoundAudit store takes its idle connections newest first
and keeps more of them open (``domain.sqlite_pool.newest_first``): the connection returned last
(the one whose page cache is most likely current) is the next one taken, up to
``SQLITE_IDLE_CONNECTIONS`` stay open, each new connection keeps ``SQLITE_CACHED_STATEMENTS``
prepared statements (``domain.sqlite_pool.cached_connection``) and is otherwise the library's,
and a read on any of them sees every commit."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.sqlite import SQLiteConnectionPool

from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.sqlite_pool import (
    SQLITE_CACHED_STATEMENTS,
    SQLITE_IDLE_CONNECTIONS,
    Checkout,
    Transaction,
)


def test_the_connection_returned_last_is_taken_first_and_idle_ones_stay_open(
    tmp_path: Path,
) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    pool = app.recorder.datastore.pool  # type: ignore[attr-defined]
    held = [pool.get_connection(is_writer=False) for _ in range(SQLITE_IDLE_CONNECTIONS)]
    for conn in held:
        pool.put_connection(conn)
    assert pool.num_in_pool == SQLITE_IDLE_CONNECTIONS  # the library's pool kept 5
    first, second = pool.get_connection(is_writer=False), pool.get_connection(is_writer=False)
    assert first is held[-1]
    assert second is held[-2]
    pool.put_connection(second)
    pool.put_connection(first)
    assert pool.get_connection(is_writer=False) is first
    pool.put_connection(first)
    app.close()


def test_reads_on_every_pooled_connection_see_each_commit(tmp_path: Path) -> None:
    """Balances read by many threads at once, each deposit made by another thread just
    before, on connections taken newest first: every read is current."""
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    players = [f"p{i}" for i in range(8)]
    for p in players:
        app.open_wallet(p, account_type="test")
    errors: list[str] = []

    def work(p: str) -> None:
        for n in range(1, 21):
            app.deposit(p, "1.00", transaction_id=f"{p}-{n}")
            other = RoundAudit.balance  # the same application, read through its store
            if str(other(app, p)) not in (f"{n}.00", str(n)):
                errors.append(f"{p} after {n}: {other(app, p)}")

    threads = [threading.Thread(target=work, args=(p,)) for p in players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fresh = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    assert [str(fresh.balance(p)) for p in players] == [str(app.balance(p)) for p in players]
    assert {str(fresh.balance(p)) for p in players} <= {"20.00", "20"}
    fresh.close()
    app.close()


def test_new_connections_keep_prepared_statements_and_are_otherwise_the_librarys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every connection the store's pool opens keeps ``SQLITE_CACHED_STATEMENTS`` prepared
    statements (the library opens its own with ``cached_statements=True``, which Python takes
    as 1) and is opened and set up as the library's: the same arguments but that one, WAL,
    autocommit, ``sqlite3.Row`` rows."""
    opened: list[dict[str, Any]] = []
    connect = sqlite3.connect

    def spy(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(kwargs)
        return connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", spy)
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    app.open_wallet("p1", account_type="test")
    app.deposit("p1", "1.00", transaction_id="t1")
    pool = app.recorder.datastore.pool  # type: ignore[attr-defined]
    held = [pool.get_connection(is_writer=False) for _ in range(3)]
    ours = [o for o in opened if o.get("database") == pool.db_name]
    assert len(ours) >= 3
    assert {o["cached_statements"] for o in ours} == {SQLITE_CACHED_STATEMENTS}
    assert SQLITE_CACHED_STATEMENTS > 1
    opened.clear()
    library = SQLiteConnectionPool(db_name=pool.db_name, lock_timeout=pool.lock_timeout)
    theirs = library.get_connection(is_writer=False)
    assert [{**o, "cached_statements": None} for o in opened] == [
        {**ours[0], "cached_statements": None}
    ]
    for conn in [*held, theirs]:
        c = conn._sqlite_conn
        assert c.row_factory is sqlite3.Row
        assert c.isolation_level is None
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert type(conn) is type(theirs)
    library.put_connection(theirs)
    library.close()
    for conn in held:
        pool.put_connection(conn)
    assert str(app.balance("p1")) in ("1.00", "1")
    app.close()


# ------------------------------------------------------------ the datastore's checkouts
def _store(tmp_path: Path) -> tuple[RoundAudit, Any]:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    datastore = app.recorder.datastore  # type: ignore[attr-defined]
    assert isinstance(datastore.transaction(commit=False), Transaction)  # plain_checkouts
    assert isinstance(datastore.get_connection(commit=False), Checkout)
    with datastore.transaction(commit=True) as c:
        c.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    return app, datastore


def _rows(datastore: Any) -> list[tuple[int, str]]:
    with datastore.get_connection(commit=False) as conn, conn.cursor() as c:
        c.execute("SELECT k, v FROM t ORDER BY k")
        return [tuple(r) for r in c.fetchall()]


def _idle(pool: Any) -> tuple[int, int, int, bool]:
    """What the pool holds when nothing is checked out: no connection in use, no reader,
    no writer, the writer's lock free."""
    return (len(pool._in_use), pool._num_readers, pool._num_writers, pool._writer_lock.locked())


def _conflicting(datastore: Any) -> None:
    with datastore.transaction(commit=True) as c:
        c.execute("INSERT INTO t VALUES (3, 'c')")
        c.execute("INSERT INTO t VALUES (1, 'again')")  # the key is taken: all rolled back


def _failing(datastore: Any) -> None:
    with datastore.transaction(commit=True) as c:
        c.execute("INSERT INTO t VALUES (4, 'd')")
        raise KeyError("mine")  # any error: rolled back, raised as it is


def _failing_checkout(datastore: Any) -> None:
    with datastore.get_connection(commit=True):
        assert datastore.pool._writer_lock.locked()
        raise KeyError("inside a checkout")


def test_a_transaction_commits_rolls_back_and_maps_errors_as_the_librarys(tmp_path: Path) -> None:
    """``domain.sqlite_pool.Transaction`` and ``Checkout`` (the datastore's, made by
    ``plain_checkouts``) do what the library's generators do: a transaction commits when it
    ends (``commit=True``) and rolls back otherwise or on any error, an error of the
    database's raised as the library's (``IntegrityError``), and whatever happens the
    connection goes back to the pool, its writer or reader count and lock released."""
    from eventsourcing.persistence import IntegrityError

    app, datastore = _store(tmp_path)
    pool = datastore.pool
    idle = (0, 0, 0, False)
    with datastore.transaction(commit=True) as c:
        c.execute("INSERT INTO t VALUES (1, 'a')")
        assert pool._writer_lock.locked()
        assert pool._num_writers == 1
    assert _rows(datastore) == [(1, "a")]
    assert _idle(pool) == idle
    with datastore.transaction(commit=False) as c:  # a read transaction: rolled back
        c.execute("INSERT INTO t VALUES (2, 'b')")
        assert pool._num_readers == 1
        assert not pool._writer_lock.locked()
    assert _rows(datastore) == [(1, "a")]
    assert _idle(pool) == idle
    with pytest.raises(IntegrityError):
        _conflicting(datastore)
    assert _rows(datastore) == [(1, "a")]
    assert _idle(pool) == idle
    with pytest.raises(KeyError, match="mine"):
        _failing(datastore)
    assert _rows(datastore) == [(1, "a")]
    assert _idle(pool) == idle
    with pytest.raises(KeyError, match="inside a checkout"):
        _failing_checkout(datastore)
    assert _idle(pool) == idle
    with datastore.transaction(commit=True) as c:  # the pool still serves both kinds
        c.execute("INSERT INTO t VALUES (5, 'e')")
    assert _rows(datastore) == [(1, "a"), (5, "e")]
    assert _idle(pool) == idle
    app.close()


def test_a_transaction_whose_begin_fails_gives_its_connection_back(tmp_path: Path) -> None:
    """A ``BEGIN`` that fails (here: a transaction already open on the connection) raises
    the database's error, and the connection is back in the pool, as the library's."""
    app, datastore = _store(tmp_path)
    pool = datastore.pool
    with datastore.get_connection(commit=False) as conn:
        conn.cursor().execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError):
        datastore.transaction(commit=False).__enter__()
    assert _idle(pool) == (0, 0, 0, False)
    app.close()

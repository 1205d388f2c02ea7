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
from domain.sqlite_pool import SQLITE_CACHED_STATEMENTS, SQLITE_IDLE_CONNECTIONS


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

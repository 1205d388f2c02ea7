"""The cache kept current with the log (``domain.store.Watched``), on memory, SQLite and
PostgreSQL.

A command catches the aggregate cache up with the log once (the ids and versions of the events
after its mark), then uses cached aggregates without a query each. These tests hold it to what
the per-aggregate fast-forward guaranteed:

* an aggregate a command only **reads** (a wallet whose balance refuses a withdrawal or a bet:
  nothing is saved, so no version conflict would catch a stale copy) is current when another
  writer (a second ``RoundAudit`` on the same SQLite file or PostgreSQL database) changed it
  between two commands of the first; with the catch-up switched off the same command decides on
  the stale copy (the test would fail), which shows the scenario needs it;
* after every catch-up, every aggregate the cache holds is at the version the store holds,
  through rounds, deposits and withdrawals of two writers interleaved, and of threads of both
  at once;
* a command of a process writing alone reads the log once and no aggregate's events;
* the same records as the library's path: ``test_record_paths.py``; the copies the cache keeps
  equal their rebuild: ``test_cache_saved.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

import pytest

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.errors import ConcurrentUpdate, InsufficientFunds
from domain.store import WAITING, Saving, Watched


def two(env: dict[str, str]) -> tuple[RoundAudit, RoundAudit]:
    return RoundAudit(env=env), RoundAudit(env=env)


def assert_cache_current(app: RoundAudit) -> int:
    """Catch up, then every cached aggregate is at the store's last version of it."""
    repository = app.repository
    assert isinstance(repository, Watched)
    repository.catch_up()
    cache: Any = repository.cache
    checked = 0
    for ident in list(cache.cache):
        try:
            cached = cache.get(ident)
        except KeyError:
            continue
        last = app.recorder.select_events(ident, desc=True, limit=1)
        assert last, f"{ident} cached but not stored"
        assert cached.version == last[0].originator_version, type(cached).__name__
        checked += 1
    return checked


def test_a_balance_another_writer_raised_is_seen_by_a_refusal(store_env: dict[str, str]) -> None:
    one, other = two(store_env)
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")  # one's cache: version 2, 5.00
    other.deposit("p", "100.00", transaction_id="d2")  # another writer: version 3
    # withdrawing 50 is refused on the stale 5.00 (nothing saved: no conflict would catch it)
    assert one.withdraw("p", "50.00", transaction_id="w1") == Decimal("55.00")
    assert other.balance("p") == Decimal("55.00")
    one.close()
    other.close()


def test_a_bet_sees_what_another_writer_deposited(store_env: dict[str, str]) -> None:
    one, other = two(store_env)
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    rid = one.start_round(table_id="t", round_number=1, variant="european", production=False)
    assert one.balance("p") == Decimal("5.00")
    other.deposit("p", "100.00", transaction_id="d2")
    one.place_bet(rid, player="p", amount="50.00", spot=1)  # refused on a stale 5.00
    assert other.balance("p") == Decimal("55.00")
    one.close()
    other.close()


def test_without_the_catch_up_the_stale_copy_decides(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenario above needs the catch-up: switched off, the cached copy is used stale."""
    one, other = two(store_env)
    one.open_wallet("p", account_type="test")
    one.deposit("p", "5.00", transaction_id="d1")
    other.deposit("p", "100.00", transaction_id="d2")
    monkeypatch.setattr(Watched, "catch_up", lambda self: None)
    with pytest.raises(InsufficientFunds):
        one.withdraw("p", "50.00", transaction_id="w1")
    one.close()
    other.close()


def test_two_writers_interleaved_leave_every_cached_aggregate_current(
    store_env: dict[str, str],
) -> None:
    one, other = two(store_env)
    for player in ("a", "b"):
        one.open_wallet(player, account_type="test")
    checked = 0
    for i in range(6):
        writer, reader = (one, other) if i % 2 == 0 else (other, one)
        writer.deposit("a", "10.00", transaction_id=f"a{i}")
        simulate(writer, variant="european", rounds=1, players=2, table=f"t{i}")
        reader.deposit("b", "3.00", transaction_id=f"b{i}")
        if i % 3 == 0:
            writer.withdraw("b", "1.00", transaction_id=f"wb{i}")
        checked += assert_cache_current(one) + assert_cache_current(other)
        assert one.balance("a") == other.balance("a") == Decimal("10.00") * (i + 1)
    assert checked > 20
    one.close()
    other.close()


def test_threads_of_two_writers_lose_nothing_and_leave_the_cache_current(
    store_env: dict[str, str],
) -> None:
    one, other = two(store_env)
    players = [f"p{n}" for n in range(3)]
    for p in players:
        one.open_wallet(p, account_type="test")
    errors: list[BaseException] = []
    done: dict[str, int] = dict.fromkeys(players, 0)
    lock = threading.Lock()

    def work(app: RoundAudit, name: str) -> None:
        try:
            for i in range(12):
                p = players[i % len(players)]
                try:
                    app.deposit(p, "2.00", transaction_id=f"{name}-{i}")
                except ConcurrentUpdate:  # kept losing to the others: nothing recorded
                    continue
                with lock:
                    done[p] += 1
                app.balance(p)
            simulate(app, variant="european", rounds=2, players=2, table=f"table-{name}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(app, f"{n}-{k}"))
        for n, app in enumerate((one, other))
        for k in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(done.values()) > 36  # most of the 72 deposits went through
    for p in players:  # every acknowledged deposit, once
        assert one.balance(p) == other.balance(p) == Decimal("2.00") * done[p]
    assert assert_cache_current(one) > 0
    assert assert_cache_current(other) > 0
    one.close()
    other.close()


def test_a_command_alone_reads_the_log_once_and_no_aggregate(
    app_on_every_store: RoundAudit,
) -> None:
    app = app_on_every_store
    simulate(app, variant="european", rounds=1, players=2, table="warm")
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    tails, gets = count_reads(app)
    for n in range(3):
        app.deposit("p", "1.00", transaction_id=f"again-{n}")
    assert gets == []  # the cached wallet, used as it is
    assert tails == [0, 0, 0]  # each save moved the mark past itself
    assert app.balance("p") == Decimal("8.00")  # a query outside a command: its own read
    assert len(gets) == 1


def test_a_read_overtaken_by_a_catch_up_is_not_cached(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that began before the mark moved (another thread's catch-up passing another
    writer's event of the same aggregate) is used by its own command but not cached: the next
    command, which trusts the cache, would decide on it stale."""
    one, other = two(store_env)
    other.open_wallet("p", account_type="test")
    other.deposit("p", "5.00", transaction_id="d1")
    real = Watched._reconstruct_aggregate
    overtaken: list[bool] = []

    def read_then_overtaken(self: Watched, *args: Any) -> Any:
        aggregate = real(self, *args)  # read: version 2, 5.00
        if self is one.repository and not overtaken:
            overtaken.append(True)
            other.deposit("p", "100.00", transaction_id="d2")  # version 3
            self.catch_up()  # as another thread of one would, between the read and its put
        return aggregate

    monkeypatch.setattr(Watched, "_reconstruct_aggregate", read_then_overtaken)
    with pytest.raises(InsufficientFunds):  # decided on what it read (5.00), as it began first
        one.withdraw("p", "50.00", transaction_id="w1")
    assert overtaken == [True]
    assert one.withdraw("p", "50.00", transaction_id="w2") == Decimal("55.00")
    one.close()
    other.close()


def test_a_save_overtaken_by_a_catch_up_is_not_cached(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save whose events a catch-up passed before the save reached the cache (another writer
    may have written after it) leaves the cache without its copy: the next command reads the
    round as the store has it, not as this save left it."""
    one, other = two(store_env)
    for p in ("a", "b"):
        one.open_wallet(p, account_type="test")
        one.deposit(p, "100.00", transaction_id=f"d-{p}")
    rid = one.start_round(table_id="t", round_number=1, variant="multihand", production=False)
    real = Watched.saved
    overtaken: list[bool] = []

    def saved_late(self: Watched, ids: Any, aggregates: Any) -> None:
        if self is one.repository and not overtaken and UUID(rid) in aggregates:
            overtaken.append(True)
            other.place_bet(rid, player="b", amount="10.00", spot=2)  # the round's next version
            self.catch_up()
        real(self, ids, aggregates)

    monkeypatch.setattr(Watched, "saved", saved_late)
    one.place_bet(rid, player="a", amount="10.00", spot=1)
    assert overtaken == [True]
    one.close_betting(rid)  # on the round with both bets: no conflict to retry
    view = other.round_view(rid)
    assert one.round(rid).version == other.round(rid).version
    assert view == one.round_view(rid)
    one.close()
    other.close()


def test_a_save_after_another_writers_events_leaves_the_mark_before_them(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark moves past a save's events only when they directly follow it: another writer's
    events between the command's catch-up and its commit are still caught up with next."""
    one, other = two(store_env)
    for p in ("a", "b"):
        one.open_wallet(p, account_type="test")
        one.deposit(p, "5.00", transaction_id=f"d-{p}")  # both cached in one
    real = Watched.catch_up
    between: list[bool] = []

    def catch_up_then_another_writer(self: Watched) -> None:
        real(self)
        if self is one.repository and not between:
            between.append(True)
            other.deposit("b", "100.00", transaction_id="d2")  # before one's own commit

    monkeypatch.setattr(Watched, "catch_up", catch_up_then_another_writer)
    one.deposit("a", "1.00", transaction_id="d3")  # its events follow the other writer's
    assert between == [True]
    assert one.withdraw("b", "50.00", transaction_id="w1") == Decimal("55.00")
    one.close()
    other.close()


def test_another_applications_cache_is_not_trusted_inside_a_command(
    store_env: dict[str, str],
) -> None:
    """The caught-up block is one repository's: another application's repository read inside
    it (same thread) still brings its cached aggregate up to date."""
    one, other, third = RoundAudit(env=store_env), *two(store_env)
    other.open_wallet("p", account_type="test")
    assert other.balance("p") == Decimal("0.00")  # cached in other
    third.deposit("p", "9.00", transaction_id="d1")
    repository = one.repository
    assert isinstance(repository, Watched)
    with repository.current():
        assert other.balance("p") == Decimal("9.00")
    for app in (one, other, third):
        app.close()


def calls_of(monkeypatch: pytest.MonkeyPatch, obj: object, name: str) -> list[Any]:
    """From now on (until ``monkeypatch`` undoes it): the first argument of each call of
    ``obj``'s method ``name`` (what a command asks ``RoundAudit.shoe`` or ``.wallet`` for)."""
    calls: list[Any] = []
    real = getattr(obj, name)

    def counted(first: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def count_reads(app: RoundAudit) -> tuple[list[int], list[UUID]]:
    """From now on: the rows each catch-up reads (0 for one that knew without a query that
    the log ends at its mark: a SQLite file store, ``domain.sqlite_watch``), and the
    aggregates read by their id."""
    repository: Any = app.repository
    tails: list[int] = []
    gets: list[UUID] = []
    log, real_get = repository._log, app.events.get
    real_tail, real_end = log.log_tail, repository._log_end

    def tail(after: int, limit: int) -> Any:
        rows = real_tail(after, limit)
        tails.append(len(rows))
        return rows

    def end() -> int | None:
        known = real_end()
        if known is not None and known == repository._mark:
            tails.append(0)  # no row after the mark: no query
        return known

    if real_end is not None:
        repository._log_end = end

    def get(originator_id: UUID, **kwargs: Any) -> Any:
        gets.append(originator_id)
        return real_get(originator_id, **kwargs)

    log.log_tail = tail
    app.events.get = get  # type: ignore[method-assign]
    return tails, gets


def _wallets_caught_up(app: RoundAudit) -> Watched:
    """Wallets "a" and "b" of 5.00 each, cached, and the repository caught up."""
    for p in ("a", "b"):
        app.open_wallet(p, account_type="test")
        app.deposit(p, "5.00", transaction_id=f"d-{p}")
    repository = app.repository
    assert isinstance(repository, Watched)
    repository.catch_up()
    return repository


def _unreported(monkeypatch: pytest.MonkeyPatch, *commands: Callable[[], object]) -> list[Any]:
    """Run ``commands`` with the catch-up off and each save's report to the repository kept
    back: the (rows, aggregates) each save would report, in order."""
    reported: list[Any] = []
    monkeypatch.setattr(Watched, "saved", lambda self, rows, aggs: reported.append((rows, aggs)))
    monkeypatch.setattr(Watched, "catch_up", lambda self: None)
    for command in commands:
        command()
    monkeypatch.undo()
    return reported


def test_a_save_a_catch_up_passed_is_cached_when_nothing_newer_followed(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up (another thread's) passing a save's events before the save reaches the cache
    does not keep the save out when the history shows nothing newer of its aggregates."""
    app = app_on_every_store
    app.open_wallet("p", account_type="test")
    app.deposit("p", "5.00", transaction_id="d1")
    real = Watched.saved

    def caught_up_first(self: Watched, rows: Any, aggregates: Any) -> None:
        self.catch_up()  # reads this save's own events: the mark passes them
        real(self, rows, aggregates)

    monkeypatch.setattr(Watched, "saved", caught_up_first)
    app.deposit("p", "1.00", transaction_id="d2")
    monkeypatch.undo()
    tails, gets = count_reads(app)
    app.deposit("p", "1.00", transaction_id="d3")
    assert gets == []  # the wallet, cached at the version d2 saved
    assert tails == [0]


def test_saves_reported_out_of_order_move_the_mark_past_both(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saves of a group commit report in any order: a save beyond the mark waits until the
    one before it moves the mark, then the mark passes both (nothing left to catch up)."""
    app = app_on_every_store
    repository = _wallets_caught_up(app)
    mark = repository._mark
    (rows_a, saved_a), (rows_b, saved_b) = _unreported(
        monkeypatch,
        lambda: app.deposit("a", "1.00", transaction_id="a1"),
        lambda: app.deposit("b", "1.00", transaction_id="b1"),
    )
    repository.saved(rows_b, saved_b)
    assert repository._mark == mark  # waits for the save before it
    repository.saved(rows_a, saved_a)
    assert repository._mark == rows_b[-1][0]
    tails, gets = count_reads(app)
    assert app.deposit("a", "1.00", transaction_id="a2") == Decimal("7.00")
    assert app.deposit("b", "1.00", transaction_id="b2") == Decimal("7.00")
    assert gets == []
    assert tails == [0, 0]


def test_the_saves_waiting_for_the_mark_are_bounded() -> None:
    app = RoundAudit()
    repository = app.repository
    assert isinstance(repository, Watched)
    repository.catch_up()
    mark = repository._mark
    assert mark is not None
    for n in range(WAITING + 50):  # each beyond a gap: none can move the mark
        repository.saved([(mark + 10 + 2 * n, uuid4(), 1)], {})
    assert len(repository._waiting) == WAITING
    assert repository._mark == mark
    assert min(repository._waiting) == mark + 10 + 2 * 50  # the oldest forgotten


@pytest.mark.parametrize("kept", [1, 100_000])
def test_the_log_tail_gives_the_stores_ids_and_versions(
    store_env: dict[str, str], kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``log_tail`` (SQLite's with its ids kept as UUIDs, also when the kept ids are emptied
    at every new one) gives each event's notification id, originator id (a UUID equal to the
    store's) and version, as the library's notifications do, from any position."""
    monkeypatch.setattr("domain.log_tail.IDS_KEPT", kept)
    app = RoundAudit(env=store_env)
    for i in range(3):
        app.open_wallet(f"t{i}", account_type="test")
        app.deposit(f"t{i}", "1.00", transaction_id=f"d{i}")
    notes = app.recorder.select_notifications(1, 1000)
    expected = [(n.id, UUID(str(n.originator_id)), n.originator_version) for n in notes]
    log: Any = app.recorder
    for after in (0, 2, expected[-1][0]):
        rows = log.log_tail(after, 1000)
        assert rows == [r for r in expected if r[0] > after]
        assert all(type(r[1]) is UUID for r in rows)
    assert log.log_tail(0, 2) == expected[:2]
    app.close()


def _postgres_deposits(url: str) -> tuple[RoundAudit, Any, list[tuple[int, UUID, int]]]:
    """An app on PostgreSQL with three test wallets' deposits, its recorder, and the log's
    (notification id, originator id, version) as the library's notifications give them."""
    from domain.log_tail import PostgresTail
    from domain.persistence import environment_for

    app = RoundAudit(env=environment_for(url))
    log = app.recorder
    assert isinstance(log, PostgresTail)
    for i in range(3):
        app.open_wallet(f"t{i}", account_type="test")
        app.deposit(f"t{i}", "1.00", transaction_id=f"d{i}")
    notes = log.select_notifications(1, 1000)
    return app, log, [(n.id, UUID(str(n.originator_id)), n.originator_version) for n in notes]


@pytest.mark.postgres
def test_postgres_log_tail_through_libpq_reads_as_the_library(postgres_url: str) -> None:
    """PostgreSQL's ``log_tail`` (one statement prepared under its own name on each pooled
    connection, sent through libpq's own calls, its rows binary) reads what the library's
    notifications give, for any position and limit; its statement deallocated on the pooled
    connections since (``DEALLOCATE``, or psycopg's ``DEALLOCATE ALL`` after a ``ROLLBACK``
    on the connection), it is prepared again and reads the same; the pooled connections
    lost (their backends terminated), the read is retried on new ones; another schema's or
    table's failure raises the library's error."""
    from eventsourcing.persistence import ProgrammingError
    from pg import fresh_database, terminate_others

    from domain import pg_group

    with fresh_database(postgres_url) as url:
        app, log, expected = _postgres_deposits(url)
        top = expected[-1][0]

        def check() -> None:
            for after, limit in ((0, 1000), (2, 1000), (0, 2), (top - 1, 1000), (top, 5)):
                rows = log.log_tail(after, limit)
                assert rows == [r for r in expected if r[0] > after][:limit]
                assert all(type(oid) is UUID for _, oid, _ in rows)

        check()
        name, _ = log._tail_statement()
        holding = [c for c, names in pg_group.PREPARED.items() if name in names and not c.closed]
        assert holding  # prepared under its name by libpq's calls, on the pooled connections
        for pooled in holding:  # (idle in the pool here)
            held = pooled.pgconn.exec_(b"SELECT name FROM pg_prepared_statements")
            assert name in {bytes(held.get_value(r, 0)) for r in range(held.ntuples)}
        for _ in range(2):  # deallocated on every idle pooled connection: prepared again
            for pooled in list(pg_group.PREPARED):
                if not pooled.closed and name in pg_group.PREPARED[pooled]:
                    pooled.pgconn.exec_(b"DEALLOCATE " + name)
            check()
        with log.datastore.get_connection() as conn:  # psycopg's DEALLOCATE ALL on a rollback
            with conn.transaction(force_rollback=True):
                conn.execute("SELECT 1", prepare=True)
            conn.execute("SELECT 1", prepare=True)
        check()
        terminate_others(url)  # every pooled connection lost, as in a server's restart
        for _ in range(3):  # retried on the pool's new connections
            assert log.log_tail(top, 1000) == []
        check()
        with log.datastore.get_connection() as conn:
            conn.execute(f"ALTER TABLE {log.events_table_name} RENAME TO gone")
        with pytest.raises(ProgrammingError):
            log.log_tail(0, 10)
        app.close()


@pytest.mark.postgres
def test_postgres_reads_take_a_pooled_connection_and_give_it_back_idle(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``log_tail`` and ``rows_and_tail`` take their connection from the pool without the
    library's ``get_connection`` (``domain.log_tail.read_prepared``): they read what it reads,
    every connection is back in the pool and idle after each read, a failed read included,
    whose error is the library's; a pool that cannot be opened (closed) raises the library's
    error too, as ``get_connection`` does."""
    import psycopg
    from eventsourcing.persistence import OperationalError, ProgrammingError
    from pg import fresh_database
    from psycopg.pq import TransactionStatus

    from domain.group_commit import library_error
    from domain.pg_group import PSYCOPG_ERRORS

    with fresh_database(postgres_url) as url:
        app, log, expected = _postgres_deposits(url)
        pool = log.datastore.pool

        def lent() -> int:
            stats = pool.get_stats()
            return int(stats["pool_size"]) - int(stats["pool_available"])

        def idle() -> bool:
            return all(c.pgconn.transaction_status == TransactionStatus.IDLE for c in pool._pool)

        def refused(*_: Any, **__: Any) -> Any:
            raise AssertionError("read through the library's get_connection")

        monkeypatch.setattr(log.datastore, "get_connection", refused)
        name = app.idempotency.table.events_table_name
        for after in (0, 2, expected[-1][0]):
            assert log.log_tail(after, 1000) == [r for r in expected if r[0] > after]
            assert lent() == 0
            assert idle()
        rows, tail = log.rows_and_tail(name, uuid4(), 0, 1000)
        assert (rows, tail) == ([], expected)
        assert lent() == 0
        assert idle()
        monkeypatch.undo()
        with log.datastore.get_connection() as conn:
            conn.execute(f"ALTER TABLE {log.events_table_name} RENAME TO gone")
        monkeypatch.setattr(log.datastore, "get_connection", refused)
        with pytest.raises(ProgrammingError):
            log.log_tail(0, 10)
        assert lent() == 0
        assert idle()
        monkeypatch.undo()
        for raw in (
            *(raw for raw, _ in PSYCOPG_ERRORS),
            psycopg.errors.UniqueViolation,
            psycopg.errors.SerializationFailure,
        ):  # each psycopg error made the library's that get_connection makes of it
            with pytest.raises(Exception) as got, log.datastore.get_connection():
                raise raw("x")
            assert type(library_error(raw("x"), PSYCOPG_ERRORS)) is type(got.value)
        pool.close()
        monkeypatch.setattr(log.datastore, "pool_open_timeout", 0.1)
        monkeypatch.setattr("time.sleep", lambda _: None)  # the recorders' retry's waits
        with pytest.raises(OperationalError):
            log.log_tail(0, 10)
        app.close()


# ------------------------------------------------------------ a group's saves told at its commit
def test_a_groups_saves_told_at_its_commit_reach_the_cache_before_their_callers_report(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group commit's leader tells the repository its saves before releasing the callers
    (``Watched.committed``): the cache holds a copy of each saved aggregate (without it the
    next deposits would keep conflicting on the copies from before the group), the mark
    passes their events, each save is marked told (its caller does not report it; reported
    all the same, in any order, the saves change nothing), a caller
    changing its object after the save does not change the cached copy, and the next
    commands read neither the log's rows nor an aggregate."""
    app = app_on_every_store
    repository = _wallets_caught_up(app)
    (rows_a, saved_a), (rows_b, saved_b) = _unreported(
        monkeypatch,
        lambda: app.deposit("a", "1.00", transaction_id="a1"),
        lambda: app.deposit("b", "1.00", transaction_id="b1"),
    )
    cache: Any = repository.cache
    savings = [Saving(saved_a), Saving(saved_b)]
    repository.committed([(rows_a, savings[0]), (rows_b, savings[1])])
    assert [s.told for s in savings] == [True, True]  # their callers need not report them
    assert repository._mark == rows_b[-1][0]
    kept = {ident: cache.get(ident) for ident in (*saved_a, *saved_b)}
    for ident, copy in kept.items():
        mine = {**saved_a, **saved_b}[ident]
        assert copy is not mine
        assert copy.version == mine.version
    repository.saved(rows_b, saved_b)  # reported all the same: nothing changes
    repository.saved(rows_a, saved_a)
    assert repository._mark == rows_b[-1][0]
    assert all(cache.get(ident) is copy for ident, copy in kept.items())
    for wallet in saved_a.values():  # the caller goes on changing its object
        wallet.deposit("100.00", transaction_id="after-the-save")
    tails, gets = count_reads(app)
    assert app.deposit("a", "1.00", transaction_id="a2") == Decimal("7.00")
    assert app.deposit("b", "1.00", transaction_id="b2") == Decimal("7.00")
    assert gets == []
    assert tails == [0, 0]
    assert assert_cache_current(app) >= 2


def test_saves_told_after_another_writers_events_leave_the_mark_before_them(
    store_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saves told at a commit that do not directly follow the mark (another process wrote in
    between) do not move it: the next command's catch-up reads the other writer's event and
    decides on it."""
    one, other = two(store_env)
    repository = _wallets_caught_up(one)
    mark = repository._mark
    other.deposit("a", "100.00", transaction_id="other")  # right after the mark
    ((rows, saved),) = _unreported(
        monkeypatch, lambda: one.deposit("b", "1.00", transaction_id="b1")
    )
    repository.committed([(rows, Saving(saved))])
    assert repository._mark == mark  # the other writer's event lies before them
    repository.saved(rows, saved)
    # refused on one's stale 5.00 if the catch-up skipped the other writer's deposit
    assert one.withdraw("a", "50.00", transaction_id="w1") == Decimal("55.00")
    assert assert_cache_current(one) >= 2
    one.close()
    other.close()

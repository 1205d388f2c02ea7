"""Group commit (``domain.group_commit``) with real threads, on SQLite and PostgreSQL.

Concurrent commands of one application share database transactions: every acknowledged
command is stored and nothing else, one writer wins each conflict, a save whose writer fails
fails alone, every event is in exactly one leaf in commit order (a reader tailing the log in
notification order misses nothing), the notification ids have no gap on SQLite (PostgreSQL's
sequence skips the numbers of a rolled-back insert, grouped or not), and rounds recorded from
several threads verify. A group's leader waits, a bounded time, for the saves of the commands
in flight: never when it is alone, the saves arriving meanwhile commit in its group, a
command that ends without saving ends the wait, and a failure fails that group alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID, PURPOSE, parse_leaf
from domain.commits import CommittedEvent, CommitTransaction
from domain.errors import ConcurrentUpdate, InsufficientFunds
from domain.group_commit import (
    CARRIED,
    COMMIT_DELAY_ENV,
    DEFAULT_WAIT,
    MAX_WAIT,
    GroupCommitter,
)
from domain.persistence import environment_for
from replays.verify import StoreVerifier

THREADS = 8


def _grouper(app: RoundAudit) -> GroupCommitter | None:
    found = getattr(app.recorder, "group_commit", None)
    return found if isinstance(found, GroupCommitter) else None


def _sqlite(env: dict[str, str]) -> bool:
    return env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"


def _run(threads: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            work(i)
        except BaseException as exc:  # pragma: no cover - reported by the caller
            errors.append(exc)

    ts = [threading.Thread(target=target, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


def _notes(app: RoundAudit) -> list[Any]:
    out: list[Any] = []
    while page := app.recorder.select_notifications(
        out[-1].id if out else 0, 1000, inclusive_of_start=False
    ):
        out += page
    return out


def _check_log(app: RoundAudit, *, gap_free: bool) -> None:
    """Every event in exactly one leaf, leaves in commit order (and no gap on SQLite)."""
    rows = list(app.commit_table(PURPOSE).select_events(LEAVES_ID))
    assert [r.originator_version for r in rows] == list(range(1, len(rows) + 1))
    ids = [e.notification_id for r in rows for e in parse_leaf(bytes(r.state)).entries]
    notes = _notes(app)
    assert ids == [n.id for n in notes]
    if gap_free:
        assert ids == list(range(1, len(ids) + 1))


@pytest.mark.parametrize("delay", [None, "0", "5000"])
def test_every_acknowledged_command_is_stored_and_commits_are_shared(
    store_env: dict[str, str], delay: str | None
) -> None:
    """With the store's default wait, with none, and with the longest a store may set."""
    env = store_env if delay is None else {**store_env, COMMIT_DELAY_ENV: delay}
    app = RoundAudit(env=env)
    players = [f"p{i}" for i in range(THREADS)]
    for p in [*players, "house"]:
        app.open_wallet(p, account_type="test")
    grouper = _grouper(app)
    before = (grouper.groups, grouper.calls) if grouper else (0, 0)
    acks: dict[str, list[str]] = {p: [] for p in [*players, "house"]}
    refused: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        for k in range(20):
            for who in (players[i], "house"):  # "house": every thread, so conflicts (retried)
                tid = f"{players[i]}-{who}-{k}"
                try:
                    app.deposit(who, "1.00", transaction_id=tid)
                except ConcurrentUpdate:  # still conflicting after its retries: not stored
                    with lock:
                        refused.append(tid)
                    continue
                with lock:
                    acks[who].append(tid)

    assert _run(THREADS, work) == []
    fresh = RoundAudit(env={**store_env, "CREATE_TABLE": "n"})
    for who, tids in acks.items():
        w = fresh.wallet(who)
        assert sorted(m["transaction_id"] for m in w.movements) == sorted(tids)
        assert w.balance == Decimal(len(tids))
    assert len(acks["house"]) + len(refused) == 20 * THREADS
    assert len(acks["house"]) > 10 * THREADS
    assert all(len(acks[p]) == 20 for p in players)  # no conflict there: all acknowledged
    _check_log(fresh, gap_free=_sqlite(store_env))
    if grouper is not None:
        groups, calls = grouper.groups - before[0], grouper.calls - before[1]
        assert calls >= 20 * THREADS + len(acks["house"])  # every save through the committer
        assert groups < calls  # and some shared a transaction
    fresh.close()
    app.close()


def _race(app: RoundAudit, rnd: int) -> list[str]:
    """Every thread saves a deposit on the same version of one wallet at once."""
    barrier = threading.Barrier(THREADS)
    outcome: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        w = app.wallet("contested")  # every thread at the same version
        w.deposit("1.00", transaction_id=f"r{rnd}-t{i}")
        barrier.wait()
        try:
            app.save(w)
        except IntegrityError:
            result = "lost"
        else:
            result = "won"
        with lock:
            outcome.append(result)

    assert _run(THREADS, work) == []
    return sorted(outcome)


def test_one_writer_wins_each_conflict_in_a_group(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    app.open_wallet("contested", account_type="test")
    for rnd in range(8):
        assert _race(app, rnd) == ["lost"] * (THREADS - 1) + ["won"]
        assert app.balance("contested") == Decimal(rnd + 1)
    fresh = RoundAudit(env={**store_env, "CREATE_TABLE": "n"})
    assert fresh.balance("contested") == Decimal(8)
    assert len(fresh.wallet("contested").movements) == 8
    _check_log(fresh, gap_free=_sqlite(store_env))
    fresh.close()
    app.close()


def test_a_sqlite_group_without_conflict_has_no_savepoints_and_one_with_one_is_redone(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite inserts a group with no savepoint; a conflict there rolls it back whole and
    inserts it again with a savepoint a save: the conflict stays its save's alone, the others
    are stored in one transaction, and the log stays whole (no gap, each event in one leaf)."""
    import domain.sqlite_group as sqlite_group

    env = environment_for(f"sqlite:///{tmp_path / 'plain.db'}")
    app = RoundAudit(env=env)
    for i in range(THREADS):
        app.open_wallet(f"w{i}", account_type="test")
    app.open_wallet("contested", account_type="test")
    statements: list[str] = []
    redone: list[int] = []
    real_redo = sqlite_group.commit_with_savepoints

    def redo(recorder: Any, batch: list[Any], inserted: list[bool]) -> None:
        redone.append(len(batch))
        real_redo(recorder, batch, inserted)

    monkeypatch.setattr(sqlite_group, "commit_with_savepoints", redo)
    pool: Any = app.recorder.datastore.pool  # type: ignore[attr-defined]
    real_get = pool.get_connection

    def traced(*args: Any, **kwargs: Any) -> Any:  # every statement of the store, from now on
        conn = real_get(*args, **kwargs)
        conn._sqlite_conn.set_trace_callback(statements.append)
        return conn

    grouper = _grouper(app)
    assert grouper is not None
    app.install_commit_writer(SlowOrFailingWriter())  # the first save holds the others back
    monkeypatch.setattr(pool, "get_connection", traced)

    def deposit(i: int) -> None:
        if i:
            time.sleep(0.05)
        w = app.wallet(f"w{i}")
        w.deposit("1.00", transaction_id=f"d{i}")
        app.save(w)

    before = (grouper.groups, grouper.calls)
    assert _run(THREADS, deposit) == []
    assert grouper.groups - before[0] < grouper.calls - before[1]  # some shared a transaction
    assert redone == []
    assert not [s for s in statements if "SAVEPOINT" in s.upper()]
    assert [app.balance(f"w{i}") for i in range(THREADS)] == [Decimal(1)] * THREADS
    for rnd in range(3):  # conflicts inside groups: redone with savepoints
        assert _race(app, rnd) == ["lost"] * (THREADS - 1) + ["won"]
    assert redone
    assert [s for s in statements if "SAVEPOINT" in s.upper()]
    assert app.balance("contested") == Decimal(3)
    monkeypatch.undo()
    fresh = RoundAudit(env={**env, "CREATE_TABLE": "n"})
    assert fresh.balance("contested") == Decimal(3)
    assert len(fresh.wallet("contested").movements) == 3
    _check_log(fresh, gap_free=True)
    fresh.close()
    app.close()


class SlowOrFailingWriter:
    """Holds the first transaction a moment (so that the others queue into one group), and
    fails every save given ``fail=True``."""

    purposes: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.first = True

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        if self.first:
            self.first = False
            time.sleep(0.3)
        if kwargs.get("fail"):
            raise RuntimeError("the writer refuses this save")


def test_a_save_whose_writer_fails_fails_alone(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    for i in range(THREADS):
        app.open_wallet(f"w{i}", account_type="test")
    app.install_commit_writer(SlowOrFailingWriter())
    outcome: dict[int, str] = {}

    def work(i: int) -> None:
        if i:
            time.sleep(0.05)  # after thread 0's save holds the commit
        w = app.wallet(f"w{i}")
        w.deposit("1.00", transaction_id=f"d{i}")
        try:
            app.save(w, fail=i % 3 == 1)
        except RuntimeError:
            outcome[i] = "failed"
        else:
            outcome[i] = "stored"

    assert _run(THREADS, work) == []
    assert outcome == {i: "failed" if i % 3 == 1 else "stored" for i in range(THREADS)}
    for i in range(THREADS):
        assert app.balance(f"w{i}") == (0 if i % 3 == 1 else 1)
    grouper = _grouper(app)
    if grouper is not None:
        assert grouper.groups < grouper.calls
    _check_log(app, gap_free=_sqlite(store_env))
    app.close()


def test_a_groups_saves_pass_the_cache_mark_before_their_callers_return(
    store_env: dict[str, str],
) -> None:
    """The saves that share a commit are told to the repository by their leader: its mark
    is at the group's last event before any caller reports (``domain.store.Watched.
    committed``); each wallet a thread saved in the group is then used by another thread's
    command at the version saved (a cached aggregate saved by another thread's group is seen
    by the next command), and nothing is left for a catch-up to read."""
    app = RoundAudit(env=store_env)
    for i in range(THREADS):
        app.open_wallet(f"w{i}", account_type="test")
        app.deposit(f"w{i}", "5.00", transaction_id=f"d{i}")
    repository: Any = app.repository
    committer = _grouper(app)
    assert committer is not None
    assert committer.committed == repository.committed  # the application's wiring
    told: list[tuple[list[Any], int]] = []

    def tell(saves: list[Any]) -> None:
        repository.committed(saves)
        told.append(([row for rows, _ in saves for row in rows], repository._mark))

    committer.committed = tell
    app.install_commit_writer(SlowOrFailingWriter())

    def work(i: int) -> None:
        if i:
            time.sleep(0.05)  # after thread 0's save holds the commit
        app.deposit(f"w{i}", "1.00", transaction_id=f"e{i}")

    assert _run(THREADS, work) == []
    assert told, "no group of several saves"
    for rows, mark in told:
        assert len(rows) >= 2
        assert mark >= rows[-1][0]
    other = threading.Thread(  # another thread than the savers
        target=lambda: [
            app.withdraw(f"w{i}", "2.00", transaction_id=f"w{i}") for i in range(THREADS)
        ]
    )
    other.start()
    other.join()
    for i in range(THREADS):
        assert app.balance(f"w{i}") == Decimal("4.00")
    assert repository._mark == app.recorder.max_notification_id()
    app.close()


def test_rounds_recorded_from_many_threads_verify(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    variants = ["european", "deluxe", "multihand", "lucky7"]

    def work(i: int) -> None:
        try:
            simulate(app, variant=variants[i], rounds=3, players=2, table=f"mt-{i}")
        except ConcurrentUpdate:  # pragma: no cover - reported
            raise

    assert _run(len(variants), work) == []
    fresh = RoundAudit(env={**store_env, "CREATE_TABLE": "n"})
    verifier = StoreVerifier(fresh)
    results = list(verifier.verify_many(list(verifier.round_ids())))
    assert len(results) == 3 * len(variants)
    assert all(r.ok for r in results), [r for r in results if not r.ok][:1]
    _check_log(fresh, gap_free=_sqlite(store_env))
    fresh.close()
    app.close()


@pytest.mark.parametrize("size", [1, 5])
def test_the_committer_releases_every_caller_with_its_own_result(size: int) -> None:
    """The committer alone: each caller gets its own ids or its own error, after its group."""
    seen: list[int] = []

    def commit_group(batch: list[Any]) -> None:
        seen.append(len(batch))
        time.sleep(0.05)
        for item in batch:
            if item.kwargs.get("bad"):
                item.error = IntegrityError("conflict")
            else:
                item.ids = [item.kwargs["n"]]

    committer = GroupCommitter(commit_group)
    results: dict[int, object] = {}

    def work(i: int) -> None:
        try:
            results[i] = committer.submit([], {"n": i, "bad": i == 2})
        except IntegrityError:
            results[i] = "conflict"

    assert _run(size, work) == []
    assert results == {i: "conflict" if i == 2 else [i] for i in range(size)}
    assert sum(seen) == size == committer.calls
    assert committer.groups == len(seen)


def test_calls_arriving_during_a_commit_form_the_next_group_led_by_the_first() -> None:
    """The calls queued while a group commits are the next group, and each caller returns only
    after its own group's commit, whichever thread leads it (each waiter is woken by the
    leader that committed it, or handed the lead)."""
    first_in = threading.Event()
    release_first = threading.Event()
    groups: list[list[int]] = []
    leaders: list[str] = []
    committed: dict[int, float] = {}

    def commit_group(batch: list[Any]) -> None:
        numbers = [item.kwargs["n"] for item in batch]
        groups.append(numbers)
        leaders.append(threading.current_thread().name)
        if numbers == [0]:
            first_in.set()
            assert release_first.wait(10)
        time.sleep(0.02)
        stamp = time.monotonic()
        for item in batch:
            item.ids = [item.kwargs["n"]]
            committed[item.kwargs["n"]] = stamp

    committer = GroupCommitter(commit_group)
    returned: dict[int, float] = {}
    results: dict[int, object] = {}

    def call(n: int) -> None:
        results[n] = committer.submit([], {"n": n})
        returned[n] = time.monotonic()

    first = threading.Thread(target=call, args=(0,), name="t0")
    first.start()
    assert first_in.wait(10)
    queued = [threading.Thread(target=call, args=(n,), name=f"t{n}") for n in range(1, 6)]
    for n, t in enumerate(queued, start=1):
        t.start()
        deadline = time.monotonic() + 10  # wait until it is queued, in this order
        while len(committer._queue) < n and time.monotonic() < deadline:
            time.sleep(0.001)
    assert [p.kwargs["n"] for p in committer._queue] == [1, 2, 3, 4, 5]
    release_first.set()
    for t in (first, *queued):
        t.join(10)
    assert groups == [[0], [1, 2, 3, 4, 5]]
    assert leaders == ["t0", "t1"]  # the first call queued leads the next group
    assert results == {n: [n] for n in range(6)}
    assert all(returned[n] >= committed[n] for n in range(6))
    assert (committer.groups, committer.calls) == (2, 6)
    assert not committer._leading
    assert committer._queue == []


@pytest.mark.parametrize("told_fails", [False, True])
def test_a_group_tells_its_saves_before_releasing_any_caller(told_fails: bool) -> None:
    """A group of several saves gives ``committed`` each save that was recorded and carries
    ``CARRIED`` (its events' rows and what it carried; a save with its own conflict, or
    carrying nothing, left out), by notification id, before any of its callers returns; a
    group of one (its caller the leader) is not told; a failing ``committed`` changes no
    caller's result."""
    first_in = threading.Event()
    release_first = threading.Event()
    ids = {0: [1], 1: [8, 9], 2: None, 3: [6, 7], 4: [10]}  # 2: its own conflict

    def commit_group(batch: list[Any]) -> None:
        if batch[0].kwargs["n"] == 0:
            first_in.set()
            assert release_first.wait(10)
        for item in batch:
            n = item.kwargs["n"]
            if ids[n] is None:
                item.error = IntegrityError("another writer's version")
            else:
                item.ids = ids[n]

    committer = GroupCommitter(commit_group)
    told: list[tuple[list[Any], list[int]]] = []
    returned: list[int] = []
    results: dict[int, object] = {}

    def tell(saves: list[Any]) -> None:
        told.append((saves, list(returned)))
        if told_fails:
            raise RuntimeError("the cache refuses")

    committer.committed = tell
    origin = {n: uuid4() for n in ids}

    def call(n: int) -> None:
        events = [StoredEvent(origin[n], v, "topic", b"") for v in range(1, len(ids[n] or [0]) + 1)]
        kwargs: dict[str, Any] = {"n": n}
        if n != 4:
            kwargs[CARRIED] = f"carried {n}"
        try:
            results[n] = committer.submit(events, kwargs)
        except IntegrityError:
            results[n] = "conflict"
        returned.append(n)

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert first_in.wait(10)
    queued = [threading.Thread(target=call, args=(n,)) for n in (1, 2, 3, 4)]
    for n, t in enumerate(queued, start=1):
        t.start()
        deadline = time.monotonic() + 10
        while len(committer._queue) < n and time.monotonic() < deadline:
            time.sleep(0.001)
    release_first.set()
    for t in (first, *queued):
        t.join(10)
    assert results == {0: [1], 1: [8, 9], 2: "conflict", 3: [6, 7], 4: [10]}
    ((saves, before),) = told  # the group of one was not told
    assert saves == [
        ([(6, origin[3], 1), (7, origin[3], 2)], "carried 3"),
        ([(8, origin[1], 1), (9, origin[1], 2)], "carried 1"),
    ]
    assert not {1, 2, 3, 4} & set(before)


def test_a_failed_group_fails_its_callers_and_the_next_group_still_commits() -> None:
    """A group whose commit raises fails every caller of that group (none of it stored), and
    the lead passes on: the calls queued meanwhile commit as their own group, and later
    calls still commit (no thread left waiting for a leader)."""
    first_in = threading.Event()
    release_first = threading.Event()

    def commit_group(batch: list[Any]) -> None:
        numbers = [item.kwargs["n"] for item in batch]
        if numbers == [0]:
            first_in.set()
            assert release_first.wait(10)
            raise RuntimeError("the commit failed")
        if 6 in numbers:
            raise KeyboardInterrupt  # any exception of the commit: it reaches the group alone
        for item in batch:
            item.ids = [item.kwargs["n"]]

    committer = GroupCommitter(commit_group)
    results: dict[int, object] = {}

    def call(n: int) -> None:
        try:
            results[n] = committer.submit([], {"n": n})
        except (RuntimeError, KeyboardInterrupt) as exc:
            results[n] = type(exc).__name__

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert first_in.wait(10)
    queued = [threading.Thread(target=call, args=(n,)) for n in (1, 2)]
    for t in queued:
        t.start()
    deadline = time.monotonic() + 10
    while len(committer._queue) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    release_first.set()
    for t in (first, *queued):
        t.join(10)
    call(6)
    assert _run(THREADS, lambda i: call(10 + i)) == []
    assert results == {
        0: "RuntimeError",
        1: [1],
        2: [2],
        6: "KeyboardInterrupt",
        **{10 + i: [10 + i] for i in range(THREADS)},
    }
    assert committer.calls == 4 + THREADS
    assert not committer._leading
    assert committer._queue == []


def test_many_threads_each_return_after_their_own_groups_commit() -> None:
    """Under contention (many threads, many groups), every caller gets its own result, after
    the commit of the group that carried it, and every call is in exactly one group."""
    carried: dict[int, int] = {}
    committed_at: list[float] = []

    def commit_group(batch: list[Any]) -> None:
        time.sleep(0.001)
        group = len(committed_at)
        for item in batch:
            n = item.kwargs["n"]
            assert n not in carried
            carried[n] = group
            item.ids = [n]
        committed_at.append(time.monotonic())

    committer = GroupCommitter(commit_group)
    returned: dict[int, tuple[object, float]] = {}

    def work(i: int) -> None:
        for k in range(50):
            n = i * 1000 + k
            ids = committer.submit([], {"n": n})
            returned[n] = (ids, time.monotonic())

    assert _run(16, work) == []
    assert len(returned) == len(carried) == 16 * 50 == committer.calls
    assert committer.groups == len(committed_at) < committer.calls  # calls were grouped
    for n, (ids, at) in returned.items():
        assert ids == [n]
        assert at >= committed_at[carried[n]]


# ------------------------------------------------------------------ the wait for commands in flight
class _Committed:
    """A ``commit_group`` for the committer alone: records each group, fails on request."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []

    def __call__(self, batch: list[Any]) -> None:
        numbers = [item.kwargs["n"] for item in batch]
        self.groups.append(numbers)
        if any(item.kwargs.get("fail") for item in batch):
            raise RuntimeError("the commit failed")
        for item in batch:
            item.ids = [item.kwargs["n"]]


def _long_wait(monkeypatch: pytest.MonkeyPatch) -> float:
    """A wait long enough that only an arrival or an end can end it within a test (the
    committer's limit raised for the test)."""
    monkeypatch.setattr("domain.group_commit.MAX_WAIT", 60.0)
    return 60.0


def _gathering(committer: GroupCommitter) -> None:
    deadline = time.monotonic() + 10
    while not committer._gathering and time.monotonic() < deadline:
        time.sleep(0.001)
    assert committer._gathering


def test_a_command_alone_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    commit = _Committed()
    committer = GroupCommitter(commit, wait=_long_wait(monkeypatch))
    for n in range(3):
        committer.begin()
        assert committer.submit([], {"n": n}) == [n]  # returns: no wait for itself
        committer.end()
    assert committer.submit([], {"n": 9}) == [9]  # a save outside any command: no wait
    assert commit.groups == [[0], [1], [2], [9]]
    assert committer.waited == 0
    assert committer._active == 0


def test_the_wait_is_bounded_when_a_command_in_flight_never_saves() -> None:
    """Another command in flight that does not save: the leader waits ``wait`` at most, then
    commits its group alone (the wait ends by itself, not by the other command)."""
    commit = _Committed()
    committer = GroupCommitter(commit, wait=MAX_WAIT)
    committer.begin()  # the other command, in flight throughout
    committer.begin()
    start = time.monotonic()
    assert committer.submit([], {"n": 1}) == [1]
    assert time.monotonic() - start >= MAX_WAIT * 0.99  # it did wait, and returned
    committer.end()
    assert commit.groups == [[1]]
    assert committer.waited == 1
    assert committer._active == 1  # the other command is still in flight
    committer.end()


def test_saves_arriving_during_the_wait_commit_in_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three commands in flight: the first save's leader waits until the other two have
    submitted, then commits the three together; each caller returns after that commit with
    its own result, and the wait ended with the last arrival (not by its time)."""
    commit = _Committed()
    committer = GroupCommitter(commit, wait=_long_wait(monkeypatch))
    results: dict[int, object] = {}

    def command(n: int) -> None:
        try:
            results[n] = committer.submit([], {"n": n})
        finally:
            committer.end()

    for _ in range(3):
        committer.begin()
    first = threading.Thread(target=command, args=(0,))
    first.start()
    _gathering(committer)
    others = [threading.Thread(target=command, args=(n,)) for n in (1, 2)]
    for t in others:
        t.start()
    for t in (first, *others):
        t.join(10)
        assert not t.is_alive()
    assert commit.groups == [[0, 1, 2]]
    assert results == {0: [0], 1: [1], 2: [2]}
    assert (committer.groups, committer.calls, committer.waited) == (1, 3, 1)
    assert committer._active == 0
    assert not committer._leading


def test_a_command_ending_without_a_save_ends_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    commit = _Committed()
    committer = GroupCommitter(commit, wait=_long_wait(monkeypatch))
    committer.begin()
    committer.begin()
    results: dict[int, object] = {}

    def command() -> None:
        results[0] = committer.submit([], {"n": 0})
        committer.end()

    first = threading.Thread(target=command)
    first.start()
    _gathering(committer)
    committer.end()  # the other command was refused: it will not save
    first.join(10)
    assert not first.is_alive()
    assert results == {0: [0]}
    assert commit.groups == [[0]]
    assert committer.waited == 1


def test_a_group_formed_during_the_wait_that_fails_fails_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The group gathered during the wait fails its commit: each of its callers raises the
    commit's error, nothing waits on, and the next saves commit."""
    commit = _Committed()
    committer = GroupCommitter(commit, wait=_long_wait(monkeypatch))
    results: dict[int, object] = {}

    def command(n: int, fail: bool) -> None:
        try:
            results[n] = committer.submit([], {"n": n, "fail": fail})
        except RuntimeError as exc:
            results[n] = str(exc)
        finally:
            committer.end()

    committer.begin()
    committer.begin()
    first = threading.Thread(target=command, args=(0, False))
    first.start()
    _gathering(committer)
    second = threading.Thread(target=command, args=(1, True))
    second.start()
    for t in (first, second):
        t.join(10)
        assert not t.is_alive()
    assert results == {0: "the commit failed", 1: "the commit failed"}
    committer.begin()
    command(2, False)
    assert results[2] == [2]
    assert commit.groups == [[0, 1], [2]]
    assert committer._active == 0
    assert not committer._leading
    assert committer._queue == []


def test_the_wait_is_a_store_setting_of_a_few_milliseconds_at_most(
    store_env: dict[str, str],
) -> None:
    """``commit_delay`` on the store's URL (microseconds) reaches the committer; the default
    is ``DEFAULT_WAIT``; more than ``MAX_WAIT`` is refused."""
    app = RoundAudit(env=store_env)
    grouper = _grouper(app)
    if grouper is None:  # the in-memory store has no group commit
        app.close()
        return
    assert grouper.wait == DEFAULT_WAIT
    app.close()
    app = RoundAudit(env={**store_env, COMMIT_DELAY_ENV: "250", "CREATE_TABLE": "n"})
    assert _grouper(app) is not None
    assert _grouper(app).wait == 0.00025  # type: ignore[union-attr]
    app.close()
    assert environment_for("sqlite:///x.db?commit_delay=0")[COMMIT_DELAY_ENV] == "0"
    assert environment_for("postgresql://u@h/db?commit_delay=5000")[COMMIT_DELAY_ENV] == "5000"
    with pytest.raises(ValueError, match="commit_delay"):
        environment_for("sqlite:///x.db?commit_delay=5001")
    with pytest.raises(ValueError, match="a group commit waits"):
        GroupCommitter(_Committed(), wait=MAX_WAIT * 2)
    with pytest.raises(ValueError, match=COMMIT_DELAY_ENV):
        RoundAudit(env={**store_env, COMMIT_DELAY_ENV: "5001", "CREATE_TABLE": "n"})


def test_a_command_is_in_flight_from_its_catch_up_to_its_end(store_env: dict[str, str]) -> None:
    """The application tells the committer: one command in flight while it saves, none after
    it, also after a refused command."""
    app = RoundAudit(env=store_env)
    grouper = _grouper(app)
    if grouper is None:
        app.close()
        return
    seen: list[int] = []

    class Watch:
        purposes: tuple[str, ...] = ()

        def write(self, tx: Any, events: Any, kwargs: Any) -> None:
            seen.append(grouper._active)

    app.install_commit_writer(Watch())
    app.open_wallet("w", account_type="test")
    app.deposit("w", "1.00", transaction_id="d1")
    assert seen[-1] == 1
    assert grouper._active == 0
    with app._caught_up():  # a command inside another is the same command in flight
        app.deposit("w", "1.00", transaction_id="d2")
    assert seen[-1] == 1
    assert grouper._active == 0
    with pytest.raises(InsufficientFunds):
        app.withdraw("w", "5.00", transaction_id="x1")
    assert grouper._active == 0
    repository = app.repository
    caught_up = repository.catch_up
    repository.catch_up = _failing_catch_up  # type: ignore[method-assign]
    with pytest.raises(OSError, match="the log could not be read"):
        app.deposit("w", "1.00", transaction_id="d3")
    assert grouper._active == 0  # the attempt ended with its catch-up's failure
    repository.catch_up = caught_up  # type: ignore[method-assign]
    app.deposit("w", "1.00", transaction_id="d3")  # not left inside a block: it catches up
    assert seen[-1] == 1
    assert grouper._active == 0
    app.close()


def _failing_catch_up() -> None:
    raise OSError("the log could not be read")

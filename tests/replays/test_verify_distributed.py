"""``verify --workers 2`` (a Dask LocalCluster of two worker processes) gives the verdicts of
one process on the same store: every round passed or failed alike, the same discrepancies, the
same failing rounds named, the same summary line and exit code, on SQLite and PostgreSQL.

One store per database kind for the module: simulated rounds of every variant, sealed with a
checkpoint, then two rounds tampered with as an insider would (an event deleted from one, the
bytes of an event of another changed), so that the comparison covers failures too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from daskkit import closes_not_finishing
from pg import fresh_database
from storekit import Store, sealed_rounds, verify_report

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rules import VARIANTS
from replays.distributed import position_ranges, range_count

ROUNDS_PER_VARIANT = 8


def _build(url: str, key: Path) -> list[str]:
    return sealed_rounds(url, key, VARIANTS, ROUNDS_PER_VARIANT)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def tampered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, list[str], list[str]]]:
    folder = tmp_path_factory.mktemp("distributed")
    key = folder / "key.pem"

    def make(url: str) -> tuple[str, Path, list[str], list[str]]:
        rounds = _build(url, key)
        store = Store(url, key, capsys=None)  # type: ignore[arg-type]
        deleted, edited = UUID(rounds[3]), UUID(rounds[-5])
        last = store.rows(deleted)[-1][0]
        store.delete(deleted, version=last)
        version, _topic, state = store.rows(edited)[1]
        store.set_state(edited, version, state.replace(b"2", b"3", 1))
        return url, key, rounds, [str(deleted), str(edited)]

    if request.param == "sqlite":
        yield make(f"sqlite:///{folder}/events.db")
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield make(url)


def _verify(url: str, key: Path, report: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    return verify_report(url, key, report, "--all", *extra)


def _one_process(url: str) -> tuple[Any, list[UUID], list[Any]]:
    """One process's verifier of the store at ``url`` (its application closed after: its log
    and policy are what a fan-out is given), every round in log order, and their verdicts as
    JSON: what a fan-out must give back."""
    from replays.verify import StoreVerifier

    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app)
        ids = driver.round_ids()
        return driver, ids, [v.as_json() for v in driver.verify_many(ids)]
    finally:
        app.close()


def _fan_out_on_a_thread(
    url: str, ids: list[UUID], driver: Any, then: Any = None
) -> list[dict[str, Any]]:
    """``verify_distributed`` of ``ids`` with ``driver``'s log and policy on a cluster of one
    worker that is a thread of this process (so a test's patches reach it), its verdicts as
    JSON; ``then(client)`` is called before the cluster closes."""
    from distributed import Client, LocalCluster

    import replays.distributed as fan

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        got = [
            v.as_json()
            for v in fan.verify_distributed(url, ids, policy=driver.policy, client=client,
                                            log=driver.log)
        ]  # fmt: skip
        if then is not None:
            then(client)
    return got


def _the_verdicts_of_one_process(
    got: list[dict[str, Any]], expected: list[Any], rounds: list[str], bad: list[str]
) -> None:
    assert got == expected
    assert {v["round_id"] for v in got if not v["ok"]} == set(bad)
    assert len(got) == len(rounds)


def test_two_dask_workers_give_the_verdicts_of_one_process(
    tampered: tuple[str, Path, list[str], list[str]], tmp_path: Path
) -> None:
    url, key, rounds, bad = tampered
    code1, out1, one = _verify(url, key, tmp_path / "one.json")
    code2, out2, two = _verify(url, key, tmp_path / "two.json", "--workers", "2")

    # the single-process run found exactly the two tampered rounds
    failed = {r["round_id"] for r in one["rounds"] if not r["ok"]}
    assert failed == set(bad), out1
    assert one["passed"] == len(rounds) - 2
    assert code1 == 1

    # and the Dask run says the same, round by round, in the same order
    assert [r["round_id"] for r in two["rounds"]] == [r["round_id"] for r in one["rounds"]]
    assert two["rounds"] == one["rounds"]
    assert (two["passed"], two["failed"], two["not_final"]) == (
        one["passed"],
        one["failed"],
        one["not_final"],
    )
    assert two["log"] == one["log"]
    assert code2 == code1
    assert out2.strip().splitlines()[-1] == out1.strip().splitlines()[-1]
    assert out1.strip().splitlines()[-1] == (
        f"{len(rounds) - 2} passed, 2 failed; the log failed: commit"
    )
    for rid in bad:  # the failing rounds are named in the printed report too
        assert rid in out2


def test_workers_need_a_store_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    assert main(["--database-url", url, "verify", "--file", "x.json", "--workers", "2"]) == 2
    assert "--workers and --scheduler go with --since or --all" in capsys.readouterr().err
    assert main(["--database-url", url, "verify", "--all", "--workers", "0"]) == 2
    assert "--workers takes 1 or more" in capsys.readouterr().err


def test_position_ranges_cover_every_round_once_in_order() -> None:
    ids = [UUID(int=i) for i in range(103)]
    for parts in (1, 2, 3, 8, 103, 500):
        ranges = position_ranges(ids, parts)
        assert len(ranges) == min(parts, len(ids))
        flat = [UUID(r) for rng in ranges for r in rng.round_ids]
        assert flat == ids
        assert [r.first for r in ranges] == [0, *(r.last + 1 for r in ranges[:-1])]
        sizes = [len(r.round_ids) for r in ranges]
        assert max(sizes) - min(sizes) <= 1


def test_the_module_doctests_pass() -> None:
    import doctest

    import replays.distributed

    assert doctest.testmod(replays.distributed).failed == 0


def test_range_count_keeps_a_range_at_least_one_read_ahead_batch() -> None:
    """A few hundred rounds go out as one range a worker (each range costs a task, its
    read-ahead queries and its trips through the scheduler, whatever its length); many rounds
    as ``RANGES_PER_WORKER`` ranges a worker; every worker gets as many ranges, at least one."""
    from replays.distributed import RANGES_PER_WORKER
    from replays.verify import AHEAD

    assert range_count(320, 2) == 2  # the benchmark's verify rounds: one range a worker
    assert range_count(4 * AHEAD, 2) == 4
    assert range_count(2000, 2) == 2 * RANGES_PER_WORKER
    assert range_count(10**6, 3) == 3 * RANGES_PER_WORKER
    for rounds in (0, 1, 7, 199, 200, 399, 800, 5000):
        for workers in (1, 2, 3):
            parts = range_count(rounds, workers)
            assert parts % workers == 0
            assert workers <= parts <= workers * RANGES_PER_WORKER
            if parts > workers:  # cut finer only when each range keeps a whole batch
                assert rounds // parts >= AHEAD
    assert range_count(40, 2, least=1) == 2 * RANGES_PER_WORKER  # as before: 4 a worker


def test_ready_workers_and_every_range_size_give_the_verdicts_of_one_process(
    tampered: tuple[str, Path, list[str], list[str]],
) -> None:
    """The fan-out as the benchmark's ``verify (2 workers)`` line runs it: a local cluster
    (``local_cluster``) readied before the run (``warm``: the store opened on every worker),
    reached by its scheduler's address, the driver's log shipped; its verdicts equal one
    process's, tampered rounds included, whether the rounds go out as one range a worker
    (the default at this size) or as four (``least_per_range=1``: a worker keeps its verifier
    between the ranges of a run)."""
    from importlib import import_module

    from distributed import Client

    from replays.distributed import local_cluster, verify_distributed, warm
    from replays.verify import StoreVerifier

    url, _key, rounds, bad = tampered
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app)
        ids = driver.round_ids()
        expected = [v.as_json() for v in driver.verify_many(ids)]
        with local_cluster(2) as cluster, Client(cluster.scheduler_address) as client:
            warm(client, url)
            # each worker's own applications (looked up there, not shipped from here)
            opened = client.run(lambda: sorted(import_module("replays.distributed")._apps))
            assert list(opened.values()) == [[url], [url]]
            for least, reached in ((None, "scheduler"), (1, "scheduler"), (None, "client")):
                how: dict[str, Any] = (
                    {"scheduler": cluster.scheduler_address}
                    if reached == "scheduler"
                    else {"client": client}  # the readied cluster's client, as the benchmark
                )
                out = verify_distributed(
                    url, ids, policy=driver.policy, log=driver.log, least_per_range=least,
                    **how,
                )  # fmt: skip
                got = [v.as_json() for v in out]
                assert got == expected, (least, reached)
                assert {v["round_id"] for v in got if not v["ok"]} == set(bad)
                assert len(got) == len(rounds)
            # a caller's client is left open, its cluster reachable for the next run
            assert client.status == "running"
            assert len(client.nthreads()) == 2
    finally:
        app.close()


def test_verify_distributed_takes_one_way_to_reach_a_cluster() -> None:
    from replays.distributed import verify_distributed
    from replays.log import TrustPolicy

    for how in ({}, {"workers": 2, "scheduler": "tcp://127.0.0.1:1"}, {"workers": 2, "client": 1}):
        with pytest.raises(ValueError, match="give one of"):
            next(verify_distributed("sqlite:///x.db", [], policy=TrustPolicy(), **how))


def test_the_local_cluster_runs_without_the_diagnostics_that_cost_cpu_idle() -> None:
    """``local_cluster`` starts its scheduler, nannies and workers with
    ``LOCAL_CLUSTER_CONFIG``: no sampling profiler on the workers, the event loops' health
    tick once a second, not every 20 ms (measured: 115 ms of CPU a second in the three
    processes of an idle 2-worker cluster with Dask's defaults, 32-38 without), the system
    monitor every 2 s without the disks' counters, the memory monitor of each worker and its
    nanny every 500 ms, still on (15-18 ms a second in all). The settings are the cluster's
    alone: this process's configuration is as it was."""
    import dask
    from distributed import Client

    from replays.distributed import LOCAL_CLUSTER_CONFIG, local_cluster

    assert LOCAL_CLUSTER_CONFIG == {
        "distributed.worker.profile.enabled": False,
        "distributed.admin.tick.interval": "1s",
        "distributed.admin.system-monitor.interval": "2s",
        "distributed.admin.system-monitor.disk": False,
        "distributed.worker.memory.monitor-interval": "500ms",
    }
    before = dask.config.get("distributed.worker.profile.enabled")
    with local_cluster(1) as cluster, Client(cluster.scheduler_address) as client:

        def settings(dask_worker: Any) -> tuple[bool, float, list[str]]:
            return (
                dask.config.get("distributed.worker.profile.enabled"),
                dask_worker._tick_interval,
                sorted(dask_worker.periodic_callbacks),
            )

        def monitors(dask_worker: Any) -> tuple[float, bool, tuple[float, float]]:
            memory = dask_worker.memory_manager
            return (
                dask_worker.periodic_callbacks["monitor"].callback_time,
                dask_worker.monitor.monitor_disk_io,
                (
                    dask_worker.periodic_callbacks["memory_monitor"].callback_time,
                    memory.memory_monitor_interval,
                ),
            )

        [(enabled, tick, callbacks)] = client.run(settings).values()
        assert enabled is False
        assert tick == 1.0
        assert "profile" not in callbacks
        assert "tick" in callbacks
        assert cluster.scheduler._tick_interval == 1.0
        assert all(n._tick_interval == 1.0 for n in cluster.workers.values())  # the nannies
        [(monitor, disk, memory)] = client.run(monitors).values()
        assert (monitor, disk) == (2000, False)
        assert memory == (500, 0.5)  # still watched: paused, spilled, restarted as before
        servers = [cluster.scheduler, *cluster.workers.values()]  # the nannies
        assert all(s.periodic_callbacks["monitor"].callback_time == 2000 for s in servers)
        assert all(not s.monitor.monitor_disk_io for s in servers)
        nannies = [n.memory_manager for n in cluster.workers.values()]
        assert [m.memory_monitor_interval for m in nannies] == [0.5]
        assert all(
            n.periodic_callbacks["memory_monitor"].callback_time == 500
            for n in cluster.workers.values()
        )
        assert all(m.memory_limit for m in nannies)  # the limit and its fractions kept
    assert dask.config.get("distributed.worker.profile.enabled") == before


def test_a_running_scheduler_gives_the_same_report(
    tampered: tuple[str, Path, list[str], list[str]], tmp_path: Path
) -> None:
    """``--scheduler tcp://HOST:PORT``: a Dask cluster that runs on its own (here a
    LocalCluster started by the test), reached by its scheduler's address."""
    from distributed import LocalCluster

    url, key, _rounds, bad = tampered
    code1, out1, one = _verify(url, key, tmp_path / "one.json")
    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=40
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        code2, out2, two = _verify(url, key, tmp_path / "two.json", "--scheduler", address)
    assert two["rounds"] == one["rounds"]
    assert {r["round_id"] for r in two["rounds"] if not r["ok"]} == set(bad)
    assert (code2, out2.strip().splitlines()[-1]) == (code1, out1.strip().splitlines()[-1])


def test_a_run_leaves_no_default_client_behind(
    tampered: tuple[str, Path, list[str], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client a run connects (``--scheduler``, as ``--workers``) is its own, never the
    process's default: even when its close does not finish (a close that timed out leaves a
    client ``closing``, which Dask would pick as the default for every later ``compute`` in
    the process, and wait for ever on once its cluster is gone), nothing else computes on it."""
    from distributed import LocalCluster
    from distributed.client import _get_global_client

    url, key, _rounds, bad = tampered
    assert _get_global_client() is None
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        closes_not_finishing(monkeypatch) as half_closed,
    ):
        address = cluster.scheduler_address
        _code, _out, report = _verify(url, key, tmp_path / "r.json", "--scheduler", address)
        assert half_closed, "the run's client was closed"
        assert _get_global_client() is None
    assert {r["round_id"] for r in report["rounds"] if not r["ok"]} == set(bad)


def test_a_shipped_log_gives_the_verdicts_of_a_log_read_on_the_worker(
    tampered: tuple[str, Path, list[str], list[str]],
) -> None:
    """The driver sends its log to the workers (``log_state``, once per worker) instead of
    each worker reading every leaf again: a range verified on the shipped log gives exactly
    the verdicts of one verified on a log read there, tampered rounds included, and the
    rebuilt log is the driver's (same leaves, tree, checkpoints) on the worker's own store."""
    from uuid import uuid4

    from replays.distributed import log_from_state, log_state, verify_range
    from replays.verify import StoreVerifier

    url, _key, rounds, bad = tampered
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app)
        state = log_state(driver.log)
        rebuilt = log_from_state(app, state)
        assert rebuilt is not driver.log
        assert rebuilt.table is driver.log.table
        assert (rebuilt.size, rebuilt.kinds) == (driver.log.size, driver.log.kinds)
        assert rebuilt.tree.root() == driver.log.tree.root()
        assert [c.as_json() for c in rebuilt.checkpoints()] == [
            c.as_json() for c in driver.log.checkpoints()
        ]
        assert rebuilt.refresh().size == driver.log.size  # nothing new to read: one query
        ids = driver.round_ids()
        expected = [v.as_json() for v in driver.verify_many(ids)]
    finally:
        app.close()
    [rng] = position_ranges(ids, 1)
    shipped = verify_range(url, uuid4().hex, driver.policy, rng, state)
    read_here = verify_range(url, uuid4().hex, driver.policy, rng)
    assert [v.as_json() for v in shipped] == expected
    assert [v.as_json() for v in read_here] == expected
    assert {v.round_id for v in shipped if not v.ok} == set(bad)
    assert len(shipped) == len(rounds)


def test_workers_reading_the_log_through_the_state_give_the_verdicts_of_one_process(
    tampered: tuple[str, Path, list[str], list[str]], tmp_path: Path
) -> None:
    """``--workers 2 --state PATH``: the driver reads the log whole, checks it against the state
    and saves it; the workers read the log through that state (nothing shipped), and the
    report is the single-process run's, tampered rounds included, on a new state and on one
    kept from an earlier run."""
    url, key, _rounds, bad = tampered
    state = tmp_path / "state.sqlite"
    code1, out1, one = _verify(url, key, tmp_path / "one.json")
    for run in ("new", "kept"):
        code2, out2, two = _verify(
            url, key, tmp_path / f"{run}.json", "--workers", "2", "--state", str(state)
        )
        assert two["rounds"] == one["rounds"], run
        assert two["log"] == one["log"], run
        assert {r["round_id"] for r in two["rounds"] if not r["ok"]} == set(bad)
        assert (code2, out2.strip().splitlines()[-1]) == (code1, out1.strip().splitlines()[-1])


def test_a_range_verified_through_the_state_gives_the_verdicts_of_the_drivers_log(
    tampered: tuple[str, Path, list[str], list[str]], tmp_path: Path
) -> None:
    """What a worker does with the state's path (``verify_range(..., str)``): its verifier's
    log is read through the state, its tail only (here none), and the verdicts of the range
    are those of the driver's log read whole, tampered rounds included."""
    from uuid import uuid4

    from replays.distributed import _verifier, verify_range
    from replays.logstate import StatefulLog, VerifierState, holds
    from replays.verify import StoreVerifier

    url, _key, rounds, bad = tampered
    state = tmp_path / "state.sqlite"
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app, state=state, reread=True)  # reads whole, saves the state
        assert holds(state, driver.log)
        ids = driver.round_ids()
        expected = [v.as_json() for v in driver.verify_many(ids)]
    finally:
        app.close()
    run = uuid4().hex
    worker = _verifier(url, run, driver.policy, str(state))
    assert isinstance(worker.log, StatefulLog)
    assert worker.log.kinds.base == VerifierState(state).size == driver.log.size
    assert not worker.log.kinds.new  # no leaf read whole
    [rng] = position_ranges(ids, 1)
    through_state = verify_range(url, run, driver.policy, rng, str(state))
    assert [v.as_json() for v in through_state] == expected
    assert {v.round_id for v in through_state if not v.ok} == set(bad)
    assert len(through_state) == len(rounds)


def test_a_verifier_reads_its_first_rounds_before_its_later_log_arrives(
    tampered: tuple[str, Path, list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``StoreVerifier(later=...)`` (a fan-out's worker): the log is asked for once, after the
    first batch's rounds were read ahead without it, and the verdicts are those of the
    driver's log, tampered rounds included; the rounds' legacy seals held as a read-ahead
    with the log holds them."""
    import replays.verify
    from replays.verify import StoreVerifier

    url, _key, rounds, bad = tampered
    monkeypatch.setattr(replays.verify, "AHEAD", 4)  # batches of 4: several in the store
    ahead = replays.verify.AHEAD
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        driver = StoreVerifier(app)
        ids = driver.round_ids()
        expected = [v.as_json() for v in driver.verify_many(ids)]
        asked: list[tuple[bool, bool]] = []
        worker: StoreVerifier

        def later() -> Any:
            # what the worker had read when it first needed the log
            asked.append((worker.reader.is_ahead(ids[0]), worker.reader.is_ahead(ids[ahead])))
            return driver.log

        worker = StoreVerifier(app, policy=driver.policy, later=later)
        got = [v.as_json() for v in worker.verify_many(ids)]
        assert asked == [(True, False)]  # once, with the first batch read, not the second
        assert worker.log is driver.log
        assert got == expected
        assert {v["round_id"] for v in got if not v["ok"]} == set(bad)
        assert len(got) == len(rounds) > ahead
        # a single round's verification asks for it first
        single = StoreVerifier(app, policy=driver.policy, later=lambda: driver.log)
        assert single.verify(UUID(bad[0])).as_json() == expected[ids.index(UUID(bad[0]))]
        with pytest.raises(ValueError, match="a later log"):
            StoreVerifier(app, log=driver.log, later=lambda: driver.log)
    finally:
        app.close()


def test_the_ranges_start_before_the_log_is_shipped(
    tampered: tuple[str, Path, list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify_distributed`` submits the ranges before it pickles and scatters the driver's
    log: a worker (a thread of this process here) reads its first rounds ahead while the log
    is not yet shipped (``log_state`` made to wait for that read), then waits for the log and
    gives the verdicts of one process, tampered rounds included; the published log is gone
    after the run."""
    import threading

    import replays.distributed as fan
    from replays.bundle import StoreReader

    url, _key, rounds, bad = tampered
    driver, ids, expected = _one_process(url)
    read = threading.Event()
    real_read, real_state = StoreReader.read_ahead, fan.log_state
    order: list[str] = []

    def read_ahead(self: StoreReader, round_ids: Any) -> None:
        real_read(self, round_ids)
        if self.log is None and list(round_ids):  # a worker's first batch, before its log
            order.append("worker read ahead")
            read.set()

    def log_state(log: Any) -> bytes:
        read.wait(timeout=30)  # the worker's first read, if it comes before the log
        order.append("log pickled")
        return real_state(log)

    monkeypatch.setattr(StoreReader, "read_ahead", read_ahead)
    monkeypatch.setattr(fan, "log_state", log_state)

    def no_log_left(client: Any) -> None:
        assert not client.run_on_scheduler(
            lambda dask_scheduler: [
                k for k in dask_scheduler.extensions["variables"].variables if "verify-log" in k
            ]
        )

    got = _fan_out_on_a_thread(url, ids, driver, then=no_log_left)
    assert order[:2] == ["worker read ahead", "log pickled"]
    _the_verdicts_of_one_process(got, expected, rounds, bad)


def test_a_worker_that_dies_mid_run_has_its_range_run_again(
    tampered: tuple[str, Path, list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker process killed as the log is published, its range running: Dask runs the
    range again, on the other worker or on the one its nanny restarts (which missed the
    scatter and fetches the published log from a worker that has it), and the verdicts are
    one process's, tampered rounds included."""
    import signal
    import time

    from distributed import Client, Variable

    import replays.distributed as fan

    url, _key, rounds, bad = tampered
    driver, ids, expected = _one_process(url)
    real_set = Variable.set
    killed: list[int] = []
    with fan.local_cluster(2) as cluster, Client(cluster, set_as_default=False) as client:
        fan.warm(client, url)
        pids = client.run(os.getpid)

        def publish_and_kill(self: Variable, value: Any, **kwargs: Any) -> None:
            real_set(self, value, **kwargs)
            for _ in range(600):  # a worker with a range (running or waiting for the log)
                busy = [w for w, tasks in client.processing().items() if tasks]
                if busy:
                    break
                time.sleep(0.05)
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append(pids[busy[0]])

        monkeypatch.setattr(Variable, "set", publish_and_kill)
        got = [
            v.as_json()
            for v in fan.verify_distributed(url, ids, policy=driver.policy, client=client,
                                            log=driver.log, least_per_range=1)
        ]  # fmt: skip
    assert killed
    assert got == expected
    assert {v["round_id"] for v in got if not v["ok"]} == set(bad)
    assert len(got) == len(rounds)


def test_a_worker_takes_the_log_from_its_own_memory_once_the_scatter_reached_it(
    tampered: tuple[str, Path, list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver scatters its log under the run's key: a worker that asks for the log once
    the scatter has reached it (here: its first read-ahead made to wait for the publication)
    takes it from its own memory, and never asks the scheduler for the published variable;
    the verdicts are one process's, tampered rounds included."""
    import threading

    from distributed import Variable

    from replays.bundle import StoreReader

    url, _key, rounds, bad = tampered
    driver, ids, expected = _one_process(url)
    published = threading.Event()
    real_read, real_set, real_get = StoreReader.read_ahead, Variable.set, Variable.get
    asked: list[str] = []

    def read_ahead(self: StoreReader, round_ids: Any) -> None:
        real_read(self, round_ids)
        if self.log is None and list(round_ids):  # a worker's first batch: ask after the publish
            published.wait(timeout=30)

    def publish(self: Variable, value: Any, **kwargs: Any) -> None:
        real_set(self, value, **kwargs)
        published.set()

    def get(self: Variable, *args: Any, **kwargs: Any) -> Any:
        asked.append(self.name)
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(StoreReader, "read_ahead", read_ahead)
    monkeypatch.setattr(Variable, "set", publish)
    monkeypatch.setattr(Variable, "get", get)
    got = _fan_out_on_a_thread(url, ids, driver)
    assert published.is_set()
    assert asked == []  # the log was in the worker's memory: no variable asked for
    _the_verdicts_of_one_process(got, expected, rounds, bad)


def test_a_worker_without_the_scattered_log_waits_for_it_and_fetches_it_from_a_peer(
    tampered: tuple[str, Path, list[str], list[str]],
) -> None:
    """A worker that asks for the log before it is published, and does not receive it (it
    joined after the scatter: here the log is scattered to the other worker only), waits for
    the published variable and fetches the log from the worker that holds it: the very log
    the driver read (its leaves, tree and checkpoints)."""
    from uuid import uuid4

    from distributed import Client, LocalCluster, Variable

    import replays.distributed as fan

    url, _key, _rounds, _bad = tampered
    driver, _ids, _expected = _one_process(url)
    name = f"verify-log-{uuid4().hex}"

    def made_here(url: str, name: str) -> tuple[bool, int, bytes, list[str], int]:
        app = fan._app(url)
        held = fan._held_here(name)
        log = fan._log_to_come(app, name)
        return held is not None, log.size, log.tree.root(), log.kinds, len(log.checkpoints())

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        holder, other = sorted(client.nthreads())
        waiting = client.submit(made_here, url, name, workers=[other], pure=False)
        sent = client.scatter({name: fan.log_state(driver.log)}, workers=[holder])[name]
        published = Variable(name, client=client)
        published.set(sent)
        try:
            held_first, size, root, kinds, checkpoints = waiting.result(timeout=60)
        finally:
            published.delete()
        assert not held_first
    assert (size, root, kinds) == (driver.log.size, driver.log.tree.root(), driver.log.kinds)
    assert checkpoints == len(driver.log.checkpoints())

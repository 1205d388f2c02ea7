"""Benchmark: ``verify`` fanned out on Dask against one process, on the same store, same run.

Run on demand (not part of the test suite)::

    python -m benchmarks.dask_verify [--rounds 400] [--workers 1 2] [--store sqlite|postgres]

Builds a store of simulated rounds (european, deluxe, multihand and lucky7 in turn), then times,
interleaved for ``--repeat`` repetitions so that a load change on the machine touches them
alike:

* ``single``: one process, ``StoreVerifier.verify_many`` over every round (the baseline, what
  ``verify --all`` does);
* ``dask N (running)``: every round of the store through :func:`replays.distributed.verify_store`
  (what ``verify --all --workers N --state none`` runs for the rounds: since branch ``vfan5``
  the store's rounds listed and their ranges submitted first, then the driver's log read and
  shipped, the rounds only the log knows as a last range, the gather) on an already running
  ``LocalCluster`` of N worker processes, on a client connected before the timing, by a
  fresh driver verifier (its listing and log read timed; the check of the log as a whole,
  which ``verify --all`` adds on the driver meanwhile, left out);
* ``dask N (running, read)`` (``--compare-read``): each worker reading the log itself
  (:func:`replays.distributed.verify_distributed` of the rounds listed untimed);
* ``dask N (running, connect)`` (``--connect``): the same on a client connected to the
  scheduler and closed inside the timing (what ``verify --scheduler`` does);
* ``dask N (+start)``: the same with the cluster started and stopped for the run
  (``verify --workers N``);
* ``--detail``: after those, ``--repeat`` runs on each running cluster timed phase by phase
  (:func:`time_phases`, after branch ``vfan2``'s: when the driver's listing, submit, log
  read, the log's pickle, its scatter and publication and the gather end, and when each
  worker's range starts, waits for the log, has it and ends; wall and CPU), in the order
  :func:`verify_store` runs them (the store's rounds listed and out first, the driver's log
  read and shipped while the workers read ahead), then in the order before branch ``vfan3``
  (the log read, the rounds listed, the log pickled and scattered, then the ranges submitted
  with its future), alternated run by run.

Every Dask run's verdicts are checked equal to the single run's before its time counts.
Printed: the median time of each, rounds/s, and the speed-up (single / dask). The speed-up is
bounded by the cores: on a 2-core machine shared with others expect well under 2x.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.distributed import (
    LogToCome,
    PositionRange,
    local_cluster,
    log_state,
    position_ranges,
    range_count,
    verify_distributed,
    verify_range,
    verify_store,
)
from replays.verify import StoreVerifier

VARIANTS = ("european", "deluxe", "multihand", "lucky7")


@contextmanager
def _store(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="roundaudit-dask-bench-") as d:
            yield "sqlite:///" + quote(str(Path(d) / "events.db"))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from pg import ThrowawayCluster, find_bindir, fresh_database  # type: ignore[import-not-found]

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries")
    with ThrowawayCluster(bindir) as admin, fresh_database(admin, prefix="bench_") as url:
        yield url


def build(url: str, rounds: int) -> None:
    app = RoundAudit(env=environment_for(url))
    try:
        per = max(1, rounds // len(VARIANTS))
        for v in VARIANTS:
            simulate(app, variant=v, rounds=per)
    finally:
        app.close()


def _cpu() -> float:
    """CPU seconds of this process (user + system)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@dataclass
class Sample:
    """One timed run: wall and CPU seconds (``cpu``: the driver's plus, on a running cluster,
    every worker's; ``driver``: the driver's alone), and per worker the fraction of the run's
    wall time it spent computing ranges."""

    wall: float
    cpu: float
    driver: float
    busy: list[float] = field(default_factory=list)


def time_single(url: str, ids: list[Any]) -> tuple[Sample, list[Any]]:
    """``ids`` verified by one process (``verify --all``), timed from the verifier's log read
    to the last verdict; the verdicts as JSON."""
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        t0, c0 = time.perf_counter(), _cpu()
        verifier = StoreVerifier(app)  # reads the log, as the distributed driver does
        out = [v.as_json() for v in verifier.verify_many(ids)]
        cpu = _cpu() - c0
        return Sample(time.perf_counter() - t0, cpu, cpu), out
    finally:
        app.close()


def time_fanout(
    url: str,
    ids: list[Any],
    client: Any,
    *,
    ship: bool = True,
    busy: bool = False,
    connect: bool = False,
) -> tuple[Sample, list[Any]]:
    """Every round of the store through ``client``'s running cluster as ``verify --all
    --workers N --state none`` runs them (``ship``: :func:`verify_store` by a fresh driver
    verifier, its listing and log read timed), or (not ``ship``) ``ids`` with each worker
    reading the log (:func:`verify_distributed`); the CPU counts every worker's, and ``busy``
    adds each
    worker's share of the wall time spent in its ranges. The fan-out runs on ``client``, whose
    connection was made before the timing (the cluster started and readied); ``connect``: on a
    client of its own instead, connected to the scheduler and closed inside the timing, as
    ``verify --scheduler`` does."""
    from distributed import get_task_stream

    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        before = client.run(time.process_time)
        stream = get_task_stream(client=client) if busy else contextlib.nullcontext()
        with stream:
            t0, c0 = time.perf_counter(), _cpu()
            scheduler = client.scheduler.address if connect else None
            if ship:  # the driver's log read once its rounds are out, shipped to the workers
                verifier = StoreVerifier(app, deferred=True)
                verdicts = verify_store(
                    url, verifier, scheduler=scheduler, client=None if connect else client
                )
            else:
                verdicts = verify_distributed(
                    url,
                    ids,
                    policy=StoreVerifier(app).policy,
                    scheduler=scheduler,
                    client=None if connect else client,
                )
            out = [v.as_json() for v in verdicts]
            wall, driver = time.perf_counter() - t0, _cpu() - c0
        after = client.run(time.process_time)
    finally:
        app.close()
    shares: list[float] = []
    if busy:
        computing: dict[str, float] = dict.fromkeys(after, 0.0)
        for task in stream.data:  # type: ignore[union-attr]
            for ss in task["startstops"]:
                if ss["action"] == "compute":
                    computing[task["worker"]] += ss["stop"] - ss["start"]
        shares = [b / wall for b in computing.values()]
    cpu = driver + sum(after[w] - before[w] for w in after)
    return Sample(wall, cpu, driver, shares), out


def time_started(url: str, ids: list[Any], *, workers: int) -> tuple[Sample, list[Any]]:
    """Every round of the store on a local cluster of ``workers`` started and stopped inside
    the timing (``verify --all --workers N --state none``: :func:`verify_store`); the CPU is
    the driver's. ``ids``: not used (the driver lists the rounds, timed)."""
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        t0, c0 = time.perf_counter(), _cpu()
        verifier = StoreVerifier(app, deferred=True)
        out = [v.as_json() for v in verify_store(url, verifier, workers=workers)]
        cpu = _cpu() - c0
        return Sample(time.perf_counter() - t0, cpu, cpu), out
    finally:
        app.close()


def _range_timed(
    url: str, run: str, policy: Any, rng: Any, log: Any
) -> tuple[list[Any], tuple[float, ...]]:
    """:func:`verify_range` on a worker, with the wall clock (``time.time``: one clock for
    every process of the machine) at its start, when it starts waiting for the log, when it
    has it (the shipped log unpickled; for a log shipped before the range, both when its
    verifier is made) and at its end, and its thread's CPU before the log, making the log, and
    after it."""
    from replays.distributed import _verifier

    start, c0 = time.time(), time.thread_time()
    marks: list[float] = []
    verifier = _verifier(url, run, policy, log)
    later = verifier._later
    if later is not None:

        def timed() -> Any:
            marks.extend((time.time(), time.thread_time()))
            made = later()
            marks.extend((time.time(), time.thread_time()))
            return made

        verifier._later = timed
    else:  # the log shipped before the range, or a later range of the run: there already
        marks.extend((start, c0, time.time(), time.thread_time()))
    out = verify_range(url, run, policy, rng, log)
    end, c1 = time.time(), time.thread_time()
    waited, cw, ready, cr = marks
    return out, (start, waited, ready, end, cw - c0, cr - cw, c1 - cr)


#: The driver's phases of :func:`time_phases`, in order (of the overlapped fan-out; the
#: serial one reads the log first, lists the rounds, submits after the scatter and publishes
#: nothing).
PHASES = (
    "rounds listed",
    "ranges submitted",
    "log read",
    "log pickled",
    "log scattered",
    "verdicts gathered",
)


def time_phases(
    url: str, ids: list[Any], client: Any, *, serial: bool = False
) -> tuple[dict[str, tuple[float, float]], list[tuple[float, ...]], list[Any]]:
    """One fan-out of every round on ``client``'s running cluster, as :func:`verify_store`
    runs it (the same functions: a fresh driver verifier's ``store_round_ids``,
    ``range_count``, ``position_ranges``, one task a range submitted, its ``log_round_ids``
    (the log read), ``log_state``, the scatter, published under the run's :class:`LogToCome`,
    the rounds only the log knows as a last range, the gather in order), timed phase by
    phase: per phase of :data:`PHASES`, the wall and the driver's main
    thread's CPU since the start (ms); per range its start, wait for the log, log ready and end
    (wall ms since the start), its CPU before the log, making it, and after it (ms); the
    verdicts as JSON. ``serial``: as before branch ``vfan3``, the log read, the rounds listed
    (:meth:`StoreVerifier.round_ids`), the log pickled and scattered first and its future
    passed to each range (resolved before the range starts). ``ids``: not used."""
    from uuid import uuid4

    app = RoundAudit(env=environment_for(url, create_table=False))
    marks: dict[str, tuple[float, float]] = {}
    published: Any = None
    try:
        t0, c0 = time.time(), time.thread_time()

        def mark(phase: str) -> None:
            marks[phase] = (1e3 * (time.time() - t0), 1e3 * (time.thread_time() - c0))

        workers = sum(client.nthreads().values())
        run = uuid4().hex

        def submit(ranges: list[Any], shipped: Any) -> list[Any]:
            return [
                client.submit(
                    _range_timed, url, run, verifier.policy, rng, shipped,
                    key=f"ph-{run}-{rng.first}",
                )
                for rng in ranges
            ]  # fmt: skip

        if serial:
            verifier = StoreVerifier(app)
            mark("log read")
            listed = verifier.round_ids()
            mark("rounds listed")
            state = log_state(verifier.log)
            mark("log pickled")
            sent = client.scatter(state, broadcast=True, hash=False)
            mark("log scattered")
            futures = submit(position_ranges(listed, range_count(len(listed), workers)), sent)
            mark("ranges submitted")
        else:
            verifier = StoreVerifier(app, deferred=True)
            listed, seen = verifier.store_round_ids()
            mark("rounds listed")
            to_come = LogToCome.of_run(run)
            ranges = position_ranges(listed, range_count(len(listed), workers))
            futures = submit(ranges, to_come)
            mark("ranges submitted")
            only_logged = verifier.log_round_ids(seen)
            mark("log read")
            state = log_state(verifier.log)
            mark("log pickled")
            published = to_come.publish(client, state)
            mark("log scattered")
            if only_logged:
                last = position_ranges(only_logged, 1)[0]
                futures += submit(
                    [PositionRange(len(listed), len(listed) + last.last, last.round_ids)],
                    to_come,
                )
        out: list[Any] = []
        times: list[tuple[float, ...]] = []
        for future in futures:
            verdicts, (start, waited, ready, end, before, making, after) = future.result()
            out += [v.as_json() for v in verdicts]
            times.append(
                tuple(1e3 * (t - t0) for t in (start, waited, ready, end))
                + tuple(1e3 * c for c in (before, making, after))
            )
        mark("verdicts gathered")
    finally:
        if published is not None:
            published.delete()
        app.close()
    return marks, times, out


def print_phases(name: str, runs: list[tuple[dict[str, tuple[float, float]], list[Any]]]) -> None:
    """Medians (and ranges) over ``runs`` of :func:`time_phases`' figures."""

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"

    print(f"\n{name}: phases, ms since the driver's start, medians of {len(runs)} (min-max)")
    for phase in PHASES:
        wall = [m[phase][0] for m, _ in runs]
        cpu = [m[phase][1] for m, _ in runs]
        print(f"  driver {phase:<18} wall {spread(wall)}  main thread CPU {spread(cpu)}")
    for i in range(len(runs[0][1])):
        c = list(zip(*(t[i] for _, t in runs), strict=True))
        print(
            f"  range {i}: start {spread(list(c[0]))}, waits for the log {spread(list(c[1]))}"
            f" (CPU before {spread(list(c[4]))}), log ready {spread(list(c[2]))} (CPU"
            f" {spread(list(c[5]))}), end {spread(list(c[3]))} (CPU after {spread(list(c[6]))})"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="+", default=[2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--url", default=None, help="an existing store to verify (no build)")
    ap.add_argument("--no-start", action="store_true", help="skip the '+start' runs")
    ap.add_argument(
        "--compare-read",
        action="store_true",
        help="also run each running cluster with every worker reading the log itself (the "
        "fan-out before the driver shipped its log)",
    )
    ap.add_argument(
        "--connect",
        action="store_true",
        help="also run each running cluster on a client connected and closed inside the "
        "timing (what verify --scheduler does), beside the client connected before it",
    )
    ap.add_argument(
        "--detail",
        action="store_true",
        help="then time --repeat runs on each running cluster phase by phase (time_phases), "
        "the log shipped while the ranges read ahead and, alternated, before they start",
    )
    args = ap.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.url:
            url = args.url
        else:
            url = stack.enter_context(_store(args.store))
            t0 = time.perf_counter()
            build(url, args.rounds)
            print(f"store: {args.store}, built in {time.perf_counter() - t0:.1f} s")
        app = RoundAudit(env=environment_for(url, create_table=False))
        try:
            ids = StoreVerifier(app).round_ids()
        finally:
            app.close()
        n = len(ids)
        samples: dict[str, list[Sample]] = {}
        loads: list[float] = [os.getloadavg()[0]]
        from distributed import Client

        clusters = {w: stack.enter_context(local_cluster(w)) for w in args.workers}
        clients = {  # never the process's default client (replays.distributed)
            w: stack.enter_context(Client(c.scheduler_address, set_as_default=False))
            for w, c in clusters.items()
        }
        baseline = None
        for _ in range(args.repeat):  # interleaved: a change of load touches every run alike
            sample, single = time_single(url, ids)
            samples.setdefault("single", []).append(sample)
            if baseline is None:
                baseline = single
                print(f"{n} rounds, {sum(v['ok'] for v in single)} passed")
            for w, client in clients.items():
                sample, out = time_fanout(url, ids, client, busy=True)
                assert out == baseline, "the Dask verdicts differ from the single run's"
                samples.setdefault(f"dask {w} (running)", []).append(sample)
                if args.compare_read:
                    sample, out = time_fanout(url, ids, client, ship=False, busy=True)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
                    samples.setdefault(f"dask {w} (running, read)", []).append(sample)
                if args.connect:
                    sample, out = time_fanout(url, ids, client, connect=True, busy=True)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
                    samples.setdefault(f"dask {w} (running, connect)", []).append(sample)
                if not args.no_start:
                    sample, out = time_started(url, ids, workers=w)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
                    samples.setdefault(f"dask {w} (+start)", []).append(sample)
            loads.append(os.getloadavg()[0])
        phases: dict[str, list[tuple[dict[str, tuple[float, float]], list[Any]]]] = {}
        for _ in range(args.repeat if args.detail else 0):
            for w, client in clients.items():
                for serial in (False, True):
                    marks, times, out = time_phases(url, ids, client, serial=serial)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
                    how = "log shipped before the ranges" if serial else "ranges first"
                    phases.setdefault(f"dask {w} (running, {how})", []).append((marks, times))
            loads.append(os.getloadavg()[0])
    single_wall = statistics.median(s.wall for s in samples["single"])
    single_cpu = statistics.median(s.cpu for s in samples["single"])
    print(
        f"\nload average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f} "
        f"on {os.cpu_count()} cores; medians of {args.repeat}"
    )
    head = f"{'run':<20} {'median s':>8} {'rounds/s':>8} {'speed-up':>8} {'effic.':>6}"
    print(head + f" {'CPU s':>6} {'CPU effic.':>10}  busy per worker")
    for name, ss in samples.items():
        wall = statistics.median(s.wall for s in ss)
        cpu = statistics.median(s.cpu for s in ss)
        w = 1 if name == "single" else int(name.split()[1])
        speed = single_wall / wall
        busy = ""
        if ss[0].busy:
            per = [statistics.median(s.busy[i] for s in ss) for i in range(len(ss[0].busy))]
            busy = " ".join(f"{b:.0%}" for b in per)
        cpu_eff = f"{single_cpu / cpu:>9.0%}" if "running" in name or name == "single" else ""
        print(
            f"{name:<20} {wall:>8.3f} {n / wall:>8.1f} {speed:>7.2f}x {speed / w:>6.0%}"
            f" {cpu:>6.3f} {cpu_eff:>10}  {busy}"
        )
    for name, runs in phases.items():
        print_phases(name, runs)
    print(
        "speed-up: single's median wall / this run's; effic.: speed-up / workers; CPU s: the "
        "driver's plus (running) every worker's CPU seconds; CPU effic.: single's CPU / this "
        "run's (the work the fan-out adds, whatever the load); busy: a worker's share of the "
        "run's wall time spent in its ranges"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

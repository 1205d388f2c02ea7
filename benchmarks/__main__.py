"""Throughput benchmarks (issue 15): every figure beside its raw-library baseline, one table.

    python -m benchmarks [--quick] [--stores sqlite,postgres] [--json artifacts/benchmarks.json]
    make bench                      # the same; make bench-boundless: the 10,000-player round

Each figure is measured on SQLite (a file in a temporary folder) and on PostgreSQL (a throwaway
cluster started from the local server binaries as the tests start one, but **durable**:
``fsync``, ``synchronous_commit`` and ``full_page_writes`` on; stopped and deleted at the end),
and beside a baseline measured **in the same run** on the same kind of store:

``record``
    ``cli.simulate`` rounds (european and deluxe tables) through ``RoundAudit``: rounds/s.
    Baseline: the very events these rounds stored, read back and re-appended by the library's
    own recorder into a fresh store of the same kind, one transaction per round (the store's
    raw per-round append rate). Target: >= 50 %.
``verify``
    ``StoreVerifier`` over every round (what ``roundaudit verify --all`` does per round).
    Baseline: the library reading and decoding every stored event (``select_notifications`` +
    ``mapper.to_domain_event``), expressed in rounds/s; a full garbage collection, untimed,
    before each. Target: >= 50 %.
``project``
    every tracked projection caught up from zero (``ProjectionRunner.catch_up`` in its default
    batches, on tables just created; the DDL is not timed): events/s.
    Baseline: the library reading and decoding the notifications of their topics. Target >= 50 %.
``verify (2 workers)``
    the same rounds verified by the product's fan-out (``replays.distributed``, what
    ``roundaudit verify --all --workers 2 --state none`` runs for the rounds) on a local Dask
    cluster of two worker processes (``replays.distributed.local_cluster``: Dask's profiler and
    20 ms loop tick off), started and readied (modules imported, the store opened, the client
    connected) untimed, as the HTTP lines' service processes are, and the runs made on that
    client (``verify_store(client=...)``). Timed, as one verification run does it, by a
    fresh driver verifier: its list of the store's rounds, their ranges cut and submitted,
    then its read of the log (while the workers read their first rounds), the log shipped to
    the workers, the rounds only the log knows as a last range, the ranges verified, the
    verdicts gathered in order (the check of the log as a whole, which ``--all`` adds on the
    driver meanwhile, is left out, as in the ``verify`` line). Median of
    ``VERIFY_WORKERS_RUNS`` runs, each alternated with a single-process verification of the
    same rounds whose verdicts it must equal (the run fails otherwise). Baseline: the ``verify``
    line's (the single-process raw read-and-decode). The detail gives the CPU efficiency: the
    single-process verification's CPU against the driver's (with the scheduler in it) and the
    workers' CPU. Target: >= 50 %.
``flat record`` / ``flat verify``
    per-round cost of the second half of the rounds (the store doubled) against the first half's;
    verification of the first rounds again once the store has doubled, by a verifier that kept
    its state of the log (``replays.logstate``: made from the first half's log, then brought up
    to date, both untimed and given in the detail), against the same verification of a
    **twin**: a fresh store of the same kind holding only a first half, recorded after the
    doubling (untimed); ``flat verify (fresh)`` the same by a fresh verifier, which reads the
    whole log once. The doubled store's and the twin's verifications alternate, the order
    swapped each pair, ``FLAT_VERIFY_RUNS`` pairs, each side's fastest kept: both sides meet
    the same moments of the host, and the host's load only ever adds time (measured minutes
    apart, medians of 3, the line had moved between 0.68 and 1.68 from one run to the next).
    Target: < 10 % more.
``flat wallet``
    a deposit into a wallet that already holds many movements against one into a fresh wallet;
    ``flat balance`` the same for a balance read. Target: < 10 % more (O(1)).
``boundless``
    one boundless round (``benchmarks.boundless``) with a few thousand players: per-player cost
    of the decisions, the settlement and the verification against the targets of issue 15
    (10,000 players: 5 s, 2 s, 5 s, so 0.5, 0.2 and 0.5 ms a player); baseline: the library's
    append rate for as many events in the same run (printed in the detail line). The round is
    played, checkpointed and verified in a process of its own (``boundless memory``: its peak
    RSS), and so is one of half as many players: ``flat boundless memory`` (the larger round's
    peak RSS against the smaller's) and ``flat boundless cost`` (its CPU a player, the three
    phases summed, against the smaller's). Target: < 10 % more (issue 15: "memory that does
    not grow with the number of players", "the same per-player costs").
``http``
    a real ``uvicorn`` service (``roundaudit serve``, one process; on PostgreSQL also
    ``--workers 2``) on loopback, 50 concurrent clients (keep-alive connections on ``asyncio``
    streams, in this process; ``benchmarks/http_load.py``): single commands (wallet deposits,
    each with its own idempotency key) and reads (``GET /rounds/{id}``), requests/s and p99.
    Baseline: ``GET /health`` (the HTTP stack, authentication and the store's cheapest query)
    under the same load. Targets: commands >= 1,000/s with p99 < 50 ms; reads >= 3,000/s with
    p99 < 20 ms. Then the same routes ``at 1,000/s`` and ``at 3,000/s``: open loop, requests
    due at the target rate, the p99 a client sees at that rate (``http_load.paced_load``).

Printed: one table (store, figure, value, baseline, ratio, target, met). Written: the same as
JSON (``--json``, default ``artifacts/benchmarks.json``), with the machine and the sizes.
``--quick`` runs everything tiny (a smoke test of the harness; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import orjson

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "artifacts" / "benchmarks.json"


# ------------------------------------------------------------------------------ results
@dataclass
class Figure:
    """One line of the table. ``higher``: a bigger value is better (rates); else a cost."""

    store: str
    name: str
    value: float
    unit: str
    baseline: float | None
    target: str
    met: bool | None
    ratio: float | None = None
    detail: str = ""

    def row(self) -> list[str]:
        return [
            self.store,
            self.name,
            f"{_num(self.value)} {self.unit}",
            "" if self.baseline is None else _num(self.baseline),
            "" if self.ratio is None else f"{self.ratio:.3f}",
            self.target,
            {True: "met", False: "NOT met", None: "-"}[self.met],
        ]


def _num(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.4f}"


@dataclass
class Sizes:
    european: int = 120
    deluxe: int = 40
    movements: int = 5_000
    wallet_ops: int = 200
    boundless_players: int = 4_000
    http_clients: int = 50
    http_requests: int = 3_000
    concurrent_tables: int = 8
    concurrent_rounds: int = 10

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            european=3,
            deluxe=1,
            movements=50,
            wallet_ops=5,
            boundless_players=20,
            http_clients=5,
            http_requests=40,
            concurrent_tables=2,
            concurrent_rounds=1,
        )


@dataclass
class Run:
    figures: list[Figure] = field(default_factory=list)
    say: Callable[[str], None] = print

    def add(self, fig: Figure) -> None:
        self.figures.append(fig)
        self.say(
            f"  {fig.store} {fig.name}: {_num(fig.value)} {fig.unit}"
            + (
                f" (baseline {_num(fig.baseline)}, ratio {fig.ratio:.3f})"
                if fig.baseline is not None and fig.ratio is not None
                else ""
            )
            + (f"; {fig.detail}" if fig.detail else "")
        )


def rate_figure(
    store: str,
    name: str,
    value: float,
    baseline: float,
    unit: str,
    *,
    floor: float = 0.5,
    detail: str = "",
) -> Figure:
    ratio = value / baseline if baseline else 0.0
    return Figure(
        store, name, value, unit, baseline, f">= {floor:.0%} of raw", ratio >= floor, ratio, detail
    )


def growth_figure(
    store: str, name: str, after: float, before: float, unit: str, detail: str = ""
) -> Figure:
    ratio = after / before if before else 0.0
    return Figure(store, name, after, unit, before, "< 1.10x", ratio < 1.10, ratio, detail)


# ------------------------------------------------------------------------------ stores
class Stores:
    """Fresh stores of one kind: ``fresh()`` is a context manager yielding a database URL."""

    kind: str

    def fresh(self) -> contextlib.AbstractContextManager[str]:
        raise NotImplementedError


class SqliteStores(Stores):
    kind = "sqlite"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    @contextlib.contextmanager
    def fresh(self) -> Iterator[str]:  # type: ignore[override]
        self.count += 1
        path = self.folder / f"events-{self.count}.db"
        yield "sqlite:///" + quote(str(path))


class PostgresStores(Stores):
    kind = "postgres"

    def __init__(self, admin_url: str, fresh_database: Callable[..., Any]) -> None:
        self.admin_url = admin_url
        self._fresh_database = fresh_database

    def fresh(self) -> contextlib.AbstractContextManager[str]:
        return self._fresh_database(self.admin_url, prefix="bench_")  # type: ignore[no-any-return]


@contextlib.contextmanager
def open_stores(kind: str, url: str | None = None) -> Iterator[Stores]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="roundaudit-bench-") as d:
            yield SqliteStores(Path(d))
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from pg import ThrowawayCluster, find_bindir, fresh_database  # type: ignore[import-not-found]

    if url is not None:
        yield PostgresStores(url, fresh_database)
        return
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries: pass --postgres-url postgresql://...")
    with ThrowawayCluster(bindir, durable=True) as admin:
        yield PostgresStores(admin, fresh_database)


# ------------------------------------------------------------------------------ raw library
def all_notifications(app: Any, topics: Sequence[str] = ()) -> list[Any]:
    out: list[Any] = []
    position = 0
    while True:
        page = app.recorder.select_notifications(
            position, 5000, topics=topics, inclusive_of_start=False
        )
        if not page:
            return out
        out.extend(page)
        position = page[-1].id


def raw_read_decode(app: Any, topics: Sequence[str] = ()) -> tuple[int, float]:
    """The library alone: read every notification (of ``topics``) and decode it."""
    t0 = time.perf_counter()
    notes = all_notifications(app, topics)
    to_event = app.mapper.to_domain_event
    for n in notes:
        to_event(n)
    return len(notes), time.perf_counter() - t0


def raw_append(url: str, notes: Sequence[Any], transactions: int) -> float:
    """The library's own recorder re-appending ``notes`` (stored events, as stored) into the
    fresh store ``url``, in ``transactions`` transactions of consecutive events."""
    from eventsourcing.application import Application
    from eventsourcing.persistence import StoredEvent

    from domain.persistence import environment_for

    raw = Application(env=environment_for(url))
    try:
        stored = [
            StoredEvent(n.originator_id, n.originator_version, n.topic, n.state) for n in notes
        ]
        per = max(1, -(-len(stored) // max(1, transactions)))
        t0 = time.perf_counter()
        for i in range(0, len(stored), per):
            raw.recorder.insert_events(stored[i : i + per])
        return time.perf_counter() - t0
    finally:
        raw.close()


# ------------------------------------------------------------------------------ figures
def _app(url: str) -> Any:
    from domain.application import RoundAudit
    from domain.persistence import environment_for

    return RoundAudit(env=environment_for(url))


def record_rounds(app: Any, sizes: Sizes, *, suffix: str = "") -> int:
    from cli.simulate import simulate

    simulate(app, variant="european", rounds=sizes.european, players=3, table="b-eu" + suffix)
    simulate(app, variant="deluxe", rounds=sizes.deluxe, players=3, table="b-dlx" + suffix)
    return sizes.european + sizes.deluxe


def verify_rounds(
    app: Any, ids: Sequence[Any] | None = None, *, state: Path | None = None
) -> tuple[int, float, int]:
    """Verify ``ids`` (default every round) with a new ``StoreVerifier`` (fresh, or reading
    its log through the verifier's state file ``state``); returns rounds, seconds and how many
    failed."""
    from replays.verify import StoreVerifier

    t0 = time.perf_counter()
    verifier = StoreVerifier(app, state=state)
    chosen = list(verifier.round_ids()) if ids is None else list(ids)
    failed = sum(not v.ok for v in verifier.verify_many(chosen))
    return len(chosen), time.perf_counter() - t0, failed


T = TypeVar("T")
U = TypeVar("U")


def alternated(
    runs: int, first: Callable[[], T], second: Callable[[], U]
) -> tuple[list[T], list[U]]:
    """``first()`` and ``second()`` called ``runs`` times each, alternated, the order swapped
    each pair, each after a full garbage collection (untimed: neither pays for the garbage the
    other left): both meet the same moments of the host. Their results, each side's in order."""
    firsts: list[T] = []
    seconds: list[U] = []
    for at in range(runs):
        for which in (0, 1) if at % 2 == 0 else (1, 0):
            gc.collect()
            if which == 0:
                firsts.append(first())
            else:
                seconds.append(second())
    return firsts, seconds


#: How many pairs of verifications (the doubled store's, the twin's) the flat-verify figures
#: alternate; each side's fastest is kept (one run of 160 rounds lasts a few tenths of a
#: second, where one noisy moment of the host adds 10 % or more; nothing takes time off).
FLAT_VERIFY_RUNS = 5

#: One side of a flat-verify pair: the application, the rounds to verify and the verifier's
#: state file (``None``: a fresh verifier, which reads the whole log).
VerifySide = tuple[Any, Sequence[Any], "Path | None"]


def paired_verify_seconds(grown: VerifySide, twin: VerifySide) -> tuple[float, float]:
    """The fastest seconds of :data:`FLAT_VERIFY_RUNS` verifications of each side by a new
    verifier each (``verify_rounds``), the two sides :func:`alternated`."""
    a, b = alternated(
        FLAT_VERIFY_RUNS,
        lambda: verify_rounds(grown[0], grown[1], state=grown[2])[1],
        lambda: verify_rounds(twin[0], twin[1], state=twin[2])[1],
    )
    return min(a), min(b)


#: How many verifications of every round the ``verify`` line alternates with as many raw
#: reads and decodes; each side's fastest is kept (measured once each, a few tenths of a second,
#: the line read 0.24 to 0.38 on SQLite from one run to the next).
VERIFY_RUNS = 3


def verify_and_raw_decode(app: Any) -> tuple[int, float, int, int, float]:
    """Every round verified by a new verifier (``verify_rounds``) and the raw read and decode
    of the log (``raw_read_decode``), :data:`VERIFY_RUNS` times each, :func:`alternated` (the
    baseline had moved with what the verification left in the collector's generations).
    Returns rounds, the fastest verification's seconds, the most rounds failed by a run,
    events and the fastest raw read's seconds."""
    verified, decoded = alternated(
        VERIFY_RUNS, lambda: verify_rounds(app), lambda: raw_read_decode(app)
    )
    return (
        verified[0][0],
        min(seconds for _, seconds, _ in verified),
        max(failed for _, _, failed in verified),
        decoded[0][0],
        min(seconds for _, seconds in decoded),
    )


def bench_store(stores: Stores, sizes: Sizes, run: Run, skip: set[str]) -> None:
    kind = stores.kind
    with stores.fresh() as url:
        app = _app(url)
        try:
            # recording: the first half, then the second half (the store doubled)
            t0 = time.perf_counter()
            first = record_rounds(app, sizes)
            first_s = time.perf_counter() - t0
            first_ids = _round_ids(app)
            # a verifier that keeps its state of the log (replays.logstate): made once from
            # the first half's log (a whole read), then only brought up to date
            state = Path(tempfile.mkdtemp(prefix="roundaudit-state-")) / "verifier.sqlite"
            made_s = _made_state(app, state)
            t0 = time.perf_counter()
            second = record_rounds(app, sizes, suffix="2")
            second_s = time.perf_counter() - t0
            rounds = first + second
            notes = all_notifications(app)
            with stores.fresh() as raw_url:
                raw_s = raw_append(raw_url, notes, rounds)
            rate = rounds / (first_s + second_s)
            raw_rate = rounds / raw_s
            run.add(
                rate_figure(
                    kind, "record", rate, raw_rate, "rounds/s",
                    detail=f"{rounds} rounds, {len(notes)} events, "
                    f"{len(notes) / (first_s + second_s):,.0f} events/s; raw "
                    f"{len(notes) / raw_s:,.0f} events/s",
                )
            )  # fmt: skip
            run.add(
                growth_figure(
                    kind, "flat record", 1e3 * second_s / second, 1e3 * first_s / first,
                    "ms/round", detail="second half of the rounds against the first",
                )
            )  # fmt: skip

            n, verify_s, failed, events, decode_s = verify_and_raw_decode(app)
            run.add(
                rate_figure(
                    kind, "verify", n / verify_s, n / decode_s, "rounds/s",
                    detail=f"{n} rounds ({failed} failed), raw decode of {events} events "
                    f"{decode_s:.2f} s; fastest of {VERIFY_RUNS} each, alternated",
                )
            )  # fmt: skip
            if "workers" not in skip:  # the same rounds, against the same raw baseline
                run.add(bench_verify_workers(app, url, kind, n / decode_s))
            caught_s = _made_state(app, state)  # the monitor follows the log: the new tail
            made = (
                f"; the doubled store's state made from the first half's log in {made_s:.2f} s, "
                f"brought up to date with the second half's in {caught_s:.2f} s, neither timed"
            )
            flat_verify_figures(stores, sizes, run, app, first_ids, state, made=made)
            shutil.rmtree(state.parent, ignore_errors=True)

            # projection catch-up from zero against the raw read of their topics
            if "project" not in skip:
                run.add(bench_projections(app, kind))
        finally:
            app.close()
    if "concurrent" not in skip:
        bench_concurrent(stores, sizes, run)
    with stores.fresh() as url:
        bench_wallet(url, kind, sizes, run)
    if "boundless" not in skip:
        bench_boundless(stores, sizes, run)
    if "http" not in skip:
        bench_http(stores, sizes, run)


#: Worker processes of the ``verify (2 workers)`` line, and how many runs its median is of.
VERIFY_WORKERS = 2
VERIFY_WORKERS_RUNS = 3


def flat_verify_figures(
    stores: Stores,
    sizes: Sizes,
    run: Run,
    app: Any,
    first_ids: Sequence[Any],
    state: Path,
    *,
    made: str = "",
) -> None:
    """``flat verify`` and ``flat verify (fresh)``: the first rounds of the doubled store
    ``app`` (its verifier state ``state``, up to date) against a twin's rounds, alternated
    (``paired_verify_seconds``); the twin, a fresh store of the same kind holding one half,
    recorded and its state made here, untimed."""
    kind = stores.kind
    with stores.fresh() as twin_url:
        twin = _app(twin_url)
        twin_state = Path(tempfile.mkdtemp(prefix="roundaudit-state-")) / "verifier.sqlite"
        try:
            record_rounds(twin, sizes)
            twin_ids = _round_ids(twin)
            _made_state(twin, twin_state)
            kept_s, kept_twin_s = paired_verify_seconds(
                (app, first_ids, state), (twin, twin_ids, twin_state)
            )
            fresh_s, fresh_twin_s = paired_verify_seconds(
                (app, first_ids, None), (twin, twin_ids, None)
            )
        finally:
            twin.close()
            shutil.rmtree(twin_state.parent, ignore_errors=True)
    runs = f"fastest of {FLAT_VERIFY_RUNS} each, alternated"
    run.add(
        growth_figure(
            kind, "flat verify", 1e3 * kept_s / len(first_ids),
            1e3 * kept_twin_s / len(twin_ids), "ms/round",
            detail=f"the first {len(first_ids)} rounds again once the store has doubled, by a "
            f"verifier with its state of the log, against a twin store of one half's "
            f"{len(twin_ids)} rounds ({runs}){made}",
        )
    )  # fmt: skip
    run.add(
        growth_figure(
            kind, "flat verify (fresh)", 1e3 * fresh_s / len(first_ids),
            1e3 * fresh_twin_s / len(twin_ids), "ms/round",
            detail=f"the same by a fresh verifier, which reads the whole log once ({runs})",
        )
    )  # fmt: skip


def bench_verify_workers(
    app: Any, url: str, kind: str, raw_rate: float, *, workers: int = VERIFY_WORKERS
) -> Figure:
    """Every round verified by ``replays.distributed`` on ``workers`` local worker processes
    (started and readied untimed, the runs on the client connected then), against the
    ``verify`` line's raw baseline ``raw_rate``
    (rounds/s); each run alternated with a single-process run whose verdicts it must equal
    (both timed by ``benchmarks.dask_verify``: the fan-out from the driver's listing of the
    rounds, ``verify_store``, the single process from its log read, to the last verdict)."""
    from distributed import Client

    from benchmarks.dask_verify import Sample, time_fanout, time_single
    from replays.distributed import local_cluster, warm
    from replays.verify import StoreVerifier

    ids = StoreVerifier(app).round_ids()
    t0 = time.perf_counter()
    with local_cluster(workers) as cluster, Client(cluster.scheduler_address) as client:
        warm(client, url)
        started_s = time.perf_counter() - t0
        one: list[Sample] = []
        fan: list[Sample] = []
        for _ in range(VERIFY_WORKERS_RUNS):  # alternated: a change of load touches both
            gc.collect()
            sample, single = time_single(url, ids)
            one.append(sample)
            gc.collect()
            sample, out = time_fanout(url, ids, client)
            fan.append(sample)
            if out != single:
                raise AssertionError(
                    f"{kind}: the verdicts of {workers} workers differ from one process's"
                )
    rounds, failed = len(out), sum(not v["ok"] for v in out)
    wall, cpu = statistics.median(s.wall for s in fan), statistics.median(s.cpu for s in fan)
    driver = statistics.median(s.driver for s in fan)
    on_workers = statistics.median(s.cpu - s.driver for s in fan)
    one_wall = statistics.median(s.wall for s in one)
    one_cpu = statistics.median(s.cpu for s in one)
    return rate_figure(
        kind, f"verify ({workers} workers)", rounds / wall, raw_rate, "rounds/s",
        detail=f"{rounds} rounds ({failed} failed), verdicts equal to one process's; median of "
        f"{VERIFY_WORKERS_RUNS}, {wall:.2f} s from the driver's listing of the rounds (its "
        f"log read after the ranges are out) to the last verdict (workers started and "
        f"readied untimed, {started_s:.1f} s); CPU {cpu:.2f} "
        f"s (driver {driver:.2f}, workers {on_workers:.2f}) against one process's "
        f"{one_cpu:.2f} s: CPU efficiency {one_cpu / cpu:.0%}; one process alternated "
        f"{rounds / one_wall:,.0f} rounds/s (speed-up {one_wall / wall:.2f}x); "
        "baseline: the verify line's single-process raw read-and-decode",
    )  # fmt: skip


#: The stores whose tables are also played by several processes (``concurrent record (2
#: processes)``): PostgreSQL. SQLite takes one writer at a time across processes (its file
#: lock) and each process groups only its own saves: measured no better than one process
#: (docs/performance.md, "What limits each figure").
MULTI_PROCESS_STORES = ("postgres",)


def bench_concurrent(stores: Stores, sizes: Sizes, run: Run) -> None:
    """Rounds of many tables recorded at once, one thread a table (``benchmarks.concurrent``);
    on :data:`MULTI_PROCESS_STORES` also the same tables played by two processes, each its
    own ``RoundAudit`` with half of them."""
    from benchmarks import concurrent

    counts = (1, 2) if stores.kind in MULTI_PROCESS_STORES else (1,)
    for processes in counts:
        with stores.fresh() as url, stores.fresh() as raw_url:
            report = concurrent.run(
                url, raw_url, threads=sizes.concurrent_tables, rounds=sizes.concurrent_rounds,
                processes=processes,
            )  # fmt: skip
        name = "concurrent record" + ("" if processes == 1 else f" ({processes} processes)")
        run.add(
            rate_figure(
                stores.kind, name, report.rate, report.raw_rate, "rounds/s",
                detail=report.detail(),
            )
        )  # fmt: skip


def _made_state(app: Any, state: Path) -> float:
    """Seconds to make or bring up to date the verifier's state file ``state``."""
    from replays.verify import StoreVerifier

    t0 = time.perf_counter()
    StoreVerifier(app, state=state)
    return time.perf_counter() - t0


def _round_ids(app: Any) -> list[Any]:
    from replays.verify import StoreVerifier

    return list(StoreVerifier(app).round_ids())


#: How many catch-ups from zero the ``project`` line alternates with as many raw reads; each
#: side's fastest is kept (one catch-up lasts a few tenths of a second: measured once each,
#: the SQLite line read 0.375 to 0.75 from one run to the next).
PROJECT_RUNS = 3


def bench_projections(app: Any, kind: str) -> Figure:
    """Every projection caught up from zero (``ProjectionRunner.reset``, untimed, before each
    but the first) against the raw read and decode of their topics, :func:`alternated`; each
    side's fastest kept."""
    from projections import make
    from projections.runner import ProjectionRunner
    from projections.store import ProjectionStore

    projections = make()
    topics = sorted({t for p in projections for t in p.topics()})
    with ProjectionStore.from_env(dict(app.env)) as store:
        runner = ProjectionRunner(app, store, projections)  # creates the tables: not timed
        assert runner.position == 0, "the benchmark's store has never been projected"

        def catch_up() -> tuple[float, float]:
            if runner.position:  # caught up before: dropped and created again, untimed
                runner.reset()
            t0, c0 = time.perf_counter(), time.process_time()
            runner.catch_up()
            return time.perf_counter() - t0, time.process_time() - c0

        def raw_read() -> tuple[int, float, float]:
            c0 = time.process_time()
            events, seconds = raw_read_decode(app, topics)
            return events, seconds, time.process_time() - c0

        caught, raw = alternated(PROJECT_RUNS, catch_up, raw_read)
    (seconds, cpu), (events, raw_s, raw_cpu) = min(caught), min(raw, key=lambda r: r[1])
    return rate_figure(
        kind, "project", events / seconds, events / raw_s, "events/s",
        detail=f"{len(projections)} projections, {events} events of their topics, "
        f"catch-up {seconds:.2f} s (CPU {cpu:.2f} s), raw {raw_s:.2f} s (CPU {raw_cpu:.2f} s); "
        f"fastest of {PROJECT_RUNS} each, alternated",
    )  # fmt: skip


def bench_wallet(url: str, kind: str, sizes: Sizes, run: Run) -> None:
    """A deposit (and a balance read) on a wallet with ``sizes.movements`` movements against
    the same on a fresh wallet, interleaved."""
    from domain.wallet import Wallet

    app = _app(url)
    try:
        big = Wallet.open("big", account_type="test")
        for start in range(0, max(1, sizes.movements), 10_000):  # transactions of 10,000
            for i in range(start, min(start + 10_000, sizes.movements)):
                big.deposit("1.00", transaction_id=f"seed-{i}")
            app.save(big)
        del big  # the application loads its own
        app.open_wallet("small", account_type="test")
        app.deposit("small", "1.00", transaction_id="warm")
        app.deposit("big", "1.00", transaction_id="warm")
        times: dict[str, list[float]] = {"big": [], "small": []}
        reads: dict[str, list[float]] = {"big": [], "small": []}
        # Each wallet in turn, the order swapped every other operation; 200 of each: with 40,
        # one run in five put PostgreSQL's 0.23-0.5 ms balance read over 1.10 by noise alone
        # (0.964-1.110 in six runs, 0.906-1.007 with 200: docs/performance.md).
        for i in range(sizes.wallet_ops):
            for who in ("small", "big") if i % 2 == 0 else ("big", "small"):
                t0 = time.perf_counter()
                app.deposit(who, "1.00", transaction_id=f"op-{i}")
                times[who].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                app.balance(who)
                reads[who].append(time.perf_counter() - t0)
        med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        rmed = {k: 1e3 * statistics.median(v) for k, v in reads.items()}
        run.add(
            growth_figure(
                kind, "flat wallet", med["big"], med["small"], "ms/deposit",
                detail=f"median deposit, wallet of {sizes.movements:,} movements vs a new one",
            )
        )  # fmt: skip
        run.add(
            growth_figure(
                kind, "flat balance", rmed["big"], rmed["small"], "ms/read",
                detail=f"median balance read, {sizes.movements:,} movements vs a new wallet",
            )
        )  # fmt: skip
    finally:
        app.close()


def bench_boundless(stores: Stores, sizes: Sizes, run: Run) -> None:
    """One boundless round of ``sizes.boundless_players`` and one of half as many, each played,
    checkpointed and verified by ``benchmarks.boundless`` in a process of its own on a fresh
    store (its max RSS is then the round's alone, not the figures' run before it in this
    process): the per-player lines and the memory of the larger, and the ``flat boundless``
    lines (issue 15: "the same per-player costs and memory that does not grow with the number
    of players"): the larger round's peak memory and CPU a player against the smaller's."""
    from benchmarks import boundless

    players = sizes.boundless_players
    half = max(1, players // 2)
    kind = stores.kind
    report, smaller = (_boundless_round(stores, n) for n in (players, half))
    per = {
        "decisions": (report.decision_seconds, 5.0),
        "settlement": (report.settlement_seconds, 2.0),
        "verify": (report.verify_seconds, 5.0),
    }
    for name, (seconds, target_10k) in per.items():
        ms = 1e3 * seconds / players
        target = 1e3 * target_10k / 10_000
        run.add(
            Figure(
                kind, f"boundless {name}", ms, "ms/player", None, f"<= {target:.2f} ms/player",
                ms <= target,
                detail=f"{players} players, {seconds:.2f} s; raw append "
                f"{report.raw_rate:,.0f} events/s, decisions {report.decision_rate:,.0f}, "
                f"settlement {report.settlement_rate:,.0f} events/s; "
                f"{'verified' if report.verified else 'NOT verified'}",
            )
        )  # fmt: skip
    run.add(
        Figure(
            kind, "boundless memory", report.peak_mib, "MiB (peak RSS of the round's process)",
            None, f"< 1024 MiB at 10,000 players (here {players})", report.peak_mib < 1024,
            detail=_memory_detail(report),
        )
    )  # fmt: skip
    run.add(
        growth_figure(
            kind, "flat boundless memory", report.peak_mib, smaller.peak_mib, "MiB peak RSS",
            detail=f"{players} players against {half}, each round in a process of its own; "
            f"{players}: {_memory_detail(report)}; {half}: {_memory_detail(smaller)}",
        )
    )  # fmt: skip

    def cpu_ms(r: boundless.Report) -> float:
        return sum(ms for ms, _events in r.cpu_ms().values())

    run.add(
        growth_figure(
            kind, "flat boundless cost", cpu_ms(report), cpu_ms(smaller), "ms CPU/player",
            detail=f"decisions, settlement and verification, {players} players against "
            f"{half} ({boundless.cpu_line(report)}; {boundless.cpu_line(smaller)})",
        )
    )  # fmt: skip


def _boundless_round(stores: Stores, players: int) -> Any:
    """``benchmarks.boundless.run_in_process`` of ``players``, verified, on a fresh store of
    ``stores``; its report (``benchmarks.boundless.Report``)."""
    from benchmarks import boundless

    with stores.fresh() as url:
        return boundless.run_in_process(players, stores.kind, url=url, verify=True)


def _memory_detail(report: Any) -> str:
    """Where a boundless round's max RSS grew: at the start, after the recording, before
    the verification (recording, raw append, checkpoint), at the end, in MiB."""
    return (
        f"max RSS start {report.start_mib:.0f}, recording {report.recording_mib:.0f}, "
        f"before verification {report.recorded_mib:.0f}, peak {report.peak_mib:.0f} MiB"
    )


# ------------------------------------------------------------------------------ http
def bench_http(stores: Stores, sizes: Sizes, run: Run) -> None:
    """The HTTP figures (``benchmarks.http_load``) on fresh stores: one service process; on
    PostgreSQL also ``serve --workers 2`` (the schema created once before it starts)."""
    from benchmarks import http_load

    with stores.fresh() as url:
        http_load.bench_http(url, stores.kind, sizes, run)
    if stores.kind == "postgres":
        with stores.fresh() as url:
            http_load.create_schema(url)
            http_load.bench_http(url, stores.kind, sizes, run, workers=2)


# ------------------------------------------------------------------------------ output
HEAD = ["store", "figure", "value", "baseline", "ratio", "target", "met"]


def table(figures: Sequence[Figure]) -> str:
    rows = [HEAD, *(f.row() for f in figures)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        model = platform.processor()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "load": os.getloadavg(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    ap.add_argument("--stores", default="sqlite,postgres", help="comma-separated")
    ap.add_argument("--postgres-url", default=None, help="an existing server instead")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="where to write the results")
    ap.add_argument(
        "--skip", default="", help="figures to skip: http,boundless,project,concurrent,workers"
    )
    ap.add_argument(
        "--wallet-movements", type=int, default=None, help="the large wallet's movements"
    )
    args = ap.parse_args(argv)
    sizes = Sizes.quick() if args.quick else Sizes()
    if args.wallet_movements is not None:
        sizes.movements = args.wallet_movements
    skip = {s for s in args.skip.split(",") if s}
    run = Run()
    started = time.perf_counter()
    run.say(f"sizes: {asdict(sizes)}")
    for kind in [s for s in args.stores.split(",") if s]:
        if kind not in ("sqlite", "postgres"):
            raise SystemExit(f"unknown store {kind!r}: sqlite or postgres")
        run.say(f"{kind}:")
        with open_stores(kind, args.postgres_url) as stores:
            bench_store(stores, sizes, run, skip)
    elapsed = time.perf_counter() - started
    print(table(run.figures))
    met = sum(f.met is True for f in run.figures)
    print(f"{met} of {len(run.figures)} targets met; {elapsed:.0f} s")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(
        orjson.dumps(
            {
                "machine": machine(),
                "sizes": asdict(sizes),
                "quick": args.quick,
                "seconds": elapsed,
                "figures": [asdict(f) for f in run.figures],
            },
            option=orjson.OPT_INDENT_2,
        )
        + b"\n"
    )
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

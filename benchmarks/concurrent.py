"""Recording from many tables at once: rounds of ``threads`` tables, each played by its own
thread through one ``RoundAudit`` (or several processes': ``--processes``, below; commands
arriving one at a time from every table, as the HTTP service receives them), against the raw
library re-appending the very events these rounds stored, one transaction per round, into a
fresh store (the ``record`` figure's baseline). This module owns the ``concurrent record``
lines of ``python -m benchmarks`` and their check that nothing was lost.

The concurrent saves of one process share transactions (``domain.group_commit``); the
detail line says how many commits the rounds made (``groups``) for how many saves (``calls``).

    python -m benchmarks.concurrent --threads 8 --rounds 20
    python -m benchmarks.concurrent --commit-delay 0   # the group commit's wait (microseconds)

``--pair DIR`` measures the CPU a round costs (``time.process_time`` of this process, every
thread, while the tables play; no raw baseline) in runs that alternate between this tree and
``DIR`` (each a fresh process started in its tree, on a fresh store: SQLite, or PostgreSQL
with ``--stores postgres``, a throwaway durable cluster as the benchmarks start one), and
prints the medians side by side (CPU and wall milliseconds a round, rounds a second, saves a
commit); the measuring code (:func:`cpu_a_round`) is this tree's, run in both::

    python -m benchmarks.concurrent --pair ../base --runs 3 --stores sqlite,postgres

``--processes N`` plays the tables in ``N`` processes (each its own ``RoundAudit`` on the same
store, the schema created once before they start, its share of the tables as threads, one
seed key for all, as ``serve --workers N`` runs): the rounds a second of all of them together
(the first process's start to the last one's end) against the same raw baseline, the CPU of
every process summed, and on PostgreSQL the CPU of its backends while the tables played. A
comma-separated list (``--processes 1,2,3``) with ``--runs R`` measures each count ``R`` times,
the counts' order rotated from one run to the next, on fresh stores, and prints the medians::

    python -m benchmarks.concurrent --stores postgres --processes 1,2,3 --runs 3
    python -m benchmarks.concurrent --stores postgres --processes 2 --waits  # and on what
                                                   # PostgreSQL's backends waited meanwhile

Every run then checks that nothing was lost (:func:`check_recorded`): as many rounds started
as were played, every one of them verified by ``replays.verify.StoreVerifier``, the log whole
(``verify_log``: every stored event in exactly one leaf, the leaves in commit order) and the
notification ids of the rounds without a gap. A run that fails it raises
:class:`RecordingLost`: its figure means nothing.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class RecordingLost(AssertionError):
    """A concurrent run did not record what it played (:func:`check_recorded`)."""


@dataclass
class Report:
    threads: int
    rounds: int
    events: int
    seconds: float
    raw_seconds: float
    groups: int | None
    calls: int | None
    cpu_seconds: float = 0.0  # every process's CPU while the tables played (all threads), summed
    processes: int = 1
    server_cpu_seconds: float | None = None  # PostgreSQL's backends meanwhile (None: SQLite)
    checked: str = ""  # what check_recorded found
    waits: Counter[str] | None = None  # with waits: what PostgreSQL's backends waited on

    @property
    def rate(self) -> float:
        return self.rounds / self.seconds

    @property
    def raw_rate(self) -> float:
        return self.rounds / self.raw_seconds

    def detail(self) -> str:
        shared = (
            f"; {self.calls:,} saves in {self.groups:,} commits"
            if self.groups is not None and self.calls is not None
            else ""
        )
        who = "" if self.processes == 1 else f"{self.processes} processes, "
        server = (
            ""
            if self.server_cpu_seconds is None
            else f", PostgreSQL's backends {self.server_ms:.2f} ms"
        )
        return (
            f"{who}{self.threads} threads (tables), {self.rounds} european rounds, "
            f"{self.events:,} events in {self.seconds:.2f} s ({self.cpu_ms:.2f} ms of CPU a round"
            f"{' in all processes' if self.processes > 1 else ''}{server}); raw "
            f"{self.raw_seconds:.2f} s{shared}" + (f"; {self.checked}" if self.checked else "")
        )

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_seconds / self.rounds

    @property
    def server_ms(self) -> float:
        return 1000 * (self.server_cpu_seconds or 0.0) / self.rounds

    @property
    def saves_a_commit(self) -> float | None:
        if self.groups is None or self.calls is None or not self.groups:
            return None
        return self.calls / self.groups


def run(
    url: str, raw_url: str, *, threads: int, rounds: int, processes: int = 1, waits: bool = False
) -> Report:
    """``rounds`` european rounds per table, ``threads`` tables at once, in the store ``url``
    (by this process's threads, or with ``processes`` > 1 by that many processes: their share
    of the tables each, :func:`run_processes`); the raw baseline appends the same events into
    ``raw_url``; with ``waits``, what PostgreSQL's backends waited on meanwhile
    (:class:`Backends`). Raises :class:`RecordingLost` when a round or an event is missing."""
    if processes > 1:
        return run_processes(
            url, raw_url, threads=threads, rounds=rounds, processes=processes, waits=waits
        )
    from benchmarks.__main__ import _app, raw_append

    app = _app(url)
    try:
        warm(app, threads)
        grouper: Any = getattr(app.recorder, "group_commit", None)
        before = (grouper.groups, grouper.calls) if grouper is not None else None
        start = _position(app)
        server = Backends(url, waits=waits)
        seconds, cpu = play(app, threads, rounds)
        server_cpu = server.spent()
        notes = _after(app, start)
        total = threads * rounds
        checked = check_recorded(app, notes, start, total)
        raw_seconds = raw_append(raw_url, notes, total)
        groups = calls = None
        if grouper is not None and before is not None:
            groups, calls = grouper.groups - before[0], grouper.calls - before[1]
        return Report(
            threads, total, len(notes), seconds, raw_seconds, groups, calls, cpu,
            server_cpu_seconds=server_cpu, checked=checked, waits=server.waits,
        )  # fmt: skip
    finally:
        app.close()


def shares(threads: int, processes: int) -> list[range]:
    """The tables (numbers ``0 .. threads - 1``) each process plays: as even as can be.

    >>> shares(8, 3)
    [range(0, 3), range(3, 6), range(6, 8)]
    """
    cuts = [-(-threads * i // processes) for i in range(processes + 1)]
    return [range(a, b) for a, b in itertools.pairwise(cuts)]


def run_processes(
    url: str,
    raw_url: str,
    *,
    threads: int,
    rounds: int,
    processes: int,
    root: Path = ROOT,
    waits: bool = False,
) -> Report:
    """:func:`run` with the tables played by ``processes`` processes (``--child``, of the tree
    ``root``), each its own ``RoundAudit`` on ``url`` with its share of the tables as threads.
    The schema is created here first (the processes open the store with ``CREATE_TABLE=n``,
    as ``serve --workers`` starts them); every process warms its tables up, then all are told
    to play at once; each reports its ``time.monotonic`` start and end and its CPU. The wall
    time is the first start to the last end; the CPU is every process's, summed."""
    from benchmarks.__main__ import _app, raw_append
    from domain.vault import SeedKeyRing

    if not 1 <= processes <= threads:
        raise ValueError(f"{processes} processes for {threads} tables: 1 to {threads}")
    key = SeedKeyRing.generate().render()  # one seed key for every process, as a service's
    app = _app(url)  # creates the schema; checks what was recorded at the end
    children: list[subprocess.Popen[str]] = []
    logs = tempfile.TemporaryDirectory(prefix="roundaudit-cc-")
    try:
        env = {**os.environ, "PYTHONPATH": str(root)}
        for i, tables in enumerate(shares(threads, processes)):
            with (Path(logs.name) / f"child-{i}.log").open("w") as err:
                child = subprocess.Popen(
                    [sys.executable, "-m", "benchmarks.concurrent", "--child"],
                    cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=err, text=True,
                )  # fmt: skip
            children.append(child)
            config = {"url": url, "first": tables.start, "threads": len(tables), "key": key}
            _say(child, json.dumps({**config, "rounds": rounds}))
        for i, child in enumerate(children):
            _expect(child, "ready", Path(logs.name) / f"child-{i}.log")
        start = _position(app)
        server = Backends(url, waits=waits)
        for child in children:
            _say(child, "go")
        results = [
            json.loads(_expect(c, "{", Path(logs.name) / f"child-{i}.log"))
            for i, c in enumerate(children)
        ]
        server_cpu = server.spent()  # before the processes close their connections
        for child in children:
            _say(child, "close")
        for child in children:
            if child.wait(timeout=60) != 0:
                raise RuntimeError(f"a recording process ended with {child.returncode}")
        seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
        notes = _after(app, start)
        total = threads * rounds
        checked = check_recorded(app, notes, start, total)
        raw_seconds = raw_append(raw_url, notes, total)
        return Report(
            threads, total, len(notes), seconds, raw_seconds,
            sum(r["groups"] for r in results), sum(r["calls"] for r in results),
            sum(r["cpu"] for r in results), processes=processes,
            server_cpu_seconds=server_cpu, checked=checked, waits=server.waits,
        )  # fmt: skip
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        app.close()
        logs.cleanup()


def _say(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def _expect(child: subprocess.Popen[str], start: str, log: Path) -> str:
    """The child's next line of output, which must start with ``start``."""
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith(start):
        child.wait(timeout=60)
        raise RuntimeError(
            f"a recording process said {line!r}, not {start!r}; its errors:\n{log.read_text()}"
        )
    return line


def child_main() -> None:
    """One recording process of :func:`run_processes` (``--child``): its configuration, a
    JSON line, on standard input; warms its tables up, says ``ready``, plays them on ``go``,
    prints its result (a JSON line), closes on ``close``."""
    from domain.application import RoundAudit
    from domain.persistence import environment_for
    from domain.vault import SeedKeyRing

    config = json.loads(sys.stdin.readline())
    first, threads = config["first"], config["threads"]
    app = RoundAudit(
        env=environment_for(config["url"], create_table=False),
        seed_key=SeedKeyRing.parse(config["key"]),
    )
    try:
        warm(app, threads, first)
        grouper: Any = getattr(app.recorder, "group_commit", None)
        before = (grouper.groups, grouper.calls) if grouper is not None else (0, 0)
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        t0 = time.monotonic()
        seconds, cpu = play(app, threads, config["rounds"], first)
        end = time.monotonic()
        after = (grouper.groups, grouper.calls) if grouper is not None else (0, 0)
        result = {
            "start": t0, "end": end, "seconds": seconds, "cpu": cpu,
            "groups": after[0] - before[0], "calls": after[1] - before[1],
        }  # fmt: skip
        print(json.dumps(result), flush=True)
        sys.stdin.readline()  # "close": the parent has read the server's CPU
    finally:
        app.close()


def _position(app: Any) -> int:
    """The store's last notification id (0: none): the played rounds' events come after it."""
    return int(app.recorder.max_notification_id() or 0)


def _after(app: Any, start: int) -> list[Any]:
    """The notifications after the id ``start``."""
    from benchmarks.__main__ import all_notifications

    return [n for n in all_notifications(app) if n.id > start]


def check_recorded(app: Any, notes: Sequence[Any], start: int, played: int) -> str:
    """That the rounds played were recorded whole (``notes``: the notifications after the id
    ``start``, the played rounds' events): as many rounds started as were ``played``,
    every one verified by a new ``StoreVerifier``, the log whole (``verify_log``: every stored
    event in exactly one leaf with its bytes, the leaves in commit order, the order a reader
    tailing the feed sees) and the notification ids ``start + 1 ..`` without a gap. Raises
    :class:`RecordingLost`; returns what it checked, for the detail line."""
    from eventsourcing.utils import get_topic

    from domain.round import Round
    from replays.verify import StoreVerifier, verify_log

    started = get_topic(Round.Started)
    ids = list(dict.fromkeys(n.originator_id for n in notes if n.topic == started))
    if len(ids) != played:
        raise RecordingLost(f"{played} rounds played, {len(ids)} recorded")
    positions = [n.id for n in notes]
    gaps = [
        (a, b) for a, b in zip([start, *positions], positions, strict=False) if b != a + 1
    ]  # on SQLite and, with no save refused (each table is one thread's), on PostgreSQL too
    if gaps:
        raise RecordingLost(f"gaps in the notification ids after {start}: {gaps[:5]}")
    verifier = StoreVerifier(app)
    failed = [v for v in verifier.verify_many(ids) if not v.ok]
    if failed:
        raise RecordingLost(f"{len(failed)} of {played} rounds failed verification")
    log = verify_log(verifier.log, app=app)
    if not log.ok:
        raise RecordingLost("the log: " + "; ".join(log.problems[:5]))
    return (
        f"checked: {played} rounds started and verified, {len(notes):,} events in the log "
        "without a gap, each in one leaf"
    )


class Backends:
    """The CPU PostgreSQL's backends of the store ``url`` spend from now (:meth:`spent`):
    ``benchmarks.project_cpu.SERVER``, the sum of each backend's ``/proc/PID/schedstat`` (a
    server on this machine). ``None`` on SQLite. With ``waits``, also what they wait on
    meanwhile: ``pg_stat_activity`` sampled every :data:`WAIT_SAMPLE_SECONDS` on a connection
    of its own (:attr:`waits`, samples by state and wait event)."""

    def __init__(self, url: str, *, waits: bool = False) -> None:
        from benchmarks.project_cpu import SERVER

        self.url = url
        self.waits: Counter[str] | None = None
        self._ns: dict[str, Any] = {"url": url}
        self._sampler: threading.Thread | None = None
        self._stop = threading.Event()
        if url.startswith("postgres"):
            if str(ROOT / "tests") not in sys.path:  # as benchmarks.__main__.open_stores
                sys.path.insert(0, str(ROOT / "tests"))
            from pg import libpq_url  # type: ignore[import-not-found]

            self._ns["url"] = libpq_url(url)  # without roundaudit's own parameters
            exec(SERVER, self._ns)  # the benchmark's own snippet
            self._before = self._ns["backends"]()
            if waits:
                self.waits = Counter()
                self._sampler = threading.Thread(target=self._sample, daemon=True)
                self._sampler.start()

    def _sample(self) -> None:
        import psycopg

        assert self.waits is not None
        with psycopg.connect(self._ns["url"], autocommit=True) as conn:
            while not self._stop.is_set():
                for state, kind, event in conn.execute(WAIT_QUERY):
                    self.waits[_wait_key(state, kind, event)] += 1
                time.sleep(WAIT_SAMPLE_SECONDS)

    def spent(self) -> float | None:
        if not self.url.startswith("postgres"):
            return None
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
        seconds: float = self._ns["server"](self._before)
        self._ns["admin"].close()
        return seconds


#: What ``--waits`` samples: every client backend of the store's database but its own.
WAIT_QUERY = (
    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE datname ="
    " current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
)
WAIT_SAMPLE_SECONDS = 0.002


def _wait_key(state: str | None, kind: str | None, event: str | None) -> str:
    """A backend's sample: ``idle`` (no transaction: waiting for its next one), ``in
    transaction`` (open, waiting for its client's next statement), or active and waiting on
    ``kind:event`` (``Lock:relation``: the events table's lock; ``IO:WALSync``: the commit's
    flush), or ``on CPU``.

    >>> _wait_key("active", "Lock", "relation"), _wait_key("idle in transaction", None, None)
    ('Lock:relation', 'in transaction')
    """
    if state == "idle":
        return "idle"
    if state is not None and state.startswith("idle in transaction"):
        return "in transaction"
    return f"{kind}:{event}" if kind else "on CPU"


def wait_shares(waits: Counter[str]) -> str:
    """The samples of backends not idle (in a transaction or running a statement), by what
    they waited on, largest first, as percentages.

    >>> wait_shares(Counter({"idle": 50, "Lock:relation": 1, "in transaction": 3}))
    'in transaction 75 %, Lock:relation 25 % (4 samples)'
    """
    busy = {k: v for k, v in waits.items() if k != "idle"}
    total = sum(busy.values())
    if not total:
        return "no backend busy in the samples"
    shares = sorted(busy.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {100 * v / total:.0f} %" for k, v in shares) + f" ({total} samples)"


# warm, play and cpu_a_round are self-contained: --pair runs them in the other tree too
def warm(app: Any, threads: int, first: int = 0) -> None:
    """A round on each table first (tables ``first .. first + threads - 1``): the tables'
    first shoes, the code paths."""
    from cli.simulate import simulate

    for i in range(first, first + threads):
        simulate(app, variant="european", rounds=1, players=2, table=f"cc-warm-{i}")


def play(app: Any, threads: int, rounds: int, first: int = 0) -> tuple[float, float]:
    """``threads`` tables (``cc-<first>`` on) playing ``rounds`` european rounds each at once,
    one thread a table: the wall seconds and this process's CPU seconds (every thread) they
    took."""
    import threading
    import time

    from cli.simulate import simulate

    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)

    def table(i: int) -> None:
        barrier.wait()
        try:
            simulate(app, variant="european", rounds=rounds, players=2, table=f"cc-{first + i}")
        except BaseException as exc:  # pragma: no cover - reported
            errors.append(exc)

    ts = [threading.Thread(target=table, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    barrier.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in ts:
        t.join()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if errors:
        raise errors[0]
    return seconds, cpu


def cpu_a_round(kind: str, admin_url: str | None, threads: int, rounds: int) -> dict[str, float]:
    """CPU and wall milliseconds a round (:func:`play`, after :func:`warm`) on a fresh store."""
    from benchmarks.__main__ import _app, open_stores

    with open_stores(kind, admin_url) as stores, stores.fresh() as url:
        app = _app(url)
        try:
            warm(app, threads)
            grouper: Any = getattr(app.recorder, "group_commit", None)
            before = (grouper.groups, grouper.calls) if grouper is not None else (0, 0)
            seconds, cpu = play(app, threads, rounds)
            after = (grouper.groups, grouper.calls) if grouper is not None else (0, 0)
        finally:
            app.close()
    total = threads * rounds
    commits = max(after[0] - before[0], 1)
    return {
        "cpu_ms": 1000 * cpu / total,
        "wall_ms": 1000 * seconds / total,
        "rounds_s": total / seconds,
        "saves_a_commit": (after[1] - before[1]) / commits,
    }


def _child(tree: Path, kind: str, admin_url: str | None, args: argparse.Namespace) -> Any:
    code = "\n".join(inspect.getsource(f) for f in (warm, play, cpu_a_round)) + (
        "\nimport json\nprint(json.dumps(cpu_a_round("
        f"{kind!r}, {admin_url!r}, {args.threads}, {args.rounds})))\n"
    )
    head = "from __future__ import annotations\nfrom typing import Any\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", head + code],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def paired(args: argparse.Namespace, kind: str, admin_url: str | None) -> None:
    from benchmarks.record_cpu import alternate, pair_line

    runs = alternate(args.runs, args.pair, lambda tree: _child(tree, kind, admin_url, args))
    load = os.getloadavg()
    print(
        f"{kind}: concurrent record, {args.threads} tables x {args.rounds} rounds, "
        f"{args.runs} runs a tree, alternated; load average {load[0]:.2f} {load[1]:.2f}"
    )
    for figure in ("cpu_ms", "wall_ms", "rounds_s", "saves_a_commit"):
        base = [r[figure] for r in runs["other"]]
        print("  " + pair_line(figure, base, [r[figure] for r in runs["this"]]))


def measured(args: argparse.Namespace) -> None:
    """Without ``--pair``: :func:`run` on fresh stores of each kind, ``--runs`` times each
    count of ``--processes``, the counts' order rotated from one run to the next; each run's
    line, then the medians of each count (with the load average)."""
    from benchmarks.__main__ import open_stores

    counts = [int(p) for p in str(args.processes).split(",") if p]
    runs = args.runs if args.runs is not None else 1
    for kind in [k for k in args.stores.split(",") if k]:
        got: dict[int, list[Report]] = {n: [] for n in counts}
        loads: list[float] = []
        with open_stores(kind) as stores:
            for i in range(runs):
                for n in counts[i % len(counts) :] + counts[: i % len(counts)]:
                    with stores.fresh() as fresh, stores.fresh() as raw_url:
                        url = fresh
                        if args.commit_delay is not None:
                            sep = "&" if "?" in url else "?"
                            url = f"{url}{sep}commit_delay={args.commit_delay}"
                        loads.append(os.getloadavg()[0])
                        report = run(
                            url, raw_url, threads=args.threads, rounds=args.rounds,
                            processes=n, waits=args.waits,
                        )  # fmt: skip
                    got[n].append(report)
                    print(
                        f"{kind} run {i + 1}, {n} process(es): concurrent record "
                        f"{report.rate:.1f} rounds/s, raw {report.raw_rate:.1f}, ratio "
                        f"{report.rate / report.raw_rate:.3f}; {report.detail()}",
                        flush=True,
                    )
                    if report.waits is not None:
                        print(f"  PostgreSQL's backends: {wait_shares(report.waits)}", flush=True)
        if runs > 1 or len(counts) > 1:
            print(
                f"{kind}: medians of {runs} run(s), {args.threads} tables x {args.rounds} rounds,"
                f" load average {statistics.median(loads):.2f} ({min(loads):.2f}-{max(loads):.2f})"
            )
            for n in counts:
                print(f"  {n} process(es): " + summary(got[n]))


def summary(reports: Sequence[Report]) -> str:
    """The medians of some runs' figures: ratio to raw, rounds a second, CPU a round of the
    recording processes and of PostgreSQL's backends, saves a commit (each run's in brackets
    where it matters)."""

    def med(values: Sequence[float], fmt: str = ".2f", each: bool = False) -> str:
        out = format(statistics.median(values), fmt)
        return out + (f" ({', '.join(format(v, fmt) for v in values)})" if each else "")

    line = (
        f"ratio {med([r.rate / r.raw_rate for r in reports], '.3f', each=True)}, "
        f"rounds/s {med([r.rate for r in reports], '.1f', each=True)}, "
        f"raw {med([r.raw_rate for r in reports], '.1f')}, "
        f"CPU ms a round {med([r.cpu_ms for r in reports], each=True)}"
    )
    if all(r.server_cpu_seconds is not None for r in reports):
        line += f", backends' CPU ms a round {med([r.server_ms for r in reports], each=True)}"
    saves = [r.saves_a_commit for r in reports]
    if all(s is not None for s in saves):
        line += f", saves a commit {med([s for s in saves if s is not None])}"
    return line


def main() -> None:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.concurrent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--threads", type=int, default=8, help="tables in all, a thread each")
    ap.add_argument("--rounds", type=int, default=20, help="rounds per table")
    ap.add_argument(
        "--processes",
        default="1",
        help="without --pair: the processes that play the tables (a comma-separated list: each)",
    )
    ap.add_argument("--pair", default=None, help="another tree to alternate with (CPU a round)")
    ap.add_argument("--runs", type=int, default=None, help="runs a tree (3), or a count (1)")
    ap.add_argument("--stores", default="sqlite", help="sqlite,postgres")
    ap.add_argument(
        "--commit-delay",
        type=int,
        default=None,
        help="without --pair: the store URL's commit_delay, microseconds (domain.group_commit)",
    )
    ap.add_argument(
        "--waits",
        action="store_true",
        help="PostgreSQL: also sample what its backends wait on while the tables play",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main()
        return
    if args.pair is not None:
        from benchmarks.__main__ import open_stores

        args.runs = 3 if args.runs is None else args.runs
        for kind in [k for k in args.stores.split(",") if k]:
            if kind == "postgres":
                with open_stores(kind) as stores:
                    paired(args, kind, stores.admin_url)  # type: ignore[attr-defined]
            else:
                paired(args, kind, None)
        return
    measured(args)


if __name__ == "__main__":
    main()

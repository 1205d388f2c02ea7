"""Recording from many tables at once: rounds of ``threads`` tables, each played by its own
thread through one ``RoundAudit`` (commands arriving one at a time from every table, as the
HTTP service receives them), against the raw library re-appending the very events these rounds
stored, one transaction per round, into a fresh store (the ``record`` figure's baseline).

On SQLite the concurrent saves share transactions (``domain.commits.GroupCommitter``); the
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
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Report:
    threads: int
    rounds: int
    events: int
    seconds: float
    raw_seconds: float
    groups: int | None
    calls: int | None
    cpu_seconds: float = 0.0  # this process's CPU while the tables played (all threads)

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
        return (
            f"{self.threads} threads (tables), {self.rounds} european rounds, {self.events:,} "
            f"events in {self.seconds:.2f} s ({self.cpu_ms:.2f} ms of CPU a round); "
            f"raw {self.raw_seconds:.2f} s{shared}"
        )

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_seconds / self.rounds


def run(url: str, raw_url: str, *, threads: int, rounds: int) -> Report:
    """``rounds`` european rounds per table, ``threads`` tables at once, in the store ``url``;
    the raw baseline appends the same events into ``raw_url``."""
    from benchmarks.__main__ import _app, all_notifications, raw_append

    app = _app(url)
    try:
        warm(app, threads)
        grouper: Any = getattr(app.recorder, "group_commit", None)
        before = (grouper.groups, grouper.calls) if grouper is not None else None
        start_events = len(all_notifications(app))
        seconds, cpu = play(app, threads, rounds)
        notes = all_notifications(app)[start_events:]
        total = threads * rounds
        raw_seconds = raw_append(raw_url, notes, total)
        groups = calls = None
        if grouper is not None and before is not None:
            groups, calls = grouper.groups - before[0], grouper.calls - before[1]
        return Report(threads, total, len(notes), seconds, raw_seconds, groups, calls, cpu)
    finally:
        app.close()


# warm, play and cpu_a_round are self-contained: --pair runs them in the other tree too
def warm(app: Any, threads: int) -> None:
    """A round on each table first: the tables' first shoes, the code paths."""
    from cli.simulate import simulate

    for i in range(threads):
        simulate(app, variant="european", rounds=1, players=2, table=f"cc-warm-{i}")


def play(app: Any, threads: int, rounds: int) -> tuple[float, float]:
    """``threads`` tables playing ``rounds`` european rounds each at once, one thread a table:
    the wall seconds and this process's CPU seconds (every thread) they took."""
    import threading
    import time

    from cli.simulate import simulate

    errors: list[BaseException] = []
    barrier = threading.Barrier(threads + 1)

    def table(i: int) -> None:
        barrier.wait()
        try:
            simulate(app, variant="european", rounds=rounds, players=2, table=f"cc-{i}")
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


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.concurrent", description=__doc__)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20, help="rounds per table")
    ap.add_argument("--pair", default=None, help="another tree to alternate with (CPU a round)")
    ap.add_argument("--runs", type=int, default=3, help="with --pair: runs a tree")
    ap.add_argument("--stores", default="sqlite", help="with --pair: sqlite,postgres")
    ap.add_argument(
        "--commit-delay",
        type=int,
        default=None,
        help="without --pair: the store URL's commit_delay, microseconds (domain.group_commit)",
    )
    args = ap.parse_args()
    if args.pair is not None:
        from benchmarks.__main__ import open_stores

        for kind in [k for k in args.stores.split(",") if k]:
            if kind == "postgres":
                with open_stores(kind) as stores:
                    paired(args, kind, stores.admin_url)  # type: ignore[attr-defined]
            else:
                paired(args, kind, None)
        return
    with tempfile.TemporaryDirectory(prefix="roundaudit-cc-") as d:
        delay = "" if args.commit_delay is None else f"?commit_delay={args.commit_delay}"
        report = run(
            f"sqlite:///{Path(d) / 'a.db'}{delay}",
            f"sqlite:///{Path(d) / 'raw.db'}",
            threads=args.threads,
            rounds=args.rounds,
        )
    print(
        f"concurrent record: {report.rate:.1f} rounds/s, raw {report.raw_rate:.1f}, "
        f"ratio {report.rate / report.raw_rate:.3f}; {report.detail()}"
    )


if __name__ == "__main__":
    main()

"""Benchmark: what sealing every transaction at commit costs, on SQLite and PostgreSQL.

Run on demand (not part of the test suite)::

    python -m benchmarks.seal_cost --store sqlite
    python -m benchmarks.seal_cost --store postgres [--url postgresql://...]

Without ``--url`` the PostgreSQL run starts a throwaway cluster from the local server binaries
(``tests/pg.py``; ``fsync=off``, so it measures the work, not the disk). Three recorders, in
the same run, on fresh stores of the same kind, interleaved (A B C A B C ...) so that a load
change on the machine touches them alike:

* ``plain``: the library's own recorder, no hook and no leaf (the baseline: recording as it
  was before seal-at-commit);
* ``hook``: the commit hook with no writer (what the hook itself costs);
* ``sealed``: the hook with the Merkle leaf writer, as every RoundAudit store runs.

Two workloads, each timed on its own: ``deposits``, one wallet deposit per transaction (one
event per transaction: the worst case for a per-transaction cost), and ``rounds``, simulated
european and deluxe rounds through the application's commands (what a table records). Printed:
the median and the fastest time of each recorder and workload, and the paired ratio of
``sealed`` (and ``hook``) to ``plain``: the median over the repetitions of each repetition's
ratio, its runs being back to back. Target (issue 14): recording at most 10 % slower.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eventsourcing.persistence import ApplicationRecorder

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commits import CommitWriter
from domain.persistence import environment_for

TARGET = 1.10


class Plain(RoundAudit):
    """RoundAudit on the library's own recorder: no hook, no leaf (the baseline)."""

    def construct_recorder(self) -> ApplicationRecorder:
        return self.factory.application_recorder()

    def install_commit_writer(self, writer: CommitWriter) -> None:
        pass


class HookOnly(RoundAudit):
    """The commit hook with no writer."""

    def install_commit_writer(self, writer: CommitWriter) -> None:
        pass


KINDS: dict[str, type[RoundAudit]] = {"plain": Plain, "hook": HookOnly, "sealed": RoundAudit}


def deposits(app: RoundAudit, n: int) -> int:
    app.open_wallet("bench")
    for i in range(n):
        app.deposit("bench", "1.00", transaction_id=f"d{i}")
    return n + 1


def rounds(app: RoundAudit, n: int) -> int:
    simulate(app, variant="european", rounds=n, players=3)
    simulate(app, variant="deluxe", rounds=max(1, n // 3), players=3)
    return int(app.recorder.max_notification_id() or 0)


WORKLOADS: dict[str, Callable[[RoundAudit, int], int]] = {"deposits": deposits, "rounds": rounds}


@contextmanager
def _postgres(url: str | None) -> Iterator[Callable[[], Any]]:
    """A factory of fresh PostgreSQL databases (context managers yielding a URL)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from pg import ThrowawayCluster, find_bindir, fresh_database  # type: ignore[import-not-found]

    if url is not None:
        yield lambda: fresh_database(url, prefix="bench_")
        return
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries: pass --url postgresql://...")
    with ThrowawayCluster(bindir) as admin:
        yield lambda: fresh_database(admin, prefix="bench_")


@contextmanager
def _sqlite() -> Iterator[Callable[[], Any]]:
    with tempfile.TemporaryDirectory(prefix="roundaudit-seal-bench-") as d:
        counter = iter(range(10**6))

        @contextmanager
        def fresh() -> Iterator[str]:
            yield "sqlite:///" + quote(str(Path(d) / f"events-{next(counter)}.db"))

        yield fresh


def measure(fresh: Callable[[], Any], kind: str, workload: str, size: int) -> tuple[float, int]:
    with fresh() as url:
        app = KINDS[kind](env=environment_for(url))
        try:
            t0 = time.perf_counter()
            events = WORKLOADS[workload](app, size)
            return time.perf_counter() - t0, events
        finally:
            app.close()


def run(store: str, url: str | None, repeat: int, sizes: dict[str, int]) -> list[str]:
    stores = _sqlite() if store == "sqlite" else _postgres(url)
    out = [f"store: {store}; repetitions: {repeat} (interleaved)"]
    ratios: list[float] = []
    with stores as fresh:
        for workload, size in sizes.items():
            times: dict[str, list[float]] = {k: [] for k in KINDS}
            events = 0
            measure(fresh, "sealed", workload, max(1, size // 10))  # warm up
            for _ in range(repeat):
                for kind in KINDS:
                    seconds, events = measure(fresh, kind, workload, size)
                    times[kind].append(seconds)
            med = {k: statistics.median(v) for k, v in times.items()}
            best = {k: min(v) for k, v in times.items()}
            # each repetition's sealed / plain, run back to back: a load change between
            # repetitions cancels out of the pair
            paired = statistics.median(
                s / p for s, p in zip(times["sealed"], times["plain"], strict=True)
            )
            hooked = statistics.median(
                h / p for h, p in zip(times["hook"], times["plain"], strict=True)
            )
            ratios.append(paired)
            out.append(
                f"{workload} ({events} events): median plain {med['plain']:.3f} s, hook "
                f"{med['hook']:.3f} s, sealed {med['sealed']:.3f} s; fastest plain "
                f"{best['plain']:.3f} s, sealed {best['sealed']:.3f} s "
                f"({best['sealed'] / best['plain']:.3f}); paired ratio hook / plain "
                f"{hooked:.3f}, sealed / plain {paired:.3f}; per event sealed "
                f"{1e6 * med['sealed'] / events:.0f} us, plain {1e6 * med['plain'] / events:.0f} us"
            )
    worst = max(ratios)
    met = "met" if worst <= TARGET else "NOT met"
    out.append(f"worst paired ratio sealed / plain: {worst:.3f} (target <= {TARGET:.2f}: {met})")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--url", help="PostgreSQL: a server to create throwaway databases in")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--deposits", type=int, default=1000, help="transactions of one event")
    ap.add_argument("--rounds", type=int, default=30, help="simulated european rounds")
    args = ap.parse_args(argv)
    lines = run(
        args.store, args.url, args.repeat, {"deposits": args.deposits, "rounds": args.rounds}
    )
    print("\n".join(lines))
    return 0 if lines[-1].endswith(": met)") else 1


if __name__ == "__main__":
    raise SystemExit(main())

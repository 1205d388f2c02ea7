"""Recording from many tables at once: rounds of ``threads`` tables, each played by its own
thread through one ``RoundAudit`` (commands arriving one at a time from every table, as the
HTTP service receives them), against the raw library re-appending the very events these rounds
stored, one transaction per round, into a fresh store (the ``record`` figure's baseline).

On SQLite the concurrent saves share transactions (``domain.commits.GroupCommitter``); the
detail line says how many commits the rounds made (``groups``) for how many saves (``calls``).

    python -m benchmarks.concurrent --threads 8 --rounds 20 [--store sqlite|postgres]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
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
            f"events in {self.seconds:.2f} s; raw {self.raw_seconds:.2f} s{shared}"
        )


def run(url: str, raw_url: str, *, threads: int, rounds: int) -> Report:
    """``rounds`` european rounds per table, ``threads`` tables at once, in the store ``url``;
    the raw baseline appends the same events into ``raw_url``."""
    from benchmarks.__main__ import _app, all_notifications, raw_append
    from cli.simulate import simulate

    app = _app(url)
    try:
        for i in range(threads):  # warm: the tables' first shoes, the code paths
            simulate(app, variant="european", rounds=1, players=2, table=f"cc-warm-{i}")
        grouper: Any = getattr(app.recorder, "group_commit", None)
        before = (grouper.groups, grouper.calls) if grouper is not None else None
        start_events = len(all_notifications(app))
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
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        seconds = time.perf_counter() - t0
        if errors:
            raise errors[0]
        notes = all_notifications(app)[start_events:]
        total = threads * rounds
        raw_seconds = raw_append(raw_url, notes, total)
        groups = calls = None
        if grouper is not None and before is not None:
            groups, calls = grouper.groups - before[0], grouper.calls - before[1]
        return Report(threads, total, len(notes), seconds, raw_seconds, groups, calls)
    finally:
        app.close()


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.concurrent")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20, help="rounds per table")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="roundaudit-cc-") as d:
        report = run(
            f"sqlite:///{Path(d) / 'a.db'}",
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

"""Benchmark: ``verify`` fanned out on Dask against one process, on the same store, same run.

Run on demand (not part of the test suite)::

    python -m benchmarks.dask_verify [--rounds 400] [--workers 1 2] [--store sqlite|postgres]

Builds a store of simulated rounds (european, deluxe, multihand and lucky7 in turn), then times,
interleaved for ``--repeat`` repetitions so that a load change on the machine touches them
alike:

* ``single``: one process, ``StoreVerifier.verify_many`` over every round (the baseline, what
  ``verify --all`` does);
* ``dask N (running)``: the same rounds through :func:`replays.distributed.verify_distributed`
  on an already running ``LocalCluster`` of N worker processes (``verify --scheduler``): the
  fan-out, the workers' own store connections and log reads, the gather;
* ``dask N (+start)``: the same with the cluster started and stopped for the run
  (``verify --workers N``).

Every Dask run's verdicts are checked equal to the single run's before its time counts.
Printed: the median time of each, rounds/s, and the speed-up (single / dask). The speed-up is
bounded by the cores: on a 2-core machine shared with others expect well under 2x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.distributed import verify_distributed
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--workers", type=int, nargs="+", default=[2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    args = ap.parse_args(argv)
    from distributed import LocalCluster

    with _store(args.store) as url:
        t0 = time.perf_counter()
        build(url, args.rounds)
        print(f"store: {args.store}, built in {time.perf_counter() - t0:.1f} s")
        app = RoundAudit(env=environment_for(url, create_table=False))
        try:
            ids = StoreVerifier(app).round_ids()
        finally:
            app.close()
        n = len(ids)
        times: dict[str, list[float]] = {}
        baseline = None
        clusters = {
            w: LocalCluster(
                n_workers=w, threads_per_worker=1, dashboard_address=":0", silence_logs=40
            )
            for w in args.workers
        }
        try:
            for _ in range(args.repeat):
                app = RoundAudit(env=environment_for(url, create_table=False))
                try:
                    t0 = time.perf_counter()
                    verifier = StoreVerifier(app)
                    single = [v.as_json() for v in verifier.verify_many(ids)]
                    times.setdefault("single", []).append(time.perf_counter() - t0)
                finally:
                    app.close()
                if baseline is None:
                    baseline = single
                    print(f"{n} rounds, {sum(v['ok'] for v in single)} passed")
                for w, cluster in clusters.items():
                    policy = verifier.policy
                    t0 = time.perf_counter()
                    got = verify_distributed(
                        url, ids, policy=policy, scheduler=cluster.scheduler_address
                    )
                    out = [v.as_json() for v in got]
                    times.setdefault(f"dask {w} (running)", []).append(time.perf_counter() - t0)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
                    t0 = time.perf_counter()
                    out = [
                        v.as_json() for v in verify_distributed(url, ids, policy=policy, workers=w)
                    ]
                    times.setdefault(f"dask {w} (+start)", []).append(time.perf_counter() - t0)
                    assert out == baseline, "the Dask verdicts differ from the single run's"
        finally:
            for cluster in clusters.values():
                cluster.close()
    base = statistics.median(times["single"])
    print(f"\n{'run':<22} {'median s':>9} {'rounds/s':>9} {'speed-up':>9}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:<22} {m:>9.2f} {n / m:>9.1f} {base / m:>8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

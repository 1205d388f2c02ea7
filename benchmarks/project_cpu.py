"""The CPU a projection catch-up costs: every tracked projection caught up from zero on a store
of the benchmark's rounds, against the library reading and decoding the same notifications,
both timed by ``time.process_time`` (this process's CPU), by the wall clock and, on
PostgreSQL, by the CPU of the server's backends.

This module owns the focused measurement behind the project figure's "What changed" entries
in docs/performance.md. It records the rounds ``python -m benchmarks`` records (160 european
and deluxe rounds, twice) into one SQLite or PostgreSQL store (a throwaway durable cluster, as
the benchmarks start one), then, in a fresh process a run, catches the projections up from zero
``--catch-ups`` times (the tables dropped and made again before each, untimed; a full garbage
collection before each timing, as in the benchmark), each followed by the raw read-and-decode
of their topics (``benchmarks.__main__.raw_read_decode``, the benchmark's baseline).
``--pair DIR`` alternates runs between this tree and ``DIR`` on the same store (each run a
process started in its tree, so each imports its own code; the run itself is the snippet
:data:`RUN`, which needs only what every tree has), and prints the medians side by side::

    mkdir ../base && git archive main | tar -x -C ../base
    python -m benchmarks.project_cpu --stores sqlite,postgres --runs 3 --pair ../base
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

#: One run, in the tree it is started in: ``python -c RUN URL CATCH_UPS`` prints one JSON
#: line, lists of seconds (``cpu``, ``wall``, ``raw_cpu``, ``raw_wall``, ``server``,
#: ``raw_server``) and ``events``. ``server`` is the CPU time PostgreSQL's backends of the
#: store's database spent during the timing (each one's ``/proc/PID/schedstat``: a server
#: on this machine; 0 on SQLite, or where it cannot be read).
RUN = """
import gc, json, sys, time
from benchmarks.__main__ import _app, raw_read_decode
from projections import make
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

url, times = sys.argv[1], int(sys.argv[2])
out = {"cpu": [], "wall": [], "raw_cpu": [], "raw_wall": [], "server": [], "raw_server": [],
       "events": 0}
admin = None
if url.startswith("postgres"):
    import psycopg
    admin = psycopg.connect(url, autocommit=True)

def backends():
    if admin is None:
        return {}
    found = {}
    for (pid,) in admin.execute("SELECT pid FROM pg_stat_activity"
                                " WHERE datname = current_database() AND pid <> pg_backend_pid()"):
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                found[pid] = int(f.read().split()[0])
        except OSError:
            pass
    return found

def server(before):
    return sum(ns - before.get(pid, 0) for pid, ns in backends().items()) / 1e9

app = _app(url)
try:
    for _ in range(times):
        projections = make()
        topics = sorted({t for p in projections for t in p.topics()})
        with ProjectionStore.from_env(dict(app.env)) as store:
            with store.transaction(ddl=True) as tx:
                for p in projections:
                    p.drop(tx)
                    tx.forget(p.name)
            runner = ProjectionRunner(app, store, projections)
            assert runner.position == 0
            gc.collect()
            b0 = backends()
            c0, w0 = time.process_time(), time.perf_counter()
            runner.catch_up()
            out["cpu"].append(time.process_time() - c0)
            out["wall"].append(time.perf_counter() - w0)
            out["server"].append(server(b0))
        gc.collect()
        b0 = backends()
        c0 = time.process_time()
        events, raw_s = raw_read_decode(app, topics)
        out["raw_cpu"].append(time.process_time() - c0)
        out["raw_wall"].append(raw_s)
        out["raw_server"].append(server(b0))
        out["events"] = events
finally:
    app.close()
print(json.dumps(out))
"""

FIGURES = ("cpu", "wall", "raw_cpu", "raw_wall", "server", "raw_server")


def build(url: str) -> int:
    """Record the benchmark's rounds (``record_rounds``, twice) into the store at ``url``."""
    from benchmarks.__main__ import Sizes, _app, record_rounds

    app = _app(url)
    try:
        sizes = Sizes()
        return record_rounds(app, sizes) + record_rounds(app, sizes, suffix="-2")
    finally:
        app.close()


def run(tree: Path, url: str, catch_ups: int) -> dict[str, Any]:
    """One run (:data:`RUN`) in a fresh process started in ``tree``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [sys.executable, "-c", RUN, url, str(catch_ups)]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@contextlib.contextmanager
def store(kind: str, postgres_url: str | None) -> Iterator[str]:
    """A fresh store of ``kind`` holding the benchmark's rounds."""
    from benchmarks.__main__ import open_stores

    with open_stores(kind, postgres_url) as stores, stores.fresh() as url:
        build(url)
        yield url


def _line(label: str, values: Sequence[float]) -> str:
    return f"{label} {statistics.median(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})"


def report(kind: str, runs: dict[str, list[dict[str, Any]]]) -> None:
    """Per tree: the median of each run's median catch-up and raw times, and the ratio of
    the raw read's CPU to the catch-up's (what the target asks of the wall clock)."""
    load = os.getloadavg()
    events = next(iter(runs.values()))[0]["events"]
    print(f"{kind}: {events} events of the projections' topics; load average {load[0]:.2f}")
    for name, results in runs.items():
        medians = {f: [statistics.median(r[f]) for r in results] for f in FIGURES}
        ratio = [raw / cpu for raw, cpu in zip(medians["raw_cpu"], medians["cpu"], strict=True)]
        walls = [raw / w for raw, w in zip(medians["raw_wall"], medians["wall"], strict=True)]
        print(f"  {name}: " + "  ".join(_line(f, medians[f]) for f in FIGURES))
        print(f"  {name}: {_line('cpu ratio (raw / catch-up)', ratio)}")
        print(f"  {name}: {_line('wall ratio (raw / catch-up)', walls)}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.project_cpu", description=__doc__)
    ap.add_argument("--stores", default="sqlite", help="comma-separated: sqlite,postgres")
    ap.add_argument("--postgres-url", default=None, help="an existing server instead")
    ap.add_argument("--catch-ups", type=int, default=3, help="catch-ups a run (one process)")
    ap.add_argument("--runs", type=int, default=3, help="runs a tree")
    ap.add_argument("--pair", default=None, help="another tree to alternate with")
    args = ap.parse_args(argv)
    trees = {"this": Path.cwd()}
    if args.pair is not None:
        trees = {"other": Path(args.pair).resolve(), **trees}
    for kind in [s for s in args.stores.split(",") if s]:
        with store(kind, args.postgres_url) as url:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
            for i in range(args.runs):
                order = list(trees) if i % 2 == 0 else list(reversed(trees))
                for name in order:
                    runs[name].append(run(trees[name], url, args.catch_ups))
            report(kind, runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

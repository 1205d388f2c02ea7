"""The CPU a projection catch-up costs: every tracked projection caught up from zero on a store
of the benchmark's rounds, against the library reading and decoding the same notifications,
both timed by ``time.process_time`` (this process's CPU), by the wall clock and, on
PostgreSQL, by the CPU of the server's backends.

This module owns the focused measurement behind the project figure's "What changed" entries
in docs/performance-history.md. It records the rounds ``python -m benchmarks`` records (160 european
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

#: The start of a run's snippet (after ``url`` is read): ``backends()`` and ``server(before)``,
#: the CPU seconds PostgreSQL's backends of the store's database spent since ``before`` (each
#: one's ``/proc/PID/schedstat``: a server on this machine; 0 on SQLite, or where it cannot
#: be read).
SERVER = """
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
"""

#: The end of a run's snippet: each time, after the timed work, the raw read-and-decode of
#: ``topics`` (all when empty) timed into ``out``; then the JSON line.
RAW_READ = """
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

#: One run, in the tree it is started in: ``python -c RUN URL CATCH_UPS`` prints one JSON
#: line, lists of seconds (``cpu``, ``wall``, ``raw_cpu``, ``raw_wall``, ``server``,
#: ``raw_server``: :data:`SERVER`) and ``events``.
RUN = (
    """
import gc, json, sys, time
from benchmarks.__main__ import _app, raw_read_decode
from projections import make
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

url, times = sys.argv[1], int(sys.argv[2])
out = {"cpu": [], "wall": [], "raw_cpu": [], "raw_wall": [], "server": [], "raw_server": [],
       "events": 0}"""
    + SERVER
    + """
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
            out["server"].append(server(b0))"""
    + RAW_READ
)

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


def run(tree: Path, url: str, catch_ups: int, snippet: str = RUN) -> dict[str, Any]:
    """One run (:data:`RUN`, or another ``snippet`` taking the same arguments and printing
    the same JSON: ``benchmarks.verify_cpu``) in a fresh process started in ``tree``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [sys.executable, "-c", snippet, url, str(catch_ups)]
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


def trees_of(pair: str | None) -> dict[str, Path]:
    """The trees measured: this one (the current folder), and ``pair`` when given."""
    trees = {"this": Path.cwd()}
    if pair is not None:
        trees = {"other": Path(pair).resolve(), **trees}
    return trees


def alternate(
    trees: dict[str, Path], url: str, runs: int, times: int, snippet: str = RUN
) -> dict[str, list[dict[str, Any]]]:
    """``runs`` runs (:func:`run`) a tree, the trees' order reversed from one round of runs
    to the next; each run's result by tree."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for i in range(runs):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        for name in order:
            out[name].append(run(trees[name], url, times, snippet))
    return out


def _line(label: str, values: Sequence[float]) -> str:
    return f"{label} {statistics.median(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})"


def report(
    kind: str,
    runs: dict[str, list[dict[str, Any]]],
    what: str = "catch-up",
    events_of: str = "the projections' topics",
) -> None:
    """Per tree: the median of each run's median ``what`` (the catch-up) and raw times, and
    the ratio of the raw read's CPU to its (what the target asks of the wall clock)."""
    load = os.getloadavg()
    events = next(iter(runs.values()))[0]["events"]
    print(f"{kind}: {events} events of {events_of}; load average {load[0]:.2f}")
    for name, results in runs.items():
        medians = {f: [statistics.median(r[f]) for r in results] for f in FIGURES}
        ratio = [raw / cpu for raw, cpu in zip(medians["raw_cpu"], medians["cpu"], strict=True)]
        walls = [raw / w for raw, w in zip(medians["raw_wall"], medians["wall"], strict=True)]
        print(f"  {name}: " + "  ".join(_line(f, medians[f]) for f in FIGURES))
        print(f"  {name}: {_line(f'cpu ratio (raw / {what})', ratio)}")
        print(f"  {name}: {_line(f'wall ratio (raw / {what})', walls)}")


def parser(module: str, doc: str | None, times: str, what: str) -> argparse.ArgumentParser:
    """The options of a paired CPU measurement: the stores, the runs a tree, ``--pair``, and
    ``times`` (``--catch-ups``) of ``what`` a run."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=doc)
    ap.add_argument("--stores", default="sqlite", help="comma-separated: sqlite,postgres")
    ap.add_argument("--postgres-url", default=None, help="an existing server instead")
    ap.add_argument(times, type=int, default=3, help=f"{what} a run (one process)")
    ap.add_argument("--runs", type=int, default=3, help="runs a tree")
    ap.add_argument("--pair", default=None, help="another tree to alternate with")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser("benchmarks.project_cpu", __doc__, "--catch-ups", "catch-ups").parse_args(argv)
    trees = trees_of(args.pair)
    for kind in [s for s in args.stores.split(",") if s]:
        with store(kind, args.postgres_url) as url:
            report(kind, alternate(trees, url, args.runs, args.catch_ups))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The CPU a recorded round costs: ``cli.simulate`` rounds through ``RoundAudit``, timed by
``time.process_time`` (this process's CPU), which moves far less than rounds/s when other
work loads the machine's cores.

This module owns the focused measurement behind the record figure's "What changed" entries
in docs/performance-history.md: european and deluxe rounds (3 bots, as ``python -m benchmarks``
records them) on a fresh SQLite or PostgreSQL store (a throwaway durable cluster, as the
benchmarks start one), after a few rounds that warm the process up, and the CPU milliseconds
and wall milliseconds a round. ``--pair DIR`` measures two trees in the same minutes: runs
alternate between this tree and ``DIR`` (each run a fresh process started in its tree, so
each imports its own code), and the medians are printed side by side::

    mkdir ../base && git archive main | tar -x -C ../base
    python -m benchmarks.record_cpu --stores sqlite,postgres --runs 3 --pair ../base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

VARIANTS = ("european", "deluxe")
T = TypeVar("T")
WARM_ROUNDS = 3


def measure(url: str, rounds: dict[str, int]) -> dict[str, dict[str, float]]:
    """CPU and wall milliseconds a round of each variant, recorded on the store at ``url``."""
    from benchmarks.__main__ import _app
    from cli.simulate import simulate

    app = _app(url)
    out: dict[str, dict[str, float]] = {}
    try:
        for variant in VARIANTS:
            simulate(app, variant=variant, rounds=WARM_ROUNDS, players=3, table=f"warm-{variant}")
            n = rounds[variant]
            c0, w0 = time.process_time(), time.perf_counter()
            simulate(app, variant=variant, rounds=n, players=3, table=f"cpu-{variant}")
            c1, w1 = time.process_time(), time.perf_counter()
            out[variant] = {"cpu_ms": 1000 * (c1 - c0) / n, "wall_ms": 1000 * (w1 - w0) / n}
    finally:
        app.close()
    return out


def once(kind: str, postgres_url: str | None, rounds: dict[str, int]) -> dict[str, Any]:
    from benchmarks.__main__ import open_stores

    with open_stores(kind, postgres_url) as stores, stores.fresh() as url:
        return measure(url, rounds)


def _child(tree: Path, kind: str, url: str | None, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.record_cpu", "--stores", kind, "--json-line"]
    cmd += ["--european", str(args.european), "--deluxe", str(args.deluxe)]
    if url is not None:
        cmd += ["--postgres-url", url]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def alternate(runs: int, other: str, child: Callable[[Path], T]) -> dict[str, list[T]]:
    """``child(tree)`` run ``runs`` times in this tree and in ``other``, alternated (the
    other first, then this first, ...): the results by ``"this"`` and ``"other"``."""
    trees = {"this": Path.cwd(), "other": Path(other).resolve()}
    out: dict[str, list[T]] = {"this": [], "other": []}
    for i in range(runs):
        for name in ("other", "this") if i % 2 == 0 else ("this", "other"):
            out[name].append(child(trees[name]))
    return out


def paired(args: argparse.Namespace, kind: str, url: str | None) -> None:
    runs = alternate(args.runs, args.pair, lambda tree: _child(tree, kind, url, args))
    load = os.getloadavg()
    print(f"{kind}: {args.runs} runs a tree, alternated; load average {load[0]:.2f} {load[1]:.2f}")
    for variant in VARIANTS:
        for figure in ("cpu_ms", "wall_ms"):
            mine = [r[variant][figure] for r in runs["this"]]
            base = [r[variant][figure] for r in runs["other"]]
            print(f"  {variant:8} {pair_line(figure, base, mine)}")


def pair_line(figure: str, base: list[float], mine: list[float]) -> str:
    """One figure of two trees: the medians, each run in brackets, and their ratio."""
    ratio = statistics.median(mine) / statistics.median(base)
    return (
        f"{figure:7} other {statistics.median(base):7.2f} "
        f"({', '.join(f'{x:.2f}' for x in base)})  this {statistics.median(mine):7.2f} "
        f"({', '.join(f'{x:.2f}' for x in mine)})  ratio {ratio:.3f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.record_cpu", description=__doc__)
    ap.add_argument("--stores", default="sqlite", help="comma-separated: sqlite,postgres")
    ap.add_argument("--postgres-url", default=None, help="an existing server instead")
    ap.add_argument("--european", type=int, default=120, help="european rounds a run")
    ap.add_argument("--deluxe", type=int, default=40, help="deluxe rounds a run")
    ap.add_argument("--runs", type=int, default=3, help="with --pair: runs a tree")
    ap.add_argument("--pair", default=None, help="another tree to alternate with")
    ap.add_argument("--json-line", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    rounds = {"european": args.european, "deluxe": args.deluxe}
    for kind in [s for s in args.stores.split(",") if s]:
        if args.pair is None:
            result = once(kind, args.postgres_url, rounds)
            if args.json_line:
                print(json.dumps(result))
            else:
                for variant, r in result.items():
                    print(f"{kind} {variant}: {r['cpu_ms']:.2f} ms CPU, {r['wall_ms']:.2f} ms wall")
            continue
        if kind == "postgres" and args.postgres_url is None:
            from benchmarks.__main__ import open_stores

            with open_stores(kind) as stores:
                paired(args, kind, stores.admin_url)  # type: ignore[attr-defined]
        else:
            paired(args, kind, args.postgres_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: what a checkpoint costs the signer, now that it stores the tree's interior nodes.

Run on demand (not part of the test suite)::

    python -m benchmarks.checkpoint_nodes [--stores sqlite,postgres] [--rounds 300]
        [--checkpoints 20] [--between 3]

On a fresh store of each kind (PostgreSQL: a throwaway cluster from the local server binaries,
as the tests start one), ``--rounds`` european rounds are recorded and a first checkpoint is
signed (on a store that had none, every node is written then: timed and printed apart); then
``--checkpoints`` times, ``--between`` rounds are recorded (untimed) and one long-lived
``Signer`` (the ``seal --follow`` worker's) signs the next checkpoint, its CPU timed with
``time.process_time`` (the client's CPU: the database server's is not in it). Printed per
store: the leaves a checkpoint adds, the median CPU of a checkpoint, and the node rows' bytes
a checkpoint adds. Run the same module from a tree without stored nodes for the "before".
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Sequence

from benchmarks.__main__ import open_stores
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.merkle import generate_key
from replays.signer import Signer

ORIGIN = "bench.example/log"


def _table_bytes(app: RoundAudit) -> int:
    """Bytes of the stored node rows and head rows (0 on a tree that stores none)."""
    try:
        from replays.nodes import NODES_ID, node_stream
    except ImportError:
        return 0
    from replays.log import MerkleLog

    table = MerkleLog(app).table
    total = sum(len(r.state) for r in table.select_events(NODES_ID))
    for level in range(64):
        block = 0
        while rows := table.select_events(node_stream(level, block)):
            total += sum(len(r.state) for r in rows)
            block += 1
        if block == 0:
            break
    return total


def run(kind: str, rounds: int, checkpoints: int, between: int) -> list[str]:
    with open_stores(kind) as stores, stores.fresh() as url:
        app = RoundAudit(env=environment_for(url))
        try:
            simulate(app, variant="european", rounds=rounds)
            signer = Signer(app, key=generate_key(), origin=ORIGIN)
            gc.collect()
            t0 = time.process_time()
            first = signer.run_once()
            first_cpu = time.process_time() - t0
            assert first.checkpoint is not None, first.problems
            before_bytes = _table_bytes(app)
            cpus, added = [], []
            size = first.checkpoint.size
            for _ in range(checkpoints):
                simulate(app, variant="european", rounds=between)
                gc.collect()
                t0 = time.process_time()
                report = signer.run_once()
                cpus.append(time.process_time() - t0)
                assert report.checkpoint is not None, report.problems
                added.append(report.checkpoint.size - size)
                size = report.checkpoint.size
            grown = _table_bytes(app) - before_bytes
        finally:
            app.close()
    return [
        f"{kind}: first checkpoint of {first.checkpoint.size} leaves {first_cpu * 1e3:.1f} ms CPU; "
        f"then {checkpoints} checkpoints of {statistics.median(added):.0f} new leaves (median): "
        f"{statistics.median(cpus) * 1e3:.2f} ms CPU each (median; min "
        f"{min(cpus) * 1e3:.2f}), node rows {grown / max(1, sum(added)):.0f} bytes a leaf"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--stores", default="sqlite")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--checkpoints", type=int, default=20)
    ap.add_argument("--between", type=int, default=3)
    args = ap.parse_args(argv)
    for kind in args.stores.split(","):
        for line in run(kind, args.rounds, args.checkpoints, args.between):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

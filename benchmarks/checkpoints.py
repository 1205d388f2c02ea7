"""Benchmark: one round verified by a verifier with its state, as the checkpoints accumulate.

Run on demand (not part of ``python -m benchmarks``: making 80,000 signed checkpoints takes
longer than that run's budget allows)::

    python -m benchmarks.checkpoints [--checkpoints 20000,40000,80000] [--stores sqlite]
    python -m benchmarks.checkpoints --stores postgres [--postgres-url postgresql://...]

The signer (``roundaudit seal --follow``) signs a checkpoint about every second while the log
grows: a store a month old holds millions of them. For each count N this makes a store of a
few rounds (a small log) whose checkpoint signer signed its first checkpoint, then N - 1 more
checkpoints signed the signer's way (``replays.note.checkpoint_text``/``sign``, the operator's
Ed25519 key, sizes growing with N up to the log's size), written in batches. Then, with the
operator key pinned, the CPU time (``time.process_time``) of what ``roundaudit verify --state
PATH ROUND_ID`` does for the log's last round: open the verifier with its state, check the log
(``verify_log``), verify the round. ``kept``: a state made beforehand (untimed) and brought up
to date, with a few new checkpoints signed before each run (as the signer does between two
verifications); ``fresh``: no state (the whole log and every checkpoint read and checked). The
growth line gives kept(2N) / kept(N): flat is < 1.10.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from benchmarks.__main__ import open_stores
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog, checkpoint_event, make_policy
from replays.merkle import generate_key
from replays.note import Note, checkpoint_text, operator_key, sign
from replays.signer import Signer
from replays.verify import StoreVerifier, verify_log

ORIGIN = "casino.example/roundaudit/checkpoints-benchmark"
BATCH = 2000
NEW_PER_RUN = 5


def _sign_more(app: RoundAudit, key: Any, count: int) -> None:
    """``count`` more checkpoints, numbered after the stored ones, of growing sizes."""
    log = MerkleLog(app).refresh()
    last = log.latest_checkpoint()
    number = len(log.checkpoints())
    first = last.size if last is not None else 1
    rows = []
    for n in range(count):
        size = first + (log.size - first) * (n + 1) // count
        text = checkpoint_text(ORIGIN, size, log.tree.root(size))
        note = Note(text, (sign(text, ORIGIN, key),))
        number += 1
        rows.append(checkpoint_event(number, note, datetime.now(UTC).isoformat()))
        if len(rows) == BATCH:
            log.table.insert_events(rows)
            rows = []
    if rows:
        log.table.insert_events(rows)


def one_round(url: str, state: Path | None, policy: Any, rid: Any) -> tuple[float, bool]:
    """CPU seconds of ``roundaudit verify [--state PATH] ROUND_ID`` (the application opened
    untimed), and whether the log and the round passed."""
    app = RoundAudit(env=environment_for(url))
    try:
        t0 = time.process_time()
        v = StoreVerifier(app, policy=policy, state=state)
        log = verify_log(v.log, policy)
        verdict = v.verify(rid)
        return time.process_time() - t0, log.ok and verdict.ok
    finally:
        app.close()


def bench(url: str, count: int, folder: Path, repeats: int) -> dict[str, Any]:
    app = RoundAudit(env=environment_for(url))
    key = generate_key()
    try:
        ids = simulate(app, variant="european", rounds=4, players=2, table="cp").round_ids
        report = Signer(app, key=key, origin=ORIGIN).run_once()  # the first, as in production
        assert report.checkpoint is not None
        t0 = time.perf_counter()
        _sign_more(app, key, count - 1)
        made = time.perf_counter() - t0
    finally:
        app.close()
    policy = make_policy(operator_key(ORIGIN, key.public_key()), origin=ORIGIN)
    rid = UUID(ids[-1])
    state = folder / f"state-{count}.sqlite"
    one_round(url, state, policy, rid)  # the state made, untimed
    kept, fresh = [], []
    for _ in range(repeats):
        app = RoundAudit(env=environment_for(url))
        try:
            _sign_more(app, key, NEW_PER_RUN)
        finally:
            app.close()
        cpu, ok = one_round(url, state, policy, rid)
        assert ok, "the benchmark's store does not verify"
        kept.append(cpu)
    for _ in range(max(1, repeats // 2)):
        cpu, ok = one_round(url, None, policy, rid)
        assert ok
        fresh.append(cpu)
    return {
        "checkpoints": count,
        "signed_s": round(made, 2),
        "kept_ms": 1e3 * statistics.median(kept),
        "fresh_ms": 1e3 * statistics.median(fresh),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.checkpoints", description=__doc__)
    ap.add_argument("--checkpoints", default="20000,40000,80000", help="comma-separated")
    ap.add_argument("--stores", default="sqlite", help="comma-separated: sqlite, postgres")
    ap.add_argument("--postgres-url", default=None, help="an existing server instead")
    ap.add_argument("--repeats", type=int, default=5, help="timed kept runs per count")
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.checkpoints.split(",") if c.strip()]
    for kind in [k.strip() for k in args.stores.split(",") if k.strip()]:
        with (
            open_stores(kind, args.postgres_url) as stores,
            tempfile.TemporaryDirectory(prefix="roundaudit-cp-") as d,
        ):
            rows = []
            for count in counts:
                with stores.fresh() as url:
                    rows.append(bench(url, count, Path(d), args.repeats))
                r = rows[-1]
                print(
                    f"{kind} {r['checkpoints']:>8} checkpoints: one round with state "
                    f"{r['kept_ms']:9.1f} ms CPU, without state {r['fresh_ms']:9.1f} ms CPU "
                    f"(signed in {r['signed_s']} s)",
                    flush=True,
                )
            for a, b in itertools.pairwise(rows):
                kept, fresh = b["kept_ms"] / a["kept_ms"], b["fresh_ms"] / a["fresh_ms"]
                print(
                    f"{kind} growth {a['checkpoints']} -> {b['checkpoints']}: with state "
                    f"x{kept:.3f}, without x{fresh:.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

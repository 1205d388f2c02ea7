"""Benchmark: a fresh verifier's read of the whole Merkle log (its construction), CPU a leaf.

Run on demand (not part of ``python -m benchmarks``)::

    python -m benchmarks.log_read build --rounds 800 --out DIR [--url postgresql://...]
    python -m benchmarks.log_read read --store DIR [--url postgresql://...] [--runs 5]
        [--verify 20] [--profile FILE]

``build`` records ``--rounds`` rounds into a SQLite store in ``DIR`` (or the PostgreSQL
database ``--url``): three quarters european, a quarter deluxe, three players, the mix of
``python -m benchmarks``. ``read`` makes a new :class:`~replays.log.MerkleLog` of the store and
reads it whole (``refresh``: every leaf row read, parsed, indexed and hashed into the tree),
``--runs`` times, each with the leaf parser's cache emptied first (as in a new process), and
gives the median CPU time (``time.process_time``) of a read, and a leaf and an entry. With
``--verify N``: also the median CPU of a fresh ``StoreVerifier`` (no state: the same read)
verifying the store's first ``N`` rounds, the ``flat verify (fresh)`` figure's work.
``--warm``: the parser's caches are not emptied (after one read untimed): a verifier made in a
process that parsed the leaves before, as ``python -m benchmarks``' ``flat verify (fresh)``
does (the parser keeps 4,096 leaves). ``--profile FILE``: a cProfile of one more read. The
output is one JSON line.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any


def _url(store: Path | None, url: str | None) -> str:
    if url:
        return url
    assert store is not None, "--store DIR or --url"
    return f"sqlite:///{store}/events.db"


def _app(url: str) -> Any:
    from domain.application import RoundAudit
    from domain.persistence import environment_for

    return RoundAudit(env=environment_for(url))


def build(rounds: int, store: Path | None, url: str | None) -> None:
    from cli.simulate import simulate

    if store is not None:
        store.mkdir(parents=True, exist_ok=True)
    app = _app(_url(store, url))
    try:
        european = rounds * 3 // 4
        for at in range(0, european, 100):
            simulate(app, variant="european", rounds=min(100, european - at), players=3,
                     table=f"EU{at}")  # fmt: skip
        for at in range(0, rounds - european, 100):
            simulate(app, variant="deluxe", rounds=min(100, rounds - european - at), players=3,
                     table=f"DLX{at}")  # fmt: skip
    finally:
        app.close()


def _fresh_parser(warm: bool = False) -> None:
    from domain import commit_leaf

    if warm:
        gc.collect()
        return

    # what a new process has parsed: nothing (the leaves, and the originator ids built by
    # the parser, where it keeps them)
    commit_leaf.forget_parsed()
    gc.collect()


def read(
    store: Path | None,
    url: str | None,
    runs: int,
    verify: int,
    profile: str | None,
    warm: bool = False,
) -> None:
    from replays.log import MerkleLog
    from replays.verify import StoreVerifier

    app = _app(_url(store, url))
    try:
        cpu, leaves, entries = [], 0, 0
        if warm:
            MerkleLog(app).refresh()
        for _ in range(runs):
            _fresh_parser(warm)
            c0 = time.process_time()
            log = MerkleLog(app).refresh()
            cpu.append(time.process_time() - c0)
            leaves = log.size
            entries = sum(len(v) for v in log._where.values())
        out: dict[str, Any] = {
            "leaves": leaves,
            "entries (stream versions)": entries,
            "read_ms": [round(1e3 * c, 2) for c in cpu],
            "read_ms_median": round(1e3 * statistics.median(cpu), 2),
            "us_a_leaf": round(1e6 * statistics.median(cpu) / max(1, leaves), 2),
            "us_an_entry": round(1e6 * statistics.median(cpu) / max(1, entries), 3),
        }
        if verify:
            ids = list(StoreVerifier(app).round_ids())[:verify]
            vcpu = []
            for _ in range(runs):
                _fresh_parser(warm)
                c0 = time.process_time()
                verifier = StoreVerifier(app)
                verdicts = list(verifier.verify_many(ids))  # a generator: verified as listed
                vcpu.append(time.process_time() - c0)
                assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok][:1]
            out["verify_rounds"] = len(ids)
            out["verify_ms"] = [round(1e3 * c, 1) for c in vcpu]
            out["verify_ms_median"] = round(1e3 * statistics.median(vcpu), 1)
        if profile:
            _fresh_parser(warm)
            prof = cProfile.Profile()
            prof.enable()
            MerkleLog(app).refresh()
            prof.disable()
            prof.dump_stats(profile)
        print(json.dumps(out))
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.log_read", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="record the rounds")
    b.add_argument("--rounds", type=int, default=800)
    b.add_argument("--out", type=Path)
    b.add_argument("--url")
    r = sub.add_parser("read", help="read the whole log, fresh, --runs times")
    r.add_argument("--store", type=Path)
    r.add_argument("--url")
    r.add_argument("--runs", type=int, default=5)
    r.add_argument("--verify", type=int, default=0, help="also verify the first N rounds")
    r.add_argument("--profile", help="write a cProfile of one more read to this file")
    r.add_argument("--warm", action="store_true", help="keep what the parser has parsed")
    args = parser.parse_args()
    if args.command == "build":
        build(args.rounds, args.out, args.url)
    else:
        read(args.store, args.url, args.runs, args.verify, args.profile, args.warm)


if __name__ == "__main__":
    main()

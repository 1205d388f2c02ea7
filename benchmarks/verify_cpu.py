"""The CPU a verification of every round costs: ``StoreVerifier`` + ``round_ids`` +
``verify_many`` over a store of the benchmark's rounds (what the ``verify`` figure times),
against the library reading and decoding every stored event, both timed by
``time.process_time`` (this process's CPU) and by the wall clock.

This module owns the focused measurement behind the verify figure's "What changed" entries in
docs/performance-history.md, made as ``benchmarks.project_cpu`` makes its own (one store of the
benchmark's rounds, a fresh process a run, ``--pair DIR`` to alternate with another tree), a run
being :data:`RUN`: every round verified ``--verifications`` times, a fresh verifier each
(``benchmarks.__main__.verify_rounds``, after a full garbage collection; every round must
pass), each followed by the raw read-and-decode (``raw_read_decode``, the benchmark's
baseline)::

    mkdir ../base && git archive main | tar -x -C ../base
    python -m benchmarks.verify_cpu --stores sqlite,postgres --runs 3 --pair ../base
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.project_cpu import RAW_READ, SERVER, alternate, parser, report, store, trees_of

#: One run, in the tree it is started in: ``python -c RUN URL VERIFICATIONS`` prints one JSON
#: line, lists of seconds (``cpu``, ``wall``, ``raw_cpu``, ``raw_wall``, ``server``,
#: ``raw_server``: ``project_cpu.SERVER``), ``events``, and the rounds verified and failed.
RUN = (
    """
import gc, json, sys, time
from benchmarks.__main__ import _app, raw_read_decode, verify_rounds

url, times, topics = sys.argv[1], int(sys.argv[2]), ()
out = {"cpu": [], "wall": [], "raw_cpu": [], "raw_wall": [], "server": [], "raw_server": [],
       "events": 0, "rounds": 0, "failed": 0}"""
    + SERVER
    + """
app = _app(url)
try:
    for _ in range(times):
        gc.collect()
        b0 = backends()
        c0 = time.process_time()
        rounds, wall, failed = verify_rounds(app)
        out["cpu"].append(time.process_time() - c0)
        out["wall"].append(wall)
        out["server"].append(server(b0))
        out["rounds"], out["failed"] = rounds, out["failed"] + failed"""
    + RAW_READ
)


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser("benchmarks.verify_cpu", __doc__, "--verifications", "verifications")
    args = ap.parse_args(argv)
    for kind in [s for s in args.stores.split(",") if s]:
        with store(kind, args.postgres_url) as url:
            runs = alternate(trees_of(args.pair), url, args.runs, args.verifications, RUN)
            for name, results in runs.items():
                if any(r["failed"] or not r["rounds"] for r in results):
                    raise SystemExit(f"{name}: rounds failed verification")
            report(kind, runs, "verification", "the store")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

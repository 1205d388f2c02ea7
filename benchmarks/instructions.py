"""The instructions a verification or a recorded round costs, counted by valgrind's callgrind:
the deterministic measure behind the "What changed" entries of docs/performance-history.md
since session 18, when the host's noise (the same tree's CPU for one verification moving by
30-50 % between runs minutes apart) hid what `benchmarks.verify_cpu` and
`benchmarks.record_cpu` measure by ``time.process_time``.

This module owns that count. Each tree (this one, and ``--pair DIR``) is run in a fresh
process of its own under ``valgrind --tool=callgrind --collect-atstart=no
--toggle-collect=functools_reduce`` with ``PYTHONHASHSEED=0``: the snippet warms the process
up (one untimed pass), then runs the counted work inside :func:`functools.reduce`, the one C
function callgrind is told to count (the product's own code never calls ``reduce``; the
import machinery and the warm-up are outside it). What is counted:

* ``verify``: one verification of every round of a store of the benchmark's rounds
  (``benchmarks.project_cpu.store``: the same rounds ``python -m benchmarks`` records, the same
  store for both trees), as ``benchmarks.__main__.verify_rounds`` does it (a fresh
  ``StoreVerifier``; every round must pass): instructions a verified round;
* ``project``: every projection caught up from zero on a store of the benchmark's rounds
  (``benchmarks.project_cpu.store``, the same store for both trees), as
  ``benchmarks.__main__.bench_projections`` does it: one catch-up untimed, the tables reset
  outside the count, then one counted: instructions an event of the projections' topics (a
  SQLite catch-up runs on its caller's thread; on PostgreSQL the server's work is not counted);
* ``record``: ``--rounds`` european and deluxe rounds (3 bots, as the benchmark records them)
  through ``RoundAudit`` on a fresh SQLite store, after ``record_cpu.WARM_ROUNDS`` of each,
  with reproducible shoes (the same cards for every tree and run: the benchmark's own rounds
  draw their seeds, so their rounds differ run to run): instructions a recorded round;
* ``boundless``: one verification of one boundless round of ``--players`` players, recorded
  once as ``benchmarks.boundless.run`` records it (the same store for both trees) and
  checkpointed by a signer, each tree's process verifying it once untimed, then, with the
  parsed leaves and named ids forgotten as the benchmark's verifier starts (a fresh
  ``StoreVerifier``, every check; the round must pass), once counted: instructions a round
  and a player;
* ``deposit``: wallet deposits through the web service's application (``api.main.create_app``,
  its front and the single commands' own path, ``api.hotpath``) called in-process as an ASGI
  application on uvloop, without uvicorn or a socket: ``--wallets`` test wallets, each
  deposit ``POST /wallets/h{c}/deposits`` (as ``benchmarks.http_load`` sends them) with its
  own transaction id and the same key, one after the other (each its own commit), every
  answer a 200. The warm-up (``--warm``, by default 50 deposits a wallet) takes every wallet
  to the steady state of the HTTP benchmark, where each answer lists its wallet's latest 50
  movements (about 12 kB, compressed in its idempotency record). A deposit's work runs in the
  commands' worker thread, which callgrind's ``--toggle-collect`` does not follow (it toggles
  only the thread that enters the function), so this count takes the **difference** of two
  whole processes, one of ``--deposits`` and one of twice as many (each after the same
  warm-up, on a fresh store): instructions a deposit.

Instructions are not time (a cache miss or a system call costs none, an ``fsync`` none), but
they repeat: the same tree counted twice gave 1.0006 for a verification of 320 rounds,
1.0026 for 4 european rounds (the recording's group commit runs threads whose interleaving
varies) and 0.9999 for a deposit (300 - 150), so a change of a per cent shows in one run::

    mkdir ../base && git archive main | tar -x -C ../base
    python -m benchmarks.instructions verify --stores sqlite,postgres --pair ../base
    python -m benchmarks.instructions project --pair ../base
    python -m benchmarks.instructions record --pair ../base --out /tmp/cg   # keep the outputs
    python -m benchmarks.instructions boundless --players 2000 --pair ../base
    python -m benchmarks.instructions deposit --deposits 200 --pair ../base   # 4 processes
    callgrind_annotate /tmp/cg/record-this-european.out | head -40       # where they go

Needs ``valgrind`` on the PATH (Debian: ``apt-get install valgrind``); it is not a project
dependency and nothing in the tests' default run uses it. Under callgrind Python runs about 50
times slower: a verification of the benchmark's 320 rounds takes a few minutes a tree.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: The C function whose calls callgrind counts (``--toggle-collect``): the snippets run only
#: the counted work inside :func:`functools.reduce`.
COUNTED = "functools_reduce"

#: ``python -c VERIFY URL``: one warm verification, then one counted; prints the rounds.
VERIFY = """
import functools, gc, sys
from benchmarks.__main__ import _app, verify_rounds

app = _app(sys.argv[1])
try:
    rounds, _, failed = verify_rounds(app)
    assert rounds and not failed, (rounds, failed)
    gc.collect()

    def counted(_a, _b):
        done, _, failed = verify_rounds(app)
        assert done == rounds and not failed, (done, failed)

    functools.reduce(counted, [0, 1])
finally:
    app.close()
print(rounds)
"""

#: ``python -c RECORD URL VARIANT ROUNDS``: warm rounds of the variant, then ``ROUNDS``
#: counted, each through ``cli.simulate`` (3 bots) on the store at ``URL``, with reproducible
#: shoes (``cli.simulate``: each shoe's seed derived from the label, so both trees deal the same
#: cards and their bots play the same rounds).
RECORD = """
import functools, gc, sys
from benchmarks.__main__ import _app
from benchmarks.record_cpu import WARM_ROUNDS
from cli.simulate import simulate

url, variant, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
app = _app(url)
try:
    same = {"players": 3, "reproducible_shoes": True}
    simulate(app, variant=variant, rounds=WARM_ROUNDS, table="warm", seed_label="warm", **same)
    gc.collect()

    def counted(_a, _b):
        simulate(app, variant=variant, rounds=rounds, table="counted", seed_label="counted", **same)

    functools.reduce(counted, [0, 1])
finally:
    app.close()
print(rounds)
"""

#: ``python -c PROJECT URL``: every projection caught up from zero once untimed, reset
#: (``ProjectionRunner.reset``, outside the count), then caught up from zero once counted, as
#: ``benchmarks.__main__.bench_projections`` times it; prints the events of their topics.
PROJECT = """
import functools, gc, sys
from benchmarks.__main__ import _app, raw_read_decode
from projections import make
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

app = _app(sys.argv[1])
try:
    projections = make()
    topics = sorted({t for p in projections for t in p.topics()})
    with ProjectionStore.from_env(dict(app.env)) as store:
        runner = ProjectionRunner(app, store, projections)
        if runner.position:
            runner.reset()
        runner.catch_up()
        runner.reset()
        gc.collect()

        def counted(_a, _b):
            runner.catch_up()

        functools.reduce(counted, [0, 1])
    events, _ = raw_read_decode(app, topics)
finally:
    app.close()
print(events)
"""

#: ``python -c BOUNDLESS URL ROUND VKEY ORIGIN PLAYERS``: the boundless round ``ROUND``
#: verified once untimed, then once counted by a fresh ``StoreVerifier`` trusting the operator
#: key ``VKEY`` (a note verifier key) of the log ``ORIGIN``, with no leaf parsed and no id named
#: before it (``benchmarks.boundless.run``'s verifier starts so); prints the players.
BOUNDLESS = """
import functools, gc, sys
from uuid import UUID
from benchmarks.__main__ import _app
from domain.commit_leaf import forget_parsed
from domain.ids import forget_named
from replays.log import make_policy
from replays.note import parse_vkey
from replays.verify import StoreVerifier

url, rid, vkey, origin, players = sys.argv[1:6]
rid = UUID(rid)
app = _app(url)
policy = make_policy(parse_vkey(vkey), origin=origin)
try:
    verdict = StoreVerifier(app, policy=policy).verify(rid)
    assert verdict.ok, verdict
    del verdict
    forget_parsed()
    forget_named()
    gc.collect()

    def counted(_a, _b):
        verdict = StoreVerifier(app, policy=policy).verify(rid)
        assert verdict.ok, verdict

    functools.reduce(counted, [0, 1])
finally:
    app.close()
print(players)
"""

#: ``python -c DEPOSIT URL DEPOSITS WARM WALLETS``: the service's application on the store at
#: ``URL``, started in-process (its lifespan), ``WALLETS`` wallets opened, ``WARM`` deposits,
#: then ``DEPOSITS`` more, each checked (a 200 naming the wallet's player; its 12 kB not parsed:
#: the snippet's own work is in the count too); prints ``DEPOSITS``.
#: The whole process is counted (see the module docstring: the difference of two sizes).
DEPOSIT = """
import asyncio, gc, os, sys
import orjson, uvloop
from api.main import create_app
from api.settings import Settings

url, deposits, warm, WALLETS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
TOKEN = "rak_0123456789abcdef_" + "A" * 43  # the same key for both trees
HOST = b"127.0.0.1:8000"


def scope_of(path, length):
    headers = [
        (b"host", HOST),
        (b"authorization", b"Bearer " + TOKEN.encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(length).encode()),
    ]
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1", "method": "POST", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {},
    }


async def post(app, path, body):
    data = orjson.dumps(body)
    sent = []

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        sent.append(message)

    await app(scope_of(path, len(data)), receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def main():
    settings = Settings(database_url=url, admin_key=TOKEN, allowed_hosts=("127.0.0.1",))
    app = create_app(settings)
    started, events = asyncio.Queue(), asyncio.Queue()
    await events.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    asyncio.ensure_future(app(scope, events.get, started.put))
    message = await started.get()
    assert message["type"] == "lifespan.startup.complete", message
    for c in range(WALLETS):
        status, body = await post(app, "/wallets", {"player_id": f"h{c}", "account_type": "test"})
        assert status == 201, body

    async def deposits_of(prefix, n):
        for i in range(n):
            c = i % WALLETS
            body = {"amount": "1.00", "transaction_id": f"{prefix}-{i}"}
            status, body = await post(app, f"/wallets/h{c}/deposits", body)
            player = b'"player_id":"h%d"' % c  # found, not parsed: the driver's work is counted
            assert status == 200 and player in body, (status, body)

    await deposits_of("warm", warm)
    gc.collect()
    await deposits_of("counted", deposits)
    print(deposits, flush=True)
    os._exit(0)  # no shutdown: the same for both sizes, and not a deposit's


uvloop.run(main())
"""

_SUMMARY = re.compile(rb"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def instructions_of(callgrind_out: bytes) -> int:
    """The instructions a callgrind output file counted (its ``summary:`` line, or
    ``totals:`` where a version writes only that)."""
    found = _SUMMARY.search(callgrind_out)
    if found is None:
        raise ValueError("no 'summary:' or 'totals:' line in the callgrind output")
    return int(found.group(1))


def valgrind() -> str:
    """The path of ``valgrind``, or a clear refusal naming what is missing."""
    path = shutil.which("valgrind")
    if path is None:
        raise SystemExit(
            "benchmarks.instructions needs valgrind on the PATH (Debian: apt-get install valgrind)"
        )
    return path


def count(tree: Path, snippet: str, args: Sequence[str], out: Path) -> tuple[int, int]:
    """Run ``snippet`` with ``args`` in a fresh process started in ``tree`` under callgrind:
    the instructions counted and the number the snippet printed (rounds)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONHASHSEED="0", PYTHONPATH=str(tree))
    cmd = [
        valgrind(), "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={COUNTED}",
        f"--callgrind-out-file={out}", sys.executable, "-c", snippet, *args,
    ]  # fmt: skip
    done = subprocess.run(cmd, check=False, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the counted run failed:\n{done.stderr[-4000:]}")
    return instructions_of(out.read_bytes()), int(done.stdout.strip().splitlines()[-1])


def count_all(tree: Path, snippet: str, args: Sequence[str], out: Path) -> int:
    """Run ``snippet`` with ``args`` in a fresh process started in ``tree`` under callgrind,
    every thread counted from the start: the instructions. OpenBLAS (numpy's, which
    ``domain.rtp`` imports) runs one thread: its idle threads spin-wait by the clock, which
    under callgrind made about a tenth of a deposit's count, varying with the run's length."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONHASHSEED="0", PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    cmd = [
        valgrind(), "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
        snippet, *args,
    ]  # fmt: skip
    done = subprocess.run(cmd, check=False, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the counted run failed:\n{done.stderr[-4000:]}")
    return instructions_of(out.read_bytes())


def report(label: str, per_round: dict[str, float], each: str = "a round", unit: str = "M") -> None:
    """One line: each tree's instructions ``each`` (in millions, or thousands with ``unit``
    ``"k"``) and, with two, this tree's against the other's."""
    scale, digits = (1e6, 3) if unit == "M" else (1e3, 2)
    parts = [f"{name} {value / scale:.{digits}f} {unit}" for name, value in per_round.items()]
    line = f"{label}: instructions {each} " + "  ".join(parts)
    if "other" in per_round:
        line += f"  ratio this/other {per_round['this'] / per_round['other']:.4f}"
    print(line, flush=True)


def _on_the_benchmark_store(
    args: argparse.Namespace, out: Path, what: str, snippet: str, things: str, each: str, unit: str
) -> None:
    """``snippet`` counted for each tree on one store of the benchmark's rounds a kind of
    store (``benchmarks.project_cpu.store``): instructions each of the ``things`` it prints."""
    from benchmarks.project_cpu import store, trees_of

    for kind in [s for s in args.stores.split(",") if s]:
        with store(kind, args.postgres_url) as url:
            per_unit: dict[str, float] = {}
            for name, tree in trees_of(args.pair).items():
                total, n = count(tree, snippet, [url], out / f"{what}-{name}-{kind}.out")
                per_unit[name] = total / n
            report(f"{kind} {what} ({n} {things})", per_unit, each, unit)


def verify(args: argparse.Namespace, out: Path) -> None:
    _on_the_benchmark_store(args, out, "verify", VERIFY, "rounds", "a round", "M")


def project(args: argparse.Namespace, out: Path) -> None:
    _on_the_benchmark_store(args, out, "project", PROJECT, "events", "an event", "k")


def record(args: argparse.Namespace, out: Path) -> None:
    from benchmarks.__main__ import open_stores
    from benchmarks.project_cpu import trees_of

    for variant in [v for v in args.variants.split(",") if v]:
        per_round: dict[str, float] = {}
        for name, tree in trees_of(args.pair).items():
            with open_stores("sqlite", None) as stores, stores.fresh() as url:
                target = out / f"record-{name}-{variant}.out"
                total, rounds = count(tree, RECORD, [url, variant, str(args.rounds)], target)
            per_round[name] = total / rounds
        report(f"sqlite record {variant} ({args.rounds} rounds)", per_round)


#: The origin of the log the ``boundless`` count's store is checkpointed into.
BOUNDLESS_ORIGIN = "roundaudit.invalid/benchmark"


def boundless_store(url: str, kind: str, players: int) -> tuple[str, str]:
    """Record one boundless round of ``players`` into the ``kind`` store at ``url`` as
    ``benchmarks.boundless.run`` records it, and checkpoint it with a new signing key: the
    round's id and the operator's verifier key (``NoteKey.vkey``)."""
    from benchmarks.__main__ import _app
    from benchmarks.boundless import run
    from replays.merkle import generate_key
    from replays.note import operator_key
    from replays.signer import Signer
    from replays.verify import StoreVerifier

    run(players, kind, url=url, say=lambda _line: None)
    app = _app(url)
    try:
        key = generate_key()
        Signer(app, key=key, origin=BOUNDLESS_ORIGIN).run_once()
        (rid,) = StoreVerifier(app).round_ids()
    finally:
        app.close()
    return str(rid), operator_key(BOUNDLESS_ORIGIN, key.public_key()).vkey()


def boundless(args: argparse.Namespace, out: Path) -> None:
    from benchmarks.__main__ import open_stores
    from benchmarks.project_cpu import trees_of

    for kind in [s for s in args.stores.split(",") if s]:
        with open_stores(kind, args.postgres_url) as stores, stores.fresh() as url:
            rid, vkey = boundless_store(url, kind, args.players)
            per_round: dict[str, float] = {}
            for name, tree in trees_of(args.pair).items():
                target = out / f"boundless-{name}-{kind}.out"
                snippet_args = [url, rid, vkey, BOUNDLESS_ORIGIN, str(args.players)]
                total, players = count(tree, BOUNDLESS, snippet_args, target)
                per_round[name] = total
            report(f"{kind} boundless verify ({players} players)", per_round)
            parts = [f"{name} {value / players / 1e3:.1f} k" for name, value in per_round.items()]
            print("  instructions a player " + "  ".join(parts), flush=True)


def deposit(args: argparse.Namespace, out: Path) -> None:
    from benchmarks.__main__ import open_stores
    from benchmarks.project_cpu import trees_of

    small = args.deposits
    warm = args.warm if args.warm is not None else 50 * args.wallets
    for kind in [s for s in args.stores.split(",") if s]:
        with open_stores(kind, args.postgres_url) as stores:
            per_deposit: dict[str, float] = {}
            for name, tree in trees_of(args.pair).items():
                counted = {}
                for n in (small, 2 * small):
                    with stores.fresh() as url:
                        target = out / f"deposit-{name}-{kind}-{n}.out"
                        sizes = [url, str(n), str(warm), str(args.wallets)]
                        counted[n] = count_all(tree, DEPOSIT, sizes, target)
                per_deposit[name] = (counted[2 * small] - counted[small]) / small
            parts = [f"{name} {value / 1e6:.4f} M" for name, value in per_deposit.items()]
            line = f"{kind} deposit ({2 * small} - {small} deposits, {args.wallets} wallets, "
            line += f"{warm} before): instructions a deposit "
            line += "  ".join(parts)
            if "other" in per_deposit:
                line += f"  ratio this/other {per_deposit['this'] / per_deposit['other']:.4f}"
            print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__)
    ap.add_argument(
        "what",
        choices=("verify", "project", "record", "boundless", "deposit"),
        help="what to count",
    )
    ap.add_argument("--pair", default=None, help="another tree to count beside this one")
    ap.add_argument(
        "--stores",
        default="sqlite",
        help="verify, project, boundless, deposit: comma-separated sqlite,postgres",
    )
    ap.add_argument(
        "--postgres-url",
        default=None,
        help="verify, project, boundless, deposit: an existing server",
    )
    ap.add_argument("--players", type=int, default=2000, help="boundless: the round's players")
    ap.add_argument("--variants", default="european,deluxe", help="record: comma-separated")
    ap.add_argument("--rounds", type=int, default=10, help="record: counted rounds a variant")
    ap.add_argument(
        "--deposits", type=int, default=200, help="deposit: the smaller size (and twice it)"
    )
    ap.add_argument("--wallets", type=int, default=10, help="deposit: the wallets deposited to")
    ap.add_argument(
        "--warm", type=int, default=None, help="deposit: deposits before the count (50 a wallet)"
    )
    ap.add_argument("--out", default=None, help="keep callgrind's output files in this folder")
    args = ap.parse_args(argv)
    valgrind()
    with tempfile.TemporaryDirectory(prefix="roundaudit-cg-") as scratch:
        out = Path(args.out) if args.out else Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        run = {
            "verify": verify,
            "project": project,
            "record": record,
            "boundless": boundless,
            "deposit": deposit,
        }
        run[args.what](args, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

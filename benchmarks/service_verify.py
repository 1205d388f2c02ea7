"""Benchmark: a web-service process's first round verification, with and without a verifier state.

Run on demand (not part of ``python -m benchmarks``)::

    python -m benchmarks.service_verify build --rounds 500 --out DIR [--url postgresql://...]
    python -m benchmarks.service_verify first --store DIR [--state] [--url postgresql://...]

``build`` makes a SQLite store in ``DIR`` (or fills the PostgreSQL database ``--url``) of
``--rounds`` european rounds (two players), saves a verifier state of its log
(``DIR/state.sqlite``, as a service process with ``ROUNDAUDIT_VERIFIER_STATE`` does), then
records :data:`TAIL` more rounds: the state a service process restarted after a while finds.
``first`` starts one service process on the store (``api.main.create_app``, in this process,
through Starlette's test client; on a copy of a SQLite store, on a PostgreSQL store itself,
which each start grows by its admin key's leaf) and gives the CPU time (``time.process_time``,
every thread of the process) and the wall time of its first ``GET /rounds/{id}/verification``
of the store's last round: what the process does on its first audit read (its Merkle log made,
then the round verified). With ``--state``, on a copy of the state saved by ``build`` (each run
starts from the same state); without, no state: the whole log read and hashed, what every
service process did before it kept a state. Flat cost: the figure with ``--state`` on a store
2x and 4x as large stays within 10 %.
The output is one JSON line: rounds, leaves, cpu and wall seconds, the verdict.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

TAIL = 5


def _url(store: Path, url: str | None) -> str:
    return url or f"sqlite:///{store}/events.db"


def build(rounds: int, out: Path, url: str | None = None) -> None:
    from api.settings import write_seed_key
    from cli.simulate import simulate
    from domain.application import RoundAudit
    from domain.persistence import environment_for
    from domain.vault import SeedKeyRing
    from replays.verify import StoreVerifier

    out.mkdir(parents=True, exist_ok=True)
    ring = SeedKeyRing.generate()
    write_seed_key(out / "seed.key", ring)  # the service opens the seeds' vault with it
    app = RoundAudit(env=environment_for(_url(out, url)), seed_key=ring)
    try:
        for at in range(0, rounds - TAIL, 100):
            n = min(100, rounds - TAIL - at)
            simulate(app, variant="european", rounds=n, players=2, table=f"EU{at}")
        StoreVerifier(app, state=out / "state.sqlite")  # the state a service process saved
        last = simulate(app, variant="european", rounds=TAIL, players=2, table="TAIL")
        (out / "last-round").write_text(last.round_ids[-1])
    finally:
        app.close()


def first(store: Path, with_state: bool, url: str | None = None) -> dict[str, object]:
    from fastapi.testclient import TestClient

    from api.main import create_app
    from api.settings import Settings, load_seed_key
    from domain.keys import new_token

    token = new_token()
    extra: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if url is None:  # a copy of the store: the service's start records its admin key
            shutil.copy(store / "events.db", Path(tmp) / "events.db")
        if with_state:
            copy = Path(tmp) / "state.sqlite"
            shutil.copy(store / "state.sqlite", copy)
            extra["verifier_state"] = copy
        settings = Settings(
            database_url=_url(Path(tmp), url),
            admin_key=token,
            allowed_hosts=("testserver",),
            seed_key=load_seed_key(store / "seed.key"),
            **extra,  # type: ignore[arg-type]
        )
        rid = (store / "last-round").read_text().strip()
        with TestClient(create_app(settings)) as client:
            cpu, wall = time.process_time(), time.perf_counter()
            r = client.get(
                f"/rounds/{rid}/verification", headers={"Authorization": f"Bearer {token}"}
            )
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            leaves = client.app.state.merkle_log.size  # type: ignore[attr-defined]
    return {
        "state": with_state,
        "leaves": leaves,
        "cpu": round(cpu, 4),
        "wall": round(wall, 4),
        "status": r.status_code,
        "ok": r.json().get("ok"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.service_verify")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--rounds", type=int, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--url", default=None, help="a PostgreSQL store (default: SQLite in --out)")
    f = sub.add_parser("first")
    f.add_argument("--store", type=Path, required=True)
    f.add_argument("--state", action="store_true")
    f.add_argument("--url", default=None, help="the store --out was built for (PostgreSQL)")
    args = p.parse_args(argv)
    if args.command == "build":
        build(args.rounds, args.out, args.url)
        return 0
    print(json.dumps(first(args.store, args.state, args.url)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

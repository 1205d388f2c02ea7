"""``roundaudit serve --workers 2`` on PostgreSQL: several service processes under concurrent
load keep every guarantee (docs/scaling.md).

Two services of two worker processes each (four processes behind two sockets; the first
creates the schema and the admin key once, ``cli.main._prepare_store``, its workers then open
the store with ``CREATE_TABLE`` off) take concurrent load from 12 client threads:

* **idempotency**: every deposit is sent twice at once, under one ``Idempotency-Key``, once
  to each service: one movement per key, and both answers the same bytes (a 409
  ``request-in-progress`` or ``concurrent-update`` is retried with the key, as a client does);
* **one winner per conflict**: withdrawals of a wallet's whole balance, one through each
  service at once: one 200, one 409 ``insufficient-funds``, never a negative balance;
* **gap-free feed**: a reader tails the notification log during the load and sees every event
  the store holds at the end, in order;
* **seal at commit**: ``verify --all`` passes afterwards (rounds simulated meanwhile).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from apikit import ADMIN_TOKEN, bearer
from pg import fresh_database
from servicekit import LogTail, Retrier, service

from benchmarks.http_load import child_pids
from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings("ignore::ResourceWarning")]

PLAYERS = 6
DEPOSITS = 8  # per player, each sent twice at once


def test_worker_processes_under_load_keep_every_guarantee(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fresh_database(postgres_url) as url:
        _load(url, tmp_path, capsys)


def _load(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workers = ["--workers", "2", "--no-access-log"]
    with (
        service(url, tmp_path, args=workers) as (p1, b1),
        service(url, tmp_path, args=workers) as (p2, b2),
        httpx.Client(base_url=b1, timeout=30, headers=bearer(ADMIN_TOKEN)) as c1,
        httpx.Client(base_url=b2, timeout=30, headers=bearer(ADMIN_TOKEN)) as c2,
    ):
        assert len(child_pids(p1.pid)) >= 2  # two worker processes behind each socket
        assert len(child_pids(p2.pid)) >= 2
        players = [f"wk{i}" for i in range(PLAYERS)]
        for p in players:
            assert c1.post("/wallets", json={"player_id": p}).status_code == 201

        tailer = LogTail(url).start()
        retrier = Retrier([b1, b2])
        deadline = time.monotonic() + 120

        def twice(player: str, i: int) -> list[bytes]:
            body = {"amount": "2.50", "transaction_id": f"t-{player}-{i}"}
            key = f"k-{player}-{i}"
            path = f"/wallets/{player}/deposits"
            with ThreadPoolExecutor(2) as both:
                answers = list(
                    both.map(
                        lambda start: retrier.send(path, body, key, deadline=deadline, start=start),
                        (0, 1),
                    )
                )
            out = []
            for r in answers:
                assert r is not None
                assert r.status_code == 200, r.text
                out.append(r.content)
            return out

        def conflict(player: str) -> list[int]:
            with ThreadPoolExecutor(2) as both:
                rs = list(
                    both.map(
                        lambda c: c[0].post(
                            f"/wallets/{player}/withdrawals",
                            json={
                                "amount": str(Decimal("2.50") * DEPOSITS),
                                "transaction_id": c[1],
                            },
                        ),
                        ((c1, f"w1-{player}"), (c2, f"w2-{player}")),
                    )
                )
            for r in rs:
                if r.status_code == 409:
                    assert r.json()["code"] == "insufficient-funds", r.text
            return sorted(r.status_code for r in rs)

        try:
            with ThreadPoolExecutor(12) as pool:
                jobs = [pool.submit(twice, p, i) for p in players for i in range(DEPOSITS)]
                sim = pool.submit(
                    main,
                    [
                        "--database-url", url, "simulate", "--variant", "european",
                        "--rounds", "4", "--table", "wk-eu", "--no-progress",
                    ],
                )  # fmt: skip
                for job in jobs:
                    first, second = job.result()
                    assert first == second  # the same bytes from either process
                assert sim.result() == 0
                outcomes = [pool.submit(conflict, p) for p in players]
                for o in outcomes:
                    assert o.result() == [200, 409]
        finally:
            retrier.close()
            tailer.stop()

        for p in players:
            w = c2.get(f"/wallets/{p}").json()
            tids = [m["transaction_id"] for m in w["movements"]]
            deposits = sorted(t for t in tids if t.startswith("t-"))
            assert deposits == sorted(f"t-{p}-{i}" for i in range(DEPOSITS)), tids
            assert len([t for t in tids if t.startswith("w")]) == 1, tids
            assert Decimal(w["balance"]) == 0

    check = RoundAudit(env=environment_for(url, create_table=False))
    try:
        every = [n.id for n in check.recorder.select_notifications(start=0, limit=1_000_000)]
    finally:
        check.close()
    assert tailer.seen == every, "the tailing reader skipped events"
    capsys.readouterr()
    assert main(["--database-url", url, "verify", "--all", "--no-progress"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("4 passed, 0 failed"), last

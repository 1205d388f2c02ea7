"""Two service processes (``roundaudit serve``, uvicorn) on one PostgreSQL database keep every
guarantee one keeps: one winner per conflict, idempotency, a gap-free feed, seal at commit,
and two checkpoint signers that take turns.

Each case sends its requests to both processes *at the same moment* (threads released by a
barrier), so that the two processes really race on the database:

* **one winner per conflict**: a wallet holding 10.00 gets a withdrawal of 10.00 through each
  process at once (different transaction ids): one is answered 200, the other 409
  ``insufficient-funds``; the balance is 0.00, never negative. The same transaction id sent
  through both for different amounts (different keys): one movement, the other answered 409
  ``duplicate-transaction``;
* **idempotency**: the same deposit with the same key through both at once: one movement, both
  answers the same bytes (the second a replay);
* **gap-free feed**: a reader tails the notification log while both processes write; what it
  collected is every event of the store, none skipped (PostgreSQL's table lock keeps commit
  order equal to notification order across processes);
* **seal at commit**: ``verify --all`` passes (every stored event in exactly one leaf of the
  transaction that wrote it), with checkpoints signed meanwhile by two signers in two
  processes at once (the advisory lock of ``replays.coordination``): their checkpoints' sizes
  only grow.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from apikit import ADMIN_TOKEN, bearer
from pg import fresh_database
from servicekit import ROOT, LogTail, service
from storekit import ORIGIN

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings("ignore::ResourceWarning")]

ROUNDS = 40


def _at_once(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    barrier = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _post(c: httpx.Client, path: str, body: dict[str, str], key: str | None = None) -> Any:
    headers = bearer(ADMIN_TOKEN)
    if key is not None:
        headers["Idempotency-Key"] = key
    return lambda: c.post(path, json=body, headers=headers)


def test_two_service_processes_keep_every_guarantee(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fresh_database(postgres_url) as url:
        app = RoundAudit(env=environment_for(url))
        app.close()  # the schema, once, before the processes start (DESIGN.md)
        with (
            service(url, tmp_path) as (_p1, b1),
            service(url, tmp_path) as (_p2, b2),
            httpx.Client(base_url=b1, timeout=30) as c1,
            httpx.Client(base_url=b2, timeout=30) as c2,
        ):
            players = [f"tp{i}" for i in range(8)]
            for p in players:
                assert (
                    c1.post(
                        "/wallets", json={"player_id": p}, headers=bearer(ADMIN_TOKEN)
                    ).status_code
                    == 201
                )

            # the feed reader tails the log while everything below is written
            tailer = LogTail(url).start()

            # two signers in two processes at once, while the processes write
            sign = [
                sys.executable, "-m", "cli.main", "--database-url", url, "seal",
                "--follow", "0.05", "--max-runs", "60", "--signing-key", str(tmp_path / "key.pem"),
                "--origin", ORIGIN,
            ]  # fmt: skip
            key = ["--signing-key", str(tmp_path / "key.pem"), "--origin", ORIGIN]
            assert main(["--database-url", url, "seal", *key]) == 0  # makes the key, once
            signers = [
                subprocess.Popen(sign, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for _ in range(2)
            ]
            try:
                for p in players:
                    # one winner per conflict: two withdrawals of the whole balance at once
                    r = c1.post(
                        f"/wallets/{p}/deposits",
                        json={"amount": "10.00", "transaction_id": f"d-{p}"},
                        headers=bearer(ADMIN_TOKEN),
                    )
                    assert r.status_code == 200, r.text
                    a, b = _at_once(
                        [
                            _post(
                                c1,
                                f"/wallets/{p}/withdrawals",
                                {"amount": "10.00", "transaction_id": f"w1-{p}"},
                            ),
                            _post(
                                c2,
                                f"/wallets/{p}/withdrawals",
                                {"amount": "10.00", "transaction_id": f"w2-{p}"},
                            ),
                        ]
                    )
                    codes = sorted([a.status_code, b.status_code])
                    assert codes == [200, 409], (a.text, b.text)
                    loser = a if a.status_code == 409 else b
                    assert loser.json()["code"] == "insufficient-funds", loser.text

                    # the same transaction id through both, under two keys: one movement
                    a, b = _at_once(
                        [
                            _post(
                                c1,
                                f"/wallets/{p}/deposits",
                                {"amount": "5.00", "transaction_id": f"x-{p}"},
                                f"kx1-{p}",
                            ),
                            _post(
                                c2,
                                f"/wallets/{p}/deposits",
                                {"amount": "7.00", "transaction_id": f"x-{p}"},
                                f"kx2-{p}",
                            ),
                        ]
                    )
                    assert sorted([a.status_code, b.status_code]) == [200, 409], (a.text, b.text)
                    loser = a if a.status_code == 409 else b
                    assert loser.json()["code"] == "duplicate-transaction", loser.text
                    kept = Decimal("5.00") if a.status_code == 200 else Decimal("7.00")

                    # idempotency: the same key through both at once
                    body = {"amount": "1.25", "transaction_id": f"i-{p}"}
                    answers = _at_once(
                        [
                            _post(c1, f"/wallets/{p}/deposits", body, f"ki-{p}"),
                            _post(c2, f"/wallets/{p}/deposits", body, f"ki-{p}"),
                        ]
                    )
                    for r in answers:
                        if r.status_code == 409:  # the other process was still running it
                            assert r.json()["code"] == "request-in-progress", r.text
                    again = [
                        c.post(
                            f"/wallets/{p}/deposits",
                            json=body,
                            headers={**bearer(ADMIN_TOKEN), "Idempotency-Key": f"ki-{p}"},
                        )
                        for c in (c1, c2)
                    ]
                    firsts = [r for r in answers if r.status_code == 200]
                    assert firsts, [r.text for r in answers]
                    for r in [*firsts, *again]:
                        assert r.status_code == 200, r.text
                        assert r.content == firsts[0].content

                    w = c2.get(f"/wallets/{p}", headers=bearer(ADMIN_TOKEN)).json()
                    tids = sorted(m["transaction_id"] for m in w["movements"])
                    won = "w1" if f"w1-{p}" in tids else "w2"
                    assert tids == sorted([f"d-{p}", f"{won}-{p}", f"x-{p}", f"i-{p}"]), tids
                    assert Decimal(w["balance"]) == kept + Decimal("1.25")
                # rounds recorded through the store meanwhile, for verify --all
                assert (
                    main(
                        [
                            "--database-url",
                            url,
                            "simulate",
                            "--variant",
                            "european",
                            "--rounds",
                            "10",
                            "--table",
                            "two-eu",
                            "--no-progress",
                        ]
                    )
                    == 0
                )
            finally:
                for s in signers:
                    s.wait(timeout=120)
                tailer.stop()
            for s in signers:
                assert s.returncode == 0, s.stderr.read() if s.stderr else ""
                if s.stderr:
                    s.stderr.close()

        check = RoundAudit(env=environment_for(url, create_table=False))
        try:
            every = [n.id for n in check.recorder.select_notifications(start=0, limit=1_000_000)]
            log = MerkleLog(check).refresh()
            sizes = [cp.size for cp in log.checkpoints()]
        finally:
            check.close()
        assert tailer.seen == every, "the tailing reader skipped events"
        assert sizes == sorted(sizes), sizes
        assert len(sizes) == len(set(sizes)), f"two checkpoints of one tree: {sizes}"
        capsys.readouterr()
        verify = ["verify", "--all", "--no-progress", "--signing-key", str(tmp_path / "key.pem")]
        assert main(["--database-url", url, *verify]) == 0
        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert last.startswith("10 passed, 0 failed"), last

"""A real service process (``roundaudit serve``: uvicorn) is SIGKILLed while commands sent with
idempotency keys are in flight, then started again on the same store, and every command is
sent again: each is applied exactly once, and every command that was acknowledged before the
kill is there, its repeat answering the acknowledged bytes (issue 12)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from apikit import ADMIN_TOKEN, bearer
from storekit import free_port

PLAYERS = [f"p{i}" for i in range(6)]
PER_PLAYER = 40


@contextmanager
def service(store_url: str, tmp_path: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "ROUNDAUDIT_DATABASE_URL": store_url,
        "ROUNDAUDIT_ADMIN_KEY": ADMIN_TOKEN,
        "ROUNDAUDIT_SEED_KEY": str(tmp_path / "seed.key"),
    }
    log = open(tmp_path / f"server-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((tmp_path / "server.log").read_bytes()[-2000:])
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
        log.close()


def deposit(client: httpx.Client, player: str, i: int) -> httpx.Response:
    return client.post(
        f"/wallets/{player}/deposits",
        json={"amount": f"{i + 1}.01", "transaction_id": f"t-{player}-{i}"},
        headers={**bearer(ADMIN_TOKEN), "Idempotency-Key": f"k-{player}-{i}"},
    )


def test_a_killed_service_applies_every_command_once(store_url: str, tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    acknowledged: dict[tuple[str, int], bytes] = {}
    lock = threading.Lock()
    with service(store_url, tmp_path, port) as proc:
        with httpx.Client(base_url=base, timeout=30) as c:
            for p in PLAYERS:
                r = c.post("/wallets", json={"player_id": p}, headers=bearer(ADMIN_TOKEN))
                assert r.status_code == 201, r.text

        def send(player: str) -> None:
            with httpx.Client(base_url=base, timeout=30) as client:
                for i in range(PER_PLAYER):
                    try:
                        r = deposit(client, player, i)
                    except httpx.HTTPError:
                        return  # the service died under us
                    if r.status_code == 200:
                        with lock:
                            acknowledged[(player, i)] = r.content

        threads = [threading.Thread(target=send, args=(p,)) for p in PLAYERS]
        for t in threads:
            t.start()
        while len(acknowledged) < 40 and any(t.is_alive() for t in threads):
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)  # in the middle of the stream
        proc.wait(timeout=30)
        for t in threads:
            t.join()
    assert 0 < len(acknowledged) < len(PLAYERS) * PER_PLAYER

    with service(store_url, tmp_path, port), httpx.Client(base_url=base, timeout=30) as c:
        for p in PLAYERS:
            for i in range(PER_PLAYER):
                r = deposit(c, p, i)
                assert r.status_code == 200, r.text
                if (p, i) in acknowledged:
                    assert r.content == acknowledged[(p, i)]
                    assert r.headers["idempotent-replayed"] == "true"
        for p in PLAYERS:
            w = c.get(f"/wallets/{p}", headers=bearer(ADMIN_TOKEN)).json()
            tids = [m["transaction_id"] for m in w["movements"]]
            assert sorted(tids) == sorted(f"t-{p}-{i}" for i in range(PER_PLAYER))
            assert Decimal(w["balance"]) == sum(Decimal(f"{i + 1}.01") for i in range(PER_PLAYER))


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

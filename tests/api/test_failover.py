"""PostgreSQL that survives its primary: a synchronous standby, two service processes, the
primary SIGKILLed mid-load, the standby promoted, clients retrying with their keys.

Two throwaway clusters on loopback (``tests/pgrepl.py``): a primary and a standby made with
``pg_basebackup -R``, named in ``synchronous_standby_names`` with ``synchronous_commit =
remote_apply`` (a commit is acknowledged once the standby has applied it). Two service
processes (``roundaudit serve``, uvicorn) reach them through one multi-host URL,
``postgresql://...@127.0.0.1:P1,127.0.0.1:P2/audit?target_session_attrs=read-write``.

Client threads send deposits, each with its own ``Idempotency-Key``, alternating between the
two services, retrying an attempt whose outcome they could not know (connection error, 5xx,
``request-in-progress``) with the same key and body. Mid-load the primary is SIGKILLed (its
postmaster and every backend: as a machine that dies) and the standby is promoted, as a
failover manager would. Then:

* every command acknowledged before, during or after the failover is in the promoted store
  exactly once (each wallet holds each of its transaction ids once, its balance is their sum);
  every command sent was acknowledged in the end (the clients' retries);
* a repeat of every key answers the first acknowledgement's bytes;
* the Merkle log's leaves are 1..N without a gap and ``verify --all`` passes on the promoted
  store (every stored event in exactly one leaf, every round re-executes);
* printed: acknowledged, found, lost, time to recover (from the kill to the first
  acknowledgement after it) and to finish (docs/scaling.md records them).

The default run is bounded (about 30 s of load on this machine); ``-m slow`` runs a longer one.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from decimal import Decimal
from pathlib import Path

import httpx
import psycopg
import pytest
from apikit import ADMIN_TOKEN, bearer
from pgrepl import Primary, Standby, replicated_store
from servicekit import Retrier, service

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog

pytestmark = [pytest.mark.postgres, pytest.mark.filterwarnings("ignore::ResourceWarning")]

PLAYERS = [f"fo{i}" for i in range(6)]
ROUNDS = 5


def _deposit(player: str, i: int) -> tuple[str, dict[str, str], str]:
    body = {"amount": f"{i + 1}.01", "transaction_id": f"t-{player}-{i}"}
    return f"/wallets/{player}/deposits", body, f"k-{player}-{i}"


def run_failover(tmp_path: Path, per_player: int, kill_after: int) -> dict[str, float]:
    with replicated_store(synchronous="remote_apply") as store:
        primary, standby = store.primary, store.standby
        multi = store.multi_host()
        # rounds recorded on the primary through the multi-host URL, for verify --all
        simulate = ["simulate", "--variant", "european", "--rounds", str(ROUNDS)]
        assert main(["--database-url", multi, *simulate, "--no-progress"]) == 0
        figures = _load(tmp_path, multi, primary, standby, per_player, kill_after)
        figures["rounds verified"] = float(ROUNDS)
        found = _check_store(store.replica, per_player)  # the promoted standby
        figures["found"] = float(found)
        figures["lost"] = figures["acknowledged"] - found
        return figures


def _load(
    tmp_path: Path,
    multi: str,
    primary: Primary,
    standby: Standby,
    per_player: int,
    kill_after: int,
) -> dict[str, float]:
    acknowledged: dict[str, bytes] = {}
    ack_times: list[tuple[int, float]] = []
    lock = threading.Lock()
    killed_at: list[float] = []
    with service(multi, tmp_path) as (_p1, b1), service(multi, tmp_path) as (_p2, b2):
        with httpx.Client(base_url=b1, timeout=30) as c:
            for p in PLAYERS:
                r = c.post("/wallets", json={"player_id": p}, headers=bearer(ADMIN_TOKEN))
                assert r.status_code == 201, r.text
        retriers = [Retrier([b1, b2]) for _ in PLAYERS]
        deadline = time.monotonic() + 180
        missing: list[str] = []

        def send(n: int, player: str) -> None:
            for i in range(per_player):
                path, body, key = _deposit(player, i)
                r = retriers[n].send(path, body, key, deadline=deadline, start=n + i)
                if r is None:
                    with lock:
                        missing.append(key)
                    continue
                assert r.status_code == 200, (key, r.status_code, r.text)
                with lock:
                    acknowledged.setdefault(key, r.content)
                    ack_times.append((n, time.monotonic()))

        threads = [threading.Thread(target=send, args=(n, p)) for n, p in enumerate(PLAYERS)]
        for t in threads:
            t.start()
        while len(acknowledged) < kill_after and any(t.is_alive() for t in threads):
            time.sleep(0.005)
        before = len(acknowledged)
        killed_at.append(time.monotonic())
        primary.kill()  # SIGKILL: the primary's machine is gone
        promote_s = standby.promote()  # the failover manager's move
        for t in threads:
            t.join()
        finished = time.monotonic()
        unknown = sum(r.unknown for r in retriers)
        for r in retriers:
            r.close()
        assert not missing, f"never acknowledged: {missing[:5]}"
        # every key, sent again to either service, answers its first acknowledgement
        with httpx.Client(base_url=b2, timeout=30) as c, httpx.Client(base_url=b1) as c1:
            for n, p in enumerate(PLAYERS):
                for i in range(per_player):
                    path, body, key = _deposit(p, i)
                    client = (c, c1)[(n + i) % 2]
                    r = client.post(
                        path, json=body, headers={**bearer(ADMIN_TOKEN), "Idempotency-Key": key}
                    )
                    assert r.status_code == 200, r.text
                    assert r.content == acknowledged[key]
                    assert r.headers["idempotent-replayed"] == "true"
    kill = killed_at[0]
    # recovered when every client has had an acknowledgement after the kill again
    firsts = [
        min((t for m, t in ack_times if m == n and t > kill), default=None)
        for n in range(len(PLAYERS))
    ]
    recover = max((t - kill for t in firsts if t is not None), default=float("nan"))
    return {
        "acknowledged": float(len(acknowledged)),
        "acknowledged before the kill": float(before),
        "unknown outcomes retried": float(unknown),
        "promotion s": promote_s,
        "time to recover s (every client served again)": recover,
        "time to finish after the kill s": finished - kill,
    }


def _check_store(promoted: str, per_player: int) -> int:
    """Exactly once, gap-free, verified; returns how many acknowledged commands are found."""
    import orjson

    expected = {f"t-{p}-{i}" for p in PLAYERS for i in range(per_player)}
    with psycopg.connect(promoted, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT state FROM roundaudit_events WHERE topic LIKE %s", ("%Wallet.Deposited%",)
        ).fetchall()
    tids = [orjson.loads(bytes(r[0]))["transaction_id"] for r in rows]
    lost = expected - set(tids)
    assert not lost, sorted(lost)[:5]
    assert len(tids) == len(set(tids)), "a command was applied twice"
    app = RoundAudit(env=environment_for(promoted, create_table=False))
    try:
        for p in PLAYERS:
            assert app.balance(p) == sum(Decimal(f"{i + 1}.01") for i in range(per_player))
        log = MerkleLog(app).refresh()
        stored = int(app.recorder.max_notification_id() or 0)
        assert log.size > 0
        assert stored > 0
    finally:
        app.close()
    # the whole store verifies: its leaves 1..N, every event in exactly one, every round
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--database-url", promoted, "verify", "--all", "--no-progress"])
    assert out.getvalue().strip().splitlines()[-1] == f"{ROUNDS} passed, 0 failed", out.getvalue()
    assert code == 0
    return len(set(tids) & expected)


def _print(figures: dict[str, float]) -> None:
    for name, value in figures.items():
        print(f"failover: {name}: {value:.3f}" if value % 1 else f"failover: {name}: {value:.0f}")


def test_failover_loses_no_acknowledged_command(tmp_path: Path) -> None:
    figures = run_failover(tmp_path, per_player=25, kill_after=40)
    _print(figures)
    assert figures["acknowledged"] == len(PLAYERS) * 25
    assert figures["acknowledged before the kill"] >= 40


@pytest.mark.slow
def test_failover_under_longer_load(tmp_path: Path) -> None:
    figures = run_failover(tmp_path, per_player=150, kill_after=400)
    _print(figures)
    assert figures["acknowledged"] == len(PLAYERS) * 150


def test_a_command_without_a_primary_is_503_store_unavailable(tmp_path: Path) -> None:
    """While no server is the primary (the old one dead, the standby not promoted yet), a
    command is answered 503 ``store-unavailable`` with ``Retry-After``, naming the way to
    learn its outcome: its key. Once a primary is back, the same key gets it done, once."""
    with replicated_store(synchronous="on") as store:
        primary, standby = store.primary, store.standby
        multi = store.multi_host("target_session_attrs=read-write&connect_timeout=1")
        with (
            service(multi, tmp_path) as (_proc, base),
            httpx.Client(base_url=base, timeout=120) as c,
        ):
            r = c.post("/wallets", json={"player_id": "fo-x"}, headers=bearer(ADMIN_TOKEN))
            assert r.status_code == 201, r.text
            path, body, key = _deposit("fo-x", 0)
            headers = {**bearer(ADMIN_TOKEN), "Idempotency-Key": key}
            primary.kill()
            r = c.post(path, json=body, headers=headers)
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == "1"
            assert r.headers["content-type"].startswith("application/problem+json")
            problem = r.json()
            assert problem["code"] == "store-unavailable"
            assert "Idempotency-Key" in problem["detail"]
            standby.promote()
            r = Retrier([base]).send(path, body, key, deadline=time.monotonic() + 60)
            assert r is not None
            assert r.status_code == 200, r.text
            again = c.post(path, json=body, headers=headers)
            assert again.content == r.content
            wallet = c.get("/wallets/fo-x", headers=bearer(ADMIN_TOKEN)).json()
            assert [m["transaction_id"] for m in wallet["movements"]] == ["t-fo-x-0"]

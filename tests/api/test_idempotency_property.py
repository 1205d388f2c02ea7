"""Property (issue 12): a random sequence of commands, each sent once, twice, twice at the
same moment (through two service instances on one store), or with its key reused for another
body, leaves the store exactly as the commands sent once; every repeat gets the original
answer byte for byte. On SQLite and PostgreSQL (the store under test), against a reference
service on its own SQLite store that receives each command once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from apikit import ADMIN_TOKEN, bearer, service_settings
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.main import create_app
from domain.application import RoundAudit
from domain.persistence import environment_for

ORDER = ["10H", "9C", "7D", "8S", "5C", "6H", "2D", "3S", "4C", "KD", "QH", "JS"] * 4
MODES = ("once", "twice", "concurrent", "reused")
Json = dict[str, Any]


class Service:
    """One store; ``clients`` are service instances on it (two: two processes' worth)."""

    def __init__(self, url: str, stack: ExitStack, instances: int) -> None:
        self.audit = stack.enter_context(RoundAudit(env=environment_for(url)))
        settings = service_settings(url, idempotency_prune_every=0)
        self.clients = [
            stack.enter_context(TestClient(create_app(settings, app=self.audit)))
            for _ in range(instances)
        ]

    def send(self, i: int, method: str, url: str, body: Any, key: str) -> Any:
        headers = {**bearer(ADMIN_TOKEN), "Idempotency-Key": key}
        return self.clients[i].request(method, url, json=body, headers=headers)


def script(n: int, amounts: list[str], actions: list[str]) -> list[tuple[str, str, Any, Any]]:
    """The commands of example ``n``: (method, url, body, another body for the same key)."""
    t, p1, p2 = f"E{n}", f"a{n}", f"b{n}"
    rid = f"/rounds/{t}%231"
    cmds: list[tuple[str, str, Any, Any]] = [
        ("POST", "/tables", {"table_id": t, "variant": "multihand", "production": False}, None),
        ("POST", "/wallets", {"player_id": p1, "account_type": "test"}, None),
        ("POST", "/wallets", {"player_id": p2, "account_type": "test"}, None),
        ("POST", f"/wallets/{p1}/deposits", {"amount": "100.00", "transaction_id": f"d{n}a"}, None),
        ("POST", f"/wallets/{p2}/deposits", {"amount": "100.00", "transaction_id": f"d{n}b"}, None),
        (
            "POST",
            "/rounds",
            {"table_id": t, "round_number": 1, "variant": "multihand", "test_order": ORDER},
            None,
        ),
        ("POST", f"{rid}/bets", {"player": p1, "amount": amounts[0], "spot": 1}, None),
        ("POST", f"{rid}/bets", {"player": p2, "amount": amounts[1], "spot": 2}, None),
        ("POST", f"{rid}/close-betting", {}, None),
        ("POST", f"{rid}/decisions", {"player": p1, "action": actions[0]}, None),
        ("POST", f"{rid}/decisions", {"player": p1, "action": actions[1]}, None),
        ("POST", f"{rid}/decisions", {"player": p2, "action": actions[2]}, None),
        ("POST", f"{rid}/decisions", {"player": p2, "action": actions[3]}, None),
    ]
    out = []
    for method, url, body, _ in cmds:
        other = dict(body)
        if "amount" in other:
            other["amount"] = "1.00" if other["amount"] != "1.00" else "2.00"
        elif "action" in other:
            other["action"] = "hit" if other["action"] != "hit" else "stand"
        elif "production" in other:
            other["production"] = True
        elif "account_type" in other:
            other["account_type"] = "fun"
        elif "test_order" in other:
            other["shoe_round"] = 2
        else:
            other["request_id"] = f"other-{n}"
        out.append((method, url, body, other))
    return out


def state(service: Service, n: int) -> Json:
    """What example ``n`` left in the store: its round's events (times left out), its round and
    its wallets, as the admin reads them."""
    c = service.clients[0]
    h = bearer(ADMIN_TOKEN)
    rid = f"/rounds/E{n}%231"
    events = c.get(f"{rid}/events", headers=h).json()
    for e in events.get("events", []):
        e.pop("timestamp", None)
    return {
        "events": events,
        "round": c.get(rid, headers=h).json(),
        "wallets": [c.get(f"/wallets/{p}{n}", headers=h).json() for p in ("a", "b")],
    }


@pytest.fixture
def services(store_url: str, tmp_path: Path) -> Iterator[tuple[Service, Service]]:
    with ExitStack() as stack:
        reference = Service(f"sqlite:///{tmp_path}/reference.db", stack, 1)
        tested = Service(store_url, stack, 2)
        yield reference, tested


_counter = iter(range(1_000_000))


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    modes=st.lists(st.sampled_from(MODES), min_size=13, max_size=13),
    amounts=st.lists(st.sampled_from(["5.00", "10", "25.50"]), min_size=2, max_size=2),
    actions=st.lists(st.sampled_from(["hit", "stand", "double"]), min_size=4, max_size=4),
)
def test_repeats_leave_the_store_as_each_command_sent_once(
    services: tuple[Service, Service], modes: list[str], amounts: list[str], actions: list[str]
) -> None:
    reference, tested = services
    n = next(_counter)
    for i, ((method, url, body, other), mode) in enumerate(
        zip(script(n, amounts, actions), modes, strict=True)
    ):
        key = f"x{n}-{i}"
        expected = reference.send(0, method, url, body, key)
        if mode == "concurrent":
            answers: list[Any] = [None, None]
            go = threading.Barrier(2)

            def run(
                j: int,
                request: tuple[str, str, Any, str] = (method, url, body, key),
                answers: list[Any] = answers,
                go: threading.Barrier = go,
            ) -> None:
                go.wait()
                answers[j] = tested.send(j, *request)

            threads = [threading.Thread(target=run, args=(j,)) for j in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            first, again = answers
        else:
            first = tested.send(0, method, url, body, key)
            if mode == "twice":
                again = tested.send(1, method, url, body, key)
            elif mode == "reused":
                refused = tested.send(0, method, url, other, key)
                assert refused.status_code == 422, refused.text
                assert refused.json()["code"] == "idempotency-key-reused"
                again = tested.send(0, method, url, body, key)
            else:
                again = first
        assert (first.status_code, first.content) == (expected.status_code, expected.content), (
            url,
            mode,
        )
        assert (again.status_code, again.content) == (first.status_code, first.content), (
            url,
            mode,
        )
    assert state(tested, n) == state(reference, n)

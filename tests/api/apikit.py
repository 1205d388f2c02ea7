"""HTTP test helpers: an ``Api`` wrapper over ``TestClient`` and the RFC 9457 problem check."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from httpx import Response

Json = dict[str, Any]
PROBLEM = "application/problem+json"


class Api:
    """Thin helpers over the client: each asserts the status it expects and returns JSON."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def ok(self, method: str, url: str, status: int = 200, **kwargs: Any) -> Json:
        r = self.client.request(method, url, **kwargs)
        assert r.status_code == status, (r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/json")
        body: Json = r.json()
        return body

    def problem(self, method: str, url: str, status: int, code: str, **kwargs: Any) -> Json:
        """Send a request that must be refused; check the RFC 9457 shape and return it."""
        r = self.client.request(method, url, **kwargs)
        return check_problem(r, status, code, url)

    # -- wallets
    def wallet(self, player: str, deposit: str | None = None) -> Json:
        self.ok("POST", "/wallets", 201, json={"player_id": player})
        if deposit is not None:
            self.ok(
                "POST",
                f"/wallets/{player}/deposits",
                json={"amount": deposit, "transaction_id": f"cashier-{player}-1"},
            )
        return self.ok("GET", f"/wallets/{player}")

    def balance(self, player: str) -> str:
        b: str = self.ok("GET", f"/wallets/{player}")["balance"]
        return b

    # -- rounds
    def start(self, table: str, variant: str, order: list[str], number: int = 1) -> str:
        view = self.ok(
            "POST",
            "/rounds",
            201,
            json={
                "table_id": table,
                "round_number": number,
                "variant": variant,
                "production": False,
                "test_order": order,
            },
        )
        rid: str = view["round_id"]
        return rid

    def seat(self, table: str, player: str, seat: int = 1) -> Json:
        """Open the deluxe table when it is new, and seat the player (DLX-1)."""
        if self.client.get(f"/tables/{table}").status_code == 404:
            self.ok("POST", "/tables", 201, json={"table_id": table})
        return self.ok("POST", f"/tables/{table}/seats", json={"player": player, "seat": seat})

    def bet(self, rid: str, player: str, amount: str, spot: int, kind: str = "main") -> Json:
        return self.ok(
            "POST",
            f"/rounds/{rid}/bets",
            json={"player": player, "kind": kind, "amount": amount, "spot": spot},
        )

    def close(self, rid: str) -> Json:
        return self.ok("POST", f"/rounds/{rid}/close-betting")

    def decide(self, rid: str, player: str, action: str, **extra: Any) -> Json:
        return self.ok(
            "POST", f"/rounds/{rid}/decisions", json={"player": player, "action": action, **extra}
        )

    def events(self, rid: str) -> list[Json]:
        events: list[Json] = self.ok("GET", f"/rounds/{rid}/events")["events"]
        return events

    def snapshot(self, rid: str | None, *players: str) -> Json:
        """What a refused command must leave unchanged: the round's events and the wallets."""
        return {
            "events": self.events(rid) if rid is not None else None,
            "round": self.ok("GET", f"/rounds/{rid}") if rid is not None else None,
            "wallets": {p: self.ok("GET", f"/wallets/{p}") for p in players},
        }


def check_problem(r: Response, status: int, code: str, path: str | None = None) -> Json:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith(PROBLEM), r.headers["content-type"]
    body: Json = r.json()
    assert body["status"] == status
    assert body["code"] == code, body
    if code.startswith("http-"):
        assert body["type"] == "about:blank"
    else:
        assert body["type"] == f"urn:roundaudit:problem:{code}"
    assert body["title"]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    if path is not None:
        assert body["instance"] == path.split("?")[0]
    return body

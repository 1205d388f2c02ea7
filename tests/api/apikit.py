"""HTTP test helpers: an ``Api`` wrapper over ``TestClient`` and the RFC 9457 problem check.

Every request carries a real API key of a role the permission table allows for its route
(docs/api.md), issued through ``POST /api-keys`` by the test service's admin key
(``ADMIN_TOKEN``, which the service records at start from its settings). Nothing bypasses
authentication. Which role a request uses, unless the test names a key (``key=``):

* ``/api-keys``, tables, shoes: the admin; seats: the table's feed;
* wallets: a cashier;
* round commands: the feed key bound to the round's table (``table-feed``), known from the
  round's start, and the table's supervisor for pause, resume and cancel; an admin for a
  round the helper never saw start (so an unknown round is still a 404);
* reads (rounds, events, audit, rules, the log): an investigator.

``Api.key(role, ...)`` issues (and remembers) keys of other roles for the tests that check who
may do what.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from fastapi.testclient import TestClient
from httpx import Response

from api.settings import Settings
from domain.keys import new_token

Json = dict[str, Any]
PROBLEM = "application/problem+json"
#: The test service's first admin key (``Settings.admin_key`` in the fixtures).
ADMIN_TOKEN = new_token()
_SUPERVISED = ("pause", "resume", "cancel")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def count_served(monkeypatch: Any, cls: type, method: str) -> list[str]:
    """The paths of the requests an ASGI method of ``cls`` (a hot path's, ``api.hotpath``)
    answers from now on, as the server saw them."""
    served: list[str] = []
    original = getattr(cls, method)

    async def counted(self: Any, scope: Any, receive: Any, send: Any) -> None:
        served.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(cls, method, counted)
    return served


class KeyedClient:
    """The ``TestClient`` calls the tests make, each sent with the key :class:`Api` picks."""

    def __init__(self, api: Api) -> None:
        self.api = api

    @property
    def app(self) -> Any:
        return self.api.raw.app

    def request(self, method: str, url: str, *, key: str | None = None, **kwargs: Any) -> Response:
        return self.api.request(method, url, key=key, **kwargs)

    def get(self, url: str, **kwargs: Any) -> Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Response:
        return self.request("POST", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Response:
        return self.request("DELETE", url, **kwargs)


class Api:
    """Thin helpers over the client: each asserts the status it expects and returns JSON."""

    def __init__(self, client: TestClient, admin: str = ADMIN_TOKEN) -> None:
        self.raw = client
        self.admin = admin
        self.client = KeyedClient(self)
        self._keys: dict[tuple[str, tuple[str, ...], str | None], str] = {}
        self.round_tables: dict[str, str] = {}  # round id -> table id, from the round's start

    # -- keys
    def key(self, role: str, *, tables: tuple[str, ...] = (), player: str | None = None) -> str:
        """A token of ``role`` (bound to ``tables`` or ``player``), issued once per binding."""
        if role == "admin" and not tables and player is None:
            return self.admin
        wanted = (role, tuple(sorted(tables)), player)
        if wanted not in self._keys:
            r = self.raw.post(
                "/api-keys",
                json={"role": role, "tables": list(tables), "player": player, "label": role},
                headers=bearer(self.admin),
            )
            assert r.status_code == 201, (r.status_code, r.text)
            self._keys[wanted] = r.json()["token"]
        return self._keys[wanted]

    def feed(self, table: str) -> str:
        return self.key("table-feed", tables=(table,))

    def default_key(self, method: str, url: str, body: object = None) -> str:
        """The key a request is sent with when the test names none (module docstring)."""
        path = unquote(url.split("?", maxsplit=1)[0])
        parts = [p for p in path.split("/") if p]
        head = parts[0] if parts else ""
        if head == "wallets":
            return self.key("cashier")
        if head == "tables" and len(parts) >= 3 and parts[2] == "seats":
            return self.feed(parts[1])
        if head == "rounds" and method != "GET":
            if len(parts) == 1:  # a round's start: its table's feed
                table = body.get("table_id") if isinstance(body, Mapping) else None
                usable = isinstance(table, str) and re.fullmatch(r"[A-Za-z0-9._-]{1,64}", table)
                return self.feed(table) if usable and isinstance(table, str) else self.admin
            table = self.round_tables.get(parts[1])
            if table is None:
                return self.admin
            if parts[-1] in _SUPERVISED:
                return self.key("supervisor", tables=(table,))
            return self.feed(table)
        if method == "GET" and head in ("rounds", "rules", "merkle"):
            return self.key("investigator")
        return self.admin

    def request(self, method: str, url: str, *, key: str | None = None, **kwargs: Any) -> Response:
        token = key if key is not None else self.default_key(method, url, kwargs.get("json"))
        headers = {**bearer(token), **(kwargs.pop("headers", None) or {})}
        r = self.raw.request(method, url, headers=headers, **kwargs)
        if method == "POST" and url.split("?", maxsplit=1)[0] == "/rounds" and r.status_code == 201:
            view = r.json()
            self.round_tables[view["round_id"]] = view["table_id"]
        return r

    def ok(self, method: str, url: str, status: int = 200, **kwargs: Any) -> Json:
        r = self.request(method, url, **kwargs)
        assert r.status_code == status, (r.status_code, r.text)
        assert r.headers["content-type"].startswith("application/json")
        body: Json = r.json()
        return body

    def problem(self, method: str, url: str, status: int, code: str, **kwargs: Any) -> Json:
        """Send a request that must be refused; check the RFC 9457 shape and return it."""
        r = self.request(method, url, **kwargs)
        return check_problem(r, status, code, url)

    # -- tables
    def table(self, table: str, variant: str = "deluxe", *, production: bool = False) -> Json:
        """Open the table (as the admin) unless it exists; a test table by default."""
        r = self.request("GET", f"/tables/{table}", key=self.admin)
        if r.status_code == 200:
            return dict(r.json())
        return self.ok(
            "POST",
            "/tables",
            201,
            json={"table_id": table, "variant": variant, "production": production},
            key=self.admin,
        )

    # -- wallets
    def wallet(self, player: str, deposit: str | None = None, account_type: str = "test") -> Json:
        """Open a wallet (a test account by default: the helpers' rounds are on test tables)."""
        self.ok("POST", "/wallets", 201, json={"player_id": player, "account_type": account_type})
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
        """A round on test table ``table`` (opened when new), dealt from a test shoe."""
        self.table(table, variant)
        view = self.ok(
            "POST",
            "/rounds",
            201,
            json={
                "table_id": table,
                "round_number": number,
                "variant": variant,
                "test_order": order,
            },
        )
        rid: str = view["round_id"]
        return rid

    def seat(self, table: str, player: str, seat: int = 1) -> Json:
        """Open the deluxe (test) table when it is new, and seat the player (DLX-1)."""
        self.table(table)
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


TEST_HOSTS = ("testserver",)


def service_settings(database_url: str, **changes: object) -> Settings:
    """The settings of a test service: its store, the test admin key, the test host."""
    base: dict[str, object] = {
        "database_url": database_url,
        "admin_key": ADMIN_TOKEN,
        "allowed_hosts": TEST_HOSTS,
    }
    base.update(changes)
    return Settings(**base)  # type: ignore[arg-type]

"""The single commands' own path (``api.hotpath.HotCommands``) answers what FastAPI's routes
answer.

A command changes the store, so one store cannot be asked twice: two services, each on a
store of its own (SQLite files, PostgreSQL databases), one as served and the other with the
hot paths taken out (every request through FastAPI's routing and dependencies), are given the
same history and then the same requests, valid and hostile, one after the other: the status,
every header and the body are the same bytes (the API keys' random ids aside, which differ
between the two stores), the resulting wallets and rounds are the same, and the hot path
really served the requests it claims (counted) and left the others to FastAPI.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pytest
from apikit import ADMIN_TOKEN, Api, count_served, service_settings
from fastapi import FastAPI
from fastapi.testclient import TestClient
from storekit import twin_store_url

from api.auth import Authenticated
from api.hotpath import HOT_COMMANDS, HotCommands, HotReads, NotHot, hot_commands
from api.limits import DEFAULT_MAX_BODY
from api.main import create_app

ORDER = ["10H", "9S", "6D", "QD", "5C", "3H", "JC", "AH", "2S"]
JSON = {"Content-Type": "application/json"}


def _plain(web: FastAPI) -> FastAPI:
    web.user_middleware = [m for m in web.user_middleware if m.cls not in (HotReads, HotCommands)]
    return web


class Side:
    """One service, its API, and the tokens of its keys by name."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.api = Api(client)
        a = self.api
        a.wallet("ann", deposit="100.00")
        a.wallet("bob", deposit="100.00")
        self.rid = a.start("T1", "multihand", ORDER)
        self.tokens = {
            "admin": ADMIN_TOKEN,
            "cashier": a.key("cashier"),
            "ann": a.key("player", player="ann"),
            "bob": a.key("player", player="bob"),
            "feed": a.feed("T1"),
            "other_feed": a.feed("T9"),
        }
        self.tokens["revoked"] = self._new_key("cashier")
        a.ok("DELETE", f"/api-keys/{self.key_id('revoked')}?reason=leaked", key=ADMIN_TOKEN)
        good = self.tokens["cashier"]
        self.tokens["forged"] = good[: good.rindex("_") + 1] + "x" * (
            len(good) - good.rindex("_") - 1
        )

    def _new_key(self, role: str) -> str:
        r = self.client.post(
            "/api-keys",
            json={"role": role, "tables": [], "player": None, "label": "revoked"},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        )
        assert r.status_code == 201, r.text
        token: str = r.json()["token"]
        return token

    def key_id(self, name: str) -> str:
        return self.tokens[name].split("_")[1]

    def normal(self, content: bytes) -> bytes:
        """The answer with this store's random key ids and secrets named instead."""
        for name, token in self.tokens.items():
            if name != "admin":
                content = content.replace(token.encode(), f"<{name}>".encode())
                content = content.replace(self.key_id(name).encode(), f"<{name}-id>".encode())
        return content


#: (method, path, key name or None, headers, body: JSON value or raw bytes, served hot)
Case = tuple[str, str, str | None, dict[str, str] | list[tuple[str, str]], Any, bool]


def _cases(rid: str) -> list[Case]:
    dep = "/wallets/ann/deposits"
    wd = "/wallets/ann/withdrawals"
    move = {"amount": "5.00", "transaction_id": "t-1"}
    bet = {"player": "ann", "amount": "10.00", "spot": 1, "request_id": "b-1"}
    return [
        ("POST", dep, "cashier", JSON, move, True),  # recorded
        ("POST", dep, "cashier", JSON, move, True),  # replayed: the first answer's bytes
        ("POST", dep, "cashier", JSON, {**move, "amount": "6.00"}, True),  # 422 key reused
        (
            "POST",
            dep,
            "cashier",
            {**JSON, "Idempotency-Key": "k-1"},
            {"amount": "1.00", "transaction_id": "t-2"},
            True,
        ),
        (
            "POST",
            dep,
            "cashier",
            {**JSON, "Idempotency-Key": "k-1"},
            {"amount": "2.00", "transaction_id": "t-2"},
            True,
        ),  # 422: the header's key reused
        (
            "POST",
            dep,
            "cashier",
            {**JSON, "Idempotency-Key": '"k-2"'},
            {"amount": "1.00", "transaction_id": "t-1"},
            True,
        ),  # 409 duplicate-transaction
        ("POST", dep, "cashier", {**JSON, "Idempotency-Key": "bad key"}, move, False),  # 422
        (
            "POST",
            dep,
            "cashier",
            [
                ("Content-Type", "application/json"),
                ("Idempotency-Key", "k-3"),
                ("Idempotency-Key", "k-4"),
            ],
            {"amount": "1.00", "transaction_id": "t-3"},
            False,
        ),
        ("POST", dep, None, JSON, move, True),  # 401: no key
        ("POST", dep, "revoked", JSON, move, True),  # 401: revoked
        ("POST", dep, "forged", JSON, move, True),  # 401: a wrong secret on a kept key
        ("POST", dep, "ann", JSON, move, True),  # 403: a player may not move money
        ("POST", dep, None, JSON, {"amount": 1.5}, False),  # 401 before the body's 422
        ("POST", dep, "ann", JSON, {"amount": 1.5}, False),  # 403 before the body's 422
        ("POST", dep, "cashier", JSON, {"amount": 1.5, "transaction_id": "t-9"}, False),
        ("POST", dep, "cashier", JSON, {"amount": "1.00"}, False),  # missing field
        ("POST", dep, "cashier", JSON, {**move, "extra": 1}, False),
        ("POST", dep, "cashier", JSON, [move], False),  # not an object
        ("POST", dep, "cashier", JSON, b'{"amount": "1.00", "amount": "2.00"}', False),
        ("POST", dep, "cashier", JSON, b'{"amount": ', False),  # malformed JSON
        ("POST", dep, "cashier", JSON, b"", False),  # no body
        ("POST", dep, "cashier", JSON, b"x" * (DEFAULT_MAX_BODY + 1), False),  # 413
        ("POST", dep, "cashier", {"Content-Type": "text/plain"}, move, False),
        (
            "POST",
            dep,
            "cashier",
            {"Content-Type": "application/json; charset=utf-8"},
            {"amount": "1.00", "transaction_id": "t-4"},
            False,
        ),
        ("POST", dep, "cashier", {}, move, False),  # no content type
        ("POST", dep + "?x=1", "cashier", JSON, move, False),
        (
            "POST",
            "/wallets/nobody/deposits",
            "cashier",
            JSON,
            {**move, "transaction_id": "t-5"},
            True,
        ),  # 404
        ("POST", "/wallets/a:b/deposits", "cashier", JSON, move, False),  # 422 invalid-id
        ("POST", wd, "cashier", JSON, {"amount": "1000.00", "transaction_id": "w-1"}, True),
        ("POST", wd, "cashier", JSON, {"amount": "1.00", "transaction_id": "w-2"}, True),
        ("POST", f"/rounds/{rid}/bets", "ann", JSON, bet, True),
        ("POST", f"/rounds/{rid}/bets", "ann", JSON, bet, True),  # replayed
        ("POST", f"/rounds/{rid}/bets", "bob", JSON, {**bet, "request_id": "b-2"}, True),  # 403
        (
            "POST",
            f"/rounds/{rid}/bets",
            "feed",
            JSON,
            {"player": "bob", "amount": "10.00", "spot": 2, "request_id": "b-3"},
            True,
        ),
        (
            "POST",
            f"/rounds/{rid}/bets",
            "other_feed",
            JSON,
            {**bet, "request_id": "b-4"},
            True,
        ),
        (
            "POST",
            f"/rounds/{rid}/bets",
            "feed",
            JSON,
            {**bet, "amount": "0.01", "request_id": "b-5"},
            True,
        ),
        ("POST", "/rounds/T1%2399/bets", "feed", JSON, {**bet, "request_id": "b-6"}, True),
        ("POST", "/rounds/not%20a%20round/bets", "feed", JSON, bet, False),
        ("POST", f"/rounds/{rid}/close-betting", "feed", JSON, {}, False),  # not a hot route
        (
            "POST",
            f"/rounds/{rid}/decisions",
            "ann",
            JSON,
            {"player": "ann", "action": "stand", "request_id": "d-1"},
            True,
        ),
        (
            "POST",
            f"/rounds/{rid}/decisions",
            "ann",
            JSON,
            {"player": "ann", "action": "fly", "hand": 1},
            False,
        ),
        ("POST", f"/rounds/{rid}/cards", "feed", JSON, {"card": "AS"}, True),  # a test shoe
        ("PUT", dep, "cashier", JSON, move, False),  # 405
    ]


def _send(side: Side, case: Case) -> Any:
    method, path, key, headers, body, _ = case
    sent: list[tuple[str, str]] = list(headers.items()) if isinstance(headers, dict) else headers
    if key is not None:
        sent = [("Authorization", f"Bearer {side.tokens[key]}"), *sent]
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return side.client.request(method, path, headers=sent, content=content)


def test_every_command_answer_is_the_routes_own(
    store_url: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = count_served(monkeypatch, HotCommands, "_command")
    with ExitStack() as stack:
        twin = stack.enter_context(twin_store_url(store_url, tmp_path, request))
        plain = Side(stack.enter_context(TestClient(_plain(create_app(service_settings(twin))))))
        hot = Side(stack.enter_context(TestClient(create_app(service_settings(store_url)))))
        assert plain.rid == hot.rid
        served.clear()  # the history's own commands
        expected, statuses = [], []
        for case in _cases(hot.rid):
            first, second = _send(plain, case), _send(hot, case)
            assert (second.status_code, second.headers.raw, hot.normal(second.content)) == (
                first.status_code,
                first.headers.raw,
                plain.normal(first.content),
            ), case[:3]
            statuses.append(first.status_code)
            if case[5]:
                expected.append(case[1].replace("%23", "#").replace("%20", " "))
        assert statuses[:14] == [200, 200, 422, 200, 422, 409, 422, 200, 401, 401, 401, 403,
                                 401, 403]  # fmt: skip
        assert statuses[14:28] == [422, 422, 422, 422, 422, 422, 422, 413, 422, 200, 422, 422,
                                   404, 422]  # fmt: skip
        assert statuses[28:] == [409, 200, 200, 200, 403, 200, 403, 409, 403, 422, 200, 200, 422,
                                 409, 405]  # fmt: skip
        for path in ("/wallets/ann", "/wallets/bob", f"/rounds/{hot.rid}"):
            a_, b_ = (s.api.request("GET", path, key=ADMIN_TOKEN) for s in (plain, hot))
            assert (a_.status_code, plain.normal(a_.content)) == (
                b_.status_code,
                hot.normal(b_.content),
            )
    assert served == expected


def test_the_hot_commands_are_read_from_fastapis_own_routes(tmp_path: Path) -> None:
    web = create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))
    found = {h.path: h for h in hot_commands(web)}
    assert tuple(found) == HOT_COMMANDS
    deposit = found["/wallets/{player_id}/deposits"]
    assert isinstance(deposit.guard, Authenticated)
    assert deposit.guard.action.value == "wallet.move"
    assert found["/rounds/{round_id}/bets"].guard.action.value == "round.bet"
    assert all(h.before == () for h in found.values())  # no route before them may match
    with pytest.raises(NotHot):  # a route of another shape is refused, not half served
        hot_commands(web, ("/rounds/{round_id}/bets/batch",))
    with pytest.raises(NotHot):
        hot_commands(web, ("/nowhere",))


def test_a_route_declared_before_a_hot_one_keeps_its_paths(tmp_path: Path) -> None:
    """A route that FastAPI would try first and that matches a hot path's request is left to
    FastAPI."""
    web = create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))
    shadow: Callable[[], dict[str, str]] = lambda: {"shadow": "yes"}  # noqa: E731
    web.router.routes.insert(1, _route("/wallets/special/deposits", shadow))
    (deposit,) = hot_commands(web, ("/wallets/{player_id}/deposits",))
    assert [r.path for r in deposit.before] == ["/wallets/special/deposits"]
    with TestClient(web) as client:
        a = Api(client)
        a.wallet("special")
        r = a.request("POST", "/wallets/special/deposits", headers=JSON,
                      content=orjson.dumps({"amount": "1.00", "transaction_id": "s"}))  # fmt: skip
        assert r.json() == {"shadow": "yes"}


def _route(path: str, endpoint: Callable[[], Any]) -> Any:
    from fastapi.routing import APIRoute

    return APIRoute(path, endpoint, methods=["POST"])


@pytest.mark.parametrize(
    "body",
    [
        b'{"amount": "1.00", "transaction_id": "t"}',
        b'{"amount": 10.0, "n": 1e2, "f": 0.1}',  # integral numbers become integers
        b'{"x": 1e-400, "y": [1, {"z": -0.0}], "w": 2.5e-300}',  # near a double's limits
        b'[1, "\\u00e9", null, true]',
    ],
)
def test_the_body_gate_passes_on_what_the_route_reads(body: bytes) -> None:
    """``request.state.json_body`` (what the hot commands validate) is exactly the value the
    route reads back from the body the gate passes on."""
    import asyncio
    import json

    from api.limits import BodyGate

    seen: dict[str, Any] = {}

    async def route(scope: Any, receive: Any, send: Any) -> None:
        seen["read"] = json.loads((await receive())["body"])
        seen["state"] = scope["state"]["json_body"]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        raise AssertionError(message)

    gate = BodyGate(route, routes=list)
    scope = {"type": "http", "method": "POST", "path": "/x", "headers": []}
    asyncio.run(gate(scope, receive, send))
    assert seen["state"] == seen["read"]
    assert repr(seen["state"]) == repr(seen["read"])  # -0.0 and types too


def test_a_route_the_hot_path_cannot_serve_is_left_to_fastapi_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A hot path that cannot read a route (another shape, another FastAPI's internals) warns
    and leaves that route to FastAPI: the request is answered as FastAPI answers it, never
    refused by the optimisation; the routes it can read are still served hot."""
    web = create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))
    paths = ("/nowhere", "/wallets/{player_id}/deposits")
    web.user_middleware = [
        m if m.cls is not HotCommands else type(m)(HotCommands, web=web, paths=paths)
        for m in web.user_middleware
    ]
    served = count_served(monkeypatch, HotCommands, "_command")
    with TestClient(web) as client, caplog.at_level("WARNING", logger="roundaudit.api.hotpath"):
        api = Api(client)
        api.wallet("ann", deposit="10.00")  # served hot
        api.ok("POST", "/wallets/ann/withdrawals", json={"amount": "4.00", "transaction_id": "w"})
        assert api.balance("ann") == "6.00"
    assert served == ["/wallets/ann/deposits"]  # the withdrawal went through FastAPI
    warned = [r.getMessage() for r in caplog.records]
    assert any("POST /nowhere is served by FastAPI alone" in m for m in warned), warned


def test_another_fastapis_route_table_is_not_hot(tmp_path: Path) -> None:
    """Internals that do not read as expected make :class:`NotHot`, which the middleware
    turns into FastAPI serving the route (above), not an error on every command."""
    web = create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))

    class Odd:
        path = "/wallets/{player_id}/deposits"
        methods = {"POST"}
        dependant = None  # not FastAPI's dependant

    web.router.routes.insert(0, Odd())  # type: ignore[arg-type]
    with pytest.raises(NotHot, match="route table does not read as expected"):
        hot_commands(web, ("/wallets/{player_id}/deposits",))

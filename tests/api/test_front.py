"""The service's front (``api.front``) answers what FastAPI's whole stack answers.

Two services, each on a store of its own with the same history: one as served (the front on),
the other with the front off (``create_app(front=False)``: every request through FastAPI's
stack, the hot paths still its middlewares). Each request, taken by the front or not, valid or
hostile (refusals of the key, the Host check, the body gate, the route's fields, the domain,
an unexpected error), goes to both: the status, every header and the body are the same bytes.
What the front does not take reaches FastAPI's stack as the server sent it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from apikit import ADMIN_TOKEN, count_served, service_settings
from fastapi import FastAPI
from fastapi.testclient import TestClient
from storekit import twin_store_url
from test_hotcommands import JSON, Side, _cases, _send

import api.hotpath
import api.limits
from api.front import Front
from api.hotpath import HotCommands, HotReads
from api.main import create_app


def _same(plain: Side, front: Side, case: Any) -> int:
    first, second = _send(plain, case), _send(front, case)
    assert (second.status_code, second.headers.raw, front.normal(second.content)) == (
        first.status_code,
        first.headers.raw,
        plain.normal(first.content),
    ), case[:4]
    return first.status_code


@pytest.fixture
def full_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """(path, whether the body gate had already run) of each request that reached FastAPI's
    stack (``FastAPI.__call__``) from now on."""
    calls: list[tuple[str, bool]] = []
    original = FastAPI.__call__

    async def spy(self: FastAPI, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            calls.append((scope["path"], "canonical_body" in scope.get("state", {})))
        await original(self, scope, receive, send)

    monkeypatch.setattr(FastAPI, "__call__", spy)
    return calls


@pytest.fixture
def twins(
    store_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Side, Side]]:
    """(front off, front on), each on its own store with the same history."""
    with ExitStack() as stack:
        twin = stack.enter_context(twin_store_url(store_url, tmp_path, request))
        plain = Side(
            stack.enter_context(TestClient(create_app(service_settings(twin), front=False)))
        )
        front = Side(stack.enter_context(TestClient(create_app(service_settings(store_url)))))
        assert plain.rid == front.rid
        yield plain, front


def test_every_answer_is_the_whole_stacks(
    twins: tuple[Side, Side],
    monkeypatch: pytest.MonkeyPatch,
    full_calls: list[tuple[str, bool]],
) -> None:
    plain, front = twins
    commands = count_served(monkeypatch, HotCommands, "_command")
    reads = count_served(monkeypatch, HotReads, "_read")
    rid = front.rid
    full_calls.clear()
    cases = [
        *_cases(rid),
        ("POST", "/wallets/ann/deposits", "cashier", {**JSON, "Host": "evil.example"},
         {"amount": "1.00", "transaction_id": "h-1"}, False),  # 400 invalid-host
        ("POST", "/wallets/ann/deposits", "cashier", {**JSON, "Host": "testserver:80"},
         {"amount": "1.00", "transaction_id": "h-2"}, True),  # a port: the same host
        ("POST", "/wallets/ann/deposits", "cashier", {**JSON, "Content-Length": "2000000"},
         b"{}", False),  # 413 by the declared length, unread
        ("POST", "/wallets/ann/deposits", "cashier", JSON,
         b'{"amount": 9007199254740991.4, "transaction_id": "x-1"}', False),  # 422 MONEY-1
        ("POST", "/wallets/ann/deposits", "cashier", {**JSON, "Origin": "https://a.example"},
         {"amount": "1.00", "transaction_id": "o-1"}, True),  # no CORS configured
        ("GET", f"/rounds/{rid}", "admin", {}, b"", True),
        ("GET", f"/rounds/{rid}", "ann", {}, b"", True),
        ("GET", f"/rounds/{rid}", "other_feed", {}, b"", True),  # 403
        ("GET", f"/rounds/{rid}", None, {}, b"", True),  # 401
        ("GET", f"/rounds/{rid}", "admin", JSON, b'{"a": 1, "a": 2}', False),  # 422: the gate
        ("GET", f"/rounds/{rid}", "admin", {"Host": "evil.example"}, b"", False),  # 400
        ("GET", "/rounds/00000000-0000-4000-8000-000000000000", "admin", {}, b"", True),  # 404
        ("GET", f"/rounds/{rid}?x=1", "admin", {}, b"", False),
        ("GET", "/rules", "admin", {}, b"", False),
        ("GET", "/wallets/ann", "admin", {}, b"", False),
        ("GET", "/openapi.json", None, {}, b"", False),
        ("HEAD", f"/rounds/{rid}", "admin", {}, b"", False),
        ("POST", "/wallets", "admin", JSON, {"player_id": "cy", "account_type": "test"}, False),
        ("DELETE", f"/rounds/{rid}", "admin", {}, b"", False),
    ]  # fmt: skip
    statuses, expected = [], []
    for case in cases:
        first = _send(plain, case)
        reached = len(full_calls)
        second = _send(front, case)
        full = full_calls[reached:]
        assert (second.status_code, second.headers.raw, front.normal(second.content)) == (
            first.status_code,
            first.headers.raw,
            plain.normal(first.content),
        ), case[:4]
        statuses.append(first.status_code)
        if case[5]:  # the front took it: FastAPI's stack never saw it
            assert full == [], case[:4]
            expected.append((case[0], case[1].replace("%23", "#").replace("%20", " ")))
        elif _code(second) in (
            "invalid-host",
            "payload-too-large",
            "malformed-json",
        ):  # refused by the Host check or the body gate: the front's, or the stack's
            assert len(full) <= 1, case[:4]
        else:  # FastAPI's stack answered it
            assert len(full) == 1, case[:4]
            gated = full[0][1]
            # a request of a hot path reaches it with its body checked (again, by the same
            # gate); any other as the server sent it
            assert gated == (case[0] == "POST" and bool(HOT_PATH.fullmatch(case[1]))), case[:4]
    assert statuses[-19:] == [400, 200, 413, 422, 200, 200, 200, 403, 401, 422, 400, 404, 200, 200,
                              200, 200, 405, 201, 405]  # fmt: skip
    assert plain.api.balance("ann") == front.api.balance("ann")
    # the hot paths answered what the front took: once on each side
    served = [("POST", p) for p in commands] + [("GET", p) for p in reads]
    assert sorted(served) == sorted(expected * 2)


def _code(answer: Any) -> str | None:
    """The problem code of an answer (None: not a problem document, or no body)."""
    if answer.headers.get("content-type") != "application/problem+json" or not answer.content:
        return None
    code: str = answer.json()["code"]
    return code


#: The paths of the hot commands (``api.hotpath.HOT_COMMANDS``), any id.
HOT_PATH = re.compile(
    r"/(wallets/[^/?]+/(deposits|withdrawals)|rounds/[^/?]+/(bets|decisions|cards))"
)


@pytest.mark.parametrize(
    ("where", "name"),
    [(api.hotpath, "_guarded_command"), (api.limits, "parse_exact")],
    ids=["in the hot path", "in the body gate"],
)
def test_an_unexpected_error_is_answered_and_raised_as_by_the_stack(
    twins: tuple[Side, Side], monkeypatch: pytest.MonkeyPatch, where: Any, name: str
) -> None:
    """An unexpected error, in the hot path or in a step before it: the 500 problem of the
    application's handler without the security headers (Starlette's server-error middleware
    is outside them), then the exception to the server."""
    plain, front = twins

    def boom(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(where, name, boom)
    deposit = ("POST", "/wallets/ann/deposits", "cashier", JSON,
               {"amount": "1.00", "transaction_id": "e-1"}, True)  # fmt: skip
    answers = []
    for side in (plain, front):
        transport = side.client._transport  # TestClient's: whether it raises the app's error
        transport.raise_server_exceptions = False  # type: ignore[attr-defined]
        answers.append(_send(side, deposit))
        transport.raise_server_exceptions = True  # type: ignore[attr-defined]
        with pytest.raises(RuntimeError, match="boom"):  # then to the server, as the stack
            _send(side, deposit)
    first, second = answers
    incident = re.compile(rb"[0-9a-f]{32}")  # the incident's id, new each time
    assert (second.status_code, second.headers.raw, incident.sub(b"", second.content)) == (
        first.status_code,
        first.headers.raw,
        incident.sub(b"", first.content),
    )
    assert first.status_code == 500
    assert b"x-frame-options" not in {k.lower() for k, _ in first.headers.raw}


def test_with_cors_every_request_is_the_stacks(
    tmp_path: Path, full_calls: list[tuple[str, bool]]
) -> None:
    """CORS's middleware touches every answer (``Vary: Origin`` even without an ``Origin``):
    with CORS configured the front takes nothing."""
    settings = {"cors_origins": ("https://ok.example",)}
    with ExitStack() as stack:

        def side(name: str, front: bool) -> Side:
            url = f"sqlite:///{tmp_path}/{name}.db"
            web = create_app(service_settings(url, **settings), front=front)
            return Side(stack.enter_context(TestClient(web)))

        plain, front = side("a", False), side("b", True)
        full_calls.clear()
        for i, origin in enumerate(("https://ok.example", "https://other.example", None)):
            move = {"amount": "1.00", "transaction_id": f"c-{i}"}
            headers = {**JSON, "Origin": origin} if origin else JSON
            assert _same(plain, front, ("POST", "/wallets/ann/deposits", "cashier", headers,
                                        move, False)) == 200  # fmt: skip
            get = {"Origin": origin} if origin else {}
            assert _same(plain, front, ("GET", f"/rounds/{front.rid}", "admin", get, b"",
                                        False)) == 200  # fmt: skip
        assert [p for p, _ in full_calls].count("/wallets/ann/deposits") == 6  # both sides'
        assert front.client.app._front == "off"  # type: ignore[attr-defined]


def test_the_front_is_made_only_from_the_stack_it_reproduces(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    web = create_app(service_settings(url))
    assert isinstance(Front.of(web), Front)
    assert Front.of(create_app(service_settings(url), front=False)) is not None  # made, unused
    other = create_app(service_settings(url))
    other.add_middleware(HotReads, web=other)  # a middleware the front does not reproduce
    assert Front.of(other) is None
    no_hot = create_app(service_settings(url))
    no_hot.user_middleware = [
        m for m in no_hot.user_middleware if m.cls not in (HotReads, HotCommands)
    ]
    assert Front.of(no_hot) is None
    rooted = create_app(service_settings(url))
    rooted.root_path = "/api"
    assert Front.of(rooted) is None
    with TestClient(create_app(service_settings(url), front=False)) as client:
        assert client.get("/health").status_code == 200
        assert client.app._front == "off"  # type: ignore[attr-defined]
    with TestClient(create_app(service_settings(url))) as client:
        assert client.get("/health").status_code == 200
        assert isinstance(client.app._front, Front)  # type: ignore[attr-defined]
    _ = ADMIN_TOKEN

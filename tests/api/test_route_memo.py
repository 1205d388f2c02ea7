"""The single commands' route match kept per path (``api.hotpath.HotCommands.route_of``,
branch `hdep3`) answers what FastAPI's match answers:

* for every hot route's paths and their near misses (other segments, a trailing slash, escapes,
  other methods' paths), asked once (matched, then kept) and again (from the table): the same
  route and path parameters as the routes' own ``match``, or none;
* each answer's parameters are the caller's own dict (changing one changes no later answer);
* a scope that carries its own path parameters is matched by FastAPI (which merges them);
* the table holds at most ``ROUTES_KEPT`` paths; only FastAPI's effective routes of
  ``APIRoute``s are kept by path, and a route declared before a hot one turns the table off
  (every request matched by FastAPI, the earlier route still served).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apikit import service_settings
from fastapi import FastAPI
from fastapi.routing import APIRoute

import api.hotpath
from api.hotpath import ROUTES_KEPT, HotCommand, HotCommands, _by_path_alone
from api.main import create_app


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not called")


def _commands(web: FastAPI) -> HotCommands:
    return HotCommands(_never, web)


def _scope(path: str, **extra: Any) -> dict[str, Any]:
    scope = {
        "type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
        "query_string": b"", "root_path": "", "headers": [], "state": {},
    }  # fmt: skip
    scope.update(extra)
    return scope


def _fastapis(hc: HotCommands, scope: dict[str, Any]) -> tuple[HotCommand, Any] | None:
    """The first hot route whose own match (FastAPI's) takes ``scope``, with its parameters."""
    for hot in hc.commands():
        params = hot.match(scope)
        if params is not None:
            return hot, params
    return None


PATHS = [
    "/wallets/h1/deposits",
    "/wallets/h1/withdrawals",
    "/wallets/a%20b/deposits",
    "/wallets/%2F/deposits",
    "/wallets/ü/deposits",
    "/wallets/h1/deposits/",
    "/wallets//deposits",
    "/wallets/h1/h2/deposits",
    "/wallets/h1",
    "/wallets",
    "/rounds/r-1/bets",
    "/rounds/r-1/decisions",
    "/rounds/r-1/cards",
    "/rounds/r-1/bets/batch",
    "/rounds/r-1/settle",
    "/rounds/00000000-0000-0000-0000-000000000001/cards",
    "/api-keys",
    "/",
    "",
    "/nowhere/h1/deposits",
]


@pytest.fixture
def web(tmp_path: Path) -> FastAPI:
    return create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))


def test_a_kept_route_is_fastapis_match(web: FastAPI) -> None:
    hc = _commands(web)
    hc.commands()
    assert hc._routes is not None  # this FastAPI's routes are matched by the path alone
    for rounds in range(3):  # matched and kept, then from the table
        for path in PATHS:
            assert hc.route_of(_scope(path)) == _fastapis(hc, _scope(path)), (rounds, path)
    assert hc.route_of(_scope("/wallets/h7/deposits")) is not None
    assert len(hc._routes) == len(PATHS) + 1


def test_each_answer_has_its_own_parameters(web: FastAPI) -> None:
    hc = _commands(web)
    first = hc.route_of(_scope("/wallets/h1/deposits"))
    assert first is not None
    assert first[1] == {"player_id": "h1"}
    first[1]["player_id"] = "changed"
    first[1]["extra"] = 1
    again = hc.route_of(_scope("/wallets/h1/deposits"))
    assert again is not None
    assert again[1] == {"player_id": "h1"}
    assert again[1] is not first[1]


def test_a_scopes_own_path_parameters_are_merged_as_fastapi_does(web: FastAPI) -> None:
    hc = _commands(web)
    assert hc.route_of(_scope("/wallets/h1/deposits")) is not None  # kept without them
    scope = _scope("/wallets/h1/deposits", path_params={"outer": "x", "player_id": "old"})
    found = hc.route_of(scope)
    assert found is not None
    assert found[1] == {"outer": "x", "player_id": "h1"}
    assert found == _fastapis(hc, scope)


def test_what_route_of_refuses_before_matching_is_not_kept(web: FastAPI) -> None:
    hc = _commands(web)
    path = "/wallets/h1/deposits"
    assert hc.route_of(_scope(path, method="PUT")) is None
    assert hc.route_of(_scope(path, query_string=b"a=1")) is None
    assert hc.route_of(_scope(path, root_path="/api")) is None
    web.dependency_overrides[_never] = _never
    assert hc.route_of(_scope(path)) is None
    web.dependency_overrides.clear()
    assert hc.route_of(_scope(path)) is not None


def test_the_table_is_bounded(web: FastAPI) -> None:
    hc = _commands(web)
    for i in range(ROUTES_KEPT + 10):
        found = hc.route_of(_scope(f"/wallets/p{i}/deposits"))
        assert found is not None
        assert found[1] == {"player_id": f"p{i}"}
    assert hc._routes is not None
    assert len(hc._routes) <= ROUTES_KEPT


def test_a_route_before_a_hot_one_turns_the_table_off(web: FastAPI) -> None:
    shadow = APIRoute("/wallets/special/deposits", lambda: {"shadow": "yes"}, methods=["POST"])
    web.router.routes.insert(1, shadow)
    hc = _commands(web)
    assert hc.route_of(_scope("/wallets/special/deposits")) is None  # the earlier route's
    assert hc._routes is None
    found = hc.route_of(_scope("/wallets/h1/deposits"))
    assert found is not None
    assert found[1] == {"player_id": "h1"}


def test_another_fastapis_routes_are_matched_request_by_request(
    web: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api.hotpath, "_EFFECTIVE_ROUTE", None)
    hc = _commands(web)
    for path in PATHS:
        assert hc.route_of(_scope(path)) == _fastapis(hc, _scope(path))
    assert hc._routes is None


def test_only_fastapis_effective_routes_of_api_routes_are_kept(web: FastAPI) -> None:
    hc = _commands(web)
    assert all(_by_path_alone(h.context) for h in hc.commands())
    plain = APIRoute("/wallets/{player_id}/deposits", lambda: None, methods=["POST"])
    assert not _by_path_alone(plain)  # its match reads the scope's "fastapi" entry too
    assert not _by_path_alone(object())

"""``GET /rounds/{id}``'s own path (``api.hotpath``) answers what FastAPI's route answers.

Two service processes on one store (SQLite and PostgreSQL): one as served, the other with the
hot path taken out (every request through FastAPI's routing and dependencies). Each request,
valid or hostile, goes to both, one after the other: the status, every header and the body are
the same bytes, the round views' cache is read the same way (hits and misses), and the hot
path really served the requests it claims (counted), left the others to FastAPI.
"""

from __future__ import annotations

from typing import Any

import pytest
from apikit import ADMIN_TOKEN, Api, count_served, service_settings
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.hotpath import HotReads, round_path_id
from api.main import create_app
from api.roundviews import RoundViews
from domain.ids import round_uuid

ORDER = ["10H", "9S", "6D", "QD", "5C", "3H", "JC", "AH", "2S"]


def _without_hot_path(web: FastAPI) -> FastAPI:
    web.user_middleware = [m for m in web.user_middleware if m.cls is not HotReads]
    return web


def _views(client: TestClient) -> RoundViews:
    views: RoundViews = client.app.state.round_views  # type: ignore[attr-defined]
    return views


def test_every_answer_is_the_routes_own(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = service_settings(store_url)
    served = count_served(monkeypatch, HotReads, "_read")
    with (
        TestClient(create_app(settings)) as hot,
        TestClient(_without_hot_path(create_app(settings))) as plain,
    ):
        a = Api(plain)
        a.wallet("ann", deposit="100.00")
        rid = a.start("T1", "multihand", ORDER)
        ann = a.key("player", player="ann")
        bob = a.key("player", player="bob")
        investigator = a.key("investigator")
        other_feed = a.feed("T9")
        revoked = a.key("cashier")
        a.ok(
            "POST", f"/rounds/{rid}/bets", key=ann,
            json={"player": "ann", "amount": "10.00", "spot": 1},
        )  # fmt: skip
        wallet = a.ok("GET", "/wallets/ann")["wallet_id"]
        a.ok("DELETE", f"/api-keys/{revoked.split('_')[1]}?reason=leaked", key=ADMIN_TOKEN)
        unknown = "00000000-0000-4000-8000-000000000000"
        bad_secret = ann[: ann.rindex("_") + 1] + "x" * (len(ann) - ann.rindex("_") - 1)

        def auth(token: str, scheme: str = "Bearer") -> dict[str, str]:
            return {"Authorization": f"{scheme} {token}"}

        # (path, headers, served by the hot path)
        cases: list[tuple[str, dict[str, str], bool]] = [
            (f"/rounds/{rid}", auth(ADMIN_TOKEN), True),  # a miss: the view made and kept
            (f"/rounds/{rid}", auth(ADMIN_TOKEN), True),  # a hit
            (f"/rounds/{rid}", auth(ann), True),
            (f"/rounds/{rid}", auth(investigator, "bearer"), True),
            (f"/rounds/{rid}", auth(bob), True),  # 403 on the kept facts
            (f"/rounds/{rid}", auth(other_feed), True),  # 403
            (f"/rounds/{rid}", auth(revoked), True),  # 401: revoked
            (f"/rounds/{rid}", auth(bad_secret), True),  # 401: a forged secret on a kept key
            (f"/rounds/{rid}", auth("rak_nonsense"), True),  # 401: malformed
            (f"/rounds/{rid}", auth(ADMIN_TOKEN, "Basic"), True),  # 401: not a bearer key
            (f"/rounds/{rid}", {"Authorization": "Bearer"}, True),  # 401
            (f"/rounds/{rid}", {}, True),  # 401: no key
            (f"/rounds/{unknown}", auth(ADMIN_TOKEN), True),  # 404
            (f"/rounds/{unknown}", auth(other_feed), True),  # 403, whether it exists or not
            (f"/rounds/{wallet}", auth(ADMIN_TOKEN), True),  # 404: another aggregate
            ("/rounds/T1%231", auth(ADMIN_TOKEN), True),  # TABLE#NUMBER: the same round
            ("/rounds/T1%2399", auth(ADMIN_TOKEN), True),  # 404
            (f"/rounds/{rid.upper()}", auth(ADMIN_TOKEN), True),
            ("/rounds/not%20an%20id", auth(ADMIN_TOKEN), False),  # 422 invalid-id
            ("/rounds/not%20an%20id", {}, False),  # 401 before the 422
            (f"/rounds/{rid}?x=1", auth(ADMIN_TOKEN), False),  # a query: FastAPI's
            (f"/rounds/{rid}/", auth(ADMIN_TOKEN), False),
            (f"/rounds/{rid}/events", auth(ADMIN_TOKEN), False),
            ("/rounds", auth(ADMIN_TOKEN), False),
            ("/rounds/", auth(ADMIN_TOKEN), False),
        ]
        expected, statuses = [], []
        for path, headers, hot_one in cases:
            sent = [(c.get(path, headers=headers, follow_redirects=False)) for c in (plain, hot)]
            first, second = sent
            assert (second.status_code, second.headers.raw, second.content) == (
                first.status_code,
                first.headers.raw,
                first.content,
            ), path
            statuses.append(first.status_code)
            if hot_one:
                expected.append(path)
        assert statuses[:14] == [200, 200, 200, 200, 403, 403, 401, 401, 401, 401, 401, 401,
                                 404, 403]  # fmt: skip
        assert statuses[14:20] == [404, 200, 404, 200, 422, 401]
        # other methods and hosts: as before
        for method in ("HEAD", "POST", "DELETE"):
            a_, b_ = (c.request(method, f"/rounds/{rid}", headers=auth(ADMIN_TOKEN)) for c in
                      (plain, hot))  # fmt: skip
            assert (a_.status_code, a_.headers.raw, a_.content) == (
                b_.status_code, b_.headers.raw, b_.content,
            )  # fmt: skip
        evil = {**auth(ADMIN_TOKEN), "Host": "evil.example"}
        a_, b_ = (c.get(f"/rounds/{rid}", headers=evil) for c in (plain, hot))
        assert a_.status_code == b_.status_code == 400
        assert a_.content == b_.content
        views_hot, views_plain = _views(hot), _views(plain)
        assert (views_hot.hits, views_hot.misses) == (views_plain.hits, views_plain.misses)
        assert views_hot.hits > 0
    # the hot path served exactly the requests it claims (paths as the server saw them)
    assert len(served) == len(expected)


def test_only_get_of_a_valid_round_id_is_taken() -> None:
    def scope(method: str, path: str, query: bytes = b"") -> dict[str, Any]:
        return {"type": "http", "method": method, "path": path, "query_string": query}

    rid = "6f1c2b1e-9a3e-5f7a-8d53-0f2f5a2e8b11"
    assert round_path_id(scope("GET", f"/rounds/{rid}")) == rid
    assert round_path_id(scope("GET", f"/rounds/{rid.upper()}")) == rid
    assert round_path_id(scope("GET", "/rounds/T1#1")) is not None
    for method, path, query in (
        ("HEAD", f"/rounds/{rid}", b""),
        ("POST", f"/rounds/{rid}", b""),
        ("GET", f"/rounds/{rid}", b"a=1"),
        ("GET", f"/rounds/{rid}/", b""),
        ("GET", f"/rounds/{rid}/events", b""),
        ("GET", "/rounds/", b""),
        ("GET", "/rounds/not an id", b""),
        ("GET", f"/wallets/{rid}", b""),
    ):
        assert round_path_id(scope(method, path, query)) is None, (method, path)
    assert round_path_id({"type": "websocket", "path": f"/rounds/{rid}"}) is None


def test_a_round_path_id_kept_is_the_wire_types_own() -> None:
    """The canonical ids kept for the segments last seen (``round_path_id``): asked again, and
    among many others, each is what the route's wire type makes of that segment, refusals
    included."""
    from pydantic import TypeAdapter, ValidationError

    from api.wire import RoundId

    wire: TypeAdapter[str] = TypeAdapter(RoundId)

    def own(segment: str) -> str | None:
        try:
            return wire.validate_python(segment)
        except ValidationError:
            return None

    segments = [f"T{t}#{n}" for t in range(40) for n in range(1, 4)]
    segments += [str(round_uuid(s)).upper() for s in segments[:20]]
    segments += ["not-an-id", "T1#0", "T1#x", "%23", "6f1c2b1e-9a3e-5f7a-8d53-0f2f5a2e8b1"]
    for _ in range(2):
        for segment in segments:
            path = {"type": "http", "method": "GET", "path": f"/rounds/{segment}"}
            assert round_path_id(path) == own(segment), segment
    assert len({round_path_id({"type": "http", "method": "GET", "path": f"/rounds/{s}"})
                for s in segments[:120]}) == 120  # fmt: skip


def test_each_inner_path_gets_its_own_exception_handling_wrapper() -> None:
    """``_OwnPath._with_handlers`` keeps one wrapper per inner path (a bound method is a new
    object at each access): the same inner again reuses it, another inner is never answered
    by the first one's wrapper."""
    seen: list[str] = []

    class TwoPaths(HotReads):
        async def first(self, scope: Any, receive: Any, send: Any) -> None:
            seen.append("first")

        async def second(self, scope: Any, receive: Any, send: Any) -> None:
            seen.append("second")

    async def app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover
        raise AssertionError("not reached")

    paths = TwoPaths(app, FastAPI())
    one = paths._with_handlers(paths.first)
    assert paths._with_handlers(paths.first) is one
    two = paths._with_handlers(paths.second)
    assert two is not one

    import asyncio

    async def call(wrapped: Any) -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        async def send(message: Any) -> None:
            return None

        await wrapped({"type": "http", "path": "/", "method": "GET"}, receive, send)

    asyncio.run(call(two))
    asyncio.run(call(one))
    assert seen == ["second", "first"]

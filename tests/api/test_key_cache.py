"""The keys a service process keeps decoded (``api.auth.KeyCache``), attacked: a kept key id
with another secret, a key revoked through another process, a key re-read after it changed.
"""

from __future__ import annotations

import pytest
from apikit import ADMIN_TOKEN, Api, check_problem, service_settings
from fastapi.testclient import TestClient

from api.auth import KeyCache
from api.main import create_app


def _kept(client: TestClient) -> KeyCache:
    cache: KeyCache = client.app.state.key_cache  # type: ignore[attr-defined]
    return cache


def test_a_kept_key_still_needs_its_secret_and_falls_with_its_revocation(store_url: str) -> None:
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        a, b = Api(one), Api(two)
        token = a.key("investigator")
        key_id = token.split("_")[1]
        for _ in range(2):
            assert b.ok("GET", "/rules", key=token)["rules"]
        assert key_id in _kept(two)._kept  # kept decoded by the second process
        _, kept_key, principal = _kept(two)._kept[key_id]
        assert principal == kept_key.principal()  # kept with the key, as the key makes it
        forged = f"rak_{key_id}_{'A' * 43}"  # the kept key's id, another secret
        check_problem(b.request("GET", "/rules", key=forged), 401, "unauthenticated")
        assert b.ok("GET", "/rules", key=token)["rules"]  # the real one still works
        a.ok("DELETE", f"/api-keys/{key_id}?reason=leaked", key=ADMIN_TOKEN)  # other process
        for _ in range(2):
            check_problem(b.request("GET", "/rules", key=token), 401, "unauthenticated")
        assert not any(key.revoked for _, key, _ in _kept(two)._kept.values())  # never kept
        check_problem(b.request("GET", "/rules", key=forged), 401, "unauthenticated")
        check_problem(two.get("/rules"), 401, "unauthenticated")


def test_a_key_not_kept_is_decoded_once_then_served_from_the_cache(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = service_settings(store_url)
    with TestClient(create_app(settings)) as client:
        api = Api(client)
        token = api.key("investigator")
        key_id = token.split("_")[1]
        keys = client.app.state.audit.keys  # type: ignore[attr-defined]
        loads: list[str] = []
        load = keys.load

        def counted(kid: str):  # type: ignore[no-untyped-def]
            loads.append(kid)
            return load(kid)

        monkeypatch.setattr(keys, "load", counted)
        _kept(client)._kept.clear()
        assert api.ok("GET", "/rules", key=token)["rules"]  # a miss: one decode
        assert loads.count(key_id) == 1
        assert api.ok("GET", "/rules", key=token)["rules"]  # kept: no decode
        assert loads.count(key_id) == 1


def test_a_tokens_stored_key_id_is_its_keys_own() -> None:
    """``KeyCache.stream`` (the stored id of a token's key, computed once per key id): for many
    keys, asked again, each is ``ApiKey.create_id`` of that token's key id; a malformed token
    has none."""
    from domain.keys import ApiKey, new_token, parse_token

    tokens = [new_token() for _ in range(50)]
    for _ in range(2):
        for token in tokens:
            parsed = parse_token(token)
            assert parsed is not None
            assert KeyCache.stream(token) == ApiKey.create_id(parsed[0])
    assert len({KeyCache.stream(t) for t in tokens}) == len(tokens)
    assert KeyCache.stream("rak_nothex_x") is None
    assert KeyCache.stream(None) is None

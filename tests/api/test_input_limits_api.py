"""Malformed ids and out-of-range numbers are refused as domain errors (422), never a 500,
and before anything is recorded (found through the HTTP layer, fixed in the application)."""

from __future__ import annotations

from typing import Any

import pytest
from apikit import Api
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings


@pytest.mark.parametrize(
    ("method", "url", "body", "status"),
    [
        ("GET", "/wallets/a:b", None, 404),
        ("POST", "/wallets", {"player_id": "a:b"}, 422),
        (
            "POST",
            "/shoes",
            {"table_id": "T:1", "shoe_number": 1, "kind": "live", "decks": 8},
            422,
        ),
        ("POST", "/rounds", {"table_id": "T:1", "round_number": 1, "variant": "lucky7"}, 422),
    ],
)
def test_an_id_with_a_colon_is_refused_as_a_domain_error(
    api: Api, method: str, url: str, body: Any, status: int
) -> None:
    r = api.client.request(method, url, json=body)
    assert r.status_code == status, r.text
    assert "':'" in r.json()["detail"]


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/rounds", {"table_id": "T1", "round_number": 2**63, "variant": "lucky7"}),
        ("/shoes", {"table_id": "T1", "shoe_number": 2**63, "kind": "live", "decks": 8}),
    ],
)
def test_an_integer_beyond_64_bits_is_a_422(settings: Settings, url: str, body: Any) -> None:
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        api = Api(c)
        api.table("T1", "lucky7")
        r = api.client.post(url, json=body)
    assert r.status_code == 422, r.text


def test_round_number_zero_is_refused_naming_the_round_number(api: Api) -> None:
    api.table("T1", "lucky7")
    body = api.problem(
        "POST",
        "/rounds",
        422,
        "invalid-request",
        json={"table_id": "T1", "round_number": 0, "variant": "lucky7"},
    )
    assert "round_number" in body["detail"]

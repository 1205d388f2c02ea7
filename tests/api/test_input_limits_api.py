"""Out-of-range numbers are refused (422), never a 500, and before anything is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from apikit import Api
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings


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
        "validation-error",
        json={"table_id": "T1", "round_number": 0, "variant": "lucky7"},
    )
    assert "round_number" in body["detail"]

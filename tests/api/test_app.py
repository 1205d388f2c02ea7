"""The application as a whole: docs, OpenAPI, health, rules, settings, generic problems."""

from __future__ import annotations

from pathlib import Path

import pytest
from apikit import Api, check_problem
from fastapi.testclient import TestClient

from api.main import create_app, get_app
from api.settings import DATABASE_URL_ENV, Settings, SettingsError, load_settings
from domain.application import RoundAudit
from domain.persistence import DEFAULT_DATABASE_URL, environment_for
from domain.rules import CURRENT, PUBLISHED

EXPECTED_ROUTES = {
    ("post", "/wallets"),
    ("get", "/wallets/{player_id}"),
    ("post", "/wallets/{player_id}/deposits"),
    ("post", "/wallets/{player_id}/withdrawals"),
    ("post", "/shoes"),
    ("get", "/shoes/{shoe_id}"),
    ("post", "/shoes/{shoe_id}/burn"),
    ("post", "/shoes/{shoe_id}/cut-card"),
    ("post", "/shoes/{shoe_id}/retire"),
    ("post", "/rounds"),
    ("get", "/rounds/{round_id}"),
    ("get", "/rounds/{round_id}/events"),
    ("post", "/rounds/{round_id}/bets"),
    ("post", "/rounds/{round_id}/close-betting"),
    ("post", "/rounds/{round_id}/cards"),
    ("post", "/rounds/{round_id}/decisions"),
    ("post", "/rounds/{round_id}/timeouts"),
    ("post", "/rounds/{round_id}/disconnections"),
    ("post", "/rounds/{round_id}/insurance-window/close"),
    ("post", "/rounds/{round_id}/pause"),
    ("post", "/rounds/{round_id}/resume"),
    ("post", "/rounds/{round_id}/cancel"),
    ("get", "/rules"),
    ("get", "/rules/{key}"),
    ("get", "/health"),
}


def test_docs_page_is_served(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "swagger" in r.text.lower()
    assert "/openapi.json" in r.text


def test_openapi_lists_every_route_and_describes_the_service(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["info"]["title"] == "roundaudit"
    assert "blackjack" in doc["info"]["description"]
    routes = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert routes >= EXPECTED_ROUTES, EXPECTED_ROUTES - routes
    bet = doc["components"]["schemas"]["BetPlace"]["properties"]["amount"]
    assert "MONEY-1" in bet["description"]
    headers = [p["name"] for p in doc["paths"]["/rounds/{round_id}/bets"]["post"]["parameters"]]
    assert "Idempotency-Key" in headers


def test_health_names_the_store_and_answers_from_it(api: Api, settings: Settings) -> None:
    body = api.ok("GET", "/health")
    assert body["status"] == "ok"
    assert body["store"] == "sqlite"
    assert body["database_url"] == settings.database_url
    assert body["last_notification_id"] is None
    api.wallet("alice")
    assert api.ok("GET", "/health")["last_notification_id"] == 1


def test_health_in_production_hides_the_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/p.db"
    with TestClient(create_app(Settings(database_url=url, production=True))) as c:
        body = c.get("/health").json()
    assert body == {"status": "ok", "store": "sqlite", "last_notification_id": None}


def test_rules_lists_every_published_key_with_its_settings(api: Api) -> None:
    body = api.ok("GET", "/rules")
    assert body["current"] == dict(CURRENT)
    assert set(body["rules"]) == set(PUBLISHED)
    assert body["rules"]["lucky7/1"] == PUBLISHED["lucky7/1"].describe()


def test_one_rules_by_key_or_variant(api: Api) -> None:
    by_key = api.ok("GET", "/rules/lucky7/1")
    assert by_key["key"] == "lucky7/1"
    assert by_key["decks"] == 6
    assert api.ok("GET", "/rules/lucky7") == by_key


def test_unknown_rules_is_a_404_problem_listing_the_published_keys(api: Api) -> None:
    body = api.problem("GET", "/rules/poker/9", 404, "rules-not-found")
    assert "poker/9" in body["detail"]
    assert "lucky7/1" in body["detail"]


def test_unknown_path_and_wrong_method_are_problems(client: TestClient) -> None:
    check_problem(client.get("/nowhere"), 404, "http-404", "/nowhere")
    check_problem(client.delete("/rules"), 405, "http-405", "/rules")


def test_malformed_json_is_a_422_problem(client: TestClient) -> None:
    r = client.post(
        "/wallets", content=b'{"player_id": ', headers={"content-type": "application/json"}
    )
    body = check_problem(r, 422, "validation-error", "/wallets")
    assert body["errors"]


def test_missing_and_unknown_fields_are_named(client: TestClient) -> None:
    r = client.post("/wallets", json={"player": "alice"})
    body = check_problem(r, 422, "validation-error", "/wallets")
    locs = [tuple(e["loc"]) for e in body["errors"]]
    assert ("body", "player_id") in locs
    assert ("body", "player") in locs
    assert "body.player_id" in body["detail"]


def test_unexpected_errors_are_a_500_problem_that_hides_internals(settings: Settings) -> None:
    web = create_app(settings)

    def explode() -> None:
        raise RuntimeError("secret connection string postgres://u:pw@db")

    web.add_api_route("/explode", explode)
    with TestClient(web, raise_server_exceptions=False) as c:
        r = c.get("/explode")
    body = check_problem(r, 500, "internal-error", "/explode")
    assert "secret" not in r.text
    assert "RuntimeError" not in r.text
    assert body["incident"] in body["detail"]


def test_an_open_application_can_be_passed_in_and_is_left_open(tmp_path: Path) -> None:
    audit = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/own.db"))
    try:
        with TestClient(create_app(Settings(), app=audit)) as c:
            assert c.post("/wallets", json={"player_id": "zoe"}).status_code == 201
        assert str(audit.balance("zoe")) == "0.00"  # still usable after the app stopped
    finally:
        audit.close()


def test_load_settings_reads_the_environment_and_creates_the_sqlite_folder(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/nested/deeper/events.db"
    s = load_settings({DATABASE_URL_ENV: url, "ROUNDAUDIT_PRODUCTION": "true"})
    assert s == Settings(database_url=url, production=True)
    assert (tmp_path / "nested" / "deeper").is_dir()


def test_load_settings_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings({}) == Settings(database_url=DEFAULT_DATABASE_URL, production=False)
    assert (tmp_path / "data").is_dir()


def test_load_settings_refuses_a_bad_flag() -> None:
    with pytest.raises(SettingsError, match="ROUNDAUDIT_PRODUCTION"):
        load_settings({"ROUNDAUDIT_PRODUCTION": "maybe", DATABASE_URL_ENV: "sqlite:///:memory:"})


def test_get_app_uses_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/env/events.db"
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    monkeypatch.delenv("ROUNDAUDIT_PRODUCTION", raising=False)
    with TestClient(get_app()) as c:
        assert c.get("/health").json()["database_url"] == url
    assert (tmp_path / "env" / "events.db").exists()

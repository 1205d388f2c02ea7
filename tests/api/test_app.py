"""The application as a whole: docs, OpenAPI, health, rules, settings, generic problems."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apikit import TEST_HOSTS, Api, check_problem, service_settings
from fastapi.testclient import TestClient

from api.auth import PUBLIC
from api.main import create_app, get_app
from api.settings import (
    ALLOWED_HOSTS_ENV,
    DATABASE_URL_ENV,
    SEED_KEY_ENV,
    Settings,
    SettingsError,
    load_settings,
    write_seed_key,
)
from domain.application import RoundAudit
from domain.persistence import DEFAULT_DATABASE_URL, environment_for
from domain.rules import CURRENT, PUBLISHED
from domain.vault import SeedKeyRing
from replays.logstate import default_state_path

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


def test_docs_page_is_served_with_every_asset_from_the_service(client: TestClient) -> None:
    """No CDN: every script and style the page loads is the service's own, and the page's
    CSP allows nothing else (a closed network and a strict CSP both leave it working)."""
    r = client.get("/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "swagger" in r.text.lower()
    assert "<script>" not in r.text  # no inline script: the CSP forbids it
    sources = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert sources
    assert all(src.startswith("/docs/assets/") for src in sources), sources
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "http" not in csp
    for src in sources:
        asset = client.get(src)
        assert asset.status_code == 200, src
        assert len(asset.content) > 100
    init = client.get("/docs/assets/docs-init.js").text
    assert "/openapi.json" in init
    assert client.get("/docs/assets/index.html").status_code == 404  # only the listed assets
    assert client.get("/redoc").status_code == 404  # FastAPI's CDN page is off


def test_openapi_declares_the_bearer_key_on_every_route_but_the_public_ones(
    client: TestClient,
) -> None:
    """The Swagger page's Authorize button: a bearer scheme, required by every operation
    except the public ones."""
    doc = client.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["ApiKey"]["description"],
    }
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            public = (method.upper(), path) in PUBLIC
            assert ("security" in op) is not public, (method, path)
            if not public:
                assert op["security"] == [{"ApiKey": []}]


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
    assert body["last_notification_id"] == 1  # the admin key recorded at start
    api.wallet("alice")  # the cashier's key (2), the wallet (3)
    assert api.ok("GET", "/health")["last_notification_id"] == 3


def test_health_in_production_hides_the_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/p.db"
    with TestClient(create_app(service_settings(url, production=True))) as c:
        body = c.get("/health").json()
    assert body == {"status": "ok", "store": "sqlite", "last_notification_id": 1}


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


def test_malformed_json_is_a_422_problem(api: Api) -> None:
    r = api.client.post(
        "/wallets", content=b'{"player_id": ', headers={"content-type": "application/json"}
    )
    body = check_problem(r, 422, "malformed-json", "/wallets")
    assert "not JSON" in body["detail"]


def test_missing_and_unknown_fields_are_named(api: Api) -> None:
    r = api.client.post("/wallets", json={"player": "alice"})
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
        with TestClient(create_app(service_settings(DEFAULT_DATABASE_URL), app=audit)) as c:
            assert Api(c).client.post("/wallets", json={"player_id": "zoe"}).status_code == 201
        assert str(audit.balance("zoe")) == "0.00"  # still usable after the app stopped
    finally:
        audit.close()


def test_load_settings_reads_the_environment_and_creates_the_sqlite_folder(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/nested/deeper/events.db"
    ring = SeedKeyRing.generate()
    write_seed_key(tmp_path / "seed.key", ring)
    s = load_settings(
        {
            DATABASE_URL_ENV: url,
            "ROUNDAUDIT_PRODUCTION": "true",
            SEED_KEY_ENV: str(tmp_path / "seed.key"),
            ALLOWED_HOSTS_ENV: "audit.example, 10.0.0.5",
            "ROUNDAUDIT_CORS_ORIGINS": "https://ops.example",
        }
    )
    assert s == Settings(
        database_url=url,
        production=True,
        seed_key=ring,
        allowed_hosts=("audit.example", "10.0.0.5"),
        cors_origins=("https://ops.example",),
        verifier_state=default_state_path(url, None),  # a file per store, not made yet
    )
    assert (tmp_path / "nested" / "deeper").is_dir()


def test_load_settings_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    ring = SeedKeyRing.generate()
    write_seed_key(tmp_path / "keys" / "seed.key", ring)
    assert load_settings({}) == Settings(
        database_url=DEFAULT_DATABASE_URL,
        production=False,
        seed_key=ring,
        generate_admin_key=True,
        allowed_hosts=("localhost", "127.0.0.1", "[::1]"),
        verifier_state=default_state_path(DEFAULT_DATABASE_URL, None),
    )
    assert (tmp_path / "data").is_dir()
    assert oct((tmp_path / "keys" / "seed.key").stat().st_mode & 0o777) == "0o600"


def test_the_service_does_not_start_without_its_seed_key_file(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="roundaudit seed-key create"):
        load_settings({SEED_KEY_ENV: str(tmp_path / "missing.key")})


def test_load_settings_refuses_a_bad_flag() -> None:
    with pytest.raises(SettingsError, match="ROUNDAUDIT_PRODUCTION"):
        load_settings({"ROUNDAUDIT_PRODUCTION": "maybe", DATABASE_URL_ENV: "sqlite:///:memory:"})


@pytest.mark.usefixtures("collector_restored")  # get_app tunes the collector
def test_get_app_uses_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/env/events.db"
    write_seed_key(tmp_path / "seed.key", SeedKeyRing.generate())
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    monkeypatch.setenv(SEED_KEY_ENV, str(tmp_path / "seed.key"))
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, ",".join(TEST_HOSTS))
    monkeypatch.delenv("ROUNDAUDIT_PRODUCTION", raising=False)
    monkeypatch.delenv("ROUNDAUDIT_ADMIN_KEY", raising=False)
    with TestClient(get_app()) as c:
        assert c.get("/health").json()["database_url"] == url
    assert (tmp_path / "env" / "events.db").exists()

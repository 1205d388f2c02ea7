"""HTTP: ``GET /rules/{key}/rtp`` (the theory) and ``GET /reports/rtp`` (observed RTP)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from apikit import Api, bearer, check_problem, service_settings
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import SettingsError, rtp_floor_setting
from cli.simulate import simulate
from domain.rtp.report import load, summary


@pytest.mark.parametrize("key", ["deluxe/1", "lucky7/1", "european"])
def test_rules_rtp_is_the_stored_report(api: Api, key: str) -> None:
    body = api.ok("GET", f"/rules/{key}/rtp")
    assert body == summary(load(key))
    assert body["rules_key"] == (key if "/" in key else f"{key}/1")


def test_rules_rtp_names_its_findings(api: Api) -> None:
    deluxe = api.ok("GET", "/rules/deluxe/1/rtp")
    assert [f["code"] for f in deluxe["findings"]] == ["RTP-PUBLISHED-MISMATCH"]
    assert deluxe["published"]["main_rtp_percent"] == "99.53"
    lucky7 = api.ok("GET", "/rules/lucky7/rtp")
    assert [(f["code"], f["bet"]) for f in lucky7["findings"]] == [("RTP-BELOW-FLOOR", "lucky7")]
    assert lucky7["floor"] == "0.85"


def test_the_rule_set_routes_still_answer(api: Api) -> None:
    assert api.ok("GET", "/rules/deluxe/1")["key"] == "deluxe/1"
    assert "deluxe/1" in api.ok("GET", "/rules")["rules"]


def test_unknown_rules_are_a_problem(api: Api) -> None:
    problem = api.problem("GET", "/rules/roulette/1/rtp", 404, "rules-not-found")
    assert "unknown rules 'roulette/1'" in problem["detail"]


def test_the_floor_is_the_deployment_setting(tmp_path: Path) -> None:
    settings = service_settings(f"sqlite:///{tmp_path}/f.db", rtp_floor=Decimal("0.70"))
    with TestClient(create_app(settings)) as c:
        body = Api(c).ok("GET", "/rules/lucky7/rtp")
    assert body["findings"] == []
    assert body["floor"] == "0.70"
    assert rtp_floor_setting("0.9") == Decimal("0.9")
    assert rtp_floor_setting(None) == rtp_floor_setting(" ") == Decimal("0.85")
    with pytest.raises(SettingsError, match="ROUNDAUDIT_RTP_FLOOR"):
        rtp_floor_setting("85")


@pytest.mark.parametrize("role", ["player", "table-feed", "cashier", "supervisor"])
def test_the_observed_rtp_report_is_refused_to_other_roles(api: Api, role: str) -> None:
    tables = ("T1",) if role in ("table-feed", "supervisor") else ()
    token = api.key(role, tables=tables, player="p1" if role == "player" else None)
    url = "/reports/rtp?from=2026-01-01&to=2026-01-02"
    check_problem(api.raw.get(url, headers=bearer(token)), 403, "forbidden", url)
    assert api.raw.get(url).status_code == 401  # no key at all


@pytest.mark.parametrize("role", ["reporting", "compliance", "investigator"])
def test_the_observed_rtp_report_is_open_to_its_readers(api: Api, role: str) -> None:
    r = api.raw.get("/reports/rtp?from=2026-01-01&to=2026-01-02", headers=bearer(api.key(role)))
    assert r.status_code == 200, r.text
    rules = api.raw.get("/rules/lucky7/1/rtp", headers=bearer(api.key(role)))
    assert rules.status_code == 200
    assert rules.json()["rules_key"] == "lucky7/1"


def test_reports_rtp_on_an_empty_store(api: Api) -> None:
    body = api.ok("GET", "/reports/rtp", params={"from": "2026-01-01", "to": "2026-01-31"})
    assert body == {"from": "2026-01-01", "to": "2026-01-31", "observations": [], "findings": []}


def test_reports_rtp_after_play(api: Api, client: TestClient) -> None:
    simulate(client.app.state.audit, variant="boundless", rounds=8)  # type: ignore[attr-defined]
    today = dt.datetime.now(dt.UTC).date().isoformat()
    body = api.ok("GET", "/reports/rtp", params={"from": today, "to": today})
    by_type = {o["bet_type"]: o for o in body["observations"]}
    assert "main" in by_type
    main = by_type["main"]
    assert main["variant"] == "boundless"
    assert main["rules_key"] == "boundless/1"
    assert main["theoretical_rtp"] == load("boundless")["main"]["rtp"]
    assert set(main["intervals"]) == {"99%", "99.9%"}
    low, high = (
        Decimal(main["intervals"]["99.9%"]["low"]),
        Decimal(main["intervals"]["99.9%"]["high"]),
    )
    assert low < Decimal(main["theoretical_rtp"]) < high
    assert main["wagers"] > 0
    assert Decimal(main["handle"]) > 0
    one = api.ok("GET", "/reports/rtp", params={"from": today, "to": today, "variant": "deluxe"})
    assert one["observations"] == []
    period = api.ok("GET", "/reports/rtp", params={"from": today, "to": today, "by_day": "false"})
    assert len(period["observations"]) == len(body["observations"])


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"from": "2026-02-01", "to": "2026-01-01"}, "bad-report-period"),
        ({"from": "2024-01-01", "to": "2026-01-01"}, "bad-report-period"),
        ({"from": "2026-01-01", "to": "2026-01-02", "variant": "roulette"}, "unknown-variant"),
        ({"from": "2026-01-01"}, "validation-error"),
        ({"from": "yesterday", "to": "2026-01-02"}, "validation-error"),
    ],
)
def test_bad_report_requests_are_problems(api: Api, params: dict[str, str], code: str) -> None:
    api.problem("GET", "/reports/rtp", 422, code, params=params)

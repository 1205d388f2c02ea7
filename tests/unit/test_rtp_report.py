"""RTP reports (domain.rtp.report): stored per published key, reproducible, and their findings.

A published key never changes, so its report is data in the package; these tests hold every
published key to having one, and recomputation to giving the same figures (european, the
quickest, in the default run; every key under ``-m slow``). The findings are the rule book's:
the sheets' published RTPs, and D14's Lucky 7 paytable under the jurisdiction's floor.
"""

from __future__ import annotations

import doctest
import json
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest

from cli.main import main
from domain.rtp import dealer, interval, main_game, report, side_bets
from domain.rtp.report import (
    CODE_FLOOR,
    CODE_PUBLISHED,
    RtpNotComputed,
    compute,
    findings,
    load,
    same_main_rules,
    summary,
    theory,
)
from domain.rules import CURRENT, PUBLISHED, get_rules
from projections import observed_rtp


@pytest.mark.parametrize("module", [dealer, main_game, side_bets, report, interval, observed_rtp])
def test_doctests_pass(module: ModuleType) -> None:
    assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_every_published_key_has_a_stored_report(key: str) -> None:
    stored = load(key)
    assert stored["rules_key"] == key
    assert stored["variant"] == PUBLISHED[key].variant
    assert set(stored["side_bets"]) >= set(PUBLISHED[key].side_bets)
    assert Decimal("0.9") < Decimal(stored["main"]["rtp"]) < Decimal("1.0")


def without_timings(r: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(r))
    out["main"].pop("cpu_seconds", None)
    out["main"].pop("what_if", None)
    return out


def test_recomputing_european_gives_the_stored_report() -> None:
    """(CPU time per variant: ``python -m benchmarks.rtp``, not a timed test.)"""
    fresh = compute(get_rules("european"), what_if=False)
    assert without_timings(fresh) == without_timings(load("european"))


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_recomputing_every_key_gives_the_stored_report(key: str) -> None:
    fresh = compute(PUBLISHED[key])
    stored = load(key)
    assert without_timings(fresh) == without_timings(stored)
    assert fresh["main"].get("what_if") == stored["main"].get("what_if")


def test_a_missing_report_is_a_named_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "cache_name", lambda key: "no-such-report.json")
    with pytest.raises(RtpNotComputed, match="roundaudit rtp deluxe --write-cache"):
        load("deluxe")


def codes(found: list[report.Finding]) -> list[tuple[str, str | None]]:
    return [(f.code, f.bet) for f in found]


def test_deluxe_and_boundless_publish_what_their_rules_do_not_give() -> None:
    """Same main-game rules (RULES.md), two published maxima: neither is reproduced."""
    assert same_main_rules("deluxe/1") == ["boundless/1"]
    deluxe, boundless = findings(load("deluxe")), findings(load("boundless"))
    assert (CODE_PUBLISHED, "main") in codes(deluxe)
    assert (CODE_PUBLISHED, "main") in codes(boundless)
    message = next(f.message for f in deluxe if f.code == CODE_PUBLISHED)
    assert "99.5300%" in message
    assert "99.5169%" in message
    assert "boundless/1" in message
    assert "99.46%" in message
    assert "No strategy reaches" in message  # published above the optimum
    other = next(f.message for f in boundless if f.code == CODE_PUBLISHED)
    assert "below the optimum" in other


def test_a_published_figure_within_a_hundredth_of_a_point_is_no_finding() -> None:
    stored = load("deluxe")
    computed = Decimal(stored["main"]["rtp"]) * 100
    for delta in ("0.0099", "-0.0099"):
        near = dict(stored, published=dict(stored["published"]))
        near["published"]["main_rtp_percent"] = str(computed + Decimal(delta))
        assert CODE_PUBLISHED not in [f.code for f in findings(near)]
    far = dict(stored, published=dict(stored["published"]))
    far["published"]["main_rtp_percent"] = str(computed + Decimal("0.0101"))
    assert CODE_PUBLISHED in [f.code for f in findings(far)]


def test_the_d14_lucky7_paytable_is_below_the_default_floor() -> None:
    found = findings(load("lucky7"))
    assert codes(found) == [(CODE_FLOOR, "lucky7")]
    assert "D14" in found[0].message
    assert "74.79" in found[0].message


def test_the_floor_is_a_setting() -> None:
    stored = load("lucky7")
    assert findings(stored, floor=Decimal("0.70")) == []
    strict = codes(findings(stored, floor=Decimal("0.99")))
    assert (CODE_FLOOR, "insurance") in strict
    assert (CODE_FLOOR, "lucky7") in strict
    assert (CODE_FLOOR, "main") not in strict  # 99.54%


@pytest.mark.parametrize("variant", ["multihand", "european"])
def test_variants_without_a_published_figure_or_side_bet_raise_nothing(variant: str) -> None:
    assert findings(load(variant)) == []


def test_every_variant_has_a_theory_for_each_bet_type() -> None:
    for variant in CURRENT:
        t = theory(load(variant))
        assert {"main", "insurance", *get_rules(variant).side_bets} <= set(t)
        for bet in t.values():
            assert bet.variance > 0
            assert bet.min_rounds >= 100
    deluxe = theory(load("deluxe"))
    assert deluxe["behind_follow_both"].rtp == deluxe["main"].rtp
    assert deluxe["behind_follow_none"].rtp < deluxe["behind_follow_double"].rtp


def test_boundless_and_deluxe_main_games_are_the_same_game() -> None:
    assert load("deluxe")["main"]["rtp"] == load("boundless")["main"]["rtp"]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["rtp", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_has_the_issue_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "lucky7", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["variant"] == "lucky7"
    assert body["rules_key"] == "lucky7/1"
    assert body["main"]["rtp"] == load("lucky7")["main"]["rtp"]
    assert body["main"]["strategy"]["name"] == "CDP1"
    assert set(body["side_bets"]) == {"lucky7", "insurance"}
    assert body["side_bets"]["lucky7"]["rtp"].startswith("0.7479")
    assert body["published"] is None
    assert body["findings"] == [
        {"code": CODE_FLOOR, "message": body["findings"][0]["message"], "bet": "lucky7"}
    ]
    assert body == summary(load("lucky7"))


def test_cli_table_and_floor(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    code, out, _ = run_cli(capsys)
    assert code == 0
    for variant in CURRENT:
        assert f"{variant} ({CURRENT[variant]})" in out
    assert out.count("FINDING") == 3
    code, out, _ = run_cli(capsys, "lucky7", "--floor", "0.7")
    assert code == 0
    assert "FINDING" not in out
    monkeypatch.setenv("ROUNDAUDIT_RTP_FLOOR", "0.999")
    code, out, _ = run_cli(capsys, "european")
    assert "RTP-BELOW-FLOOR" in out
    monkeypatch.setenv("ROUNDAUDIT_RTP_FLOOR", "85")
    code, _, err = run_cli(capsys, "european")
    assert code == 2
    assert "must be a fraction" in err


def test_cli_refuses_an_unknown_variant_and_a_bad_floor(capsys: Any) -> None:
    code, _, err = run_cli(capsys, "roulette")
    assert code == 2
    assert "unknown rules 'roulette'" in err
    assert main(["rtp", "--floor", "abc"]) == 2
    assert "is not a number" in capsys.readouterr().err


@pytest.mark.parametrize("variant", list(CURRENT))
def test_first_decision_frequencies_add_up(variant: str) -> None:
    """Every initial deal takes one first decision (or is a natural); a player natural and a
    dealer natural are equally likely, 2 * 4d * 16d / (N (N - 1)) each."""
    freq = {k: Decimal(v) for k, v in load(variant)["main"]["frequency"].items()}
    assert abs(sum(v for k, v in freq.items() if k != "dealer_blackjack") - 1) < Decimal("1e-9")
    d = get_rules(variant).decks
    n = 52 * d
    natural = Decimal(2 * 4 * d * 16 * d) / Decimal(n * (n - 1))
    assert abs(freq["blackjack"] - natural) < Decimal("1e-9")
    assert abs(freq["dealer_blackjack"] - natural) < Decimal("1e-9")
    allowed = {"blackjack", "dealer_blackjack", "stand", "hit", "double", "split", "surrender"}
    assert set(freq) <= allowed
    assert ("surrender" in freq) == (get_rules(variant).surrender != "none")

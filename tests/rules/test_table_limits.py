"""D18: table limits (minimum and maximum stake per bet type) are settings of the rules key;
a refusal for a limit names the limit and the setting, records nothing and moves no money.

Every bet type reads its own limits (``domain.game.wagers.limits``): main bets and bets behind
``min_bet``/``max_bet``, side bets ``side_min_bet``/``side_max_bet``, the Lucky 7 at most
``lucky7_max_stake`` (L7-1), and a rules key may give any bet type its own (``bet_limits``)."""

from __future__ import annotations

import dataclasses
import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import Kit, kinds

from domain.errors import BetLimit
from domain.rules import get_rules, registered

D = Decimal


@pytest.mark.parametrize(
    ("variant", "kind", "amount", "setting", "words"),
    [
        ("multihand", "main", "0.99", "min_bet", "below the minimum 1.00"),
        ("multihand", "main", "5000.01", "max_bet", "above the maximum 5000.00"),
        ("lucky7", "lucky7", "0.49", "side_min_bet", "below the minimum 0.50"),
        ("lucky7", "lucky7", "1.01", "lucky7_max_stake", "above the maximum 1.00"),
        ("boundless", "bust", "1000.01", "side_max_bet", "above the maximum 1000.00"),
        ("boundless", "main", "0.50", "min_bet", "below the minimum 1.00"),
    ],
)
def test_d18_a_refused_bet_names_the_limit_and_its_setting(variant, kind, amount, setting, words):
    cards = ["10H", "9S", "6D", "8D"]
    kit = Kit(variant, cards, players={"A": 10_000})
    if kind == "lucky7":
        kit.bet("A", 10, 1)
    before = kinds(kit.events())
    spot = None if variant == "boundless" else 1
    err = kit.refused(BetLimit, lambda: kit.bet("A", amount, spot, kind=kind))
    key = get_rules(variant).key
    assert err.setting == f"{key}:{setting}"
    assert words in err.message
    assert f"setting {setting} of rules {key}" in err.message
    assert err.rule == ("L7-1" if setting == "lucky7_max_stake" else None)
    assert kinds(kit.events()) == before


def test_d18_the_limits_themselves_are_accepted():
    kit = Kit("multihand", ["10H", "9S", "6D", "8D"], players={"A": 10_000})
    kit.bet("A", "1.00", 1)
    kit.bet("A", "5000.00", 2)
    assert [w["stake"] for w in kit.view()["wagers"]] == ["1.00", "5000.00"]


def test_d18_a_rules_key_may_give_a_bet_type_its_own_limits():
    """A new key of deluxe whose Pair takes 2.00-20.00: the Pair reads its own limits, the main
    bet still the table's."""
    rules = dataclasses.replace(
        get_rules("deluxe"),
        key="deluxe-pair-limits/1",
        variant="deluxe-pair-limits",
        bet_limits={"pair": (D("2.00"), D("20.00"))},
    )
    with registered(rules):
        kit = Kit("deluxe-pair-limits", ["10H", "9S", "6D", "8D"], players={"A": 1000})
        kit.bet("A", "1.00", 1)  # the main bet: min_bet 1.00
        err = kit.refused(BetLimit, lambda: kit.side("A", "pair", "1.50", 1))
        assert err.setting == "deluxe-pair-limits/1:bet_limits[pair][0]"
        assert "below the minimum 2.00" in err.message
        err = kit.refused(BetLimit, lambda: kit.side("A", "pair", "20.01", 1))
        assert err.setting == "deluxe-pair-limits/1:bet_limits[pair][1]"
        kit.side("A", "pair", "20.00", 1)
        assert [w["kind"] for w in kit.view()["wagers"]] == ["main", "pair"]


def test_d18_a_published_key_is_never_replaced():
    with pytest.raises(ValueError, match="publish a new key"), registered(get_rules("deluxe")):
        pass

"""european (RULES.md "Variant parameters", european column): 2 decks (D2) reshuffled every
round (D3), one box (D4), no hole card (the dealer's second card after the players), surrender
unless the upcard is an ace or the player has BJ, double on hard 9-11 only (D13) also after
split, never split 4s, 5s or ten-values, split aces one card each, insurance only without BJ,
even money with BJ, a dealer BJ takes every stake (D8)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import (
    D,
    Kit,
    cards_to,
    dealer_cards,
    kinds,
    one,
    settled,
    settlement,
    stood,
)

from domain.application import RoundAudit
from domain.errors import IllegalAction
from domain.rules import get_rules

V = "european"


def hand(cards: list[str], up: str, later: list[str] = (), *, bet: object = 10, **kw) -> Kit:
    """A's one box: ``cards`` (two), the dealer's ``up``card; ``later``: every card after the
    initial deal (the player's draws, then the dealer's second card and draws)."""
    order = [cards[0], up, cards[1], *later]
    kit = Kit(V, order, players={"A": kw.get("A", "1000")})
    kit.bet("A", bet, 1)
    kit.close()
    return kit


def test_d2_d4_european_rules_object_table_row():
    r = get_rules(V)
    assert (r.decks, r.reshuffle_every_round, r.max_spots, r.hole_card) == (2, True, 1, "none")
    assert (r.surrender, r.double, r.double_after_split) == ("not_vs_ace_no_bj", "hard_9_11", True)
    assert (r.split_forbidden_values, r.split_aces, r.double_split_aces) == (
        frozenset({4, 5, 10}), "one_card", False
    )  # fmt: skip
    assert (r.insurance, r.insurance_with_blackjack, r.even_money) == (True, False, True)
    assert r.dealer_bj_takes == "all_stakes"


def test_d4_one_box():
    kit = Kit(V, ["10H"], players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.refused(IllegalAction, lambda: kit.bet("B", 10, 2))
    kit.refused(IllegalAction, lambda: kit.bet("A", 10, 2))


def test_d3_d2_european_fresh_two_deck_shoe_per_round():
    app = RoundAudit()
    rid = app.start_round(table_id="t1", round_number=1, variant=V, production=False)
    shoe = app.shoe(app.round(rid).shoe_id)
    assert (shoe.kind, shoe.decks) == ("rng", 2)
    rid2 = app.start_round(table_id="t1", round_number=2, variant=V, production=False)
    assert app.round(rid2).shoe_id != app.round(rid).shoe_id


# ------------------------------------------------------------------------- no hole card
def test_european_dealer_gets_one_card_before_play_the_second_after():
    kit = Kit(V, ["10H", "9S", "8C", "KD"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert dealer_cards(new) == ["9S"]
    assert "DealerChecked" not in kinds(new)
    new = kit.decide("A", "stand")
    assert kinds(new)[:5] == [
        "DecisionMade", "HandStood", "DealerTurnStarted", "CardDealt", "CardToDealer"
    ]  # fmt: skip
    assert "HoleCardRevealed" not in kinds(new)
    assert dealer_cards(new) == ["KD"]
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-3")


def test_european_dealer_completes_even_when_every_hand_is_bust():
    kit = hand(["10H", "6C"], "9S", ["KD", "5C", "4D"])
    new = kit.decide("A", "hit")
    assert dealer_cards(new) == ["5C", "4D"]
    assert one(new, "DealerStood") == {"total": 18, "reason": "stands", "rule": "DEALER-1"}


# ------------------------------------------------------------------------------ D8
def test_d8_european_dealer_bj_takes_doubles():
    kit = hand(["5H", "6C"], "KS", ["9D", "AS"])
    new = kit.decide("A", "double")  # 20 doubled
    assert one(new, "DealerStood")["reason"] == "blackjack"
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "D8")
    assert settlement(new, "1:double") == ("lose", None, "0.00", "-10.00", "D8")
    assert kit.net("A") == D(-20)


def test_d8_european_dealer_bj_takes_splits_and_their_doubles():
    kit = hand(["8H", "8D"], "AS", ["3C", "9S", "KC", "QD"])
    kit.decide("A", "no_insurance")
    kit.decide("A", "split")
    kit.decide("A", "double")  # 8,3 + 9 = 20
    new = kit.decide("A", "stand")  # 8,K = 18; dealer A + Q = BJ
    assert {w: (p["result"], p["rule"]) for w, p in settled(new).items()} == {
        "1:main": ("lose", "D8"), "1.2:split": ("lose", "D8"), "1.1:double": ("lose", "D8")
    }  # fmt: skip
    assert kit.net("A") == D(-30)


def test_d8_player_blackjack_against_dealer_blackjack_is_a_push():
    kit = hand(["AH", "KD"], "10S", ["AC"])
    ev = kit.events()
    assert stood(ev)["1"] == ("blackjack", 21, "HAND-1")
    assert settlement(ev, "1:main") == ("push", "0:1", "10.00", "0.00", "OUT-1")


def test_out_3_european_bust_hand_cites_out_3_even_against_dealer_blackjack():
    kit = hand(["10H", "6C"], "KS", ["QD", "AS"])
    new = kit.decide("A", "hit")
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-3")


def test_d8_insurance_pays_when_the_late_second_card_makes_blackjack():
    kit = hand(["10H", "9C"], "AS", ["KD"])
    assert kit.phase == "insurance"
    new = kit.decide("A", "insurance")
    assert "DealerChecked" not in kinds(new)  # nothing to check: no hole card
    assert kit.phase == "playing"
    new = kit.decide("A", "stand")
    assert settlement(new, "1:insurance") == ("win", "2:1", "15.00", "10.00", "INS-1")
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "D8")
    assert kit.net("A") == 0


def test_european_insurance_loses_when_the_second_card_is_not_a_ten():
    kit = hand(["10H", "9C"], "AS", ["6D", "7H"])
    kit.decide("A", "insurance")
    new = kit.decide("A", "hit")  # 10,9,6 = 25 bust; insurance still settled at the end
    assert "WagerSettled" in kinds(new)
    assert settlement(new, "1:insurance") == ("lose", None, "0.00", "-5.00", "INS-1")
    assert kit.net("A") == D(-15)


# ------------------------------------------------------------------------------ D13
@pytest.mark.parametrize(
    "cards", [["5H", "4C"], ["6H", "4C"], ["2H", "9C"], ["6H", "5C"], ["3H", "8C"]]
)
def test_d13_double_on_hard_9_10_11(cards):
    kit = hand(cards, "9S", ["2C", "KD"])
    assert "double" in kit.options("1")
    new = kit.decide("A", "double")
    assert one(new, "HandDoubled") == {"hand": "1", "rule": "DBL-1"}


@pytest.mark.parametrize(
    "cards",
    [
        ["AH", "8C"],  # soft 19 (hard 9): refused
        ["AH", "9C"],  # soft 20 (hard 10)
        ["AH", "AC"],  # soft 12 (hard 2)
        ["4H", "4C"],  # 8
        ["6H", "6C"],  # 12
        ["10H", "8C"],  # 18
    ],
)
def test_d13_european_soft_double_refused_and_other_totals(cards):
    kit = hand(cards, "9S", ["2C", "KD"])
    assert "double" not in kit.options("1")
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "double"))
    assert err.rule == "DBL-1"


def test_d13_not_on_blackjack_and_not_on_three_cards():
    kit = hand(["2H", "3C"], "9S", ["4D", "KD"])
    kit.decide("A", "hit")  # 9 with three cards
    kit.refused(IllegalAction, lambda: kit.decide("A", "double"))


def test_d13_double_after_split_on_hard_9_11():
    kit = hand(["6H", "6D"], "9S", ["4C", "KH", "2C", "9D"])
    kit.decide("A", "split")
    assert kit.options("1.1") == ["hit", "stand", "double"]  # 6,4 = 10
    new = kit.decide("A", "double")
    assert cards_to(new, "1.1") == ["KH"]
    assert stood(new)["1.1"] == ("double", 20, "HAND-1")
    assert "double" not in kit.options("1.2")  # 6,2 = 8


# ----------------------------------------------------------------------------- split
@pytest.mark.parametrize("pair", [["4H", "4C"], ["5H", "5C"], ["10H", "KC"], ["JH", "JC"]])
def test_european_never_split_4s_5s_or_ten_values(pair):
    kit = hand(pair, "9S", ["KD"])
    assert "split" not in kit.options("1")
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "split"))
    assert err.rule == "SPLIT-1"


@pytest.mark.parametrize("pair", [["2H", "2C"], ["8H", "8C"], ["9H", "9C"], ["AH", "AC"]])
def test_european_splits_other_pairs(pair):
    kit = hand(pair, "9S", ["KD"])
    assert "split" in kit.options("1")


def test_european_split_aces_one_card_each_21_not_blackjack():
    kit = hand(["AH", "AC"], "9S", ["KD", "5C", "8D"])
    new = kit.decide("A", "split")
    assert stood(new) == {"1.1": ("21", 21, "HAND-1"), "1.2": ("split_ace", 16, "HAND-1")}
    assert settlement(new, "1:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")  # 21 vs 17
    assert settlement(new, "1.2:split") == ("lose", None, "0.00", "-10.00", "OUT-3")


# ------------------------------------------------------------------------- surrender
@pytest.mark.parametrize("up", ["10S", "KD", "9S", "2C"])
def test_european_surrender_when_upcard_not_an_ace(up):
    kit = hand(["10H", "6C"], up, ["7D", "5C", "5D"])
    assert "surrender" in kit.options("1")
    new = kit.decide("A", "surrender")
    assert settlement(new, "1:main") == ("surrender", None, "5.00", "-5.00", "SURR-1")


def test_european_surrender_before_a_dealer_blackjack_keeps_half():
    kit = hand(["10H", "6C"], "KS", ["AD"])
    new = kit.decide("A", "surrender")
    assert dealer_cards(new) == ["AD"]
    assert settlement(new, "1:main") == ("surrender", None, "5.00", "-5.00", "SURR-1")


def test_european_no_surrender_against_an_ace():
    kit = hand(["10H", "6C"], "AS", ["7D"])
    kit.decide("A", "no_insurance")
    assert "surrender" not in kit.options("1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


# ---------------------------------------------------------------- insurance / even money
def test_european_blackjack_against_an_ace_even_money_only():
    kit = hand(["AH", "KC"], "AS", ["7D"])
    assert kit.options("1") == ["even_money", "no_insurance"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "insurance"))
    new = kit.decide("A", "even_money")
    assert settlement(new, "1:main") == ("even_money", "1:1", "20.00", "10.00", "EVEN-1")
    assert dealer_cards(new) == ["7D"]  # the dealer completes: soft 18
    assert kit.net("A") == D(10)


def test_european_blackjack_declining_even_money_wins_3_to_2():
    kit = hand(["AH", "KC"], "AS", ["7D"])
    new = kit.decide("A", "no_insurance")
    assert settlement(new, "1:main") == ("blackjack", "3:2", "25.00", "15.00", "OUT-1")


def test_european_blackjack_declining_even_money_pushes_a_dealer_blackjack():
    kit = hand(["AH", "KC"], "AS", ["QD"])
    new = kit.decide("A", "no_insurance")
    assert settlement(new, "1:main") == ("push", "0:1", "10.00", "0.00", "OUT-1")


# ------------------------------------------------------------ D8 setting: the alternative
@pytest.fixture
def original_bets_only(monkeypatch):
    """A european rules key with D8 set to ``original_bets_only`` (the documented
    alternative), published for this test only."""
    import dataclasses
    from types import MappingProxyType

    import domain.rules as registry

    alt = dataclasses.replace(
        get_rules(V), key="european/d8-alt", dealer_bj_takes="original_bets_only"
    )
    monkeypatch.setattr(
        registry, "PUBLISHED", MappingProxyType({**registry.PUBLISHED, alt.key: alt})
    )
    return alt.key


def test_d8_is_a_setting_original_bets_only_refunds_doubles_and_splits(original_bets_only):
    kit = Kit(original_bets_only, ["8H", "AS", "8D", "3C", "9S", "KC", "QD"], players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    kit.decide("A", "no_insurance")
    kit.decide("A", "split")
    kit.decide("A", "double")  # 8,3,9 = 20
    new = kit.decide("A", "stand")  # 8,K = 18; dealer A,Q = BJ
    assert {w: (p["result"], p["payout"], p["rule"]) for w, p in settled(new).items()} == {
        "1:main": ("lose", "0.00", "OUT-1"),
        "1.2:split": ("refund", "10.00", "D8"),
        "1.1:double": ("refund", "10.00", "D8"),
    }
    assert kit.net("A") == D(-10)

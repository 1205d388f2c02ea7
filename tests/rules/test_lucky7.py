"""lucky7 (RULES.md "Variant parameters", lucky7 column, and L7-1..4) through whole rounds:
6 decks (D1), 3 boxes, the dealer's first card covered and the second up, peek on a ten or an
ace, no surrender, double on the first two cards (not on BJ, also after split), split equal
values once, split aces one card each, insurance only without BJ, even money with BJ."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import (
    D,
    Kit,
    cards_to,
    kinds,
    of,
    one,
    settled,
    settlement,
    stack,
    stood,
)

from domain.errors import BetLimit, IllegalAction, InsufficientFunds
from domain.rules import get_rules
from domain.sidebets import LUCKY7_DEFAULT_PAYTABLE

V = "lucky7"
PAYTABLE = {"one_seven": "3:1", "two_sevens": "50:1", "three_sevens": "500:1"}


def box(hand: list[str], *, up: str, hole: str, draws=(), dealer_draws=(), side="1") -> Kit:
    """A on box 1 with 10.00 and a Lucky 7 bet of ``side`` (None: no side bet)."""
    kit = Kit(V, stack(V, [hand], up=up, hole=hole, draws=draws, dealer_draws=dealer_draws))
    kit.bet("A", 10, 1)
    if side is not None:
        kit.side("A", "lucky7", side, 1)
    kit.close()
    return kit


def lucky(events, wager="1:lucky7:A"):
    p = settled(events)[wager]
    return (p["result"], p["pattern"], p["ratio"], p["payout"], p["net"], p["rule"])


def test_d1_lucky7_rules_object_table_row():
    r = get_rules(V)
    assert (r.decks, r.reshuffle_every_round, r.max_spots, r.hole_card) == (
        6, True, 3, "covered_first"
    )  # fmt: skip
    assert (r.surrender, r.double, r.double_after_split, r.split_aces) == (
        "none", "any_two_not_bj", True, "one_card"
    )  # fmt: skip
    assert (r.insurance, r.insurance_with_blackjack, r.even_money) == (True, False, True)
    assert dict(r.side_bets["lucky7"]) == dict(LUCKY7_DEFAULT_PAYTABLE)


def test_lucky7_three_boxes_at_most():
    kit = Kit(V, ["10H"], players=["A"])
    for b in (1, 2, 3):
        kit.bet("A", 10, b)
    kit.refused(IllegalAction, lambda: kit.bet("A", 10, 4))


# --------------------------------------------------------------------- deal and peek
def test_lucky7_dealer_first_card_covered_second_up():
    kit = Kit(V, ["10H", "9S", "8C", "7D"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert [(p["card"], p["face_up"]) for p in of(new, "CardToDealer")] == [
        ("9S", False), ("7D", True)
    ]  # fmt: skip
    assert kit.view()["dealer"]["cards"] == ["7D"]
    assert "DealerChecked" not in kinds(new)  # no peek on a 7


def test_lucky7_peek_on_a_ten_upcard_blackjack_ends_the_round():
    kit = Kit(V, ["10H", "AS", "8C", "KD", "2C"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert one(new, "DealerChecked") == {"blackjack": True, "rule": "D5"}
    assert one(new, "HoleCardRevealed") == {"card": "AS", "total": 21, "rule": "END-1"}
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-1")
    assert kit.drawn() == ["10H", "AS", "8C", "KD"]


def test_lucky7_a_covered_ten_under_an_ace_is_checked_after_the_window():
    kit = box(["10H", "9C"], up="AS", hole="KD", side=None)
    assert kit.phase == "insurance"
    new = kit.decide("A", "no_insurance")
    assert one(new, "DealerChecked")["blackjack"] is True
    assert kit.net("A") == D(-10)


def test_lucky7_covered_ace_under_a_ten_is_blackjack():
    kit = box(["10H", "9C"], up="KD", hole="AS", side=None)
    assert kit.phase == "settled"


# ------------------------------------------------------------------ decisions table row
def test_lucky7_no_surrender():
    kit = box(["10H", "6C"], up="9S", hole="8D", side=None)
    assert kit.options("1") == ["hit", "stand", "double"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


@pytest.mark.parametrize("hand", [["AH", "8C"], ["10H", "2C"], ["9H", "7C"]])
def test_lucky7_double_on_any_first_two_cards(hand):
    kit = box(hand, up="9S", hole="8D", draws=["2C"], side=None)
    assert "double" in kit.options("1")


def test_lucky7_no_double_on_a_three_card_hand():
    kit = box(["2H", "3C"], up="9S", hole="8D", draws=["4C"], side=None)
    kit.decide("A", "hit")
    kit.refused(IllegalAction, lambda: kit.decide("A", "double"))


def test_lucky7_split_equal_values_j_and_q_once():
    kit = box(["JH", "QC"], up="6S", hole="10D", draws=["AC", "QD"], dealer_draws=["6D"], side=None)
    assert "split" in kit.options("1")
    new = kit.decide("A", "split")
    assert stood(new)["1.1"] == ("21", 21, "HAND-1")  # J,A after a split: 21, not a BJ
    assert "split" not in kit.options("1.2")
    new = kit.decide("A", "stand")  # Q,Q = 20; dealer 10,6,6 = 22
    assert settlement(new, "1:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(new, "1.2:split") == ("win", "1:1", "20.00", "10.00", "OUT-2")


def test_lucky7_double_after_split():
    kit = box(["8H", "8C"], up="6S", hole="10D", draws=["3C", "9D", "KH"], side=None)
    kit.decide("A", "split")
    assert kit.options("1.1") == ["hit", "stand", "double"]
    new = kit.decide("A", "double")
    assert one(new, "WagerAdded")["wager_id"] == "1.1:double"
    assert stood(new)["1.1"] == ("double", 20, "HAND-1")


def test_lucky7_split_aces_one_card_each():
    kit = box(["AH", "AC"], up="6S", hole="10D", draws=["3C", "9D"], dealer_draws=["KH"], side=None)
    new = kit.decide("A", "split")
    assert stood(new) == {"1.1": ("split_ace", 14, "HAND-1"), "1.2": ("split_ace", 20, "HAND-1")}
    assert kit.net("A") == D(20)  # dealer 16 + K busts


def test_lucky7_insurance_only_without_blackjack_even_money_with_it():
    kit = Kit(V, stack(V, [["AH", "KC"], ["10D", "9S"]], up="AS", hole="7D"), players=["A"])
    kit.bet("A", 10, 1)
    kit.bet("A", 10, 2)
    kit.close()
    assert kit.options("1") == ["even_money", "no_insurance"]
    assert kit.options("2") == ["insurance", "no_insurance"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "insurance", hand="1"))
    kit.refused(IllegalAction, lambda: kit.decide("A", "even_money", hand="2"))


# ------------------------------------------------------------------------------- L7-1
def test_l7_1_needs_a_main_bet_on_the_same_box():
    kit = Kit(V, ["10H"], players=["A", "B"])
    err = kit.refused(IllegalAction, lambda: kit.side("A", "lucky7", 1, 1))
    assert "L7-1" in (err.rule or "") or "box" in str(err)
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    err = kit.refused(IllegalAction, lambda: kit.side("A", "lucky7", 1, 2))
    assert err.rule == "L7-1"
    new = kit.side("A", "lucky7", 1, 1)
    assert one(new, "BetPlaced")["wager_id"] == "1:lucky7:A"


def test_l7_1_stake_at_most_one_chip_unit():
    kit = Kit(V, ["10H"], players=["A"])
    kit.bet("A", 10, 1)
    err = kit.refused(BetLimit, lambda: kit.side("A", "lucky7", "1.01", 1))
    assert err.rule == "L7-1"
    kit.refused(BetLimit, lambda: kit.side("A", "lucky7", "0.49", 1))
    assert one(kit.side("A", "lucky7", "1.00", 1), "BetPlaced")["stake"] == "1.00"


def test_l7_1_one_lucky7_bet_per_box_and_balance_needed():
    kit = Kit(V, ["10H"], players={"A": "10.50"})
    kit.bet("A", 10, 1)
    kit.refused(InsufficientFunds, lambda: kit.side("A", "lucky7", 1, 1))
    kit.side("A", "lucky7", "0.50", 1)
    kit.refused(IllegalAction, lambda: kit.side("A", "lucky7", "0.50", 1))


# ------------------------------------------------------------------------------- L7-2
def test_l7_2_one_seven_pays_3_to_1_whatever_the_main_result():
    # P11-like: 7,4 hits a K = 21 (stands); the third card is not a 7
    kit = box(["7S", "4D"], up="10C", hole="8C", draws=["KH"])
    new = kit.decide("A", "hit")
    assert lucky(new) == ("win", "one_seven", "3:1", "4.00", "3.00", "L7-2")
    assert settled(new)["1:lucky7:A"]["paytable"] == PAYTABLE  # L7-4: recorded
    assert settlement(new, "1:main")[0] == "win"
    assert kit.net("A") == D(13)


def test_l7_2_one_seven_paid_even_when_the_main_bet_loses():
    kit = box(["7S", "9D"], up="10C", hole="9C", draws=["KH"])
    new = kit.decide("A", "hit")  # 26 bust
    assert lucky(new)[:3] == ("win", "one_seven", "3:1")
    assert settlement(new, "1:main")[0] == "lose"
    assert kit.net("A") == D(-10 + 3)


def test_l7_2_two_sevens_50_to_1():
    kit = box(["7S", "7D"], up="10C", hole="8C", draws=["5H"])
    kit.decide("A", "hit")
    new = kit.decide("A", "stand")  # 7,7,5 = 19 vs 18
    assert lucky(new) == ("win", "two_sevens", "50:1", "51.00", "50.00", "L7-2")
    assert kit.net("A") == D(60)


def test_l7_2_three_sevens_500_to_1():
    kit = box(["7S", "7D"], up="10C", hole="8C", draws=["7H"])
    new = kit.decide("A", "hit")  # 21 stands
    assert lucky(new) == ("win", "three_sevens", "500:1", "501.00", "500.00", "L7-2")
    assert kit.net("A") == D(510)


def test_l7_2_four_sevens_pay_as_three():
    kit = box(["7S", "7D"], up="10C", hole="8C", draws=["AH", "7H"])
    kit.decide("A", "hit")  # 7,7,A = 15
    new = kit.decide("A", "hit")  # 7,7,A,7 = 22
    assert lucky(new)[:3] == ("win", "two_sevens", "50:1")  # 7,7,A: the third card is an ace
    kit2 = Kit(V, ["7S", "8C", "7D", "10C", "7H", "7C"], table="t2")
    kit2.bet("A", 10, 1)
    kit2.side("A", "lucky7", 1, 1)
    kit2.close()
    new = kit2.decide("A", "hit")  # 21: stands; the fourth 7 never comes
    assert lucky(new)[:3] == ("win", "three_sevens", "500:1")


def test_l7_2_first_card_not_a_seven_loses():
    kit = box(["9S", "7D"], up="10C", hole="8C", draws=["7H"])
    new = kit.decide("A", "hit")
    assert lucky(new) == ("lose", None, None, "0.00", "-1.00", "L7-2")


# ------------------------------------------------------------------------------- L7-3
def test_l7_3_dealer_blackjack_no_third_card_two_sevens_paid_as_two():
    kit = box(["7H", "7D"], up="AS", hole="KC", draws=["7C"])
    new = kit.decide("A", "no_insurance")
    assert one(new, "DealerChecked")["blackjack"] is True
    assert lucky(new) == ("win", "two_sevens", "50:1", "51.00", "50.00", "L7-3")
    assert kit.drawn() == ["7H", "KC", "7D", "AS"]  # 7C never dealt
    assert kit.net("A") == D(40)


def test_l7_3_dealer_blackjack_on_a_ten_upcard_right_after_the_deal():
    kit = box(["7H", "7D"], up="KS", hole="AC", draws=["7C"])
    ev = kit.events()
    assert lucky(ev)[:3] == ("win", "two_sevens", "50:1")
    assert lucky(ev)[5] == "L7-3"


def test_l7_3_box_that_stands_on_two_cards_is_paid_on_two():
    kit = box(["7H", "KD"], up="10S", hole="8C", draws=["7C"], dealer_draws=[])
    new = kit.decide("A", "stand")
    assert lucky(new)[:3] == ("win", "one_seven", "3:1")
    kit = box(["7H", "7D"], up="10S", hole="8C")
    new = kit.decide("A", "stand")
    assert lucky(new)[:3] == ("win", "two_sevens", "50:1")


def test_l7_3_after_a_split_the_third_card_is_the_first_split_hands():
    kit = box(["7H", "7D"], up="9S", hole="8C", draws=["7C", "10D", "KH"])
    new = kit.decide("A", "split")
    assert cards_to(new, "1.1") == ["7C"]
    kit.decide("A", "stand")  # 1.1 = 14
    new = kit.decide("A", "stand")  # 1.2 = 7,10 = 17; dealer 17
    assert lucky(new)[:3] == ("win", "three_sevens", "500:1")


def test_l7_3_after_a_split_the_second_hands_card_is_not_the_third():
    kit = box(["7H", "7D"], up="9S", hole="8C", draws=["10D", "7C"])
    kit.decide("A", "split")  # 1.1: 7,10
    new = kit.decide("A", "stand")  # 1.2 gets the 7: 7,7 = 14
    assert cards_to(new, "1.2") == ["7C"]
    new = kit.decide("A", "stand")
    assert lucky(new)[:3] == ("win", "two_sevens", "50:1")


def test_l7_3_third_card_of_a_double_counts():
    kit = box(["7H", "7D"], up="9S", hole="8C", draws=["7C"], side="0.50")
    new = kit.decide("A", "double")
    assert lucky(new) == ("win", "three_sevens", "500:1", "250.50", "250.00", "L7-2")


# ------------------------------------------------------------------------------- L7-4
def test_l7_4_every_lucky7_settlement_records_the_paytable():
    kit = box(["9S", "7D"], up="10C", hole="8C")
    new = kit.decide("A", "stand")
    assert settled(new)["1:lucky7:A"]["paytable"] == PAYTABLE
    assert settled(new)["1:main"]["paytable"] is None


def test_l7_4_odd_half_chip_stake_is_exact():
    kit = box(["7S", "4D"], up="10C", hole="8C", draws=["KH"], side="0.75")
    new = kit.decide("A", "hit")
    assert lucky(new) == ("win", "one_seven", "3:1", "3.00", "2.25", "L7-2")


def test_l7_4_the_paytable_is_a_setting_and_the_settlement_records_the_one_used(monkeypatch):
    import dataclasses
    from types import MappingProxyType

    import domain.rules as registry
    from domain.money import Ratio

    table = MappingProxyType(
        {"one_seven": Ratio(2), "two_sevens": Ratio(25), "three_sevens": Ratio(200)}
    )
    alt = dataclasses.replace(get_rules(V), key="lucky7/alt", side_bets={"lucky7": table})
    monkeypatch.setattr(
        registry, "PUBLISHED", MappingProxyType({**registry.PUBLISHED, alt.key: alt})
    )
    kit = Kit(alt.key, stack(V, [["7H", "7D"]], up="10S", hole="8C"))
    kit.bet("A", 10, 1)
    kit.side("A", "lucky7", 1, 1)
    kit.close()
    new = kit.decide("A", "stand")
    assert lucky(new)[:4] == ("win", "two_sevens", "25:1", "26.00")
    assert settled(new)["1:lucky7:A"]["paytable"] == {
        "one_seven": "2:1", "two_sevens": "25:1", "three_sevens": "200:1"
    }  # fmt: skip
    assert kit.round().rules_key == "lucky7/alt"

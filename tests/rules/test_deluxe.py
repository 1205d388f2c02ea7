"""deluxe (RULES.md "Variant parameters", deluxe column): 8 decks, peek (D5), surrender unless
the dealer's first card is an ace or a ten, double on any two, split once, insurance even with
BJ, no even money, END-1, END-2, D15, FUNDS-1, FUNDS-2, PRE-1."""

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
    of,
    one,
    settled,
    settlement,
    stack,
    stood,
)

from domain.errors import IllegalAction
from domain.rules import get_rules

V = "deluxe"


def seats(hands: list[list[str]], *, up: str, hole: str, draws=(), dealer_draws=(), **kw) -> Kit:
    """Players A, B, C... on seats 1, 2, 3... with 10.00 each; betting closed."""
    names = "ABCDEFG"[: len(hands)]
    order = stack(V, hands, up=up, hole=hole, draws=draws, dealer_draws=dealer_draws)
    funds = {n: kw.get(n, "1000") for n in names}
    kit = Kit(V, order, players=funds)
    for i, n in enumerate(names, start=1):
        kit.bet(n, kw.get("bet", 10), i)
    kit.close()
    return kit


def test_deluxe_rules_object_table_row():
    r = get_rules(V)
    assert (r.decks, r.hole_card, r.surrender, r.double, r.split_aces) == (
        8, "peek", "not_vs_ace_or_ten", "any_two", "one_card"
    )  # fmt: skip
    assert (r.insurance, r.insurance_with_blackjack, r.even_money) == (True, True, False)
    assert (r.dealer_draws, r.end_when_all_blackjack) == ("while_result_depends", True)
    assert (r.double_funds, r.split_funds) == ("double_becomes_hit", "hit_if_11_or_less_else_stand")
    assert (r.max_spots, r.max_spots_per_player) == (7, 2)


# ----------------------------------------------------------------------------- D5 / END-1
def test_d5_peek_on_a_ten_right_after_the_deal_no_blackjack_play_goes_on():
    kit = Kit(V, ["10H", "KS", "9C", "7D"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert kinds(new)[-3:] == ["CardToDealer", "DealerChecked", "PlayStarted"]
    assert one(new, "DealerChecked") == {"blackjack": False, "rule": "D5"}
    assert "HoleCardRevealed" not in kinds(new)
    assert kit.view()["dealer"]["cards"] == ["KS"]  # the hole card stays covered


def test_d5_end_1_peek_on_a_ten_dealer_blackjack_ends_the_round_at_once():
    kit = Kit(V, ["10H", "KS", "9C", "AD", "5C"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert kinds(new)[-5:] == [
        "CardToDealer", "DealerChecked", "HoleCardRevealed", "WagerSettled", "RoundSettled"
    ]  # fmt: skip
    assert one(new, "HoleCardRevealed") == {"card": "AD", "total": 21, "rule": "END-1"}
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-1")
    assert kit.drawn() == ["10H", "KS", "9C", "AD"]


def test_d5_peek_on_an_ace_only_after_the_insurance_window():
    kit = Kit(V, ["10H", "AS", "9C", "KD"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert kinds(new)[-1] == "InsuranceWindowOpened"
    assert "DealerChecked" not in kinds(new)
    new = kit.close_window()
    assert kinds(new) == [
        "InsuranceWindowClosed", "DealerChecked", "HoleCardRevealed", "WagerSettled",
        "RoundSettled",
    ]  # fmt: skip
    assert kit.net("A") == D(-10)


# ------------------------------------------------------------------------------ surrender
@pytest.mark.parametrize("up", ["2C", "9D", "8S"])
def test_deluxe_surrender_when_first_card_not_ace_or_ten(up):
    kit = seats([["10C", "6D"]], up=up, hole="8D")
    assert kit.options("1") == ["hit", "stand", "double", "surrender"]


@pytest.mark.parametrize("up", ["10C", "JD", "QH", "KS"])
def test_deluxe_no_surrender_against_a_ten(up):
    kit = seats([["10C", "6D"]], up=up, hole="8D")
    assert "surrender" not in kit.options("1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


def test_deluxe_no_surrender_against_an_ace():
    kit = seats([["10C", "6D"]], up="AC", hole="8D")
    kit.decide("A", "no_insurance")
    assert "surrender" not in kit.options("1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


# -------------------------------------------------------------------------- double, split
@pytest.mark.parametrize(
    "hand", [["AH", "8C"], ["10H", "2C"], ["9H", "9C"], ["2H", "3C"], ["AH", "AC"]]
)
def test_deluxe_double_on_any_first_two_cards(hand):
    kit = seats([hand], up="9S", hole="8D", draws=["5C"])
    assert "double" in kit.options("1")
    new = kit.decide("A", "double")
    assert one(new, "HandDoubled") == {"hand": "1", "rule": "DBL-1"}


def test_deluxe_double_after_split_not_on_split_aces():
    # P06: 9,9 split; 9+2 doubles (10 -> 21 doubled, push); 9+8 stands; dealer 6,10,5
    kit = seats([["9H", "9C"]], up="6H", hole="10D", draws=["2S", "10H", "8D"], dealer_draws=["5C"])
    kit.decide("A", "split")
    assert "double" in kit.options("1.1")
    new = kit.decide("A", "double")
    assert one(new, "WagerAdded")["wager_id"] == "1.1:double"
    assert stood(new)["1.1"] == ("21", 21, "HAND-1")  # 21 is reported before "double"
    new = kit.decide("A", "stand")
    assert settlement(new, "1:main")[0] == "push"
    assert settlement(new, "1.1:double")[0] == "push"
    assert settlement(new, "1.2:split")[0] == "lose"
    assert kit.net("A") == D(-10)


def test_deluxe_split_aces_cannot_double_they_stand_on_one_card():
    kit = seats([["AH", "AC"]], up="6H", hole="10D", draws=["2S", "10H"], dealer_draws=["5C"])
    new = kit.decide("A", "split")
    assert stood(new) == {"1.1": ("split_ace", 13, "HAND-1"), "1.2": ("21", 21, "HAND-1")}
    assert settlement(new, "1.2:split") == ("push", "0:1", "10.00", "0.00", "OUT-4")


@pytest.mark.parametrize("pair", [["KH", "QC"], ["10H", "JC"], ["7H", "7D"], ["AH", "AS"]])
def test_deluxe_split_a_pair_of_equal_value_once(pair):
    kit = seats([pair], up="9S", hole="8D", draws=["5C", "5D"])
    assert "split" in kit.options("1")


# ---------------------------------------------------------------- insurance / even money
def test_deluxe_insurance_even_with_blackjack_no_even_money():
    kit = seats([["AH", "KC"], ["10D", "9S"]], up="AS", hole="7D")
    assert kit.options("1") == ["insurance", "no_insurance"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "even_money"))
    new = kit.decide("A", "insurance")
    assert one(new, "WagerAdded")["stake"] == "5.00"
    kit.decide("B", "no_insurance")
    new = kit.decide("B", "stand")
    # dealer A,7 = soft 18: BJ 3:2 (+15), insurance lost (-5)
    assert settlement(new, "1:main") == ("blackjack", "3:2", "25.00", "15.00", "OUT-1")
    assert settlement(new, "1:insurance") == ("lose", None, "0.00", "-5.00", "INS-1")
    assert kit.nets() == {"A": D(10), "B": D(10)}


def test_deluxe_insured_blackjack_against_dealer_blackjack_push_plus_2_to_1():
    kit = seats([["AH", "KC"]], up="AS", hole="QD")
    new = kit.decide("A", "insurance")
    assert settlement(new, "1:main") == ("push", "0:1", "10.00", "0.00", "OUT-1")
    assert settlement(new, "1:insurance") == ("win", "2:1", "15.00", "10.00", "INS-1")
    assert kit.net("A") == D(10)


# ------------------------------------------------------------------------- END-2 and D15
def test_end_2_every_seated_hand_blackjack_dealer_without_blackjack_no_more_cards():
    kit = Kit(V, ["AH", "AS", "9C", "KC", "QD", "7D", "5S"], players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    new = kit.close()
    assert kinds(new)[-8:] == [
        "PlayStarted", "HandStood", "HandStood", "DealerTurnStarted", "DealerStood",
        "WagerSettled", "WagerSettled", "RoundSettled",
    ]  # fmt: skip
    assert one(new, "DealerStood") == {"total": 16, "reason": "result decided", "rule": "END-2"}
    assert "HoleCardRevealed" not in kinds(new)
    assert kit.drawn() == ["AH", "AS", "9C", "KC", "QD", "7D"]  # 5S never dealt
    assert kit.nets() == {"A": D(15), "B": D(15)}


def test_end_2_after_the_insurance_window_and_a_peek_without_blackjack():
    kit = seats([["AH", "KC"]], up="AC", hole="7D")
    new = kit.decide("A", "insurance")
    assert one(new, "DealerChecked")["blackjack"] is False
    assert one(new, "DealerStood")["rule"] == "END-2"
    assert dealer_cards(new) == []
    assert kit.net("A") == D(10)


def test_end_2_dealer_blackjack_and_every_hand_blackjack_is_end_1_push():
    kit = seats([["AH", "KC"], ["AS", "QD"]], up="KH", hole="AD")
    ev = kit.events()
    assert one(ev, "HoleCardRevealed")["rule"] == "END-1"
    assert {w: p["result"] for w, p in settled(ev).items()} == {"1:main": "push", "2:main": "push"}


def test_d15_every_hand_bust_dealer_neither_reveals_nor_draws():
    kit = seats([["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D", draws=["KH", "QS"])
    kit.decide("A", "hit")
    new = kit.decide("B", "hit")
    assert kinds(new)[-5:] == [
        "DealerTurnStarted", "DealerStood", "WagerSettled", "WagerSettled", "RoundSettled"
    ]  # fmt: skip
    assert one(new, "DealerStood") == {"total": 16, "reason": "result decided", "rule": "D15"}
    assert kit.nets() == {"A": D(-10), "B": D(-10)}


def test_d15_bust_surrender_and_blackjack_leave_nothing_to_decide():
    kit = seats(
        [["10H", "6C"], ["10S", "5D"], ["AH", "KD"]], up="5C", hole="10D", draws=["KH"],
        dealer_draws=["2C"],
    )  # fmt: skip
    kit.decide("A", "hit")
    new = kit.decide("B", "surrender")
    assert one(new, "DealerStood")["rule"] == "D15"
    assert dealer_cards(new) == []
    assert kit.nets() == {"A": D(-10), "B": D(-5), "C": D(15)}


def test_d15_one_live_hand_makes_the_dealer_complete():
    kit = seats(
        [["10H", "6C"], ["10S", "8D"]], up="5C", hole="10D", draws=["KH"], dealer_draws=["2C"]
    )
    kit.decide("A", "hit")
    new = kit.decide("B", "stand")
    assert kinds(new).count("HoleCardRevealed") == 1
    assert dealer_cards(new) == ["2C"]
    assert one(new, "DealerStood") == {"total": 17, "reason": "stands", "rule": "DEALER-1"}
    assert settlement(new, "2:main")[0] == "win"


# ---------------------------------------------------------------------------- FUNDS-1/2
def test_funds_1_deluxe_double_without_balance_becomes_hit():
    kit = seats([["5H", "6C"]], up="9C", hole="7D", draws=["2H", "5S"], dealer_draws=["2D"], A=15)
    new = kit.decide("A", "double")
    assert kinds(new) == ["DecisionMade", "DecisionConverted", "HandHit", "CardDealt", "CardToHand"]
    assert one(new, "DecisionConverted") == {
        "hand": "1", "requested": "double", "applied": "hit", "balance_seen": "5.00",
        "needed": "10.00", "rule": "FUNDS-1",
    }  # fmt: skip
    assert one(new, "CardToHand")["rule"] == "FUNDS-1"
    assert kit.options("1") == ["hit", "stand"]  # a hit: the hand plays on
    new = kit.decide("A", "hit")
    assert cards_to(new, "1") == ["5S"]
    new = kit.decide("A", "stand")
    assert list(settled(new)) == ["1:main"]  # no double stake
    assert settlement(new, "1:main") == ("push", "0:1", "10.00", "0.00", "OUT-4")
    assert kit.net("A") == 0


@pytest.mark.parametrize(
    ("pair", "applied", "after"),
    [
        (["5H", "5C"], "hit", ["hit", "stand"]),  # 10: hits
        (["2H", "2C"], "hit", ["hit", "stand"]),  # 4: hits
        (["8H", "8C"], "stand", []),  # 16: stands
        (["6H", "6C"], "stand", []),  # 12: stands
        (["AH", "AC"], "stand", []),  # soft 12: more than 11, stands
    ],
)
def test_funds_2_deluxe_split_without_balance_hits_11_or_less_else_stands(pair, applied, after):
    kit = seats([pair], up="9C", hole="7D", draws=["9H"], dealer_draws=["2D"], A=15)
    new = kit.decide("A", "split")
    conv = one(new, "DecisionConverted")
    assert (conv["requested"], conv["applied"], conv["rule"]) == ("split", applied, "FUNDS-2")
    assert (conv["balance_seen"], conv["needed"]) == ("5.00", "10.00")
    assert "HandSplit" not in kinds(new)
    assert "WagerAdded" not in kinds(new)
    if applied == "hit":
        assert cards_to(new, "1") == ["9H"]
        assert kit.options("1") == after
        assert kit.balance("A") == D(5)
    else:
        assert stood(new)["1"][0::2] == ("funds", "FUNDS-2")
        assert list(settled(new)) == ["1:main"]  # dealer 9,7,9 busts: the one stake wins
        assert kit.net("A") == D(10)


def test_funds_deluxe_double_with_exact_balance_is_a_double():
    kit = seats([["5H", "6C"]], up="9C", hole="7D", draws=["9H"], dealer_draws=["2D"], A=20)
    new = kit.decide("A", "double")
    assert "DecisionConverted" not in kinds(new)
    assert kit.net("A") == D(20)


# -------------------------------------------------------------------------------- PRE-1
def preselect(kit: Kit, player: str, action: str, hand: str | None = None) -> list:
    return kit.run(lambda: kit.app.preselect(kit.rid, player=player, action=action, hand=hand))


def test_pre_1_the_last_choice_before_the_turn_counts():
    kit = seats([["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D", draws=["KH"])
    new = preselect(kit, "B", "hit")
    assert kinds(new) == ["DecisionPreselected"]
    assert new[0]["payload"]["action"] == "hit"
    assert kit.phase == "playing"
    assert kit.options("2") == []
    new = preselect(kit, "B", "stand")  # changed
    assert kinds(new) == ["DecisionPreselected"]
    new = kit.decide("A", "stand")  # B's turn starts: the stand is played at once
    made = of(new, "DecisionMade")
    assert [(p["player"], p["action"], p["actor"]) for p in made] == [
        ("A", "stand", {"kind": "player", "id": "A"}),
        ("B", "stand", {"kind": "system", "id": "PRE-1"}),
    ]
    assert stood(new)["2"] == ("stand", 15, "PHASE-4")
    assert dealer_cards(new) == ["KH"]  # 9,7 + K: the dealer busts
    assert kit.nets() == {"A": D(10), "B": D(10)}


def test_pre_1_a_chosen_double_meets_funds_1_when_it_executes():
    kit = seats([["10H", "6C"], ["5S", "6D"]], up="9C", hole="7D", draws=["2H"], B=15)
    preselect(kit, "B", "double")
    new = kit.decide("A", "stand")
    assert one(new, "DecisionConverted")["rule"] == "FUNDS-1"
    assert cards_to(new, "2") == ["2H"]
    assert kit.options("2") == ["hit", "stand"]


def test_pre_1_may_be_chosen_during_the_insurance_window():
    kit = seats([["10H", "6C"], ["10S", "8D"]], up="AC", hole="7D")
    preselect(kit, "B", "stand")
    kit.decide("A", "no_insurance")
    kit.decide("B", "no_insurance")
    new = kit.decide("A", "stand")
    assert [p["player"] for p in of(new, "DecisionMade")] == ["A", "B"]
    assert kit.phase == "settled"


def test_pre_1_refusals_record_nothing():
    from domain.errors import OutOfTurn, WrongOrder

    kit = seats([["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D")
    err = kit.refused(OutOfTurn, lambda: preselect(kit, "A", "hit"))  # A's turn: decide now
    assert err.rule == "PRE-1"
    err = kit.refused(IllegalAction, lambda: preselect(kit, "B", "split"))  # not open
    assert err.rule == "PRE-1"
    betting = Kit(V, ["10H"], players=["A"], table="t2")
    betting.bet("A", 10, 1)
    betting.refused(WrongOrder, lambda: preselect(betting, "A", "hit"))


@pytest.mark.parametrize(
    "variant",
    [
        "multihand",
        "lucky7",
        "european",
        "boundless",
    ],
)
def test_pre_1_only_deluxe_takes_decisions_before_the_turn(variant):
    from roundkit import stack as stack_of

    cards = stack_of(variant, [["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D")
    if variant in ("european", "boundless"):
        cards = stack_of(variant, [["10H", "6C"]], up="9C", hole="7D")
    kit = Kit(variant, cards, players=["A", "B"])
    kit.bet("A", 10, 1)
    if variant not in ("european", "boundless"):
        kit.bet("B", 10, 2)
    kit.close()
    err = kit.refused(IllegalAction, lambda: preselect(kit, "A", "stand"))
    assert err.rule == "PRE-1"


def test_pre_1_a_decision_out_of_turn_is_still_refused():
    """``decide`` stays for the hand whose turn it is; PRE-1 choices go through ``preselect``."""
    assert get_rules(V).pre_decisions is True
    kit = seats([["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D")
    from domain.errors import OutOfTurn

    kit.refused(OutOfTurn, lambda: kit.decide("B", "stand"))


def test_deluxe_players_per_seat_and_two_seats_play_in_seat_order():
    # P09: one player on two seats
    kit = Kit(V, ["10H", "5C", "7S", "QH", "6D", "10C", "9C"], players=["A"])
    kit.bet("A", 10, 1)
    kit.bet("A", 10, 2)
    kit.close()
    new = kit.decide("A", "stand")
    assert stood(new)["1"] == ("stand", 20, "PHASE-4")
    new = kit.decide("A", "double")
    assert cards_to(new, "2") == ["9C"]
    assert of(new, "RoundSettled")[0]["dealer"] == ["7S", "10C"]
    assert kit.net("A") == D(30)

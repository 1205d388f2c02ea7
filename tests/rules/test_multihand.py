"""multihand (RULES.md "Variant parameters", multihand column): 4 decks reshuffled every round
(D3), up to 5 boxes (D4), peek (D5), no surrender, double on any two also after split, split
any equal value once (D6), split aces may hit but not double (D7), insurance and even money,
either with a BJ against an ace (D16)."""

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

from domain.application import RoundAudit
from domain.errors import IllegalAction, InsufficientFunds
from domain.rules import get_rules

V = "multihand"


def boxes(hands: list[list[str]], *, up: str, hole: str, draws=(), dealer_draws=(), **kw) -> Kit:
    """Player A on boxes 1..n, 10.00 each; betting closed."""
    order = stack(V, hands, up=up, hole=hole, draws=draws, dealer_draws=dealer_draws)
    kit = Kit(V, order, players={"A": kw.get("A", "1000")})
    for i in range(1, len(hands) + 1):
        kit.bet("A", kw.get("bet", 10), i)
    kit.close()
    return kit


def finish(app: RoundAudit, rid: str, player: str) -> None:
    """Play a round of unknown cards to its end: decline windows, time out every hand."""
    for _ in range(50):
        view = app.round_view(rid)
        if view["phase"] in ("settled", "cancelled"):
            return
        if view["phase"] == "insurance":
            app.close_insurance_window(rid)
        else:
            app.time_out(rid, player=player)
    raise AssertionError("round did not end")


def test_multihand_rules_object_table_row():
    r = get_rules(V)
    assert (r.decks, r.reshuffle_every_round, r.max_spots, r.hole_card) == (4, True, 5, "peek")
    assert (r.surrender, r.double, r.double_after_split) == ("none", "any_two", True)
    assert (r.split_aces, r.double_split_aces, r.split_forbidden_values) == (
        "play_on", False, frozenset()
    )  # fmt: skip
    assert (r.insurance, r.insurance_with_blackjack, r.even_money) == (True, True, True)
    assert r.even_money_or_insurance_with_bj is True


# ------------------------------------------------------------------------------------ D3
def test_d3_a_fresh_four_deck_shoe_for_every_round_retired_when_the_round_ends():
    app = RoundAudit()
    app.open_wallet("A", account_type="test")
    app.deposit("A", "1000", transaction_id="dep")
    shoes = []
    for n in (1, 2):
        rid = app.start_round(table_id="t1", round_number=n, variant=V, production=False)
        shoe = app.shoe(app.round(rid).shoe_id)
        assert (shoe.kind, shoe.decks, shoe.shoe_number, shoe.retired) == ("rng", 4, n, False)
        app.place_bet(rid, player="A", amount="10", spot="1")
        app.close_betting(rid)
        finish(app, rid, "A")
        shoe = app.shoe(app.round(rid).shoe_id)
        assert shoe.retired  # D3: one shoe per round, its seed revealed
        assert {d.round_id for d in shoe.drawn} == {rid}
        assert shoe.verify() == []
        shoes.append(shoe.id)
    assert shoes[0] != shoes[1]


# ------------------------------------------------------------------------------------ D4
def test_d4_up_to_five_boxes():
    order = stack(V, [["2H", "3H"], ["2C", "3C"], ["2D", "3D"], ["2S", "3S"], ["4H", "5H"]],
                  up="9C", hole="7D")  # fmt: skip
    kit = Kit(V, order, players=["A"])
    for box in range(1, 6):
        kit.bet("A", 10, box)
    kit.refused(IllegalAction, lambda: kit.bet("A", 10, 6))
    kit.refused(IllegalAction, lambda: kit.bet("A", 10, 0))
    new = kit.close()
    assert [p["hand"] for p in of(new, "HandOpened")] == ["1", "2", "3", "4", "5"]


def test_d4_boxes_dealt_and_played_lowest_first_p10():
    # P10: three boxes: 17 push, BJ, 5,5 doubled to 12 loses
    kit = Kit(V, ["10H", "AS", "5D", "9C", "7S", "KD", "5H", "8S", "2C"], players=["A"])
    for box in (3, 1, 2):  # betting order does not matter
        kit.bet("A", 10, box)
    kit.close()
    new = kit.decide("A", "stand")
    assert stood(new)["1"] == ("stand", 17, "PHASE-4")
    new = kit.decide("A", "double")
    assert cards_to(new, "3") == ["2C"]
    assert {w: p["result"] for w, p in settled(new).items()} == {
        "1:main": "push", "2:main": "blackjack", "3:main": "lose", "3:double": "lose"
    }  # fmt: skip
    assert kit.net("A") == D(-5)


# ------------------------------------------------------------------------------------ D5
def test_d5_multihand_peeks_like_the_live_tables():
    kit = Kit(V, ["10H", "QS", "9C", "AD", "5C"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert one(new, "DealerChecked") == {"blackjack": True, "rule": "D5"}
    assert one(new, "HoleCardRevealed")["rule"] == "END-1"
    assert kit.net("A") == D(-10)


# ------------------------------------------------------------------------------------ D6
@pytest.mark.parametrize("pair", [["JH", "QC"], ["10S", "KD"], ["KH", "KS"], ["4H", "4C"]])
def test_d6_any_two_equal_values_split_even_different_faces(pair):
    kit = boxes([pair], up="9S", hole="8D", draws=["5C"])
    assert "split" in kit.options("1")
    new = kit.decide("A", "split")
    assert one(new, "HandSplit")["into"] == ["1.1", "1.2"]


def test_d6_non_pairs_do_not_split():
    kit = boxes([["JH", "9C"]], up="9S", hole="8D")
    kit.refused(IllegalAction, lambda: kit.decide("A", "split"))


# ------------------------------------------------------------------------------------ D7
def test_d7_split_aces_may_hit_and_may_not_double():
    kit = boxes(
        [["AH", "AC"]], up="9C", hole="7D", draws=["5H", "9S", "4C", "10D"], dealer_draws=["2S"]
    )
    new = kit.decide("A", "split")
    assert cards_to(new, "1.1") == ["5H"]
    assert "HandStood" not in kinds(new)  # no SPLIT-3 stand
    assert kit.options("1.1") == ["hit", "stand"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "double"))
    new = kit.decide("A", "hit")  # A,5,9 = 15
    assert cards_to(new, "1.1") == ["9S"]
    new = kit.decide("A", "stand")
    assert cards_to(new, "1.2") == ["4C"]
    new = kit.decide("A", "hit")  # A,4,10 = 15
    assert cards_to(new, "1.2") == ["10D"]
    new = kit.decide("A", "stand")  # dealer 9,7,2 = 18
    assert {w: p["result"] for w, p in settled(new).items()} == {
        "1:main": "lose", "1.2:split": "lose"
    }  # fmt: skip
    assert kit.net("A") == D(-20)


def test_d7_split_ace_card_cites_d7_not_split_3():
    kit = boxes([["AH", "AC"]], up="9C", hole="7D", draws=["5H"])
    new = kit.decide("A", "split")
    assert one(new, "CardToHand")["rule"] == "D7"


def test_d7_split_ace_plus_ten_is_21_not_blackjack_and_stands():
    kit = boxes([["AH", "AC"]], up="9C", hole="7D", draws=["KH", "9S"], dealer_draws=["4D"])
    new = kit.decide("A", "split")
    assert stood(new)["1.1"] == ("21", 21, "HAND-1")
    assert kit.options("1.2") == ["hit", "stand"]  # A,9: may hit (D7), may not double
    new = kit.decide("A", "stand")  # dealer 9,7,4 = 20
    assert settlement(new, "1:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(new, "1.2:split") == ("push", "0:1", "10.00", "0.00", "OUT-4")


def test_multihand_double_after_split_of_non_aces():
    kit = boxes([["8H", "8C"]], up="9C", hole="7D", draws=["3H", "KS", "10C"])
    kit.decide("A", "split")
    assert "double" in kit.options("1.1")
    new = kit.decide("A", "double")
    assert stood(new)["1.1"] == ("21", 21, "HAND-1")
    assert one(new, "WagerAdded")["stake"] == "10.00"


def test_multihand_no_surrender():
    kit = boxes([["10H", "6C"]], up="9C", hole="7D")
    assert kit.options("1") == ["hit", "stand", "double"]
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


def test_multihand_double_refused_without_balance():
    kit = boxes([["5H", "6C"]], up="9C", hole="7D", A="19.99")
    kit.refused(InsufficientFunds, lambda: kit.decide("A", "double"))


# ----------------------------------------------------------------------------------- D16
def test_d16_blackjack_against_an_ace_may_take_even_money_or_insurance():
    kit = boxes([["AH", "KC"], ["10D", "9S"]], up="AS", hole="7D")
    assert kit.options("1") == ["even_money", "insurance", "no_insurance"]
    assert kit.options("2") == ["insurance", "no_insurance"]


def test_d16_insured_blackjack_against_dealer_blackjack_pays_like_even_money():
    kit = boxes([["AH", "KC"]], up="AS", hole="QD")
    new = kit.decide("A", "insurance")
    assert settlement(new, "1:main") == ("push", "0:1", "10.00", "0.00", "OUT-1")
    assert settlement(new, "1:insurance") == ("win", "2:1", "15.00", "10.00", "INS-1")
    assert kit.net("A") == D(10)


def test_d16_insured_blackjack_dealer_without_blackjack_3_to_2_minus_insurance():
    kit = boxes([["AH", "KC"]], up="AS", hole="7D")
    new = kit.decide("A", "insurance")
    assert settlement(new, "1:main") == ("blackjack", "3:2", "25.00", "15.00", "OUT-1")
    assert settlement(new, "1:insurance") == ("lose", None, "0.00", "-5.00", "INS-1")
    assert kit.net("A") == D(10)


def test_even_1_multihand_even_money_then_dealer_blackjack_keeps_the_payment():
    kit = boxes([["AH", "KC"], ["10D", "9S"]], up="AS", hole="QD")
    new = kit.decide("A", "even_money", hand="1")
    assert settlement(new, "1:main") == ("even_money", "1:1", "20.00", "10.00", "EVEN-1")
    new = kit.decide("A", "no_insurance", hand="2")
    assert one(new, "DealerChecked")["blackjack"] is True
    assert list(settled(new)) == ["2:main"]  # box 1 is not settled twice
    assert kit.net("A") == D(0)  # +10 even money, -10 box 2

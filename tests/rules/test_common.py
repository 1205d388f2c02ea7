"""Common rules of RULES.md (all variants unless a variant says otherwise), played through
``RoundAudit`` rounds on stacked test shoes, and the bad-input list (every illegal command is
refused with a named domain error and records nothing).

Each test builds the history, then asserts only on the events the command under test recorded
(``Kit`` returns them) and on exact amounts (wallet net per player, WagerSettled fields).
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import (
    VARIANTS,
    D,
    Kit,
    cards_to,
    dealer_cards,
    dealer_hand,
    hand_id,
    kinds,
    main_wager,
    of,
    one,
    settled,
    settlement,
    stack,
    stood,
    without_sequence,
)

from domain.application import RoundAudit
from domain.errors import (
    BetLimit,
    BettingClosed,
    CardAccountingError,
    IllegalAction,
    InsufficientFunds,
    InvalidAmount,
    InvalidCard,
    OutOfTurn,
    RoundClosed,
    RoundNotFound,
    WrongOrder,
)

PEEK_VARIANTS = ("deluxe", "multihand", "lucky7", "boundless")
EVEN_MONEY_VARIANTS = ("multihand", "lucky7", "european")
SURRENDER_VARIANTS = ("deluxe", "european", "boundless")
ONE_CARD_SPLIT_ACES = ("deluxe", "lucky7", "european", "boundless")
REFUSE_FUNDS_VARIANTS = ("multihand", "lucky7", "european")


def one_hand(variant: str, cards: list[str], *, bet: object = 10, **funds: object) -> Kit:
    """A round with player A's single hand (seat/box 1), bet placed and betting closed."""
    kit = Kit(variant, cards, players={"A": funds.get("A", "1000")})
    kit.bet("A", bet, 1)
    kit.close()
    return kit


def play_due(kit: Kit, action: str = "stand") -> None:
    """Answer ``action`` for every hand that is due until the round needs no decision."""
    for _ in range(20):
        view = kit.view()
        if view["phase"] != "playing":
            return
        due = [h for h in view["hands"] if h["options"]]
        if not due:
            return
        kit.decide(due[0]["player"], action, hand=due[0]["hand"])


# --------------------------------------------------------------------------- CARD-1 / CARD-2
@pytest.mark.parametrize("code", ["JK", "1S", "AX", "11H", "", "B"])
def test_card_1_test_shoe_refuses_a_card_outside_the_52(code):
    app = RoundAudit()
    with pytest.raises(InvalidCard):
        app.start_round(
            table_id="t1",
            round_number=1,
            variant="deluxe",
            production=False,
            test_order=["AS", code, "9D"],
        )
    from domain.round import Round

    with pytest.raises(RoundNotFound):  # nothing was recorded
        app.round_view(str(Round.create_id("t1", 1)))


def test_card_1_no_card_more_often_than_the_decks_allow():
    app = RoundAudit()
    app.start_round(  # european: 2 decks (D2): AS twice is fine
        table_id="t1", round_number=1, variant="european", production=False,
        test_order=["AS", "AS", "9D"],
    )  # fmt: skip
    with pytest.raises(CardAccountingError) as info:
        app.start_round(
            table_id="t1", round_number=2, variant="european", production=False,
            test_order=["AS", "AS", "AS"],
        )  # fmt: skip
    assert info.value.rule == "SHOE-3"


@pytest.mark.parametrize(
    "suits",
    [("H", "S", "D", "C", "D"), ("S", "S", "S", "S", "S"), ("D", "H", "C", "D", "H")],
)
def test_card_1_suits_matter_only_for_side_bets(suits):
    ranks = ["10", "9", "7", "9", "Q"]  # A: 10,7 (17); dealer 9,9 (18)
    kit = one_hand("multihand", [r + s for r, s in zip(ranks, suits, strict=True)])
    new = kit.decide("A", "stand")
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert kit.net("A") == D("-10.00")


def test_card_2_face_cards_count_ten():
    kit = Kit("multihand", ["JH", "KS", "QD", "9C"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert [(p["card"], p["total"]) for p in of(new, "CardToHand")] == [("JH", 10), ("QD", 20)]
    new = kit.decide("A", "stand")
    assert settlement(new, "1:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")


def test_card_2_ace_counts_eleven_or_one():
    kit = one_hand("multihand", ["AH", "10S", "AD", "7C", "9H"])  # A: A,A; dealer 10,7
    assert (kit.hand("1")["total"], kit.hand("1")["soft"]) == (12, True)
    new = kit.decide("A", "hit")
    assert [(p["card"], p["total"], p["soft"]) for p in of(new, "CardToHand")] == [("9H", 21, True)]


# ------------------------------------------------------------------------------- SCORE
def test_score_1_soft_total_turns_hard_when_eleven_would_bust():
    kit = one_hand("multihand", ["AH", "10S", "5D", "7C", "10H", "2D"])  # A,5 vs 10,7
    assert (kit.hand("1")["total"], kit.hand("1")["soft"]) == (16, True)
    new = kit.decide("A", "hit")
    assert kinds(new) == ["DecisionMade", "HandHit", "CardDealt", "CardToHand"]
    assert one(new, "CardToHand") == {
        "hand": "1", "card": "10H", "total": 16, "soft": False, "rule": "PHASE-4"
    }  # fmt: skip
    new = kit.decide("A", "hit")
    assert one(new, "CardToHand")["total"] == 18


@pytest.mark.parametrize("variant", VARIANTS)
def test_score_2_bust_ends_the_hand_and_loses(variant):
    cards = stack(variant, [["10H", "6S"]], up="9D", hole="8C", draws=["KH"])
    kit = one_hand(variant, cards)
    new = kit.decide("A", "hit")
    h = hand_id(variant, "A")
    assert stood(new)[h] == ("bust", 26, "SCORE-2")
    assert settlement(new, main_wager(variant, "A")) == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert kit.net("A") == D("-10.00")


@pytest.mark.parametrize("variant", ["deluxe", "multihand", "lucky7"])
def test_score_3_blackjack_beats_a_three_card_21(variant):
    # P01: A has BJ; B keeps a live hand so that the deluxe dealer draws (D15)
    order = stack(variant, [["AS", "KH"], ["10D", "7S"]], up="6C", hole="5D", dealer_draws=["10S"])
    kit = Kit(variant, order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    new = kit.decide("B", "stand")
    assert dealer_cards(new) == ["10S"]
    assert one(new, "RoundSettled")["dealer_total"] == 21
    assert settlement(new, "1:main") == ("blackjack", "3:2", "25.00", "15.00", "OUT-1")
    assert settlement(new, "2:main") == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert kit.nets() == {"A": D(15), "B": D(-10)}


def test_score_3_european_blackjack_beats_a_three_card_21():
    kit = Kit("european", ["AS", "6C", "KH", "5D", "10S"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert stood(new)["1"] == ("blackjack", 21, "HAND-1")
    assert dealer_cards(new) == ["6C", "5D", "10S"]
    assert settlement(new, "1:main") == ("blackjack", "3:2", "25.00", "15.00", "OUT-1")


@pytest.mark.parametrize("variant", VARIANTS)
def test_score_4_split_ace_and_ten_is_21_paid_even_money(variant):
    cards = stack(variant, [["AH", "AD"]], up="9S", hole="10C", draws=["KS", "9H"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    kit.decide("A", "split")
    play_due(kit)  # multihand (D7): the second split ace (A,9) plays on and stands
    new = kit.events()
    assert cards_to(new, f"{h}.1") == ["KS"]
    assert stood(new)[f"{h}.1"] == ("21", 21, "HAND-1")
    assert settlement(new, main_wager(variant, "A")) == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(new, f"{h}.2:split") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert kit.hand(f"{h}.1")["blackjack"] is False
    assert kit.net("A") == D(20)


# ------------------------------------------------------------------------------ HAND-1
@pytest.mark.parametrize("variant", VARIANTS)
def test_hand_1_reaching_21_stands_automatically(variant):
    # P02: A,A then 9 = soft 21
    cards = stack(variant, [["AH", "AD"]], up="10H", hole="9C", draws=["9H"], dealer_draws=[])
    if variant == "european":
        cards = ["AH", "10H", "AD", "9H", "9C"]
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    new = kit.decide("A", "hit")
    assert stood(new)[h] == ("21", 21, "HAND-1")
    assert kinds(without_sequence(new))[:5] == [
        "DecisionMade", "HandHit", "CardDealt", "CardToHand", "HandStood"
    ]  # fmt: skip
    assert settlement(new, main_wager(variant, "A"))[0] == "win"
    assert kit.net("A") == D(10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_hand_1_blackjack_stands_at_once(variant):
    cards = stack(variant, [["AH", "KD"]], up="9C", hole="8S")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert stood(new)[hand_id(variant, "A")] == ("blackjack", 21, "HAND-1")
    assert kit.net("A") == D(15)


@pytest.mark.parametrize("variant", VARIANTS)
def test_hand_1_dbl_1_double_gets_one_card_and_stands(variant):
    cards = stack(variant, [["5H", "6D"]], up="9C", hole="8S", draws=["2C"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    new = kit.decide("A", "double")
    assert kinds(without_sequence(new))[:7] == [
        "DecisionMade", "WagerAdded", "HandDoubled", "CardDealt", "CardToHand", "HandStood",
        "DealerTurnStarted",
    ]  # fmt: skip
    added = one(new, "WagerAdded")
    assert (added["wager_id"], added["kind"], added["stake"], added["rule"]) == (
        f"{h}:double", "double", "10.00", "DBL-1"
    )  # fmt: skip
    assert cards_to(new, h) == ["2C"]
    if variant != "boundless":  # boundless: the card comes from the sequence (BDL-2)
        assert one(new, "CardToHand")["rule"] == "DBL-1"
    assert stood(new)[h] == ("double", 13, "HAND-1")
    # 13 against the dealer's 17: both stakes lost
    assert settlement(new, f"{h}:main")[0:4] == ("lose", None, "0.00", "-10.00")
    assert settlement(new, f"{h}:double")[0:4] == ("lose", None, "0.00", "-10.00")
    assert kit.net("A") == D(-20)


@pytest.mark.parametrize("variant", VARIANTS)
def test_dbl_1_double_win_pays_both_stakes(variant):
    cards = stack(variant, [["5H", "6D"]], up="9C", hole="8S", draws=["KC"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    new = kit.decide("A", "double")
    assert settlement(new, f"{h}:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert settlement(new, f"{h}:double") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert kit.net("A") == D(20)


# ---------------------------------------------------------------------------- DEALER-1
@pytest.mark.parametrize("variant", VARIANTS)
def test_dealer_1_soft_17_stands(variant):
    cards = stack(variant, [["10H", "8C"]], up="6D", hole="AS")
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert one(new, "DealerStood") == {"total": 17, "reason": "stands", "rule": "DEALER-1"}
    assert dealer_cards(new) == ([] if variant != "european" else ["AS"])
    assert one(new, "RoundSettled")["dealer"] == dealer_hand(variant, "6D", "AS")
    assert settlement(new, main_wager(variant, "A")) == ("win", "1:1", "20.00", "10.00", "OUT-2")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("hole", "draws", "total", "result"),
    [
        ("10S", ["5C"], 21, "lose"),  # hard 16 draws
        ("QS", ["AC"], 17, "win"),  # 16 draws an ace: hard 17 stands
        ("KS", ["6C"], 22, "win"),  # 16 draws to a bust
        ("AS", [], 17, "win"),  # soft 17 stands
        ("2S", ["AC"], 19, "lose"),  # 8 + A = soft 19 stands
        ("5S", ["AC", "10C"], 22, "win"),  # 11 + A = hard 12 (the ace counts 1), draws on
    ],
)
def test_dealer_1_hits_16_or_less_stands_on_17_or_more(variant, hole, draws, total, result):
    cards = stack(variant, [["10H", "8C"]], up="6D", hole=hole, dealer_draws=draws)
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    expected_draws = ([hole] if variant == "european" else []) + draws
    assert dealer_cards(new) == expected_draws
    assert all(p["rule"] == "DEALER-1" for p in of(new, "CardToDealer"))
    reason = "bust" if total > 21 else "stands"
    assert one(new, "DealerStood") == {"total": total, "reason": reason, "rule": "DEALER-1"}
    assert one(new, "RoundSettled")["dealer"] == dealer_hand(variant, "6D", hole, draws)
    assert settlement(new, main_wager(variant, "A"))[0] == result


@pytest.mark.parametrize("variant", VARIANTS)
def test_dealer_1_soft_16_draws_and_multi_card_soft_17_stands(variant):
    # A,5 (soft 16) draws a 10 (hard 16), draws again: 2,A... here: A,5,10 = 16 -> 4 -> 20
    cards = stack(variant, [["10H", "8C"]], up="5D", hole="AS", dealer_draws=["10D", "4C"])
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert one(new, "RoundSettled")["dealer"] == dealer_hand(variant, "5D", "AS", ["10D", "4C"])
    assert one(new, "DealerStood")["total"] == 20
    # 2,4 then A = soft 17 with three cards: stands
    cards = stack(variant, [["10H", "8C"]], up="2D", hole="4S", dealer_draws=["AC"])
    kit = Kit(variant, cards, players=["A"], table="t2")
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.decide("A", "stand")
    assert one(new, "RoundSettled")["dealer"] == dealer_hand(variant, "2D", "4S", ["AC"])
    assert one(new, "DealerStood") == {"total": 17, "reason": "stands", "rule": "DEALER-1"}
    assert settlement(new, main_wager(variant, "A"))[0] == "win"


# ------------------------------------------------------------------------------ OUT-1..4
@pytest.mark.parametrize("variant", VARIANTS)
def test_out_1_blackjack_pays_3_to_2(variant):
    cards = stack(variant, [["KD", "AH"]], up="10C", hole="QS")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert settlement(new, main_wager(variant, "A")) == (
        "blackjack", "3:2", "25.00", "15.00", "OUT-1"
    )  # fmt: skip
    assert kit.net("A") == D(15)


@pytest.mark.parametrize("variant", PEEK_VARIANTS)
def test_out_1_both_blackjack_push_and_end_1_no_further_cards(variant):
    cards = stack(variant, [["KD", "AH"]], up="10C", hole="AS")
    kit = Kit(variant, [*cards, "9C"], players=["A"])  # 9C must stay in the shoe
    kit.bet("A", 10, 1)
    new = kit.close()
    assert one(new, "DealerChecked") == {"blackjack": True, "rule": "D5"}
    assert one(new, "HoleCardRevealed")["rule"] == "END-1"
    assert "PlayStarted" not in kinds(new)
    assert settlement(new, main_wager(variant, "A")) == ("push", "0:1", "10.00", "0.00", "OUT-1")
    assert kit.drawn() == cards
    assert kit.net("A") == 0


@pytest.mark.parametrize("variant", PEEK_VARIANTS)
def test_out_1_dealer_blackjack_beats_20_end_1(variant):
    cards = stack(variant, [["KD", "QH"]], up="KC", hole="AS")
    kit = Kit(variant, [*cards, "9C"], players=["A"])
    kit.bet("A", 10, 1)
    new = kit.close()
    assert kinds(new)[-4:] == ["DealerChecked", "HoleCardRevealed", "WagerSettled", "RoundSettled"]
    assert settlement(new, main_wager(variant, "A")) == ("lose", None, "0.00", "-10.00", "OUT-1")
    assert kit.drawn() == cards
    assert kit.net("A") == D(-10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_out_2_higher_total_wins_1_to_1(variant):
    cards = stack(variant, [["10D", "9H"]], up="10C", hole="8S")
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert settlement(new, main_wager(variant, "A")) == ("win", "1:1", "20.00", "10.00", "OUT-2")


@pytest.mark.parametrize("variant", VARIANTS)
def test_out_2_dealer_bust_wins_1_to_1(variant):
    cards = stack(variant, [["10D", "2H"]], up="6C", hole="10S", dealer_draws=["9D"])
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert one(new, "DealerStood") == {"total": 25, "reason": "bust", "rule": "DEALER-1"}
    assert settlement(new, main_wager(variant, "A")) == ("win", "1:1", "20.00", "10.00", "OUT-2")


@pytest.mark.parametrize("variant", ["deluxe", "multihand", "lucky7"])
def test_out_3_player_bust_loses_even_if_dealer_busts(variant):
    # P05: A busts, B stands on 16; the dealer (6,8) draws 10 and busts
    order = stack(
        variant, [["10H", "6S"], ["10S", "6H"]], up="6D", hole="8H", draws=["10C"],
        dealer_draws=["9S"],
    )  # fmt: skip
    kit = Kit(variant, order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    new = kit.decide("A", "hit")
    assert stood(new)["1"] == ("bust", 26, "SCORE-2")
    new = kit.decide("B", "stand")
    assert one(new, "DealerStood")["reason"] == "bust"
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert settlement(new, "2:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert kit.nets() == {"A": D(-10), "B": D(10)}


@pytest.mark.parametrize("variant", VARIANTS)
def test_out_3_lower_total_loses(variant):
    cards = stack(variant, [["10D", "7H"]], up="10C", hole="8S")
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert settlement(new, main_wager(variant, "A")) == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert kit.net("A") == D(-10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_out_4_equal_totals_push(variant):
    cards = stack(variant, [["10D", "8H"]], up="10C", hole="8S")
    kit = one_hand(variant, cards)
    new = kit.decide("A", "stand")
    assert settlement(new, main_wager(variant, "A")) == ("push", "0:1", "10.00", "0.00", "OUT-4")
    assert kit.net("A") == 0


# ------------------------------------------------------------------------------- INS-1
@pytest.mark.parametrize("variant", VARIANTS)
def test_ins_1_costs_half_the_stake_rounded_down_and_pays_2_to_1(variant):
    cards = stack(variant, [["10D", "9H"]], up="AC", hole="KS")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", "10.01", 1)
    new = kit.close()
    window = one(new, "InsuranceWindowOpened")
    assert window["rule"] == "INS-1"
    h = hand_id(variant, "A")
    assert kit.options(h) == ["insurance", "no_insurance"]
    new = kit.decide("A", "insurance")
    added = one(new, "WagerAdded")
    assert (added["wager_id"], added["kind"], added["stake"], added["rule"]) == (
        f"{h}:insurance", "insurance", "5.00", "INS-1"
    )  # fmt: skip
    if variant == "european":  # no hole card: the hand is played, then the dealer's 2nd card
        new = kit.decide("A", "stand")
    assert settlement(new, f"{h}:insurance") == ("win", "2:1", "15.00", "10.00", "INS-1")
    main = settlement(new, f"{h}:main")
    assert main[:4] == ("lose", None, "0.00", "-10.01")
    assert kit.net("A") == D("-0.01")


@pytest.mark.parametrize("variant", VARIANTS)
def test_ins_1_insurance_loses_without_dealer_blackjack_whatever_else_happens(variant):
    # P04: insurance lost, hand wins
    cards = stack(variant, [["KS", "QD"]], up="AH", hole="7C")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    kit.decide("A", "insurance", amount=5)
    new = kit.decide("A", "stand")
    h = hand_id(variant, "A")
    assert settlement(new, f"{h}:insurance") == ("lose", None, "0.00", "-5.00", "INS-1")
    assert settlement(new, f"{h}:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")
    assert kit.net("A") == D(5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ins_1_needs_enough_balance(variant):
    cards = stack(variant, [["10D", "9H"]], up="AC", hole="KS")
    kit = Kit(variant, cards, players={"A": "10.00"})
    kit.bet("A", 10, 1)
    kit.close()
    err = kit.refused(InsufficientFunds, lambda: kit.decide("A", "insurance"))
    assert err.rule == "INS-1"


def test_ins_1_insurance_amount_must_be_exactly_half():
    kit = Kit("multihand", ["10D", "AC", "9H", "KS"], players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "insurance", amount=4))
    assert err.rule == "INS-1"


@pytest.mark.parametrize("variant", VARIANTS)
def test_ins_1_window_timeout_declines(variant):
    cards = stack(variant, [["10D", "9H"]], up="AC", hole="7S")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.timeout("A")
    assert kinds(new)[:2] == ["DecisionTimedOut", "InsuranceWindowCompleted"]
    assert "WagerAdded" not in kinds(new)
    assert kit.phase == "playing"


# ------------------------------------------------------------------------------ EVEN-1
@pytest.mark.parametrize("variant", EVEN_MONEY_VARIANTS)
def test_even_1_pays_1_to_1_at_once_and_ends_the_hand(variant):
    if variant == "european":
        order = ["AS", "AH", "KD", "10C", "9S"]  # one box; dealer A then (after play) 10
        kit = Kit(variant, order, players=["A"])
        kit.bet("A", 10, 1)
    else:
        order = stack(variant, [["AS", "KD"], ["10H", "7C"]], up="AH", hole="9S")
        kit = Kit(variant, order, players=["A", "B"])
        kit.bet("A", 10, 1)
        kit.bet("B", 10, 2)
    kit.close()
    assert "even_money" in kit.options("1")
    new = kit.decide("A", "even_money")
    assert kinds(new)[:3] == ["DecisionMade", "WagerSettled", "HandStood"]
    assert settlement(new, "1:main") == ("even_money", "1:1", "20.00", "10.00", "EVEN-1")
    assert stood(new)["1"] == ("even_money", 21, "EVEN-1")
    assert kit.net("A") == D(10)  # paid at once
    if variant != "european":
        assert kit.phase == "insurance"  # the round goes on: B has still to decide
        kit.decide("B", "no_insurance")
        kit.decide("B", "stand")
    # settled once only, whatever the dealer holds (european: the late 10C makes a dealer BJ)
    assert [p["wager_id"] for p in of(kit.events(), "WagerSettled")].count("1:main") == 1
    assert kit.phase == "settled"
    assert kit.net("A") == D(10)


@pytest.mark.parametrize("variant", ["deluxe", "boundless"])
def test_even_1_not_offered_where_the_variant_does_not_list_it(variant):
    kit = Kit(variant, stack(variant, [["AS", "KD"]], up="AH", hole="9S"), players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    assert kit.options(hand_id(variant, "A")) == ["insurance", "no_insurance"]
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "even_money"))
    assert err.rule == "EVEN-1"


# -------------------------------------------------------------------------- SPLIT-1..3
@pytest.mark.parametrize("variant", VARIANTS)
def test_split_1_two_hands_same_stake_first_hand_first(variant):
    cards = stack(variant, [["8H", "8D"]], up="9C", hole="9S", draws=["3C", "KH", "2S", "10S"])
    kit = one_hand(variant, cards, bet="12.50")
    h = hand_id(variant, "A")
    new = kit.decide("A", "split")
    assert one(new, "HandSplit") == {"hand": h, "into": [f"{h}.1", f"{h}.2"], "rule": "SPLIT-1"}
    added = one(new, "WagerAdded")
    assert (added["wager_id"], added["kind"], added["stake"], added["hand"], added["rule"]) == (
        f"{h}.2:split", "split", "12.50", f"{h}.2", "SPLIT-1"
    )  # fmt: skip
    assert cards_to(new, f"{h}.1") == ["3C"]
    assert cards_to(new, f"{h}.2") == []  # the second hand waits for the first
    assert kit.balance("A") == D(1000) - D("25.00")
    new = kit.decide("A", "hit")  # 8,3 + K = 21
    assert cards_to(new, f"{h}.1") == ["KH"]
    assert stood(new)[f"{h}.1"] == ("21", 21, "HAND-1")
    assert cards_to(new, f"{h}.2") == ["2S"]
    new = kit.decide("A", "hit")  # 8,2 + 10 = 20
    assert cards_to(new, f"{h}.2") == ["10S"]
    ev = kit.decide("A", "stand")
    assert settlement(ev, f"{h}:main") == ("win", "1:1", "25.00", "12.50", "OUT-2")
    assert settlement(ev, f"{h}.2:split") == ("win", "1:1", "25.00", "12.50", "OUT-2")
    assert kit.net("A") == D(25)


@pytest.mark.parametrize("variant", VARIANTS)
def test_split_2_no_resplit(variant):
    cards = stack(variant, [["8H", "8D"]], up="9C", hole="9S", draws=["8C"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    kit.decide("A", "split")
    assert "split" not in kit.options(f"{h}.1")
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "split"))
    assert err.rule == "SPLIT-1"


@pytest.mark.parametrize("variant", ONE_CARD_SPLIT_ACES)
def test_split_3_split_aces_get_one_card_each_and_stand(variant):
    cards = stack(variant, [["AH", "AD"]], up="9C", hole="8S", draws=["5C", "2S"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    new = kit.decide("A", "split")
    assert cards_to(new, f"{h}.1") == ["5C"]
    assert cards_to(new, f"{h}.2") == ["2S"]
    assert stood(new) == {
        f"{h}.1": ("split_ace", 16, "HAND-1"),
        f"{h}.2": ("split_ace", 13, "HAND-1"),
    }
    assert [p["rule"] for p in of(new, "CardToHand") if p["hand"] != "sequence"] == (
        ["SPLIT-3", "SPLIT-3"] if variant != "boundless" else ["D9", "D9"]
    )
    assert settlement(new, f"{h}:main")[0] == "lose"
    assert settlement(new, f"{h}.2:split")[0] == "lose"
    assert kit.net("A") == D(-20)


# ------------------------------------------------------------------------------ SURR-1
@pytest.mark.parametrize("variant", SURRENDER_VARIANTS)
def test_surr_1_surrender_forfeits_half(variant):
    cards = stack(variant, [["10C", "6D"]], up="9S", hole="8D")  # P03
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    assert "surrender" in kit.options(h)
    new = kit.decide("A", "surrender")
    assert kinds(new)[:3] == ["DecisionMade", "HandSurrendered", "HandStood"]
    assert stood(new)[h] == ("surrender", 16, "SURR-1")
    assert settlement(new, main_wager(variant, "A")) == (
        "surrender", None, "5.00", "-5.00", "SURR-1"
    )  # fmt: skip
    assert kit.net("A") == D(-5)


@pytest.mark.parametrize("variant", SURRENDER_VARIANTS)
def test_surr_1_only_before_any_other_action(variant):
    cards = stack(variant, [["2C", "3D"]], up="9S", hole="8D", draws=["4H"])
    kit = one_hand(variant, cards)
    kit.decide("A", "hit")
    assert "surrender" not in kit.options(hand_id(variant, "A"))
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))
    assert err.rule == "SURR-1"


@pytest.mark.parametrize("variant", SURRENDER_VARIANTS)
def test_surr_1_not_on_a_split_hand(variant):
    cards = stack(variant, [["8C", "8D"]], up="9S", hole="8H", draws=["2H"])
    kit = one_hand(variant, cards)
    kit.decide("A", "split")
    assert "surrender" not in kit.options(hand_id(variant, "A") + ".1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


@pytest.mark.parametrize("variant", ["multihand", "lucky7"])
def test_surr_1_variants_without_surrender_refuse_it(variant):
    cards = stack(variant, [["10C", "6D"]], up="9S", hole="8D")
    kit = one_hand(variant, cards)
    assert "surrender" not in kit.options("1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


# ----------------------------------------------------------------------------- MONEY-1
@pytest.mark.parametrize("variant", VARIANTS)
def test_money_1_blackjack_on_odd_cent_stake_rounds_down_and_records_it(variant):
    cards = stack(variant, [["AH", "KD"]], up="9C", hole="8S")
    kit = Kit(variant, cards, players=["A"])
    kit.bet("A", "1.01", 1)
    new = kit.close()
    s = settled(new)[main_wager(variant, "A")]
    assert (s["result"], s["ratio"], s["stake"], s["payout"], s["net"], s["rounding"]) == (
        "blackjack", "3:2", "1.01", "2.52", "1.51", "0.005"
    )  # fmt: skip
    assert kit.net("A") == D("1.51")


def test_money_1_surrender_half_of_odd_cent_stake_rounds_down():
    kit = one_hand("deluxe", ["10C", "9S", "6D", "8D"], bet="10.01")
    new = kit.decide("A", "surrender")
    s = settled(new)["1:main"]
    assert (s["payout"], s["net"], s["rounding"]) == ("5.00", "-5.01", "0.005")
    assert kit.net("A") == D("-5.01")


@pytest.mark.parametrize("amount", [10.5, "10.005", "-1", "abc", True])
def test_money_1_floats_and_sub_cent_amounts_are_refused(amount):
    kit = Kit("multihand", ["10C", "9S", "6D", "8D"], players=["A"])
    before = kit.events()
    with pytest.raises(InvalidAmount):
        kit.app.place_bet(kit.rid, player="A", amount=amount, spot="1")
    assert kit.events() == before
    assert kit.balance("A") == D(1000)


def test_money_1_amounts_are_decimal_strings_in_events():
    kit = one_hand("multihand", ["10C", "9S", "QD", "8D"], bet=Decimal("7.35"))
    new = kit.decide("A", "stand")
    s = settled(new)["1:main"]
    assert (s["stake"], s["payout"], s["net"]) == ("7.35", "14.70", "7.35")


# ------------------------------------------------------------------------------- ERR-1
def test_err_1_pause_refuses_play_and_resume_continues_as_it_was():
    kit = one_hand("deluxe", ["10C", "9S", "6D", "8D", "3H"])
    before = kit.view()
    new = kit.pause()
    assert kinds(new) == ["Paused"]
    assert new[0]["payload"]["actor"] == {"kind": "supervisor", "id": "sup-1"}
    assert kit.view()["paused"] is True
    err = kit.refused(RoundClosed, lambda: kit.decide("A", "hit"))
    assert err.rule == "ERR-1"
    kit.refused(RoundClosed, lambda: kit.timeout("A"))
    kit.refused(WrongOrder, kit.pause)
    new = kit.resume()
    assert kinds(new) == ["Resumed"]
    assert kit.view() == before
    new = kit.decide("A", "hit")
    assert cards_to(new, "1") == ["3H"]


def test_err_1_resume_or_pause_need_a_reason_and_the_right_state():
    kit = one_hand("deluxe", ["10C", "9S", "6D", "8D"])
    kit.refused(WrongOrder, kit.resume)
    kit.refused(WrongOrder, lambda: kit.pause(reason=" "))


def test_err_1_cancel_refunds_every_stake_and_reverses_even_money_multihand():
    # box 1: A has BJ against an ace -> even money (paid at once)
    # box 2: A buys insurance, then doubles; box 3: B, insurance and a split
    order = stack(
        "multihand", [["AS", "KD"], ["5H", "6C"], ["8H", "8S"]], up="AH", hole="9S",
        draws=["2C", "3D"],
    )  # fmt: skip
    kit = Kit("multihand", order, players={"A": "1000", "B": "1000"})
    kit.bet("A", 10, 1)
    kit.bet("A", "10.01", 2)
    kit.bet("B", 20, 3)
    kit.close()
    kit.decide("A", "even_money", hand="1")
    kit.decide("A", "insurance", hand="2")
    kit.decide("B", "insurance", hand="3")
    assert kit.phase == "playing"
    kit.decide("A", "double", hand="2")  # 5,6 + 2
    kit.decide("B", "split", hand="3")  # 8 + 3 on 3.1
    assert kit.net("A") == D("-10") - D("10.01") - D("5.00") - D("10.01") + D("20")
    assert kit.net("B") == D("-20") - D("10") - D("20")
    new = kit.cancel()
    assert kinds(new)[0] == "CancelRequested"
    assert kinds(new)[-1] == "RoundCancelled"
    assert one(new, "PaymentReversed") == {
        "wager_id": "1:main", "player": "A", "amount": "20.00", "reverses": "even_money",
        "rule": "ERR-1",
    }  # fmt: skip
    refunds = {w: (p["result"], p["payout"], p["rule"]) for w, p in settled(new).items()}
    assert refunds == {
        "1:main": ("refund", "10.00", "ERR-1"),
        "2:main": ("refund", "10.01", "ERR-1"),
        "3:main": ("refund", "20.00", "ERR-1"),
        "2:insurance": ("refund", "5.00", "ERR-1"),
        "3:insurance": ("refund", "10.00", "ERR-1"),
        "2:double": ("refund", "10.01", "ERR-1"),
        "3.2:split": ("refund", "20.00", "ERR-1"),
    }
    assert kit.nets() == {"A": 0, "B": 0}
    assert kit.phase == "cancelled"


def test_err_1_cancel_reverses_even_money_already_withdrawn():
    order = stack("multihand", [["AS", "KD"], ["10H", "7C"]], up="AH", hole="9S")
    kit = Kit("multihand", order, players={"A": "20"})
    kit.bet("A", 10, 1)
    kit.bet("A", 10, 2)
    kit.close()
    kit.decide("A", "even_money", hand="1")
    assert kit.balance("A") == D(20)
    kit.app.withdraw("A", "20", transaction_id="cash-out")
    new = kit.cancel()
    assert kinds(new) == [
        "CancelRequested", "PaymentReversed", "WagerSettled", "WagerSettled", "RoundCancelled"
    ]  # fmt: skip
    assert kit.balance("A") == 0  # 20 deposited - 20 withdrawn: the round itself nets 0


def test_err_1_cancel_refunds_side_bets_deluxe_and_lucky7():
    kit = Kit("deluxe", ["8H", "5C", "8D", "10S", "3C"], players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.side("B", "pair", 5, 1)
    kit.side("A", "pair", "2.50", 1)
    kit.close()
    kit.decide("A", "split")
    kit.pause()
    new = kit.cancel()
    assert {w: p["payout"] for w, p in settled(new).items()} == {
        "1:main": "10.00", "1:pair:B": "5.00", "1:pair:A": "2.50", "1.2:split": "10.00"
    }  # fmt: skip
    assert kit.nets() == {"A": 0, "B": 0}
    kit2 = Kit("lucky7", ["7H", "9S", "7D", "10C"], players=["A"], table="t2")
    kit2.bet("A", 10, 1)
    kit2.side("A", "lucky7", 1, 1)
    new = kit2.cancel()
    assert {w: p["result"] for w, p in settled(new).items()} == {
        "1:main": "refund", "1:lucky7:A": "refund"
    }  # fmt: skip
    assert kit2.nets() == {"A": 0}


def test_err_1_cancel_boundless_refunds_side_bets_of_unseated_players():
    order = stack("boundless", [["8H", "8D"]], up="6C", hole="9S", draws=["2C", "3C", "4C"])
    kit = Kit("boundless", order, players=["A", "C"])
    kit.bet("A", 10)
    for side in ("pair", "bust", "trio", "poker"):
        kit.side("C", side, 1)
    kit.close()
    kit.decide("A", "split")
    kit.decide("A", "double")
    new = kit.cancel()
    assert {p["result"] for p in of(new, "WagerSettled")} == {"refund"}
    assert len(of(new, "WagerSettled")) == 7
    assert kit.nets() == {"A": 0, "C": 0}


def test_err_1_cancel_during_betting_refunds_bets():
    kit = Kit("multihand", ["10C", "9S", "6D", "8D"], players=["A"])
    kit.bet("A", 10, 1)
    kit.bet("A", 15, 2)
    new = kit.cancel()
    assert kinds(new) == ["CancelRequested", "WagerSettled", "WagerSettled", "RoundCancelled"]
    assert kit.net("A") == 0


def test_err_1_a_settled_round_cannot_be_cancelled():
    kit = one_hand("multihand", ["10C", "9S", "6D", "8D"])
    kit.decide("A", "stand")
    kit.refused(RoundClosed, kit.cancel)
    assert kit.net("A") == D(-10)


# ------------------------------------------------------------------------------- DISC-1
def test_disc_1_disconnected_player_is_played_by_the_system_and_settled():
    order = stack("deluxe", [["10H", "6S"], ["5C", "4D"]], up="9S", hole="8C", draws=["7H", "2C"])
    kit = Kit("deluxe", order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    new = kit.disconnect("B")  # B's turn has not started: nothing happens to B's hand yet
    assert kinds(new) == ["PlayerDisconnected"]
    assert kit.phase == "playing"
    new = kit.decide("A", "stand")
    # B's 9 is auto-hit (AUTO-1) to 16, then stands; dealer 17
    assert [(p["action"], p["total"]) for p in of(new, "AutoActed")] == [("hit", 9), ("stand", 16)]
    assert cards_to(new, "2") == ["7H"]
    assert stood(new)["2"] == ("auto", 16, "AUTO-1")
    assert settlement(new, "2:main") == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert kit.drawn() == order[:-1]


def test_disc_1_disconnect_during_the_insurance_window_declines_and_play_goes_on():
    order = stack("multihand", [["10H", "9S"], ["5C", "6D"]], up="AS", hole="7C")
    kit = Kit("multihand", [*order, "KH"], players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    kit.decide("A", "insurance")
    new = kit.disconnect("B")
    assert kinds(new)[:3] == ["PlayerDisconnected", "InsuranceWindowCompleted", "DealerChecked"]
    assert "2:insurance" not in [w["wager_id"] for w in kit.view()["wagers"]]
    kit.decide("A", "stand")
    ev = kit.events()
    assert settlement(ev, "2:main") == ("win", "1:1", "20.00", "10.00", "OUT-2")  # 5,6,K = 21
    assert kit.nets() == {"A": D(5), "B": D(10)}  # A: 19 beats 18 (+10), insurance lost (-5)


# ------------------------------------------------------------------------------- END-1
@pytest.mark.parametrize("variant", PEEK_VARIANTS)
def test_end_1_dealer_blackjack_under_an_ace_ends_after_the_window(variant):
    cards = stack(variant, [["10H", "9S"]], up="AS", hole="KC")
    kit = Kit(variant, [*cards, "2D"], players=["A"])
    kit.bet("A", 10, 1)
    kit.close()
    new = kit.decide("A", "insurance")
    assert kinds(new) == [
        "DecisionMade", "WagerAdded", "InsuranceWindowCompleted", "DealerChecked",
        "HoleCardRevealed", "WagerSettled", "WagerSettled", "RoundSettled",
    ]  # fmt: skip
    assert one(new, "DealerChecked") == {"blackjack": True, "rule": "D5"}
    assert kit.drawn() == cards
    assert kit.net("A") == 0  # main -10, insurance +10


# ------------------------------------------------------------------------------- AUTO-1
@pytest.mark.parametrize("variant", VARIANTS)
def test_auto_1_timeout_hits_to_12_then_stands(variant):
    cards = stack(variant, [["2H", "3C"]], up="9S", hole="8D", draws=["4C", "3D"])
    kit = one_hand(variant, cards)
    h = hand_id(variant, "A")
    new = kit.timeout("A")
    assert kinds(new)[0] == "DecisionTimedOut"
    assert [(p["action"], p["total"], p["rule"]) for p in of(new, "AutoActed")] == [
        ("hit", 5, "AUTO-1"), ("hit", 9, "AUTO-1"), ("stand", 12, "AUTO-1"),
    ]  # fmt: skip
    assert cards_to(new, h) == ["4C", "3D"]
    assert stood(new)[h] == ("auto", 12, "AUTO-1")
    assert settlement(new, main_wager(variant, "A"))[0] == "lose"


@pytest.mark.parametrize(
    ("first", "draws", "actions"),
    [
        (["AH", "5C"], [], [("stand", 16)]),  # soft 16: ace counts 11
        (["5H", "6C"], ["AD"], [("hit", 11), ("stand", 12)]),  # 11 + A: the ace counts 1
        (["4H", "5C"], ["AD"], [("hit", 9), ("stand", 20)]),  # 9 + A = soft 20
        (["6H", "6C"], [], [("stand", 12)]),  # a pair is not split
        (["AH", "AC"], [], [("stand", 12)]),  # soft 12
    ],
)
def test_auto_1_aces_count_eleven_unless_that_busts(first, draws, actions):
    kit = one_hand("deluxe", stack("deluxe", [first], up="9S", hole="8D", draws=draws))
    new = kit.timeout("A")
    assert [(p["action"], p["total"]) for p in of(new, "AutoActed")] == actions
    assert cards_to(new, "1") == draws


def test_auto_1_timeout_of_a_split_hand_plays_only_that_hand():
    order = stack("multihand", [["8H", "8D"]], up="9S", hole="8C", draws=["2C", "KH", "3D"])
    kit = one_hand("multihand", order)
    kit.decide("A", "split")
    new = kit.timeout("A")  # 8,2 = 10 -> hit K -> 20 stand; then 1.2 gets 3
    assert [(p["hand"], p["action"]) for p in of(new, "AutoActed")] == [
        ("1.1", "hit"), ("1.1", "stand")
    ]  # fmt: skip
    assert cards_to(new, "1.2") == ["3D"]
    assert kit.options("1.2")[:2] == ["hit", "stand"]


# ------------------------------------------------------------------------ FUNDS-1 / FUNDS-2
@pytest.mark.parametrize("variant", REFUSE_FUNDS_VARIANTS)
def test_funds_other_variants_refuse_a_double_or_split_without_balance(variant):
    kit = one_hand(variant, stack(variant, [["5H", "6D"]], up="9C", hole="8S"), A="10")
    kit.refused(InsufficientFunds, lambda: kit.decide("A", "double"))
    kit = one_hand(variant, stack(variant, [["8H", "8D"]], up="9C", hole="8S"), A="19.99")
    kit.refused(InsufficientFunds, lambda: kit.decide("A", "split"))


# ------------------------------------------------------------------------ bad input list
def test_bad_input_acting_out_of_turn():
    order = stack("deluxe", [["10H", "6S"], ["5C", "4D"]], up="9S", hole="8C")
    kit = Kit("deluxe", order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    kit.refused(OutOfTurn, lambda: kit.decide("B", "hit"))
    kit.refused(OutOfTurn, lambda: kit.decide("B", "stand", hand="2"))
    kit.refused(OutOfTurn, lambda: kit.timeout("B"))


def test_bad_input_acting_out_of_turn_multihand_second_box():
    kit = Kit("multihand", ["10H", "5C", "9S", "6S", "4D", "8C"], players=["A"])
    kit.bet("A", 10, 1)
    kit.bet("A", 10, 2)
    kit.close()
    kit.refused(OutOfTurn, lambda: kit.decide("A", "hit", hand="2"))


def test_bad_input_acting_on_a_finished_hand():
    order = stack("deluxe", [["10H", "6S"], ["5C", "4D"]], up="9S", hole="8C")
    kit = Kit("deluxe", order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    kit.decide("A", "stand")
    kit.refused(IllegalAction, lambda: kit.decide("A", "hit"))
    kit.refused(IllegalAction, lambda: kit.decide("A", "hit", hand="1"))


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_input_doubling_a_three_card_hand(variant):
    cards = stack(variant, [["2H", "3C"]], up="9S", hole="8D", draws=["4C"])
    kit = one_hand(variant, cards)
    kit.decide("A", "hit")
    assert "double" not in kit.options(hand_id(variant, "A"))
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "double"))
    assert err.rule == "DBL-1"


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_input_splitting_a_non_pair(variant):
    cards = stack(variant, [["8H", "9C"]], up="9S", hole="8D")
    kit = one_hand(variant, cards)
    err = kit.refused(IllegalAction, lambda: kit.decide("A", "split"))
    assert err.rule == "SPLIT-1"


@pytest.mark.parametrize("variant", SURRENDER_VARIANTS)
def test_bad_input_surrender_against_an_ace(variant):
    cards = stack(variant, [["10H", "6C"]], up="AS", hole="8D")
    kit = one_hand(variant, cards)
    kit.close_window()
    assert kit.phase == "playing"
    assert "surrender" not in kit.options(hand_id(variant, "A"))
    kit.refused(IllegalAction, lambda: kit.decide("A", "surrender"))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("action", ["insurance", "no_insurance", "even_money"])
def test_bad_input_insurance_without_an_ace_up(variant, action):
    cards = stack(variant, [["AH", "6C"]], up="9S", hole="8D")
    kit = one_hand(variant, cards)
    err = kit.refused(IllegalAction, lambda: kit.decide("A", action))
    assert err.rule == "INS-1"


def test_bad_input_close_insurance_window_without_a_window():
    kit = one_hand("multihand", ["10H", "9S", "6C", "8D"])
    kit.refused(WrongOrder, kit.close_window)


def test_bad_input_insurance_decided_twice():
    kit = Kit("multihand", ["10H", "5C", "AS", "9S", "6C", "8D"], players=["A"])
    kit.bet("A", 10, 1)
    kit.bet("A", 10, 2)
    kit.close()
    kit.decide("A", "insurance", hand="1")
    kit.refused(IllegalAction, lambda: kit.decide("A", "insurance", hand="1"))


@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_input_bet_after_betting_closed(variant):
    cards = stack(variant, [["10H", "6C"]], up="9S", hole="8D")
    kit = one_hand(variant, cards)
    kit.fund("B", 100)
    kit.refused(BettingClosed, lambda: kit.bet("B", 10, 2))
    kit.refused(BettingClosed, lambda: kit.bet("A", 10, 1))
    kit.refused(WrongOrder, kit.close)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("amount", ["0.99", "5000.01", "10000"])
def test_bad_input_bet_outside_table_limits(variant, amount):
    kit = Kit(variant, ["10H"], players={"A": "20000"})
    kit.refused(BetLimit, lambda: kit.bet("A", amount, 1))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("amount", ["1.00", "5000.00"])
def test_bad_input_table_limits_are_inclusive(variant, amount):
    kit = Kit(variant, ["10H"], players={"A": "20000"})
    new = kit.bet("A", amount, 1)
    assert one(new, "BetPlaced")["stake"] == amount


def test_bad_input_bet_above_balance():
    kit = Kit("multihand", ["10H"], players={"A": "9.99"})
    kit.refused(InsufficientFunds, lambda: kit.bet("A", 10, 1))


def _settled_kit(variant: str = "multihand") -> Kit:
    kit = one_hand(variant, stack(variant, [["10H", "9C"]], up="9S", hole="8D"))
    kit.decide("A", "stand")
    assert kit.phase == "settled"
    return kit


def _cancelled_kit(variant: str = "multihand") -> Kit:
    kit = one_hand(variant, stack(variant, [["10H", "9C"]], up="9S", hole="8D"))
    kit.cancel()
    assert kit.phase == "cancelled"
    return kit


COMMANDS = {
    "bet": lambda k: k.bet("A", 10, 2),
    "close": lambda k: k.close(),
    "hit": lambda k: k.decide("A", "hit"),
    "stand": lambda k: k.decide("A", "stand"),
    "insurance": lambda k: k.decide("A", "insurance"),
    "timeout": lambda k: k.timeout("A"),
    "disconnect": lambda k: k.disconnect("A"),
    "close_window": lambda k: k.close_window(),
    "pause": lambda k: k.pause(),
    "resume": lambda k: k.resume(),
    "cancel": lambda k: k.cancel(),
}


@pytest.mark.parametrize("make", [_settled_kit, _cancelled_kit], ids=["settled", "cancelled"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_bad_input_any_command_on_a_finished_round(make, command):
    kit = make()
    kit.refused(RoundClosed, lambda: COMMANDS[command](kit))


def test_bad_input_a_card_when_none_is_needed():
    kit = one_hand("deluxe", ["10H", "9S", "6C", "8D"])  # waiting for A's decision
    rnd = kit.round()
    assert rnd.card_needed is None
    with pytest.raises(WrongOrder):
        rnd.deal("2C")
    assert rnd.collect_events() == []
    before = kit.events()
    with pytest.raises(WrongOrder):
        kit.app.deal_card(kit.rid, "2C")
    assert kit.events() == before


def test_bad_input_a_card_on_a_settled_round():
    kit = _settled_kit()
    rnd = kit.round()
    with pytest.raises(RoundClosed):
        rnd.deal("2C")
    assert rnd.collect_events() == []


def test_bad_input_unknown_action_and_unknown_player():
    from domain.errors import UnknownPlayer

    kit = one_hand("multihand", ["10H", "9S", "6C", "8D"])
    kit.refused(IllegalAction, lambda: kit.decide("A", "fold"))
    kit.fund("Z", 100)
    kit.refused(UnknownPlayer, lambda: kit.decide("Z", "hit"))
    kit.refused(UnknownPlayer, lambda: kit.disconnect("Z"))


def test_disc_1_disconnect_during_betting_bets_stay_valid_and_are_settled():
    order = stack("multihand", [["5H", "4C"], ["10D", "9S"]], up="6S", hole="10C", draws=["7C"])
    kit = Kit("multihand", [*order, "5D"], players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    assert kinds(kit.disconnect("A")) == ["PlayerDisconnected"]
    new = kit.close()
    # A's 9 is played by the system at once: hit (7C) -> 16, stand
    assert [(p["hand"], p["action"], p["total"]) for p in of(new, "AutoActed")] == [
        ("1", "hit", 9), ("1", "stand", 16)
    ]  # fmt: skip
    new = kit.decide("B", "stand")  # dealer 6,10 + 5 = 21
    assert settlement(new, "1:main") == ("lose", None, "0.00", "-10.00", "OUT-3")
    assert settlement(new, "2:main") == ("lose", None, "0.00", "-10.00", "OUT-3")


def test_disc_1_player_disconnected_before_the_window_declines_insurance_automatically():
    order = stack("multihand", [["5H", "4C"], ["10D", "9S"]], up="AS", hole="7D", draws=["7C"])
    kit = Kit("multihand", order, players=["A", "B"])
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.disconnect("A")
    kit.close()
    new = kit.decide("B", "no_insurance")
    assert "InsuranceWindowCompleted" in kinds(new)
    assert kit.phase != "insurance"

"""BDL-BUST: Bust Bonus, paid when the dealer busts, by the number of cards in the hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import full_deck
from domain.money import Ratio
from domain.sidebets import BUST_BONUS_PAYTABLE, evaluate_bust_bonus, make_paytable


def bust(*cards: str, table=BUST_BONUS_PAYTABLE):
    return evaluate_bust_bonus(cards, paytable=table)


def test_bdl_bust_paytable():
    assert dict(BUST_BONUS_PAYTABLE) == {
        "three_cards": Ratio(1),
        "four_cards": Ratio(2),
        "five_cards": Ratio(9),
        "six_cards": Ratio(50),
        "seven_cards": Ratio(100),
        "eight_or_more_cards": Ratio(250),
    }


# dealer hands of 3..9 cards that DEALER-1 could really draw, each ending in a bust
BUSTING_HANDS = [
    (3, ("10S", "6D", "KH"), "three_cards", Ratio(1)),  # 16, 26
    (4, ("AS", "5D", "KH", "7C"), "four_cards", Ratio(2)),  # soft 16, hard 16, 23
    (4, ("2S", "3D", "10H", "9C"), "four_cards", Ratio(2)),  # 15, 24
    (5, ("2S", "3D", "4H", "5C", "KD"), "five_cards", Ratio(9)),  # 14, 24
    (6, ("2S", "2D", "2H", "3C", "3S", "KD"), "six_cards", Ratio(50)),  # 12, 22
    (7, ("2S", "2D", "2H", "2C", "2S", "3D", "KD"), "seven_cards", Ratio(100)),  # 13, 23
    (8, ("2S", "2D", "2H", "2C", "2S", "2D", "2H", "KD"), "eight_or_more_cards", Ratio(250)),
    (9, ("2S", "2D", "2H", "2C", "2S", "2D", "AH", "AC", "KD"), "eight_or_more_cards", Ratio(250)),
]


@pytest.mark.parametrize(("count", "cards", "pattern", "ratio"), BUSTING_HANDS)
def test_bdl_bust_pays_by_number_of_cards_in_busting_hand(count, cards, pattern, ratio):
    assert len(cards) == count
    outcome = bust(*cards)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (pattern, ratio, True)
    assert (outcome.bet, outcome.rule, outcome.cards) == ("bust", "BDL-BUST", cards)


@pytest.mark.parametrize(
    "cards",
    [
        ("KS", "QD"),  # two cards never bust
        ("AS", "AD"),  # soft 12
        ("AS", "KD"),  # dealer BJ
        ("10S", "7D"),
        ("10S", "6D", "5H"),  # 21
        ("AS", "6D"),  # soft 17 stands
        ("AS", "5D", "KH"),  # soft 16 -> hard 16 (not bust, even if a dealer would draw)
        ("2S", "2D", "2H", "2C", "3S", "3D", "3H"),  # 17 with seven cards
        ("AS", "AD", "AH", "AC", "2S", "2D", "2H", "2C", "5S"),  # 17 with nine cards
        ("KS", "QS", "AD"),  # 21
    ],
)
def test_bdl_bust_non_busting_dealer_loses(cards):
    outcome = bust(*cards)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (None, None, False)
    assert outcome.rule == "BDL-BUST"


def test_bdl_bust_custom_paytable_missing_a_row_does_not_pay_it():
    table = make_paytable("bust", {"three_cards": "1:1"})
    assert not bust("10S", "2D", "4H", "KH", table=table).wins
    assert bust("10S", "6D", "KH", table=table).ratio == Ratio(1)


DECK = full_deck()


@given(st.lists(st.sampled_from(DECK), min_size=1, max_size=10))
def test_bdl_bust_pattern_depends_only_on_bust_and_card_count(cards):
    outcome = evaluate_bust_bonus(cards, paytable=BUST_BONUS_PAYTABLE)
    hard = sum(c.value for c in cards)
    assert outcome.wins == (hard > 21)  # an ace counting 11 never makes a bust
    if outcome.wins:
        count = len(cards)
        assert count >= 3
        expected = [
            "three_cards",
            "four_cards",
            "five_cards",
            "six_cards",
            "seven_cards",
            "eight_or_more_cards",
        ][min(count, 8) - 3]
        assert outcome.pattern == expected
        assert outcome.ratio == BUST_BONUS_PAYTABLE[expected]

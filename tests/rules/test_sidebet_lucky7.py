"""L7-2, L7-3, L7-4 (D14): the Lucky 7 side bet on a box's first three cards."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import Card, full_deck
from domain.money import Ratio
from domain.sidebets import LUCKY7_DEFAULT_PAYTABLE, evaluate_lucky7, make_paytable


def lucky7(*cards: str, dealer_blackjack: bool = False, table=LUCKY7_DEFAULT_PAYTABLE):
    return evaluate_lucky7(cards, dealer_blackjack=dealer_blackjack, paytable=table)


def test_l7_4_d14_default_paytable_3_50_500():
    assert dict(LUCKY7_DEFAULT_PAYTABLE) == {
        "one_seven": Ratio(3),
        "two_sevens": Ratio(50),
        "three_sevens": Ratio(500),
    }


CASES = [
    # cards, pattern, ratio, rule
    (("7S", "9H", "4D"), "one_seven", Ratio(3), "L7-2"),  # conformance P11
    (("7S", "9H"), "one_seven", Ratio(3), "L7-2"),  # stood on two cards
    (("7S", "KH", "7D"), "one_seven", Ratio(3), "L7-2"),  # 7s must be consecutive
    (("7H", "7D", "KC"), "two_sevens", Ratio(50), "L7-2"),
    (("7H", "7D", "7C"), "three_sevens", Ratio(500), "L7-2"),  # conformance P12
    (("7H", "7H", "7H"), "three_sevens", Ratio(500), "L7-2"),  # suits do not matter (D14)
    (("7H", "7D"), "two_sevens", Ratio(50), "L7-3"),  # no third card: paid on two
    (("9S", "7H", "7D"), None, None, "L7-2"),  # first card not a 7: loses
    (("KS", "7H"), None, None, "L7-2"),
    (("AS", "6H", "7D"), None, None, "L7-2"),
    (("3S", "4H"), None, None, "L7-2"),  # the sheet's intro says "suman 7": not a win (see L7-2)
]


@pytest.mark.parametrize(("cards", "pattern", "ratio", "rule"), CASES)
def test_l7_2_leading_sevens_table(cards, pattern, ratio, rule):
    outcome = lucky7(*cards)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (pattern, ratio, ratio is not None)
    assert (outcome.bet, outcome.rule, outcome.cards) == ("lucky7", rule, cards)


def test_l7_2_first_card_not_a_seven_loses_even_with_two_later_sevens():
    assert not lucky7("8C", "7C", "7S").wins


def test_l7_2_four_or_more_sevens_pay_as_three():
    outcome = lucky7("7C", "7S", "7D", "7H")
    assert (outcome.pattern, outcome.ratio) == ("three_sevens", Ratio(500))
    assert lucky7("7C", "7S", "7D", "7H", "7C").ratio == Ratio(500)


def test_l7_3_dealer_blackjack_two_sevens_paid_as_two():
    outcome = lucky7("7C", "7S", dealer_blackjack=True)
    assert (outcome.pattern, outcome.ratio, outcome.rule) == ("two_sevens", Ratio(50), "L7-3")


def test_l7_3_dealer_blackjack_one_seven_is_decided_by_l7_2():
    outcome = lucky7("7C", "KS", dealer_blackjack=True)
    assert (outcome.pattern, outcome.ratio, outcome.rule) == ("one_seven", Ratio(3), "L7-2")


def test_l7_3_dealer_blackjack_no_seven_loses():
    outcome = lucky7("KC", "7S", dealer_blackjack=True)
    assert not outcome.wins
    assert outcome.rule == "L7-2"


def test_l7_3_dealer_blackjack_with_a_third_card_is_refused():
    with pytest.raises(ValueError, match="L7-3"):
        lucky7("7C", "7S", "7D", dealer_blackjack=True)


def test_l7_2_empty_box_is_refused():
    with pytest.raises(ValueError, match="L7-2"):
        lucky7()


def test_l7_4_paytable_is_a_setting():
    super_sevens_suited = make_paytable(
        "lucky7", {"one_seven": "3:1", "two_sevens": "100:1", "three_sevens": "5000:1"}
    )
    assert lucky7("7H", "7H", "7H", table=super_sevens_suited).ratio == Ratio(5000)
    assert lucky7("7H", "7D", table=super_sevens_suited).ratio == Ratio(100)


DECK = full_deck()
SEVENS = [c for c in DECK if c.rank == "7"]
OTHERS = [c for c in DECK if c.rank != "7"]


@given(st.integers(0, 4), st.lists(st.sampled_from(DECK), max_size=3), st.data())
def test_l7_2_outcome_depends_only_on_the_leading_run_of_sevens(run, tail, data):
    head = [data.draw(st.sampled_from(SEVENS)) for _ in range(run)]
    stop = [data.draw(st.sampled_from(OTHERS))] if tail or run == 0 else []
    cards: list[Card] = [*head, *stop, *tail]
    outcome = evaluate_lucky7(cards, dealer_blackjack=False, paytable=LUCKY7_DEFAULT_PAYTABLE)
    expected = {0: None, 1: "one_seven", 2: "two_sevens"}.get(run, "three_sevens")
    assert outcome.pattern == expected
    assert outcome.ratio == (None if expected is None else LUCKY7_DEFAULT_PAYTABLE[expected])

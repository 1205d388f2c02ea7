"""BDL-POKER: Poker Trio on the player's first two cards and the dealer's first card."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import full_deck
from domain.money import Ratio
from domain.sidebets import POKER_TRIO_PAYTABLE, evaluate_poker_trio, make_paytable

DECK = full_deck()


def poker(p1: str, p2: str, d1: str, table=POKER_TRIO_PAYTABLE):
    return evaluate_poker_trio(p1, p2, d1, paytable=table)


def test_bdl_poker_paytable_is_5_10_30_40_100():
    assert dict(POKER_TRIO_PAYTABLE) == {
        "flush": Ratio(5),
        "straight": Ratio(10),
        "three_of_a_kind": Ratio(30),
        "straight_flush": Ratio(40),
        "suited_trips": Ratio(100),
    }


def assert_pays(outcome, pattern: str, ratio: Ratio) -> None:
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (pattern, ratio, True)
    assert (outcome.bet, outcome.rule) == ("poker", "BDL-POKER")


def test_bdl_poker_flush_pays_5_to_1():
    assert_pays(poker("2H", "9H", "KH"), "flush", Ratio(5))


def test_bdl_poker_flush_with_a_pair_is_a_flush():
    assert_pays(poker("9H", "9H", "KH"), "flush", Ratio(5))


def test_bdl_poker_straight_pays_10_to_1():
    assert_pays(poker("4H", "5S", "6D"), "straight", Ratio(10))


def test_bdl_poker_straight_not_all_one_suit_two_suited_cards_still_straight():
    assert_pays(poker("4H", "5H", "6D"), "straight", Ratio(10))


def test_bdl_poker_ace_low_straight_a23_pays_10_to_1():
    assert_pays(poker("2C", "3H", "AD"), "straight", Ratio(10))


def test_bdl_poker_ace_high_straight_qka_pays_10_to_1():
    assert_pays(poker("QC", "KH", "AD"), "straight", Ratio(10))


@pytest.mark.parametrize(
    ("p1", "p2", "d1"), [("9C", "10H", "JD"), ("10C", "JH", "QD"), ("JC", "QH", "KD")]
)
def test_bdl_poker_face_cards_are_ranks_j11_q12_k13_for_straights(p1, p2, d1):
    assert_pays(poker(p1, p2, d1), "straight", Ratio(10))


def test_bdl_poker_k_a_2_is_not_a_straight():
    assert not poker("KC", "AH", "2D").wins


def test_bdl_poker_k_a_2_suited_is_only_a_flush():
    assert_pays(poker("KC", "AC", "2C"), "flush", Ratio(5))


@pytest.mark.parametrize(
    ("p1", "p2", "d1"),
    [
        ("QC", "KH", "2D"),  # never around the corner
        ("AC", "2H", "4D"),  # gap
        ("10C", "QH", "KD"),  # gap; ten-values are different ranks
        ("5C", "5H", "6D"),  # pair inside is no straight
        ("JC", "QH", "QD"),
        ("AC", "AH", "2D"),
    ],
)
def test_bdl_poker_not_a_straight(p1, p2, d1):
    assert not poker(p1, p2, d1).wins


def test_bdl_poker_three_of_a_kind_pays_30_to_1():
    assert_pays(poker("8C", "8H", "8D"), "three_of_a_kind", Ratio(30))


def test_bdl_poker_three_of_a_kind_two_of_one_suit_is_not_suited_trips():
    assert_pays(poker("8C", "8C", "8D"), "three_of_a_kind", Ratio(30))


@pytest.mark.parametrize(
    ("p1", "p2", "d1"), [("10C", "JH", "KD"), ("KC", "KH", "QD"), ("10S", "KS", "QS")]
)
def test_bdl_poker_ten_values_are_not_three_of_a_kind(p1, p2, d1):
    outcome = poker(p1, p2, d1)
    assert outcome.pattern != "three_of_a_kind"


def test_bdl_poker_ten_value_suited_non_sequence_is_only_a_flush():
    assert_pays(poker("10S", "KS", "QS"), "flush", Ratio(5))


def test_bdl_poker_straight_flush_pays_40_to_1_beats_flush_and_straight():
    assert_pays(poker("7S", "8S", "9S"), "straight_flush", Ratio(40))


@pytest.mark.parametrize(("p1", "p2", "d1"), [("AD", "2D", "3D"), ("QD", "KD", "AD")])
def test_bdl_poker_ace_straight_flush_high_or_low_pays_40_to_1(p1, p2, d1):
    assert_pays(poker(p1, p2, d1), "straight_flush", Ratio(40))


def test_bdl_poker_suited_trips_pays_100_to_1_beats_three_of_a_kind_and_flush():
    assert_pays(poker("QH", "QH", "QH"), "suited_trips", Ratio(100))


@pytest.mark.parametrize(
    ("p1", "p2", "d1"),
    [("2C", "7H", "KD"), ("AC", "AH", "KD"), ("5S", "6H", "8D"), ("9S", "9S", "8D")],
)
def test_bdl_poker_nothing_loses(p1, p2, d1):
    outcome = poker(p1, p2, d1)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (None, None, False)
    assert outcome.cards == (p1, p2, d1)


def test_bdl_poker_custom_paytable_without_straight_flush_falls_to_flush():
    table = make_paytable("poker", {"flush": "5:1", "straight": "10:1"})
    assert poker("7S", "8S", "9S", table).pattern == "flush"


def test_bdl_poker_highest_paying_row_wins_under_a_reordered_paytable():
    # a paytable where a flush pays more than a straight flush: the award is the highest pay
    table = make_paytable("poker", {"flush": "60:1", "straight_flush": "40:1"})
    assert (poker("7S", "8S", "9S", table).pattern, poker("7S", "8S", "9S", table).ratio) == (
        "flush",
        Ratio(60),
    )


# --------------------------------------------------------------------- brute force, all 52^3

ORDER = {
    r: i
    for i, r in enumerate(["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"], 1)
}


def reference_poker(codes: tuple[tuple[str, str], ...]) -> str | None:
    """Straightforward reading of the BDL-POKER rows, highest first."""
    ranks = [r for r, _ in codes]
    one_suit = len({s for _, s in codes}) == 1
    one_rank = len(set(ranks)) == 1
    low = sorted(ORDER[r] for r in ranks)
    high = sorted(14 if r == "A" else ORDER[r] for r in ranks)
    in_sequence = len(set(ranks)) == 3 and (low[2] - low[0] == 2 or high[2] - high[0] == 2)
    if one_rank and one_suit:
        return "suited_trips"
    if in_sequence and one_suit:
        return "straight_flush"
    if one_rank:
        return "three_of_a_kind"
    if in_sequence:
        return "straight"
    if one_suit:
        return "flush"
    return None


def test_bdl_poker_exhaustive_matches_reference_and_is_order_independent():
    seen: dict[tuple[int, ...], tuple[str | None, Ratio | None]] = {}
    counts: dict[str | None, int] = {}
    for i, j, k in itertools.product(range(52), repeat=3):
        a, b, c = DECK[i], DECK[j], DECK[k]
        outcome = evaluate_poker_trio(a, b, c, paytable=POKER_TRIO_PAYTABLE)
        result = (outcome.pattern, outcome.ratio)
        counts[outcome.pattern] = counts.get(outcome.pattern, 0) + 1
        key = tuple(sorted((i, j, k)))
        if key in seen:  # a permutation of three cards already checked: same outcome
            assert seen[key] == result, (a, b, c)
            continue
        seen[key] = result
        expected = reference_poker(((a.rank, a.suit), (b.rank, b.suit), (c.rank, c.suit)))
        assert outcome.pattern == expected, (a, b, c)
        assert outcome.ratio == (None if expected is None else POKER_TRIO_PAYTABLE[expected])
    # one deck, cards drawn with replacement: 52^3 ordered triples
    assert sum(counts.values()) == 52**3
    assert counts["suited_trips"] == 52
    assert counts["straight_flush"] == 12 * 4 * 6  # 12 sequences (A low to A high) x suits x orders
    assert counts["straight"] == 12 * (4**3 - 4) * 6
    assert counts["three_of_a_kind"] == 13 * (4**3 - 4)


cards = st.sampled_from(DECK)


@given(cards, cards, cards)
def test_bdl_poker_outcome_ratio_is_the_paytable_row(a, b, c):
    outcome = evaluate_poker_trio(a, b, c, paytable=POKER_TRIO_PAYTABLE)
    assert outcome.ratio == (
        None if outcome.pattern is None else POKER_TRIO_PAYTABLE[outcome.pattern]
    )
    assert outcome.cards == (a.code, b.code, c.code)

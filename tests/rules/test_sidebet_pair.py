"""DLX-PAIR and BDL-PAIR (D11): the Pair side bet on a hand's first two cards."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import Card, full_deck
from domain.errors import InvalidCard
from domain.money import Ratio
from domain.sidebets import (
    BOUNDLESS_PAIR_PAYTABLE,
    DELUXE_PAIR_PAYTABLE,
    evaluate_pair,
    make_paytable,
)

DECK = full_deck()
cards = st.sampled_from(DECK)


def deluxe(first: str, second: str, dealer: str):
    return evaluate_pair(first, second, dealer, paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR")


def boundless(first: str, second: str, dealer: str | None = None):
    return evaluate_pair(first, second, dealer, paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR")


# ------------------------------------------------------------------------------ paytables


def test_dlx_pair_paytable_is_5_10_30_50():
    assert dict(DELUXE_PAIR_PAYTABLE) == {
        "mixed_pair": Ratio(5),
        "coloured_pair": Ratio(10),
        "perfect_pair": Ratio(30),
        "suited_trips": Ratio(50),
    }


def test_bdl_pair_paytable_is_5_10_30_without_suited_trips():
    assert dict(BOUNDLESS_PAIR_PAYTABLE) == {
        "mixed_pair": Ratio(5),
        "coloured_pair": Ratio(10),
        "perfect_pair": Ratio(30),
    }


def test_pair_paytables_are_frozen():
    with pytest.raises(TypeError):
        DELUXE_PAIR_PAYTABLE["mixed_pair"] = Ratio(6)  # type: ignore[index]


# --------------------------------------------------------------------------------- deluxe

DELUXE_CASES = [
    # first, second, dealer first, pattern, ratio
    ("8H", "8S", "2C", "mixed_pair", Ratio(5)),  # red + black
    ("8D", "8C", "8D", "mixed_pair", Ratio(5)),  # dealer card irrelevant without a perfect pair
    ("AC", "AH", "AS", "mixed_pair", Ratio(5)),
    ("8H", "8D", "2C", "coloured_pair", Ratio(10)),  # both red, different suits
    ("KC", "KS", "KS", "coloured_pair", Ratio(10)),  # both black; dealer matches one only
    ("8H", "8H", "2C", "perfect_pair", Ratio(30)),
    ("8H", "8H", "8D", "perfect_pair", Ratio(30)),  # dealer same rank, other suit
    ("8H", "8H", "8S", "perfect_pair", Ratio(30)),
    ("8H", "8H", "9H", "perfect_pair", Ratio(30)),  # dealer same suit, other rank
    ("8H", "8H", "8H", "suited_trips", Ratio(50)),
    ("10S", "10S", "10S", "suited_trips", Ratio(50)),
    ("AD", "AD", "AD", "suited_trips", Ratio(50)),
    ("QC", "QC", "QC", "suited_trips", Ratio(50)),
]


@pytest.mark.parametrize(("first", "second", "dealer", "pattern", "ratio"), DELUXE_CASES)
def test_dlx_pair_pays_highest_pattern(first, second, dealer, pattern, ratio):
    outcome = deluxe(first, second, dealer)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (pattern, ratio, True)
    assert outcome.bet == "pair"
    assert outcome.rule == "DLX-PAIR"
    assert outcome.cards == (first, second, dealer)


def test_dlx_pair_suited_trips_needs_dealer_rank_and_suit_dealer_same_rank_other_suit_is_perfect():
    assert deluxe("7C", "7C", "7S").pattern == "perfect_pair"
    assert deluxe("7C", "7C", "7C").pattern == "suited_trips"


def test_dlx_pair_suited_trips_needs_the_dealer_card():
    with pytest.raises(ValueError, match="dealer's first card"):
        evaluate_pair("7C", "7C", paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR")


@pytest.mark.parametrize(
    ("first", "second", "dealer"),
    [
        ("JH", "QH", "QH"),  # D11: ten-values are no pair, even suited
        ("10S", "KS", "KS"),
        ("JD", "QC", "2H"),
        ("AS", "2S", "AS"),
        ("8H", "9H", "8H"),
        ("2C", "3D", "4H"),
    ],
)
def test_dlx_pair_different_ranks_lose(first, second, dealer):
    outcome = deluxe(first, second, dealer)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (None, None, False)
    assert outcome.rule == "DLX-PAIR"


# ------------------------------------------------------------------------------ boundless

BOUNDLESS_CASES = [
    ("5D", "5S", "mixed_pair", Ratio(5)),
    ("5C", "5H", "mixed_pair", Ratio(5)),
    ("5D", "5H", "coloured_pair", Ratio(10)),
    ("5C", "5S", "coloured_pair", Ratio(10)),
    ("5S", "5S", "perfect_pair", Ratio(30)),
    ("JD", "JD", "perfect_pair", Ratio(30)),
]


@pytest.mark.parametrize(("first", "second", "pattern", "ratio"), BOUNDLESS_CASES)
def test_bdl_pair_pays_highest_pattern(first, second, pattern, ratio):
    outcome = boundless(first, second)
    assert (outcome.pattern, outcome.ratio) == (pattern, ratio)
    assert outcome.rule == "BDL-PAIR"
    assert outcome.cards == (first, second)


def test_bdl_pair_has_no_suited_trips_dealer_card_is_ignored():
    outcome = boundless("9H", "9H", "9H")
    assert (outcome.pattern, outcome.ratio) == ("perfect_pair", Ratio(30))
    assert outcome.cards == ("9H", "9H")  # the dealer card was not evaluated


@pytest.mark.parametrize(
    ("first", "second"), [("JH", "QH"), ("10D", "KD"), ("JS", "QC"), ("AH", "KH")]
)
def test_bdl_pair_d11_same_value_different_rank_is_no_pair(first, second):
    assert not boundless(first, second).wins


def test_pair_accepts_card_objects_and_refuses_lowercase_codes():
    """CARD-1: a card has one spelling (canonical codes only)."""
    assert (
        evaluate_pair(
            Card("8", "H"), "8H", paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR"
        ).pattern
        == "perfect_pair"
    )
    with pytest.raises(InvalidCard):
        evaluate_pair(Card("8", "H"), "8h", paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR")


def test_pair_refuses_unknown_pattern_in_paytable():
    bad = {"mixed_pair": Ratio(5), "royal_pair": Ratio(100)}
    with pytest.raises(ValueError, match="royal_pair"):
        evaluate_pair("8H", "8S", paytable=bad, rule="BDL-PAIR")
    with pytest.raises(ValueError, match="royal_pair"):
        make_paytable("pair", bad)


def test_pair_pattern_missing_from_a_custom_paytable_does_not_pay():
    only_perfect = make_paytable("pair", {"perfect_pair": "25:1"})
    assert not evaluate_pair("8H", "8S", paytable=only_perfect, rule="BDL-PAIR").wins
    assert evaluate_pair("8H", "8H", paytable=only_perfect, rule="BDL-PAIR").ratio == Ratio(25)


# ------------------------------------------------------------- exhaustive and properties

RED = {"D", "H"}


def reference_pair(a: Card, b: Card, d: Card | None) -> str | None:
    """Straightforward reading of DLX-PAIR, highest row first."""
    if d is not None and a.rank == b.rank == d.rank and a.suit == b.suit == d.suit:
        return "suited_trips"
    if a.rank != b.rank:
        return None
    if a.suit == b.suit:
        return "perfect_pair"
    if (a.suit in RED) == (b.suit in RED):
        return "coloured_pair"
    return "mixed_pair"


def test_dlx_pair_exhaustive_over_every_two_cards_and_dealer_card():
    for a, b, d in itertools.product(DECK, repeat=3):
        expected = reference_pair(a, b, d)
        outcome = evaluate_pair(a, b, d, paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR")
        assert outcome.pattern == expected, (a, b, d)
        assert outcome.ratio == (None if expected is None else DELUXE_PAIR_PAYTABLE[expected])


def test_bdl_pair_exhaustive_over_every_two_cards():
    for a, b in itertools.product(DECK, repeat=2):
        expected = reference_pair(a, b, None)
        outcome = evaluate_pair(a, b, paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR")
        assert outcome.pattern == expected, (a, b)


@given(cards, cards, cards)
def test_dlx_pair_symmetric_in_the_players_two_cards(a, b, d):
    one = evaluate_pair(a, b, d, paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR")
    two = evaluate_pair(b, a, d, paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR")
    assert (one.pattern, one.ratio) == (two.pattern, two.ratio)


@given(cards, cards, st.one_of(st.none(), cards))
def test_bdl_pair_symmetric_and_wins_only_on_same_rank(a, b, d):
    one = evaluate_pair(a, b, d, paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR")
    two = evaluate_pair(b, a, d, paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR")
    assert (one.pattern, one.ratio) == (two.pattern, two.ratio)
    assert one.wins == (a.rank == b.rank)
    if one.wins:
        assert one.ratio == BOUNDLESS_PAIR_PAYTABLE[one.pattern]

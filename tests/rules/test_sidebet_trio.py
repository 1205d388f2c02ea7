"""BDL-TRIO (D12): Lucky Trio on the player's first two cards and the dealer's first card."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import full_deck
from domain.money import Ratio
from domain.sidebets import LUCKY_TRIO_PAYTABLE, evaluate_lucky_trio, make_paytable

DECK = full_deck()


def trio(p1: str, p2: str, d1: str, table=LUCKY_TRIO_PAYTABLE):
    return evaluate_lucky_trio(p1, p2, d1, paytable=table)


def test_bdl_trio_paytable():
    assert dict(LUCKY_TRIO_PAYTABLE) == {
        "total_19_20": Ratio(2),
        "21_unsuited": Ratio(3),
        "21_suited": Ratio(10),
        "678_unsuited": Ratio(30),
        "777_unsuited": Ratio(50),
        "678_suited": Ratio(100),
        "777_suited": Ratio(200),
    }


CASES = [
    # p1, p2, d1, pattern, ratio
    ("9H", "KS", "QD", None, None),  # 29: a bust total is nothing
    ("2H", "9D", "9S", "total_19_20", Ratio(2)),  # conformance P15
    ("9H", "KS", "AD", "total_19_20", Ratio(2)),  # 9+10+A(1) = 20
    ("AH", "8S", "KD", "total_19_20", Ratio(2)),  # 19 with A as 1
    ("AH", "AS", "7D", "total_19_20", Ratio(2)),  # 11+1+7 = 19
    ("AH", "AS", "8D", "total_19_20", Ratio(2)),  # 20
    ("5H", "5H", "9H", "total_19_20", Ratio(2)),  # suited 19 is still 2:1
    ("10H", "JS", "QD", None, None),  # 30
    ("AH", "KS", "QD", "21_unsuited", Ratio(3)),  # A counts 1
    ("AH", "AS", "9D", "21_unsuited", Ratio(3)),  # 11+1+9
    ("5C", "7C", "9H", "21_unsuited", Ratio(3)),  # two suited cards are not "all one suit"
    ("AS", "KS", "QS", "21_suited", Ratio(10)),
    ("4D", "8D", "9D", "21_suited", Ratio(10)),
    ("6H", "7S", "8D", "678_unsuited", Ratio(30)),
    ("8C", "6C", "7D", "678_unsuited", Ratio(30)),  # any order, not all one suit
    ("7H", "7S", "7D", "777_unsuited", Ratio(50)),
    ("7H", "7H", "7D", "777_unsuited", Ratio(50)),
    ("6S", "7S", "8S", "678_suited", Ratio(100)),
    ("8S", "6S", "7S", "678_suited", Ratio(100)),
    ("7C", "7C", "7C", "777_suited", Ratio(200)),
    ("2H", "3S", "4D", None, None),  # 9
    ("AH", "2S", "3D", None, None),  # soft 16
    ("10H", "8S", "AD", "total_19_20", Ratio(2)),  # 19
    ("10H", "7S", "AD", None, None),  # 18
    ("9H", "9S", "9D", None, None),  # 27
    ("6H", "6S", "6D", None, None),  # 18
    ("5H", "6S", "7D", None, None),  # 18: a run that is not 6-7-8
    ("7H", "8S", "9D", None, None),  # 24
]


@pytest.mark.parametrize(("p1", "p2", "d1", "pattern", "ratio"), CASES)
def test_bdl_trio_pattern_table(p1, p2, d1, pattern, ratio):
    outcome = trio(p1, p2, d1)
    assert (outcome.pattern, outcome.ratio, outcome.wins) == (pattern, ratio, ratio is not None)
    assert (outcome.bet, outcome.rule, outcome.cards) == ("trio", "BDL-TRIO", (p1, p2, d1))


def test_bdl_trio_678_suited_beats_plain_suited_21():
    assert trio("6D", "7D", "8D").ratio == Ratio(100)
    assert trio("4D", "8D", "9D").ratio == Ratio(10)


def test_bdl_trio_777_suited_200_vs_777_unsuited_50():
    assert trio("7S", "7S", "7S").ratio == Ratio(200)
    assert trio("7S", "7S", "7H").ratio == Ratio(50)


def test_bdl_trio_678_unsuited_beats_21_unsuited():
    assert trio("6D", "7C", "8D").pattern == "678_unsuited"


def test_bdl_trio_custom_paytable_without_678_rows_pays_21():
    table = make_paytable("trio", {"21_unsuited": "3:1", "21_suited": "10:1"})
    assert (trio("6D", "7D", "8D", table).pattern, trio("6D", "7C", "8D", table).pattern) == (
        "21_suited",
        "21_unsuited",
    )


# --------------------------------------------------------------------- brute force, all 52^3

VALUE = {"A": 1, "J": 10, "Q": 10, "K": 10} | {str(n): n for n in range(2, 11)}


def reference_trio(codes: tuple[tuple[str, str], ...]) -> str | None:
    """Straightforward reading of the BDL-TRIO rows, highest first (D12: "not all one suit")."""
    ranks = sorted(r for r, _ in codes)
    one_suit = len({s for _, s in codes}) == 1
    hard = sum(VALUE[r] for r in ranks)
    total = hard + 10 if "A" in ranks and hard + 10 <= 21 else hard
    if ranks == ["7", "7", "7"]:
        return "777_suited" if one_suit else "777_unsuited"
    if ranks == ["6", "7", "8"]:
        return "678_suited" if one_suit else "678_unsuited"
    if total == 21:
        return "21_suited" if one_suit else "21_unsuited"
    if total in (19, 20):
        return "total_19_20"
    return None


def test_bdl_trio_exhaustive_matches_reference_and_is_order_independent():
    seen: dict[tuple[int, ...], tuple[str | None, Ratio | None]] = {}
    for i, j, k in itertools.product(range(52), repeat=3):
        a, b, c = DECK[i], DECK[j], DECK[k]
        outcome = evaluate_lucky_trio(a, b, c, paytable=LUCKY_TRIO_PAYTABLE)
        result = (outcome.pattern, outcome.ratio)
        key = tuple(sorted((i, j, k)))
        if key in seen:  # a permutation of three cards already checked: same outcome
            assert seen[key] == result, (a, b, c)
            continue
        seen[key] = result
        expected = reference_trio(((a.rank, a.suit), (b.rank, b.suit), (c.rank, c.suit)))
        assert outcome.pattern == expected, (a, b, c)
        assert outcome.ratio == (None if expected is None else LUCKY_TRIO_PAYTABLE[expected])


cards = st.sampled_from(DECK)


@given(cards, cards, cards)
def test_bdl_trio_wins_only_on_totals_19_to_21(a, b, c):
    outcome = evaluate_lucky_trio(a, b, c, paytable=LUCKY_TRIO_PAYTABLE)
    hard = a.value + b.value + c.value
    total = hard + 10 if (a.is_ace or b.is_ace or c.is_ace) and hard <= 11 else hard
    assert outcome.wins == (total in (19, 20, 21))

"""Side bets in common: outcomes, paytables as frozen data, doctests of domain.sidebets."""

from __future__ import annotations

import doctest
from types import MappingProxyType

import pytest

import domain.sidebets as sidebets
from domain.money import Ratio
from domain.sidebets import (
    BOUNDLESS_PAIR_PAYTABLE,
    BUST_BONUS_PAYTABLE,
    DELUXE_PAIR_PAYTABLE,
    LUCKY7_DEFAULT_PAYTABLE,
    LUCKY_TRIO_PAYTABLE,
    PATTERNS,
    POKER_TRIO_PAYTABLE,
    SideBetOutcome,
    evaluate_bust_bonus,
    evaluate_lucky7,
    evaluate_lucky_trio,
    evaluate_poker_trio,
    make_paytable,
)

DEFAULTS = {
    "pair": [DELUXE_PAIR_PAYTABLE, BOUNDLESS_PAIR_PAYTABLE],
    "bust": [BUST_BONUS_PAYTABLE],
    "trio": [LUCKY_TRIO_PAYTABLE],
    "poker": [POKER_TRIO_PAYTABLE],
    "lucky7": [LUCKY7_DEFAULT_PAYTABLE],
}


def test_sidebets_doctests_pass():
    result = doctest.testmod(sidebets)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize("bet", list(DEFAULTS))
def test_default_paytables_are_frozen_and_name_only_known_patterns(bet):
    for table in DEFAULTS[bet]:
        assert isinstance(table, MappingProxyType)
        assert set(table) <= set(PATTERNS[bet])
        with pytest.raises(TypeError):
            table["x"] = Ratio(1)  # type: ignore[index]


@pytest.mark.parametrize("bet", list(DEFAULTS))
def test_default_paytables_pay_more_for_each_higher_row(bet):
    for table in DEFAULTS[bet]:
        ratios = [table[p] for p in PATTERNS[bet] if p in table]
        values = [r.numerator / r.denominator for r in ratios]
        assert values == sorted(values)
        assert len(set(values)) == len(values)


def test_paytable_parses_strings_and_keeps_row_order():
    table = make_paytable("lucky7", {"three_sevens": "500:1", "one_seven": Ratio(3)})
    assert list(table) == ["one_seven", "three_sevens"]
    assert table["three_sevens"] == Ratio(500)


def test_paytable_refuses_unknown_bet_pattern_and_non_positive_ratio():
    with pytest.raises(ValueError, match="unknown side bet"):
        make_paytable("roulette", {})
    with pytest.raises(ValueError, match="four_sevens"):
        make_paytable("lucky7", {"four_sevens": "1000:1"})
    with pytest.raises(ValueError, match="positive"):
        make_paytable("lucky7", {"one_seven": "0:1"})


@pytest.mark.parametrize(
    "call",
    [
        lambda t: evaluate_bust_bonus(["KS", "QS", "2D"], paytable=t),
        lambda t: evaluate_lucky_trio("7S", "7S", "7S", paytable=t),
        lambda t: evaluate_poker_trio("7S", "7S", "7S", paytable=t),
        lambda t: evaluate_lucky7(["7S", "7D"], dealer_blackjack=False, paytable=t),
    ],
)
def test_evaluators_refuse_a_paytable_of_another_bet(call):
    with pytest.raises(ValueError, match="unknown pattern"):
        call({"perfect_pair": Ratio(30)})


def test_outcome_wins_and_payload():
    win = SideBetOutcome("poker", "straight", Ratio(10), "BDL-POKER", ("AD", "2C", "3H"))
    loss = SideBetOutcome("poker", None, None, "BDL-POKER", ("AD", "2C", "9H"))
    assert win.wins
    assert not loss.wins
    assert win.as_payload() == {
        "bet": "poker",
        "pattern": "straight",
        "ratio": "10:1",
        "rule": "BDL-POKER",
        "cards": ["AD", "2C", "3H"],
    }
    assert loss.as_payload()["ratio"] is None


def test_outcome_is_frozen():
    outcome = evaluate_poker_trio("AD", "2C", "3H", paytable=POKER_TRIO_PAYTABLE)
    with pytest.raises(AttributeError):
        outcome.ratio = Ratio(1000)  # type: ignore[misc]


def test_conformance_p15_and_p16_side_bets():
    # P15: player 2H 9D, dealer first 9S: trio 20 pays 2:1, poker nothing
    assert evaluate_lucky_trio("2H", "9D", "9S", paytable=LUCKY_TRIO_PAYTABLE).ratio == Ratio(2)
    assert not evaluate_poker_trio("2H", "9D", "9S", paytable=POKER_TRIO_PAYTABLE).wins
    # P16: player 2C 3H, dealer first AD: ace-low straight 10:1
    assert evaluate_poker_trio("2C", "3H", "AD", paytable=POKER_TRIO_PAYTABLE).ratio == Ratio(10)

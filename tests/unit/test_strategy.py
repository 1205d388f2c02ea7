"""The simulation bots' basic strategy and deterministic stream (cli/strategy.py)."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from cli.strategy import CHIPS, BotStream, bet_size, choose, side_bet_size
from domain.cards import RANKS, Card
from domain.game import play
from domain.rules import VARIANTS, get_rules

UPCARDS = ["2H", "3H", "4H", "5H", "6H", "7H", "8H", "9H", "10H", "JH", "QH", "KH", "AH"]
FULL = ["hit", "stand", "double", "split", "surrender"]


def test_every_choice_is_an_open_option_for_every_two_card_hand_and_variant() -> None:
    """Exhaustive over rank pairs, upcards and variants, with the options the rules offer."""
    for variant in VARIANTS:
        rules = get_rules(variant)
        for r1, r2 in itertools.combinations_with_replacement(RANKS, 2):
            cards = [f"{r1}S", f"{r2}D"]
            for up in UPCARDS:
                dealer = [Card.parse(up)]
                if rules.upcard_index == 1:
                    dealer = [Card.parse("2C"), *dealer]
                facts = play.HandFacts(tuple(Card.parse(c) for c in cards))
                options = play.play_options(facts, dealer, rules)
                assert choose(options, cards, up, variant) in options
                window = play.window_options(facts, rules)
                assert choose(window, cards, up, variant) in window


def test_every_choice_is_among_arbitrary_option_subsets() -> None:
    hands = [["10S", "6D"], ["AS", "7D"], ["8S", "8D"], ["5S", "6D"], ["2S", "3D", "4C"]]
    for n in range(1, len(FULL) + 1):
        for subset in itertools.combinations(FULL, n):
            for cards, up in itertools.product(hands, ["6H", "10H", "AH"]):
                assert choose(list(subset), cards, up, "deluxe") in subset


def test_no_options_is_an_error() -> None:
    with pytest.raises(ValueError, match="no option"):
        choose([], ["10S", "6D"], "6H", "deluxe")


@pytest.mark.parametrize(
    ("cards", "up", "expected"),
    [
        (["AS", "AD"], "10H", "split"),  # aces always
        (["8S", "8D"], "AH", "split"),  # eights always
        (["10S", "KD"], "6H", "stand"),  # never tens
        (["5S", "5D"], "6H", "double"),  # never fives: a hard 10
        (["9S", "9D"], "7H", "stand"),
        (["9S", "9D"], "8H", "split"),
        (["6S", "5D"], "10H", "double"),  # 11 vs 10
        (["6S", "4D"], "10H", "hit"),  # 10 vs 10
        (["5S", "4D"], "3H", "double"),  # 9 vs 3
        (["5S", "4D"], "2H", "hit"),  # 9 vs 2
        (["10S", "2D"], "3H", "hit"),  # 12 vs 3
        (["10S", "2D"], "4H", "stand"),  # 12 vs 4
        (["10S", "3D"], "2H", "stand"),
        (["10S", "6D"], "6H", "stand"),
        (["10S", "6D"], "7H", "hit"),
        (["10S", "6D"], "9H", "surrender"),  # 16 vs 9
        (["10S", "6D"], "AH", "surrender"),  # 16 vs A
        (["10S", "7D"], "AH", "stand"),  # 17+
        (["5S", "3D"], "6H", "hit"),  # 8: hit below 12
        (["AS", "7D"], "6H", "double"),  # soft 18 vs 6
        (["AS", "7D"], "8H", "stand"),
        (["AS", "7D"], "9H", "hit"),
        (["AS", "2D"], "5H", "double"),  # soft 13 vs 5
        (["AS", "6D"], "2H", "hit"),  # soft 17 vs 2
        (["AS", "8D"], "6H", "stand"),  # soft 19
    ],
)
def test_known_basic_strategy_cells(cards: list[str], up: str, expected: str) -> None:
    assert choose(FULL, cards, up, "deluxe") == expected


@pytest.mark.parametrize(
    ("cards", "up", "options", "expected"),
    [
        (["AS", "7D"], "6H", ["hit", "stand"], "stand"),  # soft 18: double, else stand
        (["AS", "6D"], "6H", ["hit", "stand"], "hit"),  # soft 17: double, else hit
        (["10S", "6D"], "10H", ["hit", "stand"], "hit"),  # surrender, else hit
        (["AS", "AD"], "10H", ["hit", "stand", "double"], "hit"),  # no split: soft 12 hits
        (["AS", "5D"], "4H", ["stand"], "stand"),  # split aces that may not hit
        (["10S", "6D", "5C"], "10H", ["stand"], "stand"),
    ],
)
def test_falls_back_when_the_preferred_move_is_closed(
    cards: list[str], up: str, options: list[str], expected: str
) -> None:
    assert choose(options, cards, up, "deluxe") == expected


def test_never_insurance_and_declines_even_money() -> None:
    assert choose(["insurance", "no_insurance"], ["10S", "9D"], "AH", "deluxe") == "no_insurance"
    assert choose(["even_money", "no_insurance"], ["AS", "KD"], "AH", "european") == "no_insurance"
    assert (
        choose(["even_money", "insurance", "no_insurance"], ["AS", "KD"], "AH", "multihand")
        == "no_insurance"
    )


def test_european_does_not_double_eleven_against_ten_or_ace() -> None:
    """D8: with no hole card a dealer blackjack takes the double too."""
    assert choose(["hit", "stand", "double"], ["6S", "5D"], "10H", "european") == "hit"
    assert choose(["hit", "stand", "double"], ["6S", "5D"], "AH", "european") == "hit"
    assert choose(["hit", "stand", "double"], ["6S", "5D"], "9H", "european") == "double"


def test_bot_stream_is_deterministic_by_label_and_fork() -> None:
    a, b, c = BotStream("t"), BotStream("t"), BotStream("u")
    seq_a = [a.below(1000) for _ in range(50)]
    assert seq_a == [b.below(1000) for _ in range(50)]
    assert seq_a != [c.below(1000) for _ in range(50)]
    assert BotStream("t").fork("round", 3).below(10**6) == BotStream("t/round/3").below(10**6)


def test_bot_stream_ranges() -> None:
    s = BotStream("ranges")
    values = [s.below(6) for _ in range(600)]
    assert set(values) == set(range(6))
    assert all(2 <= s.between(2, 4) <= 4 for _ in range(100))
    hits = sum(s.chance(200) for _ in range(2000))
    assert 300 < hits < 500  # ~20%
    picked = s.sample(list("abcdef"), 4)
    assert len(set(picked)) == 4
    assert set(picked) <= set("abcdef")
    assert s.pick(["only"]) == "only"
    with pytest.raises(ValueError, match="n must be"):
        s.below(0)


def test_bet_sizes_are_chips_within_limits() -> None:
    s = BotStream("bets")
    for _ in range(200):
        amount = bet_size(s, minimum=Decimal("1.00"), maximum=Decimal("5000.00"))
        assert amount in CHIPS
        side = side_bet_size(s, minimum=Decimal("0.50"), maximum=Decimal("1.00"))
        assert Decimal("0.50") <= side <= Decimal("1.00")
    assert bet_size(s, minimum=Decimal("30.00"), maximum=Decimal("50.00")) == Decimal("30.00")

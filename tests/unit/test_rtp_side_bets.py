"""Side bets' exact RTP (domain.rtp.side_bets) against a second, independent enumeration.

Each check below is written here from the rule book (RULES.md), not from ``domain.sidebets``:
its own pattern logic, its own way of counting (combinations of card types instead of ordered
draws, closed formulas, a recursive dealer), in exact fractions. The module under test must
agree exactly, and so must the report stored for the rules key (``domain/rtp/reports``).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache
from itertools import combinations_with_replacement
from math import comb

import pytest

from domain.rtp import side_bets
from domain.rtp.report import load
from domain.rules import get_rules

SUITS = "DCHS"
RED = "DH"
RANK_ORDER = {"A": 1, "J": 11, "Q": 12, "K": 13, **{str(n): n for n in range(2, 11)}}
RANK_NAMES = list(RANK_ORDER)
TYPES = [(r, s) for s in SUITS for r in RANK_NAMES]


def rtp_of(freq: dict[str, Fraction], table: dict[str, str]) -> Fraction:
    def back(ratio: str) -> Fraction:
        a, b = ratio.split(":")
        return 1 + Fraction(int(a), int(b))

    return sum((f * back(table[p]) for p, f in freq.items() if p in table), Fraction(0))


def paytable(variant: str, bet: str) -> dict[str, str]:
    return {p: str(r) for p, r in get_rules(variant).side_bets[bet].items()}


def three_card_frequencies(
    decks: int, classify: Callable[[tuple[tuple[str, str], ...]], str | None]
) -> dict[str, Fraction]:
    """Unordered three-card hands from ``decks`` decks: each multiset of card types weighted
    by the ways of choosing its copies, over C(52 * decks, 3)."""
    total = comb(52 * decks, 3)
    freq: dict[str, Fraction] = {}
    for combo in combinations_with_replacement(TYPES, 3):
        ways = 1
        for t in set(combo):
            ways *= comb(decks, combo.count(t))
        if not ways:
            continue
        pattern = classify(combo)
        if pattern is not None:
            freq[pattern] = freq.get(pattern, Fraction(0)) + Fraction(ways, total)
    return freq


# ------------------------------------------------------------------------------- Pair


def pair_frequencies(decks: int, suited_trips: bool) -> dict[str, Fraction]:
    """DLX-PAIR / BDL-PAIR by formula: the second card against the first; trips with the
    dealer's first card (highest pattern only)."""
    n = 52 * decks
    perfect = Fraction(decks - 1, n - 1)
    freq = {
        "mixed_pair": Fraction(2 * decks, n - 1),  # same rank, the two suits of other colour
        "coloured_pair": Fraction(decks, n - 1),  # same rank, the other suit of its colour
        "perfect_pair": perfect,
    }
    if suited_trips:
        trips = perfect * Fraction(decks - 2, n - 2)
        freq["perfect_pair"] = perfect - trips
        freq["suited_trips"] = trips
    return freq


@pytest.mark.parametrize(("variant", "trips"), [("deluxe", True), ("boundless", False)])
def test_pair_matches_formula(variant: str, trips: bool) -> None:
    rules = get_rules(variant)
    expected = pair_frequencies(rules.decks, trips)
    result = side_bets.analyse_pair(rules)
    assert {p: f for p, f in result.hit_frequency.items() if p != "lose"} == expected
    assert result.rtp == rtp_of(expected, paytable(variant, "pair"))
    assert load(variant)["side_bets"]["pair"]["rtp_exact"] == (
        f"{result.rtp.numerator}/{result.rtp.denominator}"
    )


# ------------------------------------------------------------------------- Poker Trio


def poker_class(cards: tuple[tuple[str, str], ...]) -> str | None:
    ranks = sorted(RANK_ORDER[r] for r, _ in cards)
    one_suit = len({s for _, s in cards}) == 1
    trips = len(set(ranks)) == 1
    distinct = len(set(ranks)) == 3
    run = distinct and (ranks[2] - ranks[0] == 2 or ranks == [1, 12, 13])  # Q-K-A
    if trips and one_suit:
        return "suited_trips"
    if run and one_suit:
        return "straight_flush"
    if trips:
        return "three_of_a_kind"
    if run:
        return "straight"
    if one_suit:
        return "flush"
    return None


def trio_class(cards: tuple[tuple[str, str], ...]) -> str | None:
    values = [min(RANK_ORDER[r], 10) for r, _ in cards]
    total = sum(values)
    if 1 in values and total + 10 <= 21:
        total += 10
    one_suit = len({s for _, s in cards}) == 1
    ranks = sorted(RANK_ORDER[r] for r, _ in cards)
    if ranks == [7, 7, 7]:
        return "777_suited" if one_suit else "777_unsuited"
    if ranks == [6, 7, 8]:
        return "678_suited" if one_suit else "678_unsuited"
    if total == 21:
        return "21_suited" if one_suit else "21_unsuited"
    if total in (19, 20):
        return "total_19_20"
    return None


@pytest.mark.parametrize(
    ("bet", "classify", "analyse"),
    [
        ("poker", poker_class, side_bets.analyse_poker),
        ("trio", trio_class, side_bets.analyse_trio),
    ],
)
def test_three_card_bets_match_an_unordered_enumeration(
    bet: str,
    classify: Callable[[tuple[tuple[str, str], ...]], str | None],
    analyse: Callable[..., side_bets.SideBetResult],
) -> None:
    rules = get_rules("boundless")
    expected = three_card_frequencies(rules.decks, classify)
    result = analyse(rules)
    assert {p: f for p, f in result.hit_frequency.items() if p != "lose"} == expected
    table = paytable("boundless", bet)
    assert result.rtp == rtp_of(expected, table)
    second = sum(
        (f * (1 + Fraction(*map(int, table[p].split(":")))) ** 2 for p, f in expected.items()),
        Fraction(0),
    )
    assert result.variance == second - result.rtp**2


# -------------------------------------------------------------------------- Bust Bonus


def bust_frequencies(decks: int) -> dict[str, Fraction]:
    """BDL-BUST by recursion: the dealer draws from a full shoe by DEALER-1 (S17) until 17 or
    more or bust; a busted hand pays by its number of cards (8 or more as 8)."""
    names = {3: "three_cards", 4: "four_cards", 5: "five_cards", 6: "six_cards"}
    names.update({7: "seven_cards", 8: "eight_or_more_cards"})
    start = tuple(decks * (16 if v == 10 else 4) for v in range(1, 11))

    @cache
    def play(shoe: tuple[int, ...], hard: int, ace: bool, n: int) -> tuple[Fraction, ...]:
        soft_total = hard + 10 if ace and hard + 10 <= 21 else hard
        if hard > 21:
            out = [Fraction(0)] * 9
            out[min(n, 8)] = Fraction(1)
            return tuple(out)
        if soft_total >= 17:
            return tuple([Fraction(0)] * 9)
        left = sum(shoe)
        acc = [Fraction(0)] * 9
        for v in range(1, 11):
            c = shoe[v - 1]
            if not c:
                continue
            nxt = (*shoe[: v - 1], c - 1, *shoe[v:])
            sub = play(nxt, hard + v, ace or v == 1, n + 1)
            for i in range(9):
                acc[i] += Fraction(c, left) * sub[i]
        return tuple(acc)

    bust = play(start, 0, False, 0)
    return {names[k]: bust[k] for k in range(3, 9) if bust[k]}


def test_bust_bonus_matches_a_recursive_dealer() -> None:
    rules = get_rules("boundless")
    expected = bust_frequencies(rules.decks)
    result = side_bets.analyse_bust(rules)
    assert {p: f for p, f in result.hit_frequency.items() if p != "lose"} == expected
    assert result.rtp == rtp_of(expected, paytable("boundless", "bust"))


# --------------------------------------------------------------------------- Lucky 7


def lucky7_frequencies(decks: int, chart_77: str) -> dict[str, Fraction]:
    """L7-2/L7-3 by hand: the box's first two cards; after 7-7, the dealer's upcard and
    covered card (a BJ ends the round: two 7s paid as two) and, when the strategy draws
    (chart letter other than S), the third card."""
    n = 52 * decks
    sevens = 4 * decks
    per_value = [4 * decks] * 9 + [16 * decks]  # value 1..10
    p_first = Fraction(sevens, n)
    one = p_first * Fraction(n - 1 - (sevens - 1), n - 1)
    both = p_first * Fraction(sevens - 1, n - 1)
    upcards = "23456789TA"
    two = three = Fraction(0)
    left = n - 2
    for u in range(1, 11):
        cu = per_value[u - 1] - (2 if u == 7 else 0)
        for h in range(1, 11):
            ch = per_value[h - 1] - (2 if h == 7 else 0) - (1 if h == u else 0)
            if cu <= 0 or ch <= 0:
                continue
            p = both * Fraction(cu, left) * Fraction(ch, left - 1)
            if {u, h} == {1, 10}:
                two += p  # L7-3: no third card
                continue
            letter = chart_77[upcards.index("A" if u == 1 else "T" if u == 10 else str(u))]
            if letter == "S":
                two += p
                continue
            third_seven = Fraction(sevens - 2 - (u == 7) - (h == 7), left - 2)
            three += p * third_seven
            two += p * (1 - third_seven)
    return {"one_seven": one, "two_sevens": two, "three_sevens": three}


def test_lucky7_matches_a_hand_count_under_l7_3() -> None:
    rules = get_rules("lucky7")
    report = load("lucky7")
    chart = report["main"]["chart"]["77"]
    expected = lucky7_frequencies(rules.decks, chart)
    stored = report["side_bets"]["lucky7"]["hit_frequency_exact"]
    got = {p: Fraction(v) for p, v in stored.items() if p != "lose"}
    assert got == expected
    assert Fraction(report["side_bets"]["lucky7"]["rtp_exact"]) == rtp_of(
        expected, paytable("lucky7", "lucky7")
    )


def test_lucky7_module_agrees_with_the_stored_report() -> None:
    rules = get_rules("lucky7")
    chart = load("lucky7")["main"]["chart"]
    names = "A23456789T"

    def decide(a: int, b: int, up: int) -> str:
        first, second = sorted((a, b), key=lambda r: (r == 0, r), reverse=True)
        letter = chart[names[first] + names[second]]["23456789TA".index(names[up])]
        return {"S": "stand", "B": "blackjack"}.get(letter, "hit")

    result = side_bets.analyse_lucky7(rules, decide)
    expected = lucky7_frequencies(rules.decks, chart["77"])
    assert {p: f for p, f in result.hit_frequency.items() if p != "lose"} == expected


# ------------------------------------------------------------------------- insurance


@pytest.mark.parametrize("variant", ["deluxe", "multihand", "lucky7", "european", "boundless"])
def test_insurance_matches_the_hole_card_odds(variant: str) -> None:
    """INS-1 taken on every offer: P(hole card ten | ace up), over the player hands it is
    offered to (only without BJ where the variant says so), times 3."""
    rules = get_rules(variant)
    d = rules.decks
    per_value = [4 * d] * 9 + [16 * d]
    n = 52 * d - 1  # the ace is up
    per_value[0] -= 1
    num = den = Fraction(0)
    for a in range(10):
        for b in range(10):
            ca = per_value[a]
            cb = per_value[b] - (a == b)
            if ca <= 0 or cb <= 0:
                continue
            p = Fraction(ca, n) * Fraction(cb, n - 1)
            if {a, b} == {0, 9} and not rules.insurance_with_blackjack:
                continue
            tens = per_value[9] - (a == 9) - (b == 9)
            num += p * Fraction(tens, n - 2)
            den += p
    expected = 3 * num / den
    stored = load(variant)["side_bets"]["insurance"]
    assert Fraction(stored["rtp_exact"]) == expected

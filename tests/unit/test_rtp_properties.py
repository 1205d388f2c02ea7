"""Properties of the RTP building blocks (hypothesis): the dealer's counted multisets equal a
recursive dealer on any shoe, the initial deals are a probability distribution, and the
observed-RTP interval behaves as the variance says."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from functools import cache

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.rtp.dealer import DealerTable, blackjack_probability
from domain.rtp.interval import effective_n, intervals, standard_deviation
from domain.rtp.main_game import GameRules, _UpcardSolver


def dealer_by_recursion(up: int, shoe: tuple[int, ...], h17: bool) -> list[Fraction]:
    """P(17, 18, 19, 20, 21, bust and no dealer BJ) drawing card by card (exact)."""

    @cache
    def go(left: tuple[int, ...], hard: int, ace: bool, first: bool) -> tuple[Fraction, ...]:
        total = hard + 10 if ace and hard + 10 <= 21 else hard
        soft = total != hard
        if total > 21:
            return (*[Fraction(0)] * 5, Fraction(1))
        stands = total > 17 or (total == 17 and not (h17 and soft))
        if not first and stands:
            out = [Fraction(0)] * 6
            out[total - 17] = Fraction(1)
            return tuple(out)
        n = sum(left)
        if n == 0:  # the shoe ran out: no outcome (such shoes are not generated)
            return tuple([Fraction(0)] * 6)
        acc = [Fraction(0)] * 6
        for r, c in enumerate(left):
            if not c or (first and {up, r} == {0, 9}):
                continue
            sub = go((*left[:r], c - 1, *left[r + 1 :]), hard + r + 1, ace or r == 0, False)
            for i in range(6):
                acc[i] += Fraction(c, n) * sub[i]
        return tuple(acc)

    return list(go(shoe, up + 1, up == 0, True))


@settings(max_examples=40, deadline=None)
@given(
    up=st.integers(0, 9),
    counts=st.lists(st.integers(2, 6), min_size=9, max_size=9),
    tens=st.integers(4, 20),
    h17=st.booleans(),
)
def test_dealer_matrix_equals_a_recursive_dealer(
    up: int, counts: list[int], tens: int, h17: bool
) -> None:
    shoe = (*counts, tens)
    table = DealerTable(
        up, hits_soft_17=h17, max_count=sum(shoe)
    )  # as main_game sizes it: the whole shoe
    fast = table.outcomes(np.array([shoe], dtype=np.int64))[0]
    exact = dealer_by_recursion(up, shoe, h17)
    assert np.allclose(fast, [float(x) for x in exact], rtol=0, atol=1e-12)
    assert abs(fast.sum() + blackjack_probability(up, shoe) - 1) < 1e-12


def test_initial_deals_are_a_probability_distribution() -> None:
    game = GameRules(
        decks=1,
        hits_soft_17=False,
        peek=True,
        dealer_bj_takes="peek",
        surrender="none",
        double="any_two",
        double_after_split=True,
        split_forbidden_values=frozenset(range(1, 11)),
        split_aces_one_card=True,
        double_split_aces=False,
        insurance=True,
        insurance_with_blackjack=True,
        even_money=False,
        blackjack_pays=Fraction(3, 2),
        insurance_pays=Fraction(2),
    )
    full = tuple(16 if r == 9 else 4 for r in range(10))
    total = Fraction(0)
    for up in range(10):
        solver = _UpcardSolver(game, full, up, "CDP1")
        total += sum(h.probability for h in solver.initial_hands(Fraction(full[up], 52)))
    assert total == 1


stakes = st.lists(st.integers(1, 10_000), min_size=1, max_size=200)


@given(
    rtp=st.decimals("0.5", "1.5", places=6),
    variance=st.decimals("0.01", "200", places=4),
    rounds=stakes,
)
def test_the_intervals_hold_the_theory_and_nest(
    rtp: Decimal, variance: Decimal, rounds: list[int]
) -> None:
    handle, square_sum = sum(rounds), sum(w * w for w in rounds)
    narrow, wide = intervals(rtp, variance, handle, square_sum)
    assert (narrow.level, wide.level) == ("99%", "99.9%")
    assert wide.low <= narrow.low < rtp < narrow.high <= wide.high
    assert 1 <= effective_n(handle, square_sum) <= len(rounds)


@given(n=st.integers(1, 10_000), stake=st.integers(1, 5000), variance=st.integers(1, 100))
def test_equal_independent_rounds_give_sigma_over_root_n(n: int, stake: int, variance: int) -> None:
    sd = standard_deviation(Decimal(variance), n * stake, n * stake * stake)
    assert abs(sd * sd * n - variance) < Decimal("1e-20") * variance * n

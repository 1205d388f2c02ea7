"""The dealer's hand as combinatorics: every way DEALER-1 can end, counted once per upcard.

A dealer hand is the upcard plus the cards drawn after it (the hole card first). Whether the
dealer draws again depends only on the cards held, never on their order, so each finished hand
is a *multiset* of drawn ranks with a count of the orders in which DEALER-1 could have drawn it
(every proper prefix still drawing, the whole hand standing or bust). For a shoe with ``s[r]``
cards of rank ``r`` and ``N`` cards in all, one ordered sequence with ``d[r]`` cards of each
rank has probability ``prod_r falling(s[r], d[r]) / falling(N, k)`` whatever its order, so

    P(final = o) = sum over finished multisets D of outcome o:  count(D) * that product.

The counts depend on the upcard and the dealer rule only; the shoe enters through the falling
factorials. :func:`dealer_outcomes` evaluates that sum for many shoes at once as one matrix
product in log space (NumPy), which is what makes a finite-shoe analysis of every player hand
affordable in Python.

Ranks are indices 0..9 for values 1..10 (ace = 0, every ten-value card = 9). Outcomes are
``17, 18, 19, 20, 21, bust`` (indices 0..5). A dealer blackjack (SCORE-3) is never among them:
the hole-card sequences that make one are left out and their probability is reported apart
(:func:`blackjack_probability`), because a peek game ends the round on it (END-1) and a
no-hole-card game (ENHC, D8) settles it against every stake.

>>> seqs = dealer_sequences(5, hits_soft_17=False)   # upcard 6
>>> [s.drawn for s in seqs if sum(s.drawn) == 1]      # only 6 + A (soft 17) stands at once
[(1, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
>>> [s.drawn for s in dealer_sequences(5, hits_soft_17=True) if sum(s.drawn) == 1]
[]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

RANKS = 10
ACE, TEN = 0, 9
OUTCOMES = ("17", "18", "19", "20", "21", "bust")
BUST = 5
#: log(0) stand-in for an impossible draw: exp() of a sum holding it is exactly 0.0.
_IMPOSSIBLE = -1.0e4

Counts = tuple[int, ...]
FloatArray = npt.NDArray[np.float64]


def hand_total(hard: int, has_ace: bool) -> tuple[int, bool]:
    """SCORE-1 on a hard total: (best total, soft).

    >>> hand_total(7, True), hand_total(17, True), hand_total(23, False)
    ((17, True), (17, False), (23, False))
    """
    if has_ace and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def makes_blackjack(up: int, hole: int) -> bool:
    """The dealer's first two cards are an ace and a ten-value (SCORE-3)."""
    return {up, hole} == {ACE, TEN}


def must_draw(total: int, soft: bool, *, hits_soft_17: bool) -> bool:
    """DEALER-1 (stand on every 17), or its hit-soft-17 alternative."""
    return total < 17 or (hits_soft_17 and total == 17 and soft)


@dataclass(frozen=True, slots=True)
class DealerSequence:
    """One finished dealer hand: the drawn ranks (upcard excluded), in how many orders DEALER-1
    could draw them, and the outcome index (:data:`OUTCOMES`)."""

    drawn: Counts
    orders: int
    outcome: int


@cache
def dealer_sequences(up: int, *, hits_soft_17: bool) -> tuple[DealerSequence, ...]:
    """Every finished dealer hand from upcard ``up`` that is not a blackjack (see the module
    docstring). Shoe limits are not applied here: a multiset the shoe cannot supply gets
    probability 0 from its falling factorials."""
    start = tuple(1 if r == up else 0 for r in range(RANKS))
    drawing: dict[Counts, int] = {}
    finished: dict[Counts, int] = {}
    first = True
    frontier = {tuple(0 for _ in range(RANKS)): 1}
    while frontier:
        nxt: dict[Counts, int] = {}
        for drawn, orders in frontier.items():
            for r in range(RANKS):
                if first and makes_blackjack(up, r):
                    continue  # the blackjack hole card: counted apart
                new = tuple(c + (1 if i == r else 0) for i, c in enumerate(drawn))
                hard = sum((i + 1) * (c + start[i]) for i, c in enumerate(new))
                total, soft = hand_total(hard, new[ACE] + start[ACE] > 0)
                if total <= 21 and must_draw(total, soft, hits_soft_17=hits_soft_17):
                    nxt[new] = nxt.get(new, 0) + orders
                else:
                    finished[new] = finished.get(new, 0) + orders
        drawing.update(nxt)
        frontier = nxt
        first = False
    out = []
    for drawn, orders in sorted(finished.items()):
        hard = sum((i + 1) * (c + start[i]) for i, c in enumerate(drawn))
        total, _ = hand_total(hard, drawn[ACE] + start[ACE] > 0)
        outcome = BUST if total > 21 else total - 17
        out.append(DealerSequence(drawn, orders, outcome))
    return tuple(out)


def blackjack_probability(up: int, shoe: Sequence[int]) -> float:
    """P(the next card, the hole card, makes a dealer blackjack with ``up``) for ``shoe``."""
    n = sum(shoe)
    if up == ACE:
        return shoe[TEN] / n
    if up == TEN:
        return shoe[ACE] / n
    return 0.0


class DealerTable:
    """The dealer's outcome probabilities for upcard ``up``, for many shoes at once.

    Built once per upcard and rule; :meth:`outcomes` takes a matrix of shoes (one row per shoe,
    ten rank counts, the upcard already removed) and returns one row of six probabilities
    ``P(final = o and no dealer blackjack)`` per shoe. Precision: each entry is the exponential
    of a sum of at most ~30 logarithms, so its relative error is below 1e-12 (binary64).
    """

    def __init__(self, up: int, *, hits_soft_17: bool, max_count: int) -> None:
        self.up = up
        self.sequences = dealer_sequences(up, hits_soft_17=hits_soft_17)
        drawn = np.array([s.drawn for s in self.sequences], dtype=np.int64)
        sizes = drawn.sum(axis=1)
        self._max_d = [int(drawn[:, r].max()) for r in range(RANKS)]
        self._max_k = int(sizes.max())
        self._log_ff = _log_falling_table(max_count, max(*self._max_d, self._max_k))
        columns = sum(self._max_d) + self._max_k
        pick = np.zeros((columns, len(self.sequences)), dtype=np.float64)
        col = 0
        for r in range(RANKS):
            for j in range(1, self._max_d[r] + 1):
                pick[col, drawn[:, r] == j] = 1.0
                col += 1
        for k in range(1, self._max_k + 1):
            pick[col, sizes == k] = 1.0
            col += 1
        self._pick = pick
        self._log_orders = np.log(np.array([s.orders for s in self.sequences], dtype=np.float64))
        self._to_outcome = np.zeros((len(self.sequences), len(OUTCOMES)), dtype=np.float64)
        for i, s in enumerate(self.sequences):
            self._to_outcome[i, s.outcome] = 1.0

    def outcomes(self, shoes: npt.NDArray[np.int64], *, chunk: int = 2048) -> FloatArray:
        out = np.empty((shoes.shape[0], len(OUTCOMES)), dtype=np.float64)
        for lo in range(0, shoes.shape[0], chunk):
            part = shoes[lo : lo + chunk]
            logs = self._logs(part) @ self._pick + self._log_orders
            out[lo : lo + chunk] = np.exp(logs) @ self._to_outcome
        return out

    def _logs(self, shoes: npt.NDArray[np.int64]) -> FloatArray:
        n = shoes.sum(axis=1)
        cols = []
        for r in range(RANKS):
            if self._max_d[r]:
                cols.append(self._log_ff[shoes[:, r], 1 : self._max_d[r] + 1])
        cols.append(-self._log_ff[n, 1 : self._max_k + 1])
        return np.concatenate(cols, axis=1)


@cache
def _log_falling_table(max_count: int, max_draw: int) -> FloatArray:
    """``table[x, j] = log(x (x-1) ... (x-j+1))``; impossible draws (j > x) are a large
    negative number, so that their exponential is exactly zero."""
    table = np.full((max_count + 1, max_draw + 1), _IMPOSSIBLE, dtype=np.float64)
    for x in range(max_count + 1):
        acc = 0.0
        table[x, 0] = 0.0
        for j in range(1, min(x, max_draw) + 1):
            acc += math.log(x - j + 1)
            table[x, j] = acc
    return table


__all__ = [
    "ACE",
    "BUST",
    "OUTCOMES",
    "RANKS",
    "TEN",
    "DealerSequence",
    "DealerTable",
    "blackjack_probability",
    "dealer_sequences",
    "hand_total",
    "makes_blackjack",
    "must_draw",
]

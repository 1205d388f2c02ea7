"""Benchmark: the exact RTP analysis of each variant, in CPU seconds (target: under 60 s each).

Run on demand (not part of the test suite)::

    python -m benchmarks.rtp [--variant deluxe] [--what-if]

Printed per variant: CPU seconds (``time.process_time``, so that a shared machine's load does
not count) of the main-game analysis, of the side bets, and their total against the issue's
60 s budget; then, measured in the same run, the baseline the dealer method is judged by: the
dealer's outcome probabilities for every shoe one upcard's analysis needs, computed once per
shoe by the textbook recursion (pure Python, memoised per shoe), against the counted-multiset
matrix product of ``domain.rtp.dealer`` (NumPy), with their ratio and the largest difference.
"""

from __future__ import annotations

import argparse
import time
from functools import cache

import numpy as np

from domain.rtp.dealer import DealerTable, hand_total, must_draw
from domain.rtp.main_game import _UpcardSolver, analyse
from domain.rtp.report import compute
from domain.rules import CURRENT, get_rules

BUDGET = 60.0


def recursive_dealer(up: int, shoe: tuple[int, ...]) -> list[float]:
    """P(17..21, bust and no dealer BJ) by recursion over the dealer's draws (the baseline)."""

    @cache
    def go(left: tuple[int, ...], hard: int, ace: bool, first: bool) -> tuple[float, ...]:
        total, soft = hand_total(hard, ace)
        if total > 21:
            return (0, 0, 0, 0, 0, 1)
        if not first and not must_draw(total, soft, hits_soft_17=False):
            out = [0.0] * 6
            out[total - 17] = 1.0
            return tuple(out)
        n = sum(left)
        acc = [0.0] * 6
        for r, c in enumerate(left):
            if not c or (first and {up, r} == {0, 9}):
                continue
            nxt = (*left[:r], c - 1, *left[r + 1 :])
            sub = go(nxt, hard + r + 1, ace or r == 0, False)
            for i in range(6):
                acc[i] += c / n * sub[i]
        return tuple(acc)

    return list(go(shoe, up + 1, up == 0, True))


def dealer_baseline(variant: str, up: int = 1) -> None:
    rules = get_rules(variant)
    solver_shoes = _shoes_of(variant, up)
    started = time.process_time()
    table = DealerTable(up, hits_soft_17=False, max_count=rules.decks * 52)
    fast = table.outcomes(np.array(solver_shoes, dtype=np.int64))
    matrix = time.process_time() - started
    started = time.process_time()
    slow = [recursive_dealer(up, tuple(s)) for s in solver_shoes]
    baseline = time.process_time() - started
    diff = float(np.max(np.abs(fast - np.array(slow))))
    print(
        f"  dealer, upcard {up + 1}, {len(solver_shoes)} shoes: matrix {matrix:.2f} s, "
        f"recursion {baseline:.2f} s (baseline), ratio {baseline / matrix:.0f}x, "
        f"largest difference {diff:.1e}"
    )


def _shoes_of(variant: str, up: int) -> list[list[int]]:
    rules = get_rules(variant)
    full = tuple(rules.decks * (16 if r == 9 else 4) for r in range(10))
    solver = _UpcardSolver.__new__(_UpcardSolver)
    solver.shoe = tuple(c - (1 if r == up else 0) for r, c in enumerate(full))
    removals = sorted(_UpcardSolver._needed_removals(solver))
    return [[s - r for s, r in zip(solver.shoe, rem, strict=True)] for rem in removals]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=list(CURRENT), default=None)
    parser.add_argument("--what-if", action="store_true", help="include the what-if figures")
    args = parser.parse_args()
    variants = [args.variant] if args.variant else list(CURRENT)
    for variant in variants:
        rules = get_rules(variant)
        started = time.process_time()
        main_game = analyse(rules)
        main_cpu = time.process_time() - started
        started = time.process_time()
        compute(rules, what_if=args.what_if)
        total = time.process_time() - started
        print(
            f"{variant}: main game {main_cpu:.1f} s (RTP {main_game.rtp:.6f}), full report "
            f"{total:.1f} s CPU, {total / BUDGET:.0%} of the {BUDGET:.0f} s budget"
        )
        dealer_baseline(variant)


if __name__ == "__main__":
    main()

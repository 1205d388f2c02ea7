"""SCORE-1/SCORE-2 (``domain.scoring.score``) against a plain reading of the rules, and the
bound of the cache of its results."""

from __future__ import annotations

import itertools

import pytest

import domain.scoring
from domain.cards import RANKS, Card
from domain.scoring import Score, score


def _reference(ranks: tuple[str, ...]) -> tuple[int, bool, int, bool]:
    """Every ace 1, then one ace 11 if that does not pass 21 (SCORE-1); over 21 busts."""
    hard = sum(1 if r == "A" else 10 if r in ("J", "Q", "K") else int(r) for r in ranks)
    if "A" in ranks and hard + 10 <= 21:
        return hard + 10, True, hard, False
    return hard, False, hard, hard > 21


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_score_of_every_hand_of_up_to_five_cards(n: int) -> None:
    for ranks in itertools.combinations_with_replacement(RANKS, n):
        cards = [Card(r, "SHDC"[i % 4]) for i, r in enumerate(ranks)]
        total, soft, hard, bust = _reference(ranks)
        for given in (cards, tuple(cards), list(reversed(cards))):
            assert score(given) == Score(total, soft, hard, bust, n), ranks


def test_card_values_are_card_2() -> None:
    assert {r: Card(r, "S").value for r in RANKS} == {
        **{str(v): v for v in range(2, 11)},
        "A": 1,
        "J": 10,
        "Q": 10,
        "K": 10,
    }


def test_scores_are_shared_and_their_cache_is_bounded() -> None:
    cache = domain.scoring._scored
    cache.cache_clear()
    a = score([Card("8", "H"), Card("9", "C")])
    b = score([Card("10", "D"), Card("7", "S")])
    assert a is b  # immutable, one per (hard total, ace, count)
    for count in range(1, 40):
        for hard in range(count, 11 * count):
            cache(hard, False, count)
    info = cache.cache_info()
    assert info.maxsize == domain.scoring.SCORE_CACHE_SIZE
    assert info.currsize == domain.scoring.SCORE_CACHE_SIZE
    assert score([Card("A", "H"), Card("6", "C")]) == Score(17, True, 7, False, 2)

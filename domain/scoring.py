"""Hand scoring (SCORE-1..4) as pure functions.

>>> from domain.cards import parse_cards
>>> score(parse_cards(["AS", "6H"]))
Score(total=17, soft=True, hard_total=7, bust=False, count=2)
>>> score(parse_cards(["AS", "6H", "9C"])).total
16
>>> is_blackjack(parse_cards(["AS", "KD"]), split=False)
True
>>> is_blackjack(parse_cards(["AS", "KD"]), split=True)
False
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from domain.cards import CARD_VALUES, Card

#: Scores kept, one per (hard total, holds an ace, number of cards): fewer than 1,500 such
#: keys occur in blackjack (a hand stops at its first bust), so the cache never evicts in play.
SCORE_CACHE_SIZE: Final = 2048


@dataclass(frozen=True, slots=True)
class Score:
    total: int  # SCORE-1 best total
    soft: bool  # an ace counts 11 in ``total``
    hard_total: int  # every ace counting 1
    bust: bool  # SCORE-2
    count: int

    def describe(self) -> str:
        if self.bust:
            return f"{self.total} bust"
        return f"soft {self.total}" if self.soft else str(self.total)


def score(cards: Sequence[Card]) -> Score:
    """SCORE-1/SCORE-2: best total, softness and bust."""
    hard = 0
    ace = False
    for c in cards:  # one loop, no list of ranks: the core scores a hand at every card
        rank = c.rank
        hard += CARD_VALUES[rank]
        if rank == "A":
            ace = True
    return _scored(hard, ace, len(cards))


@functools.lru_cache(maxsize=SCORE_CACHE_SIZE)
def _scored(hard: int, has_ace: bool, count: int) -> Score:
    """The score of ``count`` cards of hard total ``hard`` (every ace 1): a ``Score`` is
    immutable, so equal hands share one (making one cost more than scoring the cards; the
    game core scores a boundless round's hands hundreds of thousands of times)."""
    if has_ace and hard + 10 <= 21:
        return Score(hard + 10, True, hard, False, count)
    return Score(hard, False, hard, hard > 21, count)


def is_blackjack(cards: Sequence[Card], *, split: bool) -> bool:
    """SCORE-3/SCORE-4: an ace and a ten-value as the first two cards of an unsplit hand
    (of two cards, one an ace and the other a ten-value: no card is both)."""
    if split or len(cards) != 2:
        return False
    first, second = cards[0].rank, cards[1].rank
    if first == "A":
        return CARD_VALUES[second] == 10
    return second == "A" and CARD_VALUES[first] == 10


def auto_play_total(cards: Sequence[Card]) -> int:
    """AUTO-1's reading of a total: aces count 11 unless that busts (same as SCORE-1)."""
    return score(cards).total

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

from collections.abc import Sequence
from dataclasses import dataclass

from domain.cards import Card


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
    hard = sum(c.value for c in cards)
    has_ace = any(c.is_ace for c in cards)
    if has_ace and hard + 10 <= 21:
        return Score(hard + 10, True, hard, False, len(cards))
    return Score(hard, False, hard, hard > 21, len(cards))


def is_blackjack(cards: Sequence[Card], *, split: bool) -> bool:
    """SCORE-3/SCORE-4: an ace and a ten-value as the first two cards of an unsplit hand."""
    return (
        not split
        and len(cards) == 2
        and any(c.is_ace for c in cards)
        and any(c.is_ten_value for c in cards)
    )


def auto_play_total(cards: Sequence[Card]) -> int:
    """AUTO-1's reading of a total: aces count 11 unless that busts (same as SCORE-1)."""
    return score(cards).total

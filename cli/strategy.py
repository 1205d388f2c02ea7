"""The simulation bots' brains: basic strategy for decisions and a deterministic bot stream.

This module owns two pure things the simulator (``cli/simulate.py``) needs:

* :func:`choose`: standard multi-deck basic strategy for a dealer who stands on soft 17
  (DEALER-1), doubles after splits allowed, picking **only among the options the round
  offers**. It never takes insurance and declines even money. european (no hole card, D8: a
  dealer blackjack takes doubles too) does not double 11 against a ten or an ace.
* :class:`BotStream`: a reproducible stream of choices (bet sizes, which bot takes a side bet,
  who lets the decision timer run out) and of the simulated shoes' seeds, seeded by a text
  label. It is a SHA-256 counter, not the ``random`` module (banned in this project: card order
  comes from ``domain.shuffle``, here from a seed this stream gives it) and not ``secrets``:
  the same label always gives the same bots and the same cards.

>>> choose(["hit", "stand", "double", "split"], ["8S", "8D"], "10H", "deluxe")
'split'
>>> choose(["hit", "stand"], ["10S", "6D"], "5H", "deluxe")
'stand'
>>> choose(["insurance", "no_insurance"], ["10S", "6D"], "AH", "deluxe")
'no_insurance'
>>> BotStream("demo").below(6) == BotStream("demo").below(6)
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from decimal import Decimal
from typing import TypeVar

from domain.cards import Card
from domain.scoring import score

T = TypeVar("T")

HIT, STAND, DOUBLE, SPLIT, SURRENDER = "hit", "stand", "double", "split", "surrender"
INSURANCE, NO_INSURANCE, EVEN_MONEY = "insurance", "no_insurance", "even_money"
NO_HOLE_CARD_VARIANTS = frozenset({"european"})

#: Chip values the bots bet with (table minimum is 1.00 on every published rule set).
CHIPS: tuple[Decimal, ...] = tuple(Decimal(v) for v in ("1.00", "2.00", "5.00", "10.00", "25.00"))


# ----------------------------------------------------------------------------- basic strategy


def _up_value(dealer_up: str) -> int:
    """The dealer's upcard as 2..11 (ace = 11)."""
    card = Card.parse(dealer_up)
    return 11 if card.is_ace else card.value


def _pair_action(value: int, up: int) -> str | None:
    """Split (``"split"``) or not (None) for a pair of ``value`` (ace = 1) vs ``up`` (2..11)."""
    if value in (1, 8):
        return SPLIT  # aces and eights always
    if value in (10, 5):
        return None  # never tens or fives
    if value == 9:
        return SPLIT if up in (2, 3, 4, 5, 6, 8, 9) else None
    if value in (7, 3, 2):
        return SPLIT if up <= 7 else None
    if value == 6:
        return SPLIT if up <= 6 else None
    if value == 4:
        return SPLIT if up in (5, 6) else None
    return None


def _soft_action(total: int, up: int) -> tuple[str, str]:
    """(preferred, fallback when the preferred is not open) for a soft total."""
    if total >= 19:
        return STAND, STAND
    if total == 18:
        if 3 <= up <= 6:
            return DOUBLE, STAND
        return (STAND, STAND) if up in (2, 7, 8) else (HIT, HIT)
    if total == 17:
        return (DOUBLE, HIT) if 3 <= up <= 6 else (HIT, HIT)
    if total in (15, 16):
        return (DOUBLE, HIT) if 4 <= up <= 6 else (HIT, HIT)
    if total in (13, 14):
        return (DOUBLE, HIT) if up in (5, 6) else (HIT, HIT)
    return HIT, HIT  # soft 12 (A+A after a split that may hit)


def _hard_action(total: int, up: int, *, no_hole_card: bool) -> tuple[str, str]:
    """(preferred, fallback when the preferred is not open) for a hard total."""
    if total >= 17:
        return STAND, STAND
    if total == 16 and up in (9, 10, 11):
        return SURRENDER, HIT
    if total == 15 and up == 10:
        return SURRENDER, HIT
    if 13 <= total <= 16:
        return (STAND, STAND) if up <= 6 else (HIT, HIT)
    if total == 12:
        return (STAND, STAND) if 4 <= up <= 6 else (HIT, HIT)
    if total == 11:
        if no_hole_card and up in (10, 11):
            return HIT, HIT
        return (DOUBLE, HIT) if up <= 10 else (HIT, HIT)
    if total == 10:
        return (DOUBLE, HIT) if up <= 9 else (HIT, HIT)
    if total == 9:
        return (DOUBLE, HIT) if 3 <= up <= 6 else (HIT, HIT)
    return HIT, HIT


def choose(options: Sequence[str], cards: Sequence[str], dealer_up: str, variant: str) -> str:
    """The basic-strategy decision among ``options`` for a hand of ``cards`` (codes) against the
    dealer's upcard ``dealer_up``. Always returns one of ``options``.

    Insurance window: never insurance, never even money (``no_insurance``).

    >>> choose(["hit", "stand", "double"], ["6S", "5D"], "6H", "multihand")
    'double'
    >>> choose(["hit", "stand"], ["6S", "5D"], "6H", "multihand")
    'hit'
    >>> choose(["hit", "stand", "surrender"], ["10S", "6D"], "9H", "deluxe")
    'surrender'
    >>> choose(["hit", "stand", "double", "split"], ["10S", "KD"], "6H", "deluxe")
    'stand'
    """
    if not options:
        raise ValueError("no option is open: nothing to choose")
    opts = list(options)
    if NO_INSURANCE in opts:
        return NO_INSURANCE
    if EVEN_MONEY in opts or INSURANCE in opts:
        # A window without a plain decline does not exist in the rules; pick anything but
        # insurance if we can.
        others = [o for o in opts if o != INSURANCE]
        return others[0] if others else opts[0]
    hand = [Card.parse(c) for c in cards]
    up = _up_value(dealer_up)
    no_hole_card = variant in NO_HOLE_CARD_VARIANTS
    s = score(hand)
    pair = len(hand) == 2 and hand[0].value == hand[1].value
    if SPLIT in opts and pair and _pair_action(hand[0].value, up) == SPLIT:
        return SPLIT
    if s.soft:
        preferred, fallback = _soft_action(s.total, up)
    else:
        preferred, fallback = _hard_action(s.total, up, no_hole_card=no_hole_card)
    for action in (preferred, fallback):
        if action in opts:
            return action
    # The preferred moves are closed (no hit on split aces, no surrender...): stand if open.
    if STAND in opts:
        return STAND
    return opts[0]


# ----------------------------------------------------------------------------- bot stream


class BotStream:
    """Deterministic choices from a label: ``SHA-256(label / counter)`` read as integers.

    Two streams built with the same label give the same sequence; :meth:`fork` derives an
    independent stream for a sub-purpose (``stream.fork("round", 7)``), so a choice does not
    depend on how many draws happened elsewhere.

    >>> a, b = BotStream("table-1"), BotStream("table-1")
    >>> [a.below(10) for _ in range(5)] == [b.below(10) for _ in range(5)]
    True
    >>> BotStream("x").fork("a", 1).label
    'x/a/1'
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self._counter = 0

    def fork(self, *parts: object) -> BotStream:
        return BotStream("/".join([self.label, *(str(p) for p in parts)]))

    def _word(self) -> int:
        return int.from_bytes(self.seed()[:8], "big")

    def seed(self) -> bytes:
        """32 bytes drawn from the stream: the simulator's RNG shoe seeds (``cli/simulate.py``),
        so a label reproduces the cards as well as the bots.

        >>> BotStream("t").fork("shoe", 1).seed() == BotStream("t").fork("shoe", 1).seed()
        True
        >>> len(BotStream("t").seed()), BotStream("t").seed() == BotStream("u").seed()
        (32, False)
        """
        digest = hashlib.sha256(f"{self.label}#{self._counter}".encode()).digest()
        self._counter += 1
        return digest

    def below(self, n: int) -> int:
        """A uniform integer in [0, n) (rejection sampling: no modulo bias)."""
        if n < 1:
            raise ValueError("n must be 1 or more")
        limit = (2**64 // n) * n
        while True:
            w = self._word()
            if w < limit:
                return w % n

    def between(self, low: int, high: int) -> int:
        """A uniform integer in [low, high]."""
        return low + self.below(high - low + 1)

    def chance(self, per_mille: int) -> bool:
        """True with probability ``per_mille`` / 1000 (integers only: exact and portable)."""
        return self.below(1000) < per_mille

    def pick(self, items: Sequence[T]) -> T:
        if not items:
            raise ValueError("nothing to pick from")
        return items[self.below(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct items in a deterministic order (partial Fisher-Yates)."""
        pool = list(items)
        k = max(0, min(k, len(pool)))
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]


def bet_size(stream: BotStream, *, minimum: Decimal, maximum: Decimal) -> Decimal:
    """A bot's main stake: mostly small chips, sometimes a bigger one, within the limits."""
    roll = stream.below(100)
    if roll < 40:
        chip = CHIPS[0]
    elif roll < 70:
        chip = CHIPS[1]
    elif roll < 88:
        chip = CHIPS[2]
    elif roll < 97:
        chip = CHIPS[3]
    else:
        chip = CHIPS[4]
    return min(max(chip, minimum), maximum)


def side_bet_size(stream: BotStream, *, minimum: Decimal, maximum: Decimal) -> Decimal:
    """A side-bet stake: one unit or two, within the limits."""
    stake = Decimal("1.00") if stream.below(3) else Decimal("2.00")
    return min(max(stake, minimum), maximum)


__all__ = ["CHIPS", "BotStream", "bet_size", "choose", "side_bet_size"]

"""Cards and their short codes (CARD-1, CARD-2).

A card is written as rank then suit: ``AS`` (ace of spades), ``10H``, ``QD``, ``7C``. Ranks are
``A 2 3 4 5 6 7 8 9 10 J Q K``; suits ``D C H S`` (diamonds, clubs, hearts, spades). Anything
else (lower case, ``T`` for ten, spaces) is refused with :class:`domain.errors.InvalidCard`:
a recorded card has one spelling (:data:`CARD_PATTERN`).

>>> Card.parse("10H").value
10
>>> Card.parse("AS").code
'AS'
>>> Card.parse("as")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
domain.errors.InvalidCard: card code 'as' is not a canonical code: ...
>>> Card.parse("QD").is_ten_value
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from domain.errors import InvalidCard

RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: Final = ("D", "C", "H", "S")
RED_SUITS: Final = frozenset({"D", "H"})
_RANK_ORDER: Final = {rank: i + 1 for i, rank in enumerate(RANKS)}  # A=1 ... K=13
#: CARD-2: each rank's hard value (an ace counts 1 here; scoring decides 11).
CARD_VALUES: Final = {rank: min(i + 1, 10) for i, rank in enumerate(RANKS)}
#: The canonical code of a card (as in the OpenAPI document).
CARD_PATTERN: Final = "^(10|[2-9AJQK])[SHDC]$"
CARD_CODE: Final = re.compile(CARD_PATTERN, re.ASCII)


@dataclass(frozen=True, slots=True)
class Card:
    """One playing card. Immutable; compare and hash by rank and suit."""

    rank: str
    suit: str

    @classmethod
    def parse(cls, code: str) -> Card:
        """Parse a short code; raise InvalidCard naming the problem otherwise.

        The 52 canonical codes are looked up (:data:`_BY_CODE`: a card is immutable, so every
        parse of one code may share one ``Card``); anything else goes through the checks."""
        if cls is Card and isinstance(code, str):
            known = _BY_CODE.get(code)
            if known is not None:
                return known
        if not isinstance(code, str):
            raise InvalidCard(f"card code must be a string, got {type(code).__name__}")
        text = code
        if not CARD_CODE.fullmatch(text):
            raise InvalidCard(
                f"card code {code[:20]!r} is not a canonical code: rank A, 2-10, J, Q or K then "
                "suit S, H, D or C, in capitals (CARD-1), e.g. 'AS', '10H'",
                rule="CARD-1",
            )
        if len(text) < 2:
            raise InvalidCard(
                f"card code {code!r} is too short: expected rank then suit, e.g. 'AS'"
            )
        rank, suit = text[:-1], text[-1]
        if rank not in _RANK_ORDER:
            raise InvalidCard(
                f"card code {code!r} has unknown rank {rank!r} (CARD-1: A, 2-10, J, Q, K)"
            )
        if suit not in SUITS:
            raise InvalidCard(f"card code {code!r} has unknown suit {suit!r} (CARD-1: D, C, H, S)")
        return cls(rank, suit)

    @property
    def code(self) -> str:
        return self.rank + self.suit

    def __str__(self) -> str:
        return self.code

    @property
    def value(self) -> int:
        """CARD-2: the card's hard value (ace counts 1 here; scoring decides 11)."""
        return CARD_VALUES[self.rank]

    @property
    def is_ace(self) -> bool:
        return self.rank == "A"

    @property
    def is_ten_value(self) -> bool:
        return self.value == 10

    @property
    def is_red(self) -> bool:
        return self.suit in RED_SUITS

    @property
    def colour(self) -> str:
        return "red" if self.is_red else "black"

    @property
    def order(self) -> int:
        """Rank order with ace low: A=1, 2..10, J=11, Q=12, K=13."""
        return _RANK_ORDER[self.rank]


def parse_cards(codes: Iterable[str]) -> tuple[Card, ...]:
    """Parse many codes; the error names the first bad one."""
    return tuple(Card.parse(c) for c in codes)


def codes(cards: Iterable[Card]) -> list[str]:
    return [c.code for c in cards]


#: The 52 cards of one deck in :func:`full_deck`'s order, made once: a card is immutable, so
#: every deck (and every RNG shoe's starting order, :func:`decks`) may share them.
_DECK: Final[tuple[Card, ...]] = tuple(Card(rank, suit) for suit in SUITS for rank in RANKS)


def full_deck() -> tuple[Card, ...]:
    """One 52-card deck in a fixed, documented order: suits D, C, H, S; ranks A..K."""
    return _DECK


#: Every canonical code's card (CARD-1), what :meth:`Card.parse` returns for it: the core parses
#: the codes of stored payloads again and again (verification re-executes every card).
_BY_CODE: Final[dict[str, Card]] = {c.code: c for c in _DECK}


def decks(n: int) -> tuple[Card, ...]:
    """``n`` decks concatenated in the fixed order of :func:`full_deck`."""
    if n < 1:
        raise ValueError("a shoe needs at least one deck")
    return _DECK * n

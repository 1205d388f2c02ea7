"""Side-bet evaluation: which pattern a side bet's cards make and the ratio it pays.

This module owns the pattern logic and the default paytables of every side bet; it knows
nothing of stakes, wallets, rounds or events. Each evaluator is a pure function of cards and a
paytable and returns a :class:`SideBetOutcome` naming the rule that decided it:

* ``pair``   DLX-PAIR / BDL-PAIR (D11): the first two cards of a hand; mixed, coloured, perfect
  pair, and (deluxe only) suited trips with the dealer's first card.
* ``bust``   BDL-BUST: the dealer busts; pays by the number of cards in the busting hand.
* ``trio``   BDL-TRIO (D12): Lucky Trio on the player's first two cards and the dealer's first
  card; totals 19-21, 6-7-8 and 7-7-7, suited or not.
* ``poker``  BDL-POKER: Poker Trio on the same three cards; flush, straight, three of a kind,
  straight flush, suited trips. Aces high or low, never around the corner.
* ``lucky7`` L7-2 / L7-3 (D14): leading 7s among a box's first three cards.

A paytable maps pattern names to :class:`~domain.money.Ratio` and is frozen
(:class:`types.MappingProxyType`). A pattern missing from a paytable does not pay (that is how
the boundless Pair has no suited trips). When several patterns apply, only the one paying most
is awarded ("solo se otorgará el patrón de mayor valor"); on equal ratios the higher row of the
bet's pattern list wins. Variant rules modules reference the defaults below or build their own
with :func:`make_paytable`, which refuses patterns the bet does not know.

Cards may be given as :class:`~domain.cards.Card` objects or short codes (``"7S"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from domain.cards import Card
from domain.money import Ratio
from domain.scoring import score

CardLike = Card | str
Paytable = Mapping[str, Ratio]

# Pattern names of each bet, lowest row of the operator's table first.
PAIR_PATTERNS: Final = ("mixed_pair", "coloured_pair", "perfect_pair", "suited_trips")
BUST_PATTERNS: Final = (
    "three_cards",
    "four_cards",
    "five_cards",
    "six_cards",
    "seven_cards",
    "eight_or_more_cards",
)
TRIO_PATTERNS: Final = (
    "total_19_20",
    "21_unsuited",
    "21_suited",
    "678_unsuited",
    "777_unsuited",
    "678_suited",
    "777_suited",
)
POKER_PATTERNS: Final = (
    "flush",
    "straight",
    "three_of_a_kind",
    "straight_flush",
    "suited_trips",
)
LUCKY7_PATTERNS: Final = ("one_seven", "two_sevens", "three_sevens")

PATTERNS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "pair": PAIR_PATTERNS,
        "bust": BUST_PATTERNS,
        "trio": TRIO_PATTERNS,
        "poker": POKER_PATTERNS,
        "lucky7": LUCKY7_PATTERNS,
    }
)

_PATTERN_RANK: Final[Mapping[str, Mapping[str, int]]] = MappingProxyType(
    {bet: MappingProxyType({p: i for i, p in enumerate(ps)}) for bet, ps in PATTERNS.items()}
)


def make_paytable(bet: str, entries: Mapping[str, Ratio | str]) -> Paytable:
    """A frozen paytable for ``bet``; ratios may be written ``"30:1"``.

    >>> table = make_paytable("lucky7", {"one_seven": "3:1", "two_sevens": Ratio(50)})
    >>> table["one_seven"], table["two_sevens"]
    (Ratio(numerator=3, denominator=1), Ratio(numerator=50, denominator=1))
    >>> make_paytable("pair", {"royal_pair": "100:1"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: pair paytable names unknown pattern(s) royal_pair; known: mixed_pair, ...
    """
    if bet not in PATTERNS:
        raise ValueError(f"unknown side bet {bet!r}; known: {', '.join(PATTERNS)}")
    known = PATTERNS[bet]
    unknown = sorted(set(entries) - set(known))
    if unknown:
        raise ValueError(
            f"{bet} paytable names unknown pattern(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    frozen: dict[str, Ratio] = {}
    for pattern in known:  # stored in the bet's row order, whatever the input order
        if pattern not in entries:
            continue
        value = entries[pattern]
        ratio = Ratio.parse(value) if isinstance(value, str) else value
        if ratio.numerator <= 0 or ratio.denominator <= 0:
            raise ValueError(f"{bet} paytable ratio for {pattern} must be positive, got {ratio}")
        frozen[pattern] = ratio
    return MappingProxyType(frozen)


# DLX-PAIR
DELUXE_PAIR_PAYTABLE: Final = make_paytable(
    "pair",
    {"mixed_pair": "5:1", "coloured_pair": "10:1", "perfect_pair": "30:1", "suited_trips": "50:1"},
)
# BDL-PAIR (D11): no suited trips row
BOUNDLESS_PAIR_PAYTABLE: Final = make_paytable(
    "pair", {"mixed_pair": "5:1", "coloured_pair": "10:1", "perfect_pair": "30:1"}
)
# BDL-BUST
BUST_BONUS_PAYTABLE: Final = make_paytable(
    "bust",
    {
        "three_cards": "1:1",
        "four_cards": "2:1",
        "five_cards": "9:1",
        "six_cards": "50:1",
        "seven_cards": "100:1",
        "eight_or_more_cards": "250:1",
    },
)
# BDL-TRIO (D12)
LUCKY_TRIO_PAYTABLE: Final = make_paytable(
    "trio",
    {
        "total_19_20": "2:1",
        "21_unsuited": "3:1",
        "21_suited": "10:1",
        "678_unsuited": "30:1",
        "777_unsuited": "50:1",
        "678_suited": "100:1",
        "777_suited": "200:1",
    },
)
# BDL-POKER
POKER_TRIO_PAYTABLE: Final = make_paytable(
    "poker",
    {
        "flush": "5:1",
        "straight": "10:1",
        "three_of_a_kind": "30:1",
        "straight_flush": "40:1",
        "suited_trips": "100:1",
    },
)
# L7-4 / D14: the unsuited rows of the published Super Sevens table
LUCKY7_DEFAULT_PAYTABLE: Final = make_paytable(
    "lucky7", {"one_seven": "3:1", "two_sevens": "50:1", "three_sevens": "500:1"}
)


@dataclass(frozen=True, slots=True)
class SideBetOutcome:
    """What one side bet's cards made: the pattern awarded and its ratio, or a loss.

    ``ratio is None`` means the bet loses (``pattern`` is then ``None`` too). ``rule`` is the
    rule ID that decided; ``cards`` the codes evaluated, in the order given.
    """

    bet: str
    pattern: str | None
    ratio: Ratio | None
    rule: str
    cards: tuple[str, ...]

    @property
    def wins(self) -> bool:
        return self.ratio is not None

    def as_payload(self) -> dict[str, object]:
        """Plain-JSON form for an event payload (ratio as ``"30:1"``).

        >>> outcome = evaluate_lucky7(["7S", "9H"], dealer_blackjack=False,
        ...                           paytable=LUCKY7_DEFAULT_PAYTABLE)
        >>> payload = outcome.as_payload()
        >>> payload["pattern"], payload["ratio"], payload["rule"], payload["cards"]
        ('one_seven', '3:1', 'L7-2', ['7S', '9H'])
        """
        return {
            "bet": self.bet,
            "pattern": self.pattern,
            "ratio": None if self.ratio is None else str(self.ratio),
            "rule": self.rule,
            "cards": list(self.cards),
        }


# --------------------------------------------------------------------------------- helpers


def _card(card: CardLike) -> Card:
    return card if isinstance(card, Card) else Card.parse(card)


def _check_paytable(bet: str, table: Paytable) -> None:
    known = _PATTERN_RANK[bet]
    for pattern in table:
        if pattern not in known:
            raise ValueError(f"{bet} paytable names unknown pattern {pattern!r}")


def _best(bet: str, applicable: Iterable[str], table: Paytable) -> tuple[str, Ratio] | None:
    """The applicable pattern paying most under ``table``; higher row on equal ratios."""
    rank = _PATTERN_RANK[bet]
    best: tuple[str, Ratio] | None = None
    for pattern in applicable:
        ratio = table.get(pattern)
        if ratio is None:
            continue
        if best is None:
            best = (pattern, ratio)
            continue
        held = best[1]
        more = ratio.numerator * held.denominator - held.numerator * ratio.denominator
        if more > 0 or (more == 0 and rank[pattern] > rank[best[0]]):
            best = (pattern, ratio)
    return best


def _outcome(
    bet: str, rule: str, cards: Sequence[Card], applicable: Iterable[str], table: Paytable
) -> SideBetOutcome:
    found = _best(bet, applicable, table)
    codes = tuple(c.code for c in cards)
    if found is None:
        return SideBetOutcome(bet, None, None, rule, codes)
    return SideBetOutcome(bet, found[0], found[1], rule, codes)


def all_one_suit(cards: Iterable[CardLike]) -> bool:
    """True when every card has the same suit (the sheets' "mismo palo").

    >>> all_one_suit(["6H", "7H", "8H"]), all_one_suit(["6H", "7H", "8D"])
    (True, False)
    """
    return _one_suit([_card(c) for c in cards])


def _one_suit(cards: Sequence[Card]) -> bool:
    return len({c.suit for c in cards}) == 1


def is_poker_straight(cards: Iterable[CardLike]) -> bool:
    """BDL-POKER: three or more distinct ranks in sequence, ace high or low, never around.

    J, Q, K are 11, 12, 13 (``Card.order``); 10, J, Q, K are different ranks here.

    >>> is_poker_straight(["AS", "2D", "3H"]), is_poker_straight(["QS", "KD", "AH"])
    (True, True)
    >>> is_poker_straight(["KS", "AD", "2H"]), is_poker_straight(["10S", "JD", "QH"])
    (False, True)
    >>> is_poker_straight(["10S", "KD", "QH"]), is_poker_straight(["5S", "5D", "6H"])
    (False, False)
    """
    return _in_sequence([_card(c) for c in cards])


def _in_sequence(cards: Sequence[Card]) -> bool:
    orders = sorted(c.order for c in cards)
    if len(set(orders)) != len(orders) or len(orders) < 3:
        return False
    if orders[-1] - orders[0] == len(orders) - 1:
        return True  # ace low (A=1) or no ace
    if orders[0] == 1:  # ace high: A counts 14
        high = [*orders[1:], 14]
        return high[-1] - high[0] == len(high) - 1
    return False


def leading_sevens(cards: Iterable[CardLike]) -> int:
    """L7-2: how many 7s the box's cards start with, in the order received.

    >>> leading_sevens(["7S", "7D", "KH"]), leading_sevens(["7S", "KD", "7H"])
    (2, 1)
    >>> leading_sevens(["KS", "7D", "7H"])
    0
    """
    count = 0
    for card in cards:
        if _card(card).rank != "7":
            break
        count += 1
    return count


# ------------------------------------------------------------------------------- evaluators


def evaluate_pair(
    first: CardLike,
    second: CardLike,
    dealer_first: CardLike | None = None,
    *,
    paytable: Paytable,
    rule: str,
) -> SideBetOutcome:
    """DLX-PAIR / BDL-PAIR (D11) on a hand's first two cards; ``rule`` names which.

    Every pattern needs the same rank (J+Q is no pair). mixed: different colour; coloured: same
    colour (red D,H; black C,S), different suit; perfect: same suit; suited trips (only when
    ``paytable`` has the row, deluxe): a perfect pair whose rank and suit the dealer's first
    card also has. ``dealer_first`` is then required and is part of the evaluated cards.

    >>> evaluate_pair("8H", "8D", paytable=BOUNDLESS_PAIR_PAYTABLE, rule="BDL-PAIR").pattern
    'coloured_pair'
    >>> evaluate_pair("JH", "QH", "QH", paytable=DELUXE_PAIR_PAYTABLE, rule="DLX-PAIR").wins
    False
    """
    _check_paytable("pair", paytable)
    a, b = _card(first), _card(second)
    cards = [a, b]
    applicable: list[str] = []
    if a.rank == b.rank:
        if a.suit == b.suit:
            applicable.append("perfect_pair")
        elif a.is_red == b.is_red:
            applicable.append("coloured_pair")
        else:
            applicable.append("mixed_pair")
    if "suited_trips" in paytable:
        if dealer_first is None:
            raise ValueError(f"{rule}: suited trips needs the dealer's first card")
        d = _card(dealer_first)
        cards.append(d)
        if a == b == d:
            applicable.append("suited_trips")
    return _outcome("pair", rule, cards, applicable, paytable)


def evaluate_bust_bonus(dealer_cards: Sequence[CardLike], *, paytable: Paytable) -> SideBetOutcome:
    """BDL-BUST: pays only when the dealer's hand busts (SCORE-1/2), by its number of cards.

    A two-card hand cannot bust; eight or more cards pay as eight.

    >>> evaluate_bust_bonus(["10S", "6D", "KH"], paytable=BUST_BONUS_PAYTABLE).pattern
    'three_cards'
    >>> evaluate_bust_bonus(["10S", "7D"], paytable=BUST_BONUS_PAYTABLE).wins
    False
    """
    _check_paytable("bust", paytable)
    cards = [_card(c) for c in dealer_cards]
    applicable: list[str] = []
    if score(cards).bust:
        applicable.append(BUST_PATTERNS[min(len(cards), 8) - 3])
    return _outcome("bust", "BDL-BUST", cards, applicable, paytable)


def evaluate_lucky_trio(
    p1: CardLike, p2: CardLike, d1: CardLike, *, paytable: Paytable
) -> SideBetOutcome:
    """BDL-TRIO (D12) on the player's first two cards and the dealer's first card.

    Totals are SCORE-1 totals of the three cards (an ace counts 11 unless that busts);
    "suited" means all one suit, "unsuited" not all one suit. 6-7-8 and 7-7-7 total 21 too:
    only the row paying most is awarded.

    >>> evaluate_lucky_trio("AS", "8D", "KH", paytable=LUCKY_TRIO_PAYTABLE).pattern
    'total_19_20'
    >>> evaluate_lucky_trio("6S", "8S", "7S", paytable=LUCKY_TRIO_PAYTABLE).pattern
    '678_suited'
    """
    _check_paytable("trio", paytable)
    cards = [_card(p1), _card(p2), _card(d1)]
    suited = _one_suit(cards)
    total = score(cards).total
    ranks = sorted(c.rank for c in cards)
    applicable: list[str] = []
    if total in (19, 20):
        applicable.append("total_19_20")
    elif total == 21:
        applicable.append("21_suited" if suited else "21_unsuited")
        if ranks == ["6", "7", "8"]:
            applicable.append("678_suited" if suited else "678_unsuited")
        elif ranks == ["7", "7", "7"]:
            applicable.append("777_suited" if suited else "777_unsuited")
    return _outcome("trio", "BDL-TRIO", cards, applicable, paytable)


def evaluate_poker_trio(
    p1: CardLike, p2: CardLike, d1: CardLike, *, paytable: Paytable
) -> SideBetOutcome:
    """BDL-POKER on the player's first two cards and the dealer's first card.

    flush: all one suit; straight: three ranks in sequence (:func:`is_poker_straight`), not all
    one suit; three of a kind: one rank, not all one suit; straight flush; suited trips: one
    rank and one suit. Ranks, not values: 10-J-Q is a straight and 10-K-K is no trips.

    >>> evaluate_poker_trio("QS", "AD", "KH", paytable=POKER_TRIO_PAYTABLE).pattern
    'straight'
    >>> evaluate_poker_trio("KS", "AS", "2S", paytable=POKER_TRIO_PAYTABLE).pattern
    'flush'
    """
    _check_paytable("poker", paytable)
    cards = [_card(p1), _card(p2), _card(d1)]
    suited = _one_suit(cards)
    straight = _in_sequence(cards)
    trips = cards[0].rank == cards[1].rank == cards[2].rank
    applicable: list[str] = []
    if suited:
        applicable.append("flush")
        if straight:
            applicable.append("straight_flush")
        if trips:
            applicable.append("suited_trips")
    elif straight:
        applicable.append("straight")
    elif trips:
        applicable.append("three_of_a_kind")
    return _outcome("poker", "BDL-POKER", cards, applicable, paytable)


def evaluate_lucky7(
    box_cards: Sequence[CardLike], *, dealer_blackjack: bool, paytable: Paytable
) -> SideBetOutcome:
    """L7-2 / L7-3 on a box's cards in the order received (first, second, third card).

    Counts the 7s the box starts with: a first card that is not a 7 loses whatever follows,
    and 7, x, 7 is one seven. Four or more pay as three. The caller passes the box's first
    cards (after a split the third is the first card drawn to the first split hand).

    L7-3: a box with only two cards (the dealer has BJ, or the box took no third card) is paid
    on those two; when that left two 7s without a third card the outcome cites L7-3. With
    ``dealer_blackjack`` the box has no third card: passing one is refused.

    >>> evaluate_lucky7(["7S", "7D"], dealer_blackjack=True,
    ...                 paytable=LUCKY7_DEFAULT_PAYTABLE).rule
    'L7-3'
    """
    _check_paytable("lucky7", paytable)
    cards = [_card(c) for c in box_cards]
    if not cards:
        raise ValueError("L7-2: a Lucky 7 bet is evaluated on at least the box's first card")
    if dealer_blackjack and len(cards) > 2:
        raise ValueError("L7-3: when the dealer has BJ the box gets no third card")
    sevens = leading_sevens(cards)
    applicable = [LUCKY7_PATTERNS[min(sevens, 3) - 1]] if sevens else []
    rule = "L7-3" if sevens == 2 and len(cards) == 2 else "L7-2"
    return _outcome("lucky7", rule, cards, applicable, paytable)

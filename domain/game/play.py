"""Pure game functions: what a hand may do, when the dealer draws, how a main hand settles.

Everything here is a pure function of cards, rules and amounts, so it can be tested
exhaustively and re-run by verification. Both kinds of round decide with these (``domain.game``).

>>> from domain.cards import parse_cards
>>> dealer_must_draw(parse_cards(["AS", "6H"]))  # DEALER-1: soft 17 stands
False
>>> dealer_must_draw(parse_cards(["10S", "6H"]))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from domain.cards import Card
from domain.game.state import fast_init
from domain.money import Ratio
from domain.rules.base import Rules
from domain.scoring import Score, is_blackjack, score

HIT, STAND, DOUBLE, SPLIT, SURRENDER = "hit", "stand", "double", "split", "surrender"
INSURANCE, NO_INSURANCE, EVEN_MONEY = "insurance", "no_insurance", "even_money"
PLAY_ACTIONS = (HIT, STAND, DOUBLE, SPLIT, SURRENDER)
WINDOW_ACTIONS = (INSURANCE, NO_INSURANCE, EVEN_MONEY)
#: The rule a decision event cites for its action (a stand cites none).
ACTION_RULES = {
    DOUBLE: "DBL-1",
    SPLIT: "SPLIT-1",
    SURRENDER: "SURR-1",
    INSURANCE: "INS-1",
    EVEN_MONEY: "EVEN-1",
    HIT: "HAND-1",
}


@fast_init
@dataclass(frozen=True, slots=True)
class HandFacts:
    """What the rules need to know about one player hand.

    ``scored``: the cards' score when the caller holds it already (a ``Hand`` keeps its own,
    derived from its cards, and passes it), so the rules read it instead of scoring the cards
    again; :attr:`score` is ``score(cards)`` either way.
    """

    cards: tuple[Card, ...]
    is_split: bool = False
    split_aces: bool = False
    actions_taken: int = 0  # decisions already applied to this hand (hit, double...)
    scored: Score | None = field(default=None, compare=False, repr=False)

    @property
    def score(self) -> Score:
        """SCORE-1/SCORE-2 of the cards."""
        s = self.scored
        return score(self.cards) if s is None else s

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, split=self.is_split)


class PlayedHand(Protocol):
    """What HAND-1 reads of a hand: a :class:`HandFacts`, or a ``domain.game.hands.Hand``
    itself (which keeps its score), read without building its facts."""

    @property
    def cards(self) -> tuple[Card, ...]: ...

    @property
    def split_aces(self) -> bool: ...

    @property
    def score(self) -> Score: ...

    @property
    def blackjack(self) -> bool: ...


def upcard(dealer: Sequence[Card], rules: Rules) -> Card | None:
    """The dealer's face-up card (lucky7: the second card; others: the first)."""
    i = rules.upcard_index
    return dealer[i] if len(dealer) > i else None


def can_double(hand: HandFacts, rules: Rules) -> bool:
    """DBL-1 and the variant's double row (D13 for european)."""
    if len(hand.cards) != 2 or hand.actions_taken:
        return False
    if hand.is_split and not rules.double_after_split:
        return False
    if hand.split_aces and not rules.double_split_aces:
        return False
    if hand.blackjack:
        return False
    if rules.double == "hard_9_11":
        s = hand.score
        return not s.soft and 9 <= s.total <= 11
    return True


def can_split(hand: HandFacts, rules: Rules) -> bool:
    """SPLIT-1/SPLIT-2: a pair of equal value, once; european never 4s, 5s or ten-values."""
    if len(hand.cards) != 2 or hand.is_split or hand.actions_taken:
        return False
    a, b = hand.cards
    if a.value != b.value:
        return False
    return a.value not in rules.split_forbidden_values


def can_surrender(hand: HandFacts, dealer: Sequence[Card], rules: Rules) -> bool:
    """SURR-1 plus the variant's condition on the dealer's card."""
    if rules.surrender == "none" or hand.is_split or hand.actions_taken or len(hand.cards) != 2:
        return False
    up = upcard(dealer, rules)
    if up is None:
        return False
    if rules.surrender == "not_vs_ace_or_ten":
        return not (up.is_ace or up.is_ten_value)
    # not_vs_ace_no_bj (european)
    return not up.is_ace and not hand.blackjack


def can_hit(hand: HandFacts, rules: Rules) -> bool:
    if hand.split_aces and rules.split_aces == "one_card":
        return False
    return hand.score.total < 21


def play_options(hand: HandFacts, dealer: Sequence[Card], rules: Rules) -> list[str]:
    """The decisions open to a hand whose turn it is, in a stable order."""
    options = []
    if can_hit(hand, rules):
        options.append(HIT)
    options.append(STAND)
    if can_double(hand, rules):
        options.append(DOUBLE)
    if can_split(hand, rules):
        options.append(SPLIT)
    if can_surrender(hand, dealer, rules):
        options.append(SURRENDER)
    return options


def window_options(hand: HandFacts, rules: Rules) -> list[str]:
    """INS-1 / EVEN-1 options for a hand while the insurance window is open."""
    options = []
    if hand.blackjack:
        if rules.even_money:
            options.append(EVEN_MONEY)
        if rules.insurance_with_blackjack:
            options.append(INSURANCE)
    elif rules.insurance:
        options.append(INSURANCE)
    options.append(NO_INSURANCE)
    return options


def stands_automatically(hand: PlayedHand, rules: Rules, *, doubled: bool) -> str | None:
    """HAND-1: why the hand stands on its own now, or None."""
    s = hand.score
    if s.bust:
        return "bust"
    if s.total == 21:
        return "blackjack" if hand.blackjack else "21"
    if doubled and len(hand.cards) >= 3:
        return "double"
    if hand.split_aces and rules.split_aces == "one_card" and len(hand.cards) >= 2:
        return "split_ace"
    return None


def auto_play_action(cards: Sequence[Card]) -> str:
    """AUTO-1: hit while the total is 11 or less (aces 11 unless that busts), then stand."""
    return HIT if score(cards).total <= 11 else STAND


def funds_fallback(cards: Sequence[Card]) -> str:
    """FUNDS-2: a split (boundless: or double) without balance hits at 11 or less, else stands."""
    return HIT if score(cards).total <= 11 else STAND


def dealer_must_draw(dealer: Sequence[Card], *, hits_soft_17: bool = False) -> bool:
    """DEALER-1: hit on 16 or less, stand on every 17 or more (soft 17 included); with the
    variant setting ``dealer_hits_soft_17`` (H17) a soft 17 is hit too.

    >>> dealer_must_draw(parse_cards(["AS", "6H"]), hits_soft_17=True)
    True
    """
    s = score(dealer)
    return s.total < 17 or (hits_soft_17 and s.total == 17 and s.soft)


@fast_init
@dataclass(frozen=True, slots=True)
class MainOutcome:
    result: str  # "blackjack" | "win" | "push" | "lose" | "surrender" | "refund"
    ratio: Ratio | None  # winnings ratio on the stake; None when the stake is lost
    rule: str

    @property
    def returns_stake(self) -> bool:
        return self.result in ("blackjack", "win", "push", "refund")


WIN = Ratio(1, 1)
PUSH = Ratio(0, 1)


def main_outcome(
    hand: HandFacts,
    *,
    surrendered: bool,
    dealer: Sequence[Card],
    dealer_blackjack: bool,
    rules: Rules,
    dealer_score: Score | None = None,
) -> MainOutcome:
    """OUT-1..4, SCORE-3/4, SURR-1 for one player hand against the dealer's final hand
    (``dealer_score``: ``score(dealer)`` when the caller holds it, settling many hands against
    one dealer's hand)."""
    if surrendered:
        return MainOutcome("surrender", None, "SURR-1")
    player = hand.score
    if hand.blackjack:
        if dealer_blackjack:
            return MainOutcome("push", PUSH, "OUT-1")
        return MainOutcome("blackjack", rules.blackjack_pays, "OUT-1")
    if player.bust:
        return MainOutcome("lose", None, "OUT-3")
    if dealer_blackjack:
        return MainOutcome("lose", None, "OUT-1")
    d = score(dealer) if dealer_score is None else dealer_score
    if d.bust:
        return MainOutcome("win", WIN, "OUT-2")
    if player.total > d.total:
        return MainOutcome("win", WIN, "OUT-2")
    if player.total < d.total:
        return MainOutcome("lose", None, "OUT-3")
    return MainOutcome("push", PUSH, "OUT-4")

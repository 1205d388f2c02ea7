"""Player hands: their state, their transitions, and the play no decision is needed for.

A :class:`Hand` is immutable; every transition returns a new one (or a new tuple of hands in
play order). The same transitions serve every kind of round: a classic round keeps all its
seats' hands in one tuple, a boundless participation keeps one player's (the order of a tuple
is the play order: SPLIT-1, first hand first, and seat/box order in a classic round).

:func:`play_automatically` decides what happens to the due hand without any decision: HAND-1
(a hand stands at 21, after a double's card, after a split ace's card), SCORE-2 (a bust stands)
and AUTO-1 (a hand the system plays hits at 11 or less, else stands).

>>> from domain.cards import parse_cards
>>> h = Hand("1", "ana", "1", parse_cards(["8H", "8D"]))
>>> [x.id for x in split((h,), "1", ("1.1", "1.2"), split_aces="one_card")]
['1.1', '1.2']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from domain.cards import Card
from domain.game import play
from domain.game.facts import Decision
from domain.game.state import fast_init, replace
from domain.rules.base import Rules
from domain.scoring import Score, is_blackjack, score

Hands = tuple["Hand", ...]


@fast_init
@dataclass(frozen=True, slots=True)
class Hand:
    """One player hand (state only; decided by the core, rebuilt from events)."""

    id: str
    player: str
    spot: str  # the seat or box (a classic round); the player (boundless)
    cards: tuple[Card, ...] = ()
    is_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    surrendered: bool = False
    finished: bool = False
    finish_reason: str | None = None
    actions: int = 0  # decisions applied to this hand (hit, double...)
    owed: bool = False  # the hand is owed its next card
    owed_rule: str = "PHASE-4"  # the rule that made it owed (the card will cite it, in turn)
    auto: bool = False  # AUTO-1: the system plays this hand
    window_decided: bool = False  # INS-1: its insurance decision is in (a classic round)
    even_money: bool = False  # EVEN-1 was paid on it
    score: Score = field(init=False, repr=False, compare=False)
    #: ``__post_init__`` derives ``score`` from the cards alone (``domain.game.state.replace``)
    DERIVED_FROM: ClassVar[tuple[str, ...]] = ("cards",)

    def __post_init__(self) -> None:
        _set_score(self, score(self.cards))

    def __deepcopy__(self, memo: dict[int, Any]) -> Hand:
        return self  # immutable: an aggregate's copy shares it

    def facts(self) -> play.HandFacts:
        return play.HandFacts(self.cards, self.is_split, self.split_aces, self.actions, self.score)

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, split=self.is_split)


#: ``Hand.score``'s slot setter: a hand's score is derived once, when its cards change
#: (``score`` itself, not a cache: hashing a cache's key, the cards, cost more than scoring
#: them, two or three cards a hand)
_set_score: Callable[[Hand, Score], None] = vars(Hand)["score"].__set__


# ------------------------------------------------------------------------------ queries
def find(hands: Hands, hand_id: str) -> Hand:
    """The hand ``hand_id`` (KeyError when there is none)."""
    for h in hands:
        if h.id == hand_id:
            return h
    raise KeyError(hand_id)


def due(hands: Hands) -> Hand | None:
    """The hand being played: the first one not finished (SPLIT-1: first hand first)."""
    for h in hands:
        if not h.finished:
            return h
    return None


def split_ids(hand_id: str) -> tuple[str, str]:
    return f"{hand_id}.1", f"{hand_id}.2"


def card_rule(hand: Hand, rules: Rules) -> str:
    """The rule a card to an owed hand cites: in turn, the rule that made it owed (a hit, a
    double, a split, AUTO-1, FUNDS-1/2); on the boundless shared sequence BDL-2 (D9 for a
    split hand)."""
    if rules.card_routing == "per_player_sequence":
        return "D9" if hand.is_split else "BDL-2"
    return hand.owed_rule


def hand_json(h: Hand, options: list[str]) -> dict[str, Any]:
    """A hand as the round's view shows it (every kind of round alike)."""
    sc = h.score
    return {
        "hand": h.id,
        "player": h.player,
        "spot": h.spot,
        "cards": [c.code for c in h.cards],
        "total": sc.total,
        "soft": sc.soft,
        "blackjack": h.blackjack,
        "bust": sc.bust,
        "doubled": h.doubled,
        "surrendered": h.surrendered,
        "finished": h.finished,
        "finish_reason": h.finish_reason,
        "options": options,
    }


# --------------------------------------------------------------------------- transitions
def put(hands: Hands, new: Hand) -> Hands:
    """``hands`` with ``new`` in place of the hand with its id."""
    return tuple(new if h.id == new.id else h for h in hands)


def give(hand: Hand, card: Card) -> Hand:
    """The hand takes a card; it is owed none any more."""
    return replace(hand, cards=(*hand.cards, card), owed=False)


def hit(hand: Hand, rule: str) -> Hand:
    return replace(hand, owed=True, owed_rule=rule, actions=hand.actions + 1)


def double(hand: Hand) -> Hand:
    """DBL-1: the stake doubles and the hand is owed exactly one card."""
    return replace(hand, doubled=True, owed=True, owed_rule="DBL-1", actions=hand.actions + 1)


def surrender(hand: Hand) -> Hand:
    return replace(hand, surrendered=True)


def stand(hand: Hand, reason: str) -> Hand:
    return replace(hand, finished=True, finish_reason=reason)


def auto_acted(hand: Hand, action: str) -> Hand:
    """AUTO-1 plays the hand from now on; a hit makes it owed a card."""
    h = replace(hand, auto=True)
    return hit(h, "AUTO-1") if action == play.HIT else h


def split(hands: Hands, hand_id: str, into: Sequence[str], *, split_aces: str) -> Hands:
    """SPLIT-1: the pair becomes two hands in its place, each owed a card (split aces: SPLIT-3
    one card each, or D7 play on)."""
    h = find(hands, hand_id)
    aces = h.cards[0].is_ace
    rule = ("SPLIT-3" if split_aces == "one_card" else "D7") if aces else "SPLIT-1"
    new = tuple(
        Hand(
            hid,
            h.player,
            h.spot,
            (card,),
            is_split=True,
            split_aces=aces,
            owed=True,
            owed_rule=rule,
            auto=h.auto,
        )
        for hid, card in zip(into, h.cards, strict=True)
    )
    i = hands.index(h)
    return (*hands[:i], *new, *hands[i + 1 :])


# ------------------------------------------------------------------- automatic play
@fast_init
@dataclass(frozen=True, slots=True)
class Stand:
    """The due hand stands by itself (HAND-1, SCORE-2)."""

    hand: str
    reason: str
    total: int
    rule: str


@fast_init
@dataclass(frozen=True, slots=True)
class Auto:
    """AUTO-1 acts for the due hand: ``hit``, or ``stand`` (which also finishes it)."""

    hand: str
    action: str
    total: int
    rule: str = "AUTO-1"


def automatic(hand: Hand, rules: Rules, *, auto: bool) -> Stand | Auto | None:
    """What the due hand, owed no card, does without any decision: HAND-1 / SCORE-2 stands,
    or AUTO-1 when the system plays it (``auto``); None when it waits for a decision."""
    reason = play.stands_automatically(hand, rules, doubled=hand.doubled)
    if reason is not None:
        rule = "SCORE-2" if reason == "bust" else "HAND-1"
        return Stand(hand.id, reason, hand.score.total, rule)
    if auto:
        return Auto(hand.id, play.auto_play_action(hand.cards), hand.score.total)
    return None


def record(d: Decision[Any], step: Stand | Auto) -> None:
    """The facts of an automatic step (an AUTO-1 stand also stands the hand)."""
    if isinstance(step, Stand):
        d.consequence(
            "HandStood", rule=step.rule, hand=step.hand, reason=step.reason, total=step.total
        )
        return
    d.consequence("AutoActed", rule=step.rule, hand=step.hand, action=step.action, total=step.total)
    if step.action == play.STAND:
        d.consequence("HandStood", rule="AUTO-1", hand=step.hand, reason="auto", total=step.total)


def play_automatically(d: Decision[Any], hand: Hand, rules: Rules, *, auto: bool) -> bool:
    """Decide the due hand's automatic step, if it has one (True when it had)."""
    step = automatic(hand, rules, auto=auto)
    if step is None:
        return False
    record(d, step)
    return True


def evolve_hand(hand: Hand, name: str, f: Any) -> Hand | None:
    """The effect of the hand facts every round records alike on the hand they name (None for
    a fact that is not one of them)."""
    if name == "HandStood":
        return stand(hand, f["reason"])
    if name == "HandHit":
        return hit(hand, f["rule"])
    if name == "HandDoubled":
        return double(hand)
    if name == "HandSurrendered":
        return surrender(hand)
    if name == "AutoActed":
        return auto_acted(hand, f["action"])
    return None


HAND_FACTS = frozenset({"HandStood", "HandHit", "HandDoubled", "HandSurrendered", "AutoActed"})

__all__ = [
    "HAND_FACTS",
    "Auto",
    "Hand",
    "Hands",
    "Stand",
    "auto_acted",
    "automatic",
    "card_rule",
    "double",
    "due",
    "evolve_hand",
    "find",
    "give",
    "hand_json",
    "hit",
    "play_automatically",
    "put",
    "record",
    "split",
    "split_ids",
    "stand",
    "surrender",
]

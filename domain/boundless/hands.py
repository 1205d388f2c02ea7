"""A boundless player's hands as a pure function of the shared cards and their own decisions.

This module owns the whole of D9 (RULES.md): every player of a boundless round starts from the
same two shared cards, and each of their hands takes the next *unconsumed* card of the shared
sequence (BDL-2) in that player's own play order: the first split hand to completion, then the
second. So a player's hands are a function of three things only::

    replay(player, initial, sequence, log, rules) -> PlayerHands

``initial`` is the shared initial hand, ``sequence`` the cards the dealer revealed after the
deal, and ``log`` the player's applied decisions (:class:`Entry`: hit, stand, double, split,
surrender, a decision timer that expired, a disconnection, a FUNDS-2 stand). The
:class:`~domain.boundless.participation.Participation` aggregate records its hands with the same
transitions (its ``@event`` bodies call :func:`apply` and :func:`take`), and the property tests
check that replaying the recorded log gives the recorded hands for every player.

Everything is immutable: a transition returns a new :class:`PlayerHands`.

>>> from domain.cards import parse_cards
>>> from domain.rules import get_rules
>>> rules = get_rules("boundless")
>>> seq = parse_cards(["3C", "9D", "KH"])
>>> h = replay("A", parse_cards(["8H", "8D"]), seq,
...            [Entry("split", "A"), Entry("double", "A.1")], rules)
>>> [(x.id, [c.code for c in x.cards], x.finished) for x in h.hands]
[('A.1', ['8H', '3C', '9D'], True), ('A.2', ['8D', 'KH'], False)]
>>> h.cursor, h.demand
(3, None)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from domain import play
from domain.cards import Card
from domain.rules.base import Rules
from domain.scoring import Score, is_blackjack, score

#: Applied actions a log entry may carry (after FUNDS-2: ``funds_stand`` is a split or double
#: that found too little balance on a total over 11).
HIT, STAND, DOUBLE, SPLIT, SURRENDER = play.HIT, play.STAND, play.DOUBLE, play.SPLIT, "surrender"
TIMEOUT, DISCONNECT, FUNDS_STAND = "timeout", "disconnect", "funds_stand"
ACTIONS = frozenset({HIT, STAND, DOUBLE, SPLIT, SURRENDER, TIMEOUT, DISCONNECT, FUNDS_STAND})


@dataclass(frozen=True, slots=True)
class Hand:
    """One hand of one player."""

    id: str
    cards: tuple[Card, ...]
    is_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    surrendered: bool = False
    finished: bool = False
    finish_reason: str | None = None
    actions: int = 0
    owed: bool = False  # the hand is owed one card from the sequence
    owed_rule: str = "PHASE-4"  # the rule that made it owed (HandHit's rule)
    auto: bool = False  # AUTO-1 plays this hand
    score: Score = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "score", _score(self.cards))

    def facts(self) -> play.HandFacts:
        return play.HandFacts(self.cards, self.is_split, self.split_aces, self.actions)

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, split=self.is_split)


@dataclass(frozen=True, slots=True)
class PlayerHands:
    """A player's hands in play order, and their place in the shared sequence."""

    player: str
    hands: tuple[Hand, ...]
    cursor: int = 0  # index of the next sequence card this player has not taken (D9)
    auto: bool = False  # disconnected (DISC-1): AUTO-1 plays every hand when it is due

    def hand(self, hand_id: str) -> Hand:
        for h in self.hands:
            if h.id == hand_id:
                return h
        raise KeyError(hand_id)

    def due(self) -> Hand | None:
        """The hand being played: the first one not finished (SPLIT-1: first hand first)."""
        for h in self.hands:
            if not h.finished:
                return h
        return None

    @property
    def complete(self) -> bool:
        return self.due() is None

    @property
    def demand(self) -> int | None:
        """The sequence index this player's due hand waits for, if it waits for a card."""
        h = self.due()
        return self.cursor if h is not None and h.owed else None


# ------------------------------------------------------------------------- steps (consequences)
@dataclass(frozen=True, slots=True)
class Take:
    """The due hand takes sequence card ``index`` (BDL-2; D9 for a split hand)."""

    hand: str
    card: Card
    index: int
    total: int
    soft: bool
    rule: str


@dataclass(frozen=True, slots=True)
class Stand:
    """The due hand stands by itself (HAND-1, SCORE-2)."""

    hand: str
    reason: str
    total: int
    rule: str


@dataclass(frozen=True, slots=True)
class Auto:
    """AUTO-1 acts for the due hand: ``hit``, or ``stand`` (which also finishes it)."""

    hand: str
    action: str
    total: int
    rule: str = "AUTO-1"


Step = Take | Stand | Auto


def next_step(state: PlayerHands, sequence: Sequence[Card], rules: Rules) -> Step | None:
    """What happens next without any decision, or None: the due hand waits for a decision,
    for a card the dealer has not revealed yet (:attr:`PlayerHands.demand`), or nothing is due.
    """
    h = state.due()
    if h is None:
        return None
    if h.owed:
        i = state.cursor
        if i >= len(sequence):
            return None
        card = sequence[i]
        s = score([*h.cards, card])
        return Take(h.id, card, i, s.total, s.soft, "D9" if h.is_split else "BDL-2")
    reason = play.stands_automatically(h.facts(), rules, doubled=h.doubled)
    if reason is not None:
        rule = "SCORE-2" if reason == "bust" else "HAND-1"
        return Stand(h.id, reason, h.score.total, rule)
    if h.auto or state.auto:
        return Auto(h.id, play.auto_play_action(h.cards), h.score.total)
    return None


def take(state: PlayerHands, step: Step) -> PlayerHands:
    """Apply one automatic step."""
    if isinstance(step, Take):
        h = state.hand(step.hand)
        new = replace(h, cards=(*h.cards, step.card), owed=False)
        return replace(_put(state, new), cursor=step.index + 1)
    if isinstance(step, Stand):
        return finish(state, step.hand, step.reason)
    h = replace(state.hand(step.hand), auto=True)
    if step.action == play.HIT:
        return _put(state, replace(h, owed=True, owed_rule="AUTO-1", actions=h.actions + 1))
    return finish(_put(state, h), step.hand, "auto")


def run(state: PlayerHands, sequence: Sequence[Card], rules: Rules) -> PlayerHands:
    """Every automatic step until a decision or an unrevealed card is needed."""
    while (step := next_step(state, sequence, rules)) is not None:
        state = take(state, step)
    return state


# --------------------------------------------------------------------------------- decisions
def opened(player: str, initial: Sequence[Card]) -> PlayerHands:
    """BDL-1: the player's one initial hand holds the two shared cards."""
    return PlayerHands(player, (Hand(player, tuple(initial)),))


def hit(state: PlayerHands, hand: str, rule: str = "PHASE-4") -> PlayerHands:
    h = state.hand(hand)
    return _put(state, replace(h, owed=True, owed_rule=rule, actions=h.actions + 1))


def finish(state: PlayerHands, hand: str, reason: str) -> PlayerHands:
    return _put(state, replace(state.hand(hand), finished=True, finish_reason=reason))


def double(state: PlayerHands, hand: str) -> PlayerHands:
    h = state.hand(hand)
    return _put(
        state, replace(h, doubled=True, owed=True, owed_rule="DBL-1", actions=h.actions + 1)
    )


def surrender(state: PlayerHands, hand: str) -> PlayerHands:
    h = replace(state.hand(hand), surrendered=True, finished=True, finish_reason="surrender")
    return _put(state, h)


def split_ids(hand: str) -> tuple[str, str]:
    return f"{hand}.1", f"{hand}.2"


def split(state: PlayerHands, hand: str) -> PlayerHands:
    """SPLIT-1: the pair becomes two hands, each owed a card (taken in play order, D9)."""
    h = state.hand(hand)
    aces = h.cards[0].is_ace
    first, second = split_ids(hand)
    new = tuple(
        Hand(
            hid,
            (card,),
            is_split=True,
            split_aces=aces,
            owed=True,
            owed_rule="SPLIT-1",
            auto=h.auto,
        )
        for hid, card in zip((first, second), h.cards, strict=True)
    )
    i = state.hands.index(h)
    return replace(state, hands=(*state.hands[:i], *new, *state.hands[i + 1 :]))


def time_out(state: PlayerHands, hand: str) -> PlayerHands:
    """AUTO-1 for this hand from now on."""
    return _put(state, replace(state.hand(hand), auto=True))


def disconnect(state: PlayerHands) -> PlayerHands:
    """DISC-1: AUTO-1 plays every hand of the player from now on."""
    return replace(state, auto=True)


@dataclass(frozen=True, slots=True)
class Entry:
    """One applied entry of a player's decision log (what the rules applied, after FUNDS-2).

    ``rule`` is the rule of a hit (``PHASE-4``, or ``FUNDS-2`` for a converted double or split).
    """

    action: str
    hand: str | None = None
    rule: str = "PHASE-4"


def apply(state: PlayerHands, entry: Entry) -> PlayerHands:
    """Apply one log entry to the hand it names (the due hand; ``disconnect`` names none)."""
    a = entry.action
    if a == DISCONNECT:
        return disconnect(state)
    assert entry.hand is not None, f"{a} names a hand"
    if a == HIT:
        return hit(state, entry.hand, entry.rule)
    if a == STAND:
        return finish(state, entry.hand, "stand")
    if a == FUNDS_STAND:
        return finish(state, entry.hand, "funds")
    if a == DOUBLE:
        return double(state, entry.hand)
    if a == SPLIT:
        return split(state, entry.hand)
    if a == SURRENDER:
        return surrender(state, entry.hand)
    if a == TIMEOUT:
        return time_out(state, entry.hand)
    raise ValueError(f"unknown log entry {a!r}")


def replay(
    player: str,
    initial: Sequence[Card],
    sequence: Sequence[Card],
    log: Iterable[Entry],
    rules: Rules,
    *,
    played: bool = True,
) -> PlayerHands:
    """A player's hands recomputed from the shared cards and their decision log alone (D9).

    ``played=False``: play never started (END-1 at the dealer's check): the hands take no
    automatic step, not even a blackjack's stand."""
    state = opened(player, initial)
    if played:
        state = run(state, sequence, rules)
    for entry in log:
        state = apply(state, entry)
        if played:
            state = run(state, sequence, rules)
    return state


def consumed(state: PlayerHands) -> list[Card]:
    """The sequence cards the player's hands hold, in the order they were taken (D9: a prefix
    of the sequence). Within a hand, cards after its first two (split hands: after the first
    one) came from the sequence; hands are taken in play order, so concatenating them gives the
    order of consumption."""
    out: list[Card] = []
    for h in state.hands:
        out.extend(h.cards[1:] if h.is_split else h.cards[2:])
    return out


@functools.lru_cache(maxsize=8192)
def _score(cards: tuple[Card, ...]) -> Score:
    """Players of one round share their cards: few distinct hands, scored once each."""
    return score(cards)


def _put(state: PlayerHands, new: Hand) -> PlayerHands:
    return replace(state, hands=tuple(new if h.id == new.id else h for h in state.hands))

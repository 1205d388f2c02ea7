"""D9: a boundless player's hands as a pure function of the shared cards and their own log.

Every player of a boundless round starts from the same two shared cards, and each of their
hands takes the next *unconsumed* card of the shared sequence (BDL-2) in that player's own play
order: the first split hand to completion, then the second. So a player's hands are a function
of three things only::

    replay(player, initial, sequence, log, rules) -> PlayerHands

``initial`` is the shared initial hand, ``sequence`` the cards the dealer revealed after the
deal, and ``log`` the player's applied decisions (:class:`Entry`: hit, stand, double, split,
surrender, a decision timer that expired, a disconnection, a FUNDS-2 stand). The participation
decider (:mod:`domain.game.player`) takes its automatic steps with :func:`next_step` and its
hands move by the transitions of :mod:`domain.game.hands`, so the hands a participation's
events record can be recomputed from the sequence and the log alone: verification does.

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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from domain.cards import Card
from domain.game import hands as H
from domain.game import play
from domain.game.hands import Auto, Hand, Stand
from domain.game.state import fast_init, replace
from domain.rules.base import Rules
from domain.scoring import score

#: Applied actions a log entry may carry (after FUNDS-2: ``funds_stand`` is a split or double
#: that found too little balance on a total over 11).
HIT, STAND, DOUBLE, SPLIT, SURRENDER = play.HIT, play.STAND, play.DOUBLE, play.SPLIT, "surrender"
TIMEOUT, DISCONNECT, FUNDS_STAND = "timeout", "disconnect", "funds_stand"
ACTIONS = frozenset({HIT, STAND, DOUBLE, SPLIT, SURRENDER, TIMEOUT, DISCONNECT, FUNDS_STAND})


@fast_init
@dataclass(frozen=True, slots=True)
class PlayerHands:
    """A player's hands in play order, and their place in the shared sequence."""

    player: str
    hands: tuple[Hand, ...]
    cursor: int = 0  # index of the next sequence card this player has not taken (D9)
    auto: bool = False  # disconnected (DISC-1): AUTO-1 plays every hand when it is due

    def __deepcopy__(self, memo: dict[int, Any]) -> PlayerHands:
        return self  # immutable

    def hand(self, hand_id: str) -> Hand:
        return H.find(self.hands, hand_id)

    def due(self) -> Hand | None:
        """The hand being played: the first one not finished (SPLIT-1: first hand first)."""
        return H.due(self.hands)

    @property
    def complete(self) -> bool:
        return self.due() is None

    @property
    def demand(self) -> int | None:
        """The sequence index this player's due hand waits for, if it waits for a card."""
        h = self.due()
        return self.cursor if h is not None and h.owed else None


@fast_init
@dataclass(frozen=True, slots=True)
class Take:
    """The due hand takes sequence card ``index`` (BDL-2; D9 for a split hand)."""

    hand: str
    card: Card
    index: int
    total: int
    soft: bool
    rule: str


Step = Take | Stand | Auto


def next_step(state: PlayerHands, sequence: Sequence[Card], rules: Rules) -> Step | None:
    """What happens next without any decision, or None: the due hand waits for a decision,
    for a card the dealer has not revealed yet (:attr:`PlayerHands.demand`), or nothing is due.
    """
    h = state.due()
    return None if h is None else step_of(state, h, sequence, rules)


def step_of(state: PlayerHands, h: Hand, sequence: Sequence[Card], rules: Rules) -> Step | None:
    """:func:`next_step` when the caller holds the due hand ``h`` (``state.due()``) already."""
    if h.owed:
        i = state.cursor
        if i >= len(sequence):
            return None
        card = sequence[i]
        s = score([*h.cards, card])
        return Take(h.id, card, i, s.total, s.soft, H.card_rule(h, rules))
    return H.automatic(h, rules, auto=h.auto or state.auto)


def has_step(state: PlayerHands, h: Hand, sequence: Sequence[Card], rules: Rules) -> bool:
    """``step_of(state, h, sequence, rules) is not None``, without making the step: what a
    participation waits for (and whether a decision is open) asks only whether there is one,
    dozens of times a player in a boundless round."""
    if h.owed:
        return state.cursor < len(sequence)
    if h.auto or state.auto:
        return True
    return play.stands_automatically(h, rules, doubled=h.doubled) is not None


def take(state: PlayerHands, step: Step) -> PlayerHands:
    """Apply one automatic step (an AUTO-1 stand finishes the hand)."""
    if isinstance(step, Take):
        h = H.give(state.hand(step.hand), step.card)
        return replace(state, hands=H.put(state.hands, h), cursor=step.index + 1)
    if isinstance(step, Stand):
        return _put(state, H.stand(state.hand(step.hand), step.reason))
    h = H.auto_acted(state.hand(step.hand), step.action)
    return _put(state, H.stand(h, "auto") if step.action == play.STAND else h)


def run(state: PlayerHands, sequence: Sequence[Card], rules: Rules) -> PlayerHands:
    """Every automatic step until a decision or an unrevealed card is needed."""
    while (step := next_step(state, sequence, rules)) is not None:
        state = take(state, step)
    return state


def opened(player: str, initial: Sequence[Card]) -> PlayerHands:
    """BDL-1: the player's one initial hand holds the two shared cards."""
    return PlayerHands(player, (Hand(player, player, player, tuple(initial)),))


def split(state: PlayerHands, hand: str, split_aces: str = "one_card") -> PlayerHands:
    """SPLIT-1: the pair becomes two hands, each owed a card (taken in play order, D9)."""
    into = H.split_ids(hand)
    return replace(state, hands=H.split(state.hands, hand, into, split_aces=split_aces))


def time_out(state: PlayerHands, hand: str) -> PlayerHands:
    """AUTO-1 for this hand from now on."""
    return _put(state, replace(state.hand(hand), auto=True))


def disconnect(state: PlayerHands) -> PlayerHands:
    """DISC-1: AUTO-1 plays every hand of the player from now on."""
    return replace(state, auto=True)


@fast_init
@dataclass(frozen=True, slots=True)
class Entry:
    """One applied entry of a player's decision log (what the rules applied, after FUNDS-2).

    ``rule`` is the rule of a hit (``PHASE-4``, or ``FUNDS-2`` for a converted double or split).
    """

    action: str
    hand: str | None = None
    rule: str = "PHASE-4"


def apply(state: PlayerHands, entry: Entry, rules: Rules | None = None) -> PlayerHands:
    """Apply one log entry to the hand it names (the due hand; ``disconnect`` names none)."""
    a = entry.action
    if a == DISCONNECT:
        return disconnect(state)
    assert entry.hand is not None, f"{a} names a hand"
    if a == SPLIT:
        return split(state, entry.hand, rules.split_aces if rules else "one_card")
    if a == TIMEOUT:
        return time_out(state, entry.hand)
    h = state.hand(entry.hand)
    if a == HIT:
        return _put(state, H.hit(h, entry.rule))
    if a in (STAND, FUNDS_STAND):
        return _put(state, H.stand(h, "stand" if a == STAND else "funds"))
    if a == DOUBLE:
        return _put(state, H.double(h))
    if a == SURRENDER:
        return _put(state, H.stand(H.surrender(h), "surrender"))
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
        state = apply(state, entry, rules)
        if played:
            state = run(state, sequence, rules)
    return state


class Replays:
    """:func:`replay` of every player of one round: the same ``initial`` cards, ``sequence``,
    ``rules`` and ``played``, each player with their own name and log (D9's check in
    verification, ``replays.boundless``: thousands of players, a few dozen different logs).

    A player's name reaches their hands only as the hands' ids (their one hand is named after
    them, a split hand after the hand split, ``split_ids``), the hands' ``player`` and
    ``spot``, and the state's ``player``; the log names the hands by those ids. So two players
    whose logs are the same once each hand id is read relative to its player (``"A.1"`` of
    player ``A`` as ``".1"``) replay to the same hands with the names exchanged: each such log
    is replayed once, for the first player who has it, and the others get that replay renamed
    (:meth:`of`). A log naming a hand that is not the player's own (no such hand: the replay
    raises ``KeyError``, as it does for that player) is replayed for the player alone.

    >>> from domain.cards import parse_cards
    >>> from domain.rules import get_rules
    >>> r = Replays(parse_cards(["8H", "8D"]), parse_cards(["3C", "9D", "KH"]),
    ...             get_rules("boundless"))
    >>> a = r.of("A", [Entry("split", "A"), Entry("double", "A.1")])
    >>> b = r.of("B", [Entry("split", "B"), Entry("double", "B.1")])
    >>> b == replay("B", parse_cards(["8H", "8D"]), parse_cards(["3C", "9D", "KH"]),
    ...             [Entry("split", "B"), Entry("double", "B.1")], get_rules("boundless"))
    True
    >>> [(h.id, h.player, [c.code for c in h.cards]) for h in b.hands], len(r._done)
    ([('B.1', 'B', ['8H', '3C', '9D']), ('B.2', 'B', ['8D', 'KH'])], 1)
    """

    __slots__ = ("_done", "initial", "played", "rules", "sequence")

    def __init__(
        self,
        initial: Sequence[Card],
        sequence: Sequence[Card],
        rules: Rules,
        *,
        played: bool = True,
    ) -> None:
        self.initial, self.sequence, self.rules, self.played = initial, sequence, rules, played
        #: each log, its hands read relative to the player -> the hands replayed for the
        #: first player who had it
        self._done: dict[tuple[tuple[str, str | None, str], ...], PlayerHands] = {}

    def of(self, player: str, log: Iterable[Entry]) -> PlayerHands:
        """``replay(player, initial, sequence, log, rules, played=played)``."""
        key = _relative(player, log)
        if key is None:  # a hand not the player's: replayed alone
            return replay(player, self.initial, self.sequence, log, self.rules, played=self.played)
        done = self._done.get(key)
        if done is None:
            done = self._done[key] = replay(
                player, self.initial, self.sequence, log, self.rules, played=self.played
            )
            return done
        return done if done.player == player else _renamed(done, player)


def _relative(player: str, log: Iterable[Entry]) -> tuple[tuple[str, str | None, str], ...] | None:
    """``log`` with each hand id read relative to ``player`` (``player`` itself ``""``, a hand
    ``player + x`` as ``x`` for an ``x`` beginning with a dot), or None when an entry names a
    hand of another form."""
    dotted = player + "."
    out: list[tuple[str, str | None, str]] = []
    for e in log:
        hand = e.hand
        if hand is None:
            out.append((e.action, None, e.rule))
        elif hand == player:
            out.append((e.action, "", e.rule))
        elif hand.startswith(dotted):
            out.append((e.action, hand[len(player) :], e.rule))
        else:
            return None
    return tuple(out)


def _renamed(state: PlayerHands, player: str) -> PlayerHands:
    """``state`` (every hand id its player's name and a suffix) as ``player``'s: the same
    hands with their ids, ``player`` and ``spot`` renamed."""
    n = len(state.player)
    hands = tuple(replace(h, id=player + h.id[n:], player=player, spot=player) for h in state.hands)
    return replace(state, player=player, hands=hands)


def consumed(state: PlayerHands) -> list[Card]:
    """The sequence cards the player's hands hold, in the order they were taken (D9: a prefix
    of the sequence). Within a hand, cards after its first two (split hands: after the first
    one) came from the sequence; hands are taken in play order, so concatenating them gives the
    order of consumption."""
    out: list[Card] = []
    for h in state.hands:
        out.extend(h.cards[1:] if h.is_split else h.cards[2:])
    return out


def _put(state: PlayerHands, new: Hand) -> PlayerHands:
    return replace(state, hands=H.put(state.hands, new))


__all__ = [
    "ACTIONS",
    "Entry",
    "PlayerHands",
    "Replays",
    "Step",
    "Take",
    "apply",
    "consumed",
    "disconnect",
    "has_step",
    "next_step",
    "opened",
    "replay",
    "run",
    "step_of",
    "take",
    "time_out",
]

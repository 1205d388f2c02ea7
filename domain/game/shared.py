"""The boundless shared hand's decider: what every player of one round has in common.

The cards and the phases that are the same for everyone (BDL-1..3): the round's start, the end
of betting, the shared initial hand and the dealer's cards, the sequence of further cards the
dealer reveals when some player's hand needs one (BDL-2), the insurance window (INS-1), the
dealer's check (D5, END-1), the dealer's play after the players (BDL-3, D10) and the end of the
round (settled, or cancelled under ERR-1). It knows the *number* of seated players but never
their hands or money: those are each player's own (:mod:`domain.game.player`).

    decide(state, command) -> Decision (facts, state)      evolve(state, fact) -> state

Besides the table's inputs (:class:`Start`, :class:`CloseBetting`, :class:`Deal`,
:class:`CloseWindow`, :class:`Supervise`), the commands include the steps the round takes when
its players' state says so (:class:`Step`: open the hands, complete the window, the dealer's
turn and stand, the end), decided by the boundless engine (``domain.boundless.engine``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domain.cards import Card
from domain.errors import WrongOrder, refuse_reused
from domain.events import SYSTEM
from domain.game import dealer as D
from domain.game import phases
from domain.game.commands import (
    CloseBetting,
    CloseWindow,
    Command,
    Deal,
    Start,
    Step,
    Supervise,
    record,
)
from domain.game.facts import Decision, Fact
from domain.game.state import fast_init, replace
from domain.rules import get_rules
from domain.scoring import score

SHARED, DEALER_TARGET, SEQUENCE = "shared", "dealer", "sequence"
#: RULES.md "Round phases" 2 with one shared hand and a peeked hole card: the shared hand's
#: first card, the dealer's upcard, the shared hand's second card, the hole card.
INITIAL_PLAN = (SHARED, DEALER_TARGET, SHARED, DEALER_TARGET)
Fields = Mapping[str, Any]
Actor = Mapping[str, str]


@fast_init
@dataclass(frozen=True)
class SharedState(phases.RoundBase):
    """One boundless round's shared cards and phases."""

    cancelling: bool = False
    cancel_reason: str = ""
    initial: tuple[Card, ...] = ()
    sequence: tuple[Card, ...] = ()
    seated: int | None = None  # known once the hands are opened
    played: bool = False  # play started (PHASE-4); not after END-1 at the dealer's check

    @property
    def initial_dealt(self) -> bool:
        return len(self.initial) + len(self.dealer) >= len(INITIAL_PLAN)

    @property
    def dealer_wants_card(self) -> bool:
        """DEALER-1 in the dealer's turn (D10: whatever the players did, unless a BJ)."""
        if self.phase != phases.DEALER or self.dealer_hand.final:
            return False
        return D.wants_card(self.dealer, self.rules)

    def own_card_need(self) -> dict[str, str] | None:
        """The next card the shared hand itself knows it needs (initial deal, dealer's
        draws). A sequence card is needed when a player's hand demands it: the caller knows."""
        if self.paused or self.finished or self.cancelling:
            return None
        if self.phase == phases.DEALING and not self.initial_dealt:
            return {"for": INITIAL_PLAN[len(self.initial) + len(self.dealer)]}
        if self.dealer_wants_card:
            return {"for": DEALER_TARGET}
        return None

    def dealer_visible(self) -> list[str]:
        return D.visible(
            self.dealer, self.rules, shown=self.dealer_hand.hole_revealed or self.finished
        )

    def check_open(self, request_id: str | None = None) -> bool:
        """The guard of every input: the round takes commands, and ``request_id`` is new in
        its shared hand (a reused one is refused, :func:`~domain.errors.refuse_reused`).
        Always True."""
        phases.check_open(self, cancelling=self.cancelling)
        refuse_reused(request_id, self.request_ids, lambda: f"round {self.label}")
        return True


# ------------------------------------------------------------------------------ evolve
def started(f: Fields) -> SharedState:
    """The state a ``Started`` fact opens (its request id is kept)."""
    return phases.seen(SharedState(**phases.opening(f)), f)


def evolve(s: SharedState, name: str, f: Fields) -> SharedState:
    """The state after one fact (a stored event's payload, or a fact just decided)."""
    common = phases.evolve_round(s, name, f)
    if common is not None:
        if name == "DealerChecked" and f["blackjack"]:
            return replace(
                common, phase=phases.DEALER
            )  # END-1: no further cards; settlement follows
        return common
    handler = _EVOLVE.get(name)
    return s if handler is None else handler(s, f)


def _card_to_hand(s: SharedState, f: Fields) -> SharedState:
    c = Card.parse(f["card"])
    if f["hand"] == SHARED:
        return replace(s, initial=(*s.initial, c))
    return replace(s, sequence=(*s.sequence, c))


_EVOLVE: dict[str, Any] = {
    "BettingClosed": lambda s, f: replace(phases.seen(s, f), phase=phases.DEALING),
    "CardToHand": _card_to_hand,
    "HandsOpened": lambda s, f: replace(s, seated=f["seated"]),
    "InsuranceWindowOpened": lambda s, f: replace(s, phase=phases.INSURANCE),
    "InsuranceWindowClosed": phases.seen,
    "PlayStarted": lambda s, f: replace(s, phase=phases.PLAYING, played=True),
    "CancelRequested": lambda s, f: replace(
        phases.seen(s, f), cancelling=True, cancel_reason=f["reason"]
    ),
    "RoundCancelled": lambda s, f: replace(
        s, phase=phases.CANCELLED, paused=False, cancelling=False
    ),
}


# ---------------------------------------------------------------------------- decide
def start(c: Start) -> Fact:
    rules = get_rules(c.rules_key)
    if not rules.shared_hand:
        raise WrongOrder(f"{rules.variant} has no shared hand")
    if c.seats:
        raise WrongOrder(f"{rules.variant} has no seats: all play one shared hand (BDL-1)")
    if c.round_number < 1 or c.shoe_round < 1:
        raise WrongOrder("round_number and shoe_round must be 1 or more")
    return phases.start_fact(c, rules)


def decide(state: SharedState, c: Command) -> Decision[SharedState]:
    """The facts ``c`` decides on ``state`` (none for a repeated request id)."""
    d = Decision(state, evolve)
    if isinstance(c, Step):
        _STEPS[c.what](d, c)
    elif isinstance(c, Supervise):
        _supervise(d, c)
    elif state.check_open(c.request_id):
        if isinstance(c, CloseBetting):
            _close_betting(d, c)
        elif isinstance(c, Deal):
            _deal(d, c)
        else:
            assert isinstance(c, CloseWindow), c
            _close_window(d, c)
    return d


def _close_betting(d: Decision[SharedState], c: CloseBetting) -> None:
    if d.state.phase != phases.BETTING:
        raise WrongOrder("betting is already closed")
    record(d, "BettingClosed", c, SYSTEM)


def _deal(d: Decision[SharedState], c: Deal) -> None:
    s = d.state
    need = s.own_card_need()
    target = need["for"] if need is not None else None
    if target is None and s.phase == phases.PLAYING and c.demand == len(s.sequence):
        target = SEQUENCE
    if target is None:
        raise WrongOrder(
            f"the round needs no card now (phase {s.phase}); {c.card.code} was not recorded"
        )
    actor = {"kind": "dealer", "id": s.table_id}
    record(d, "CardDealt", c, actor, card=c.card.code, shoe_position=c.shoe_position)
    if target == SHARED:
        t = score([*s.initial, c.card])
        d.consequence(
            "CardToHand", rule="BDL-1", hand=SHARED, card=c.card.code, index=len(s.initial),
            total=t.total, soft=t.soft,
        )  # fmt: skip
    elif target == SEQUENCE:
        d.consequence(
            "CardToHand", rule="BDL-2", hand=SEQUENCE, card=c.card.code, index=len(s.sequence),
            total=0, soft=False,
        )  # fmt: skip
    else:
        D.card_to_dealer(d, s.dealer, c.card, s.rules, dealing=s.phase == phases.DEALING)


def _open_hands(d: Decision[SharedState], c: Step) -> None:
    """The initial deal is complete and ``seated`` players got their hand (BDL-1): the
    insurance window opens on an ace (INS-1), a ten-value is checked at once (D5), or play
    starts."""
    s = d.state
    if s.phase != phases.DEALING or not s.initial_dealt or s.seated is not None:
        raise WrongOrder("hands open once, after the initial deal")
    d.consequence("HandsOpened", rule="PHASE-2", seated=c.seated)
    outcome = D.after_deal(d, s.dealer, s.rules, window=c.seated > 0)
    if outcome == D.WINDOW:
        d.consequence("InsuranceWindowOpened", rule="INS-1", seated=c.seated)
    elif outcome == D.PLAY:
        d.consequence("PlayStarted", rule="PHASE-4")


def _complete_window(d: Decision[SharedState], c: Step) -> None:
    if d.state.phase != phases.INSURANCE:
        raise WrongOrder("no insurance window is open")
    d.consequence("InsuranceWindowCompleted", rule="INS-1")
    _after_window(d)


def _close_window(d: Decision[SharedState], c: CloseWindow) -> None:
    """The insurance timer ran out: every undecided player declines (INS-1)."""
    if d.state.phase != phases.INSURANCE:
        raise WrongOrder("no insurance window is open")
    record(d, "InsuranceWindowClosed", c, SYSTEM)
    _after_window(d)


def _after_window(d: Decision[SharedState]) -> None:
    if D.after_window(d, d.state.dealer, d.state.rules) == D.PLAY:
        d.consequence("PlayStarted", rule="PHASE-4")


def _dealer_turn(d: Decision[SharedState], c: Step) -> None:
    """Every player's hands are complete (PHASE-5): the dealer shows the hole card."""
    s = d.state
    if s.phase != phases.PLAYING:
        raise WrongOrder(f"the dealer's turn follows play, not phase {s.phase}")
    D.turn(d, s.dealer, s.rules)


def _dealer_stand(d: Decision[SharedState], c: Step) -> None:
    """BDL-3 / D10: the dealer's hand is complete by DEALER-1."""
    s = d.state
    if s.phase != phases.DEALER or s.dealer_hand.final or s.dealer_wants_card:
        raise WrongOrder("the dealer's hand is not ready to stand")
    D.stand(d, s.dealer)


def _settled(d: Decision[SharedState], c: Step) -> None:
    """Every wager of every player is settled (PHASE-6)."""
    s = d.state
    if s.finished or s.cancelling:
        raise WrongOrder(f"round is {s.phase}")
    d.consequence(
        "RoundSettled",
        rule="PHASE-6",
        dealer=[x.code for x in s.dealer],
        dealer_total=score(s.dealer).total if s.dealer else 0,
    )


def _cancelled(d: Decision[SharedState], c: Step) -> None:
    """Every player's stakes are refunded: the round is closed (ERR-1)."""
    s = d.state
    if not s.cancelling or s.finished:
        raise WrongOrder("the round is not being cancelled")
    d.consequence("RoundCancelled", rule="ERR-1", reason=s.cancel_reason)


def _supervise(d: Decision[SharedState], c: Supervise) -> None:
    """ERR-1: a pause, a resume, or a cancellation (every player's stakes are refunded, then
    the round closes: the engine's steps)."""
    s = d.state
    phases.supervise(d, c, paused=s.paused, cancelling=s.cancelling)


_STEPS: dict[str, Any] = {
    "open_hands": _open_hands,
    "complete_window": _complete_window,
    "dealer_turn": _dealer_turn,
    "dealer_stand": _dealer_stand,
    "settled": _settled,
    "cancelled": _cancelled,
}


__all__ = [
    "DEALER_TARGET",
    "INITIAL_PLAN",
    "SEQUENCE",
    "SHARED",
    "CloseBetting",
    "CloseWindow",
    "Command",
    "Deal",
    "SharedState",
    "Start",
    "Step",
    "Supervise",
    "decide",
    "evolve",
    "start",
    "started",
]

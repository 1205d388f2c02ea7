"""The SharedHand aggregate: what every player of one boundless round has in common.

One aggregate per boundless round, with the round's id (uuid5 of table and round number, as a
:class:`~domain.round.Round`), recording what the game core's shared-hand decider decides
(``domain.game.shared``): the cards and the phases that are the same for everyone:

* the round's start (rules key, table, round number, shoe) and the end of betting;
* the shared initial hand (BDL-1) and the dealer's cards, each a ``CardDealt`` input beside the
  consequence that says where it went;
* the sequence of further cards the dealer reveals (BDL-2): a card is accepted into it only
  when some player's hand needs it (the caller says which sequence index is demanded; the
  players' hands live in their own :class:`~domain.boundless.participation.Participation`);
* the insurance window (INS-1), the dealer's check (D5, END-1), the dealer's play after the
  players (BDL-3, D10: the dealer always completes unless it has blackjack), and the end of the
  round (settled, or cancelled under ERR-1 with every stake refunded).

It knows the *number* of seated players (``HandsOpened``) but never their hands or money:
deciding players only read it, so thousands of them never write to it (and never conflict on
it). The boundless engine (``domain.boundless.engine``) moves it on when the players' state
says so (every hand complete: the dealer's turn; every wager settled: ``RoundSettled``).

Invariants (as in :mod:`domain.round`): a command is decided before anything is recorded;
event bodies only apply state; inputs carry actor, client time and request id; every
consequence names its rule; a settled or cancelled round refuses every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

from domain.cards import Card
from domain.events import Consequence, Derived, Input, Requested
from domain.game import commands as C
from domain.game import play
from domain.game import shared as G
from domain.game.facts import Fact
from domain.game.phases import (
    BETTING,
    CANCELLED,
    DEALER,
    DEALING,
    INSURANCE,
    PLAYING,
    SETTLED,
)
from domain.game.shared import DEALER_TARGET, INITIAL_PLAN, SEQUENCE, SHARED, SharedState
from domain.recorder import Delegated, Opening, RoundRecorder

Json = dict[str, Any]


class SharedHand(RoundRecorder):
    """One boundless round's shared cards and phases (see the module docstring)."""

    begin = staticmethod(G.started)
    evolve = staticmethod(G.evolve)
    if TYPE_CHECKING:
        _state: SharedState

    # ------------------------------------------------------------------ events: inputs
    class Started(Requested, Opening, Aggregate.Created, Input):
        """The round opens under a rules key, on a shoe."""

    # ------------------------------------------------------------ events: consequences
    class CardToHand(Derived, Aggregate.Event, Consequence):
        """``hand`` is ``shared`` (the initial hand) or ``sequence`` (BDL-2)."""

        hand: str
        card: str
        index: int
        total: int
        soft: bool
        rule: str

    class HandsOpened(Derived, Aggregate.Event, Consequence):
        seated: int
        rule: str

    class InsuranceWindowOpened(Derived, Aggregate.Event, Consequence):
        seated: int
        rule: str

    # ----------------------------------------------------------------------- creation
    @classmethod
    def opened_by(cls, command: C.Start) -> SharedHand:
        """The shared hand ``command`` opens (its ``Started`` fact decided by the core)."""
        return cls._create(cls.Started, **G.start(command).fields)

    def execute(self, command: C.Command) -> list[Fact]:
        """Decide ``command`` with the shared-hand decider and record its facts."""
        return self.record(G.decide(self._state, command))

    # ------------------------------------------------------------------------ queries
    @property
    def state(self) -> SharedState:
        return self._state

    cancelling = Delegated[bool]()
    seated = Delegated[int | None]()
    played = Delegated[bool]()
    initial_dealt = Delegated[bool]()
    dealer_wants_card = Delegated[bool]()

    @property
    def initial(self) -> list[Card]:
        """The shared initial hand (BDL-1)."""
        return list(self._state.initial)

    @property
    def sequence(self) -> list[Card]:
        """The cards the dealer revealed after the deal, in order (BDL-2)."""
        return list(self._state.sequence)

    @property
    def dealer(self) -> list[Card]:  # type: ignore[override]
        return list(self._state.dealer)

    @property
    def dealer_final(self) -> bool:
        """The dealer's hand is complete: settlement may begin."""
        return self._state.dealer_hand.final

    @property
    def upcard(self) -> Card | None:
        return play.upcard(self._state.dealer, self._state.rules)

    def dealer_visible(self) -> list[str]:
        return self._state.dealer_visible()

    def own_card_need(self) -> dict[str, str] | None:
        """The next card this aggregate itself knows it needs (initial deal, dealer's draws).
        A sequence card is needed when a player's hand demands it: the caller knows that."""
        return self._state.own_card_need()

    def check_open(self, request_id: str | None = None) -> bool:
        """Common guard; False when ``request_id`` was already applied here (idempotent)."""
        return self._state.check_open(request_id)

    # ----------------------------------------------------------------------- commands
    def open_hands(self, seated: int) -> None:
        """The initial deal is complete and ``seated`` players got their hand (BDL-1): open
        the insurance window on an ace (INS-1), check a ten-value upcard at once (D5), or
        start play."""
        self.execute(C.Step(what="open_hands", seated=seated))

    def complete_window(self) -> None:
        """Every seated player decided: the window closes without waiting for the timer."""
        self.execute(C.Step(what="complete_window"))

    def dealer_turn(self) -> None:
        """Every player's hands are complete (PHASE-5): the dealer shows the hole card."""
        self.execute(C.Step(what="dealer_turn"))

    def dealer_stand(self) -> None:
        """BDL-3 / D10: the dealer's hand is complete by DEALER-1."""
        self.execute(C.Step(what="dealer_stand"))

    def round_settled(self) -> None:
        """Every wager of every player is settled (PHASE-6)."""
        self.execute(C.Step(what="settled"))

    def round_cancelled(self) -> None:
        """Every player's stakes are refunded: the round is closed (ERR-1)."""
        self.execute(C.Step(what="cancelled"))


__all__ = [
    "BETTING",
    "CANCELLED",
    "DEALER",
    "DEALER_TARGET",
    "DEALING",
    "INITIAL_PLAN",
    "INSURANCE",
    "PLAYING",
    "SEQUENCE",
    "SETTLED",
    "SHARED",
    "SharedHand",
]

"""The Round aggregate: one classic round (seats or boxes dealt in turn), recorded event by
event.

The round is a thin recorder of what the game core decides (``domain.game.table``): each
command builds the core's input, the core decides the facts (the input and every consequence
the rules derive), and the round records each fact as the nested event class of the same name.
Rebuilding a round folds its events through the same ``evolve`` (``domain.game.table_state``)
that the decision used, so the state a command is decided on is the state the events record.

Invariants:

* A public command is decided before anything is recorded: a refused command raises a
  :class:`~domain.errors.DomainError` and records nothing.
* Event bodies only apply state (``evolve``); they never check a rule, so an old round stays
  readable when a rule changes.
* Every input event carries its actor, the client's time and request id; every consequence
  names the rule ID that produced it (``PHASE-n`` cites the numbered "Round phases" of
  RULES.md).
* Cards reach hands in the order the rules deal them: the round says which card it needs next
  (:attr:`Round.card_needed`) and refuses any card when it needs none.
* Every wager is settled exactly once (or refunded on cancellation, ERR-1); a settled or
  cancelled round refuses every command.
* Money is exact ``Decimal`` in state and decimal strings in events (MONEY-1).

A Round plays the variants dealt hand by hand to seats or boxes (deluxe, multihand, lucky7,
european). It refuses shared-hand rules: a boundless round is a ``SharedHand`` and one
``Participation`` per player (``domain.boundless``, BDL-1).

The round never touches a wallet: the application turns the stake and settlement events into
wallet movements and saves both in one transaction (see ``domain.application``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.domain import Aggregate

from domain.events import Consequence, Decided, Derived, Input, Requested
from domain.game import commands as C
from domain.game import table as T
from domain.game import table_state as TS
from domain.game.facts import Fact
from domain.game.hands import Hand
from domain.game.table_state import TableState
from domain.game.wagers import CLASSIC_BET_RULES, Wager
from domain.recorder import Delegated, HandsRecorder, Opening, RoundRecorder

DEALER_TARGET = TS.DEALER_TARGET
Json = dict[str, Any]


class Round(RoundRecorder, HandsRecorder):
    """One round: see the module docstring for its invariants."""

    begin = staticmethod(TS.started)
    evolve = staticmethod(TS.evolve)
    if TYPE_CHECKING:
        _state: TableState  # folded from the events by ``table_state.evolve``

    # ------------------------------------------------------------------ events: inputs
    class Started(Requested, Opening, Aggregate.Created, Input):
        """The round opens under a rules key, on a shoe."""

        seats: dict[str, str]

    class BetPlaced(Requested, Aggregate.Event, Input):
        #: The rule each kind of bet is placed under (its stake's debit cites it).
        BET_RULES: ClassVar[dict[str, str]] = CLASSIC_BET_RULES

        wager_id: str
        player: str
        kind: str
        spot: str | None
        stake: str
        requested: str
        balance_seen: str
        follow_double: bool
        follow_split: bool

    class SeatBetMirrored(Derived, Aggregate.Event, Consequence):
        """DLX-2: the seat bet of a two-seat player, mirrored or split onto the other seat."""

        wager_id: str
        player: str
        spot: str
        stake: str
        mode: str
        rule: str

    class DecisionPreselected(Requested, Aggregate.Event, Input):
        """PRE-1: a decision chosen (or changed) before the hand's turn starts."""

        player: str
        hand: str
        action: str
        options: list[str]

    class DecisionMade(Requested, Decided, Aggregate.Event, Input):
        balance_seen: str | None
        others_balance: dict[str, str]

    class DecisionTimedOut(Requested, Aggregate.Event, Input):
        player: str
        hand: str

    class PlayerDisconnected(Requested, Aggregate.Event, Input):
        player: str

    # ------------------------------------------------------------ events: consequences
    class HandOpened(Derived, Aggregate.Event, Consequence):
        hand: str
        player: str
        spot: str
        rule: str

    class CardToHand(Derived, Aggregate.Event, Consequence):
        hand: str
        card: str
        total: int
        soft: bool
        rule: str

    class InsuranceWindowOpened(Derived, Aggregate.Event, Consequence):
        hands: list[str]
        rule: str

    class PaymentReversed(Derived, Aggregate.Event, Consequence):
        wager_id: str
        player: str
        amount: str
        reverses: str  # the result whose payment is taken back (e.g. even_money)
        rule: str

    class BehindFollowed(Derived, Aggregate.Event, Consequence):
        """What a bet behind did when its seat doubled or split (DLX-7, DLX-8)."""

        wager_id: str
        player: str
        hand: str
        seat_action: str
        followed: bool
        reason: str
        balance_seen: str
        needed: str
        rule: str

    # ----------------------------------------------------------------------- creation
    def __init__(
        self,
        table_id: str,
        round_number: int,
        rules_key: str,
        shoe_id: str,
        shoe_round: int,
        production: bool,
        seats: dict[str, str],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        """``Round(**fields)`` records a ``Started`` event with these fields, unchecked (use
        :meth:`start`); the state begins in ``Started.apply``."""

    @classmethod
    def opened_by(cls, command: C.Start) -> Round:
        """The round ``command`` opens (its ``Started`` fact decided by the core)."""
        return cls._create(cls.Started, **T.start(command).fields)

    # ------------------------------------------------------------------- recording
    def execute(self, command: C.Command) -> list[Fact]:
        """Decide ``command`` on the round's state and record every fact decided (nothing when
        it is refused, or a repeat)."""
        return self.record(T.decide(self._state, command))

    # ------------------------------------------------------------------------ queries
    @property
    def state(self) -> TableState:
        return self._state

    seats = Delegated[Mapping[str, str]]()
    wagers = Delegated[Mapping[str, Wager]]()
    players = Delegated[tuple[str, ...]]()
    window_hands = Delegated[tuple[str, ...]]()
    disconnected = Delegated[frozenset[str]]()

    @property
    def hands(self) -> dict[str, Hand]:
        return {h.id: h for h in self._state.hands}

    def player_hands(self, player: str) -> list[Hand]:
        return TS.player_hands(self._state, player)

    def due_hands(self) -> list[Hand]:
        """The hand whose turn it is (at most one: hands play one at a time in seat/box order)."""
        return TS.due_hands(self._state)

    @property
    def card_needed(self) -> dict[str, str] | None:
        """What the next card from the shoe is for, or None when the round needs no card."""
        return TS.card_needed(self._state)

    def options_for(self, hand: Hand) -> list[str]:
        return TS.options_for(self._state, hand)

    def view(self) -> Json:
        """A plain-JSON picture of the table now (for the API, the CLI and replays)."""
        return TS.view(self._state, str(self.id))

    def seats_with_bets(self) -> list[int]:
        """Seats of the table's seat map that carry a seat bet (reported back to the Table)."""
        return TS.seats_with_bets(self._state)

    def preselection_due(self) -> tuple[str, str, str] | None:
        """(player, hand, action) of a PRE-1 choice whose hand's turn has just started."""
        return TS.preselection_due(self._state)

    def iter_wagers(self) -> Iterator[Wager]:
        return iter(self._state.wagers.values())

    # ----------------------------------------------------------------------- commands

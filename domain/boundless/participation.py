"""The Participation aggregate: one player in one boundless round.

One aggregate per (round, player), id uuid5 of the round id and the player, created by the
player's first accepted bet. It records what the game core's participation decider decides
(``domain.game.player``), everything that is that player's own:

* their bets: a main bet (a *seated* player, BDL-1) and side bets, which need no main bet
  (BDL-1) and are withdrawn after their round of the shoe (BDL-AVAIL);
* their decisions, each with actor, client time, request id, the options open and the balance
  seen; decision timers that expired and a disconnection (AUTO-1, DISC-1);
* their hands, derived from the shared initial cards, the shared sequence and their own
  decisions (D9, ``domain.game.sequence``): the recorded hands can be recomputed from the
  sequence and the decision log alone (:attr:`Participation.log`); FUNDS-2 turns a split or
  double without balance into a hit (11 or less) or a stand;
* the settlement of each of their wagers (main, split, double, insurance, side bets) once the
  dealer's hand is final, or their refund when the round is cancelled (ERR-1).

A participation never writes to the :class:`~domain.boundless.shared.SharedHand`; its commands
take the shared hand as read-only input (phase, cards, sequence). So two players' decisions
touch disjoint aggregates (and their own wallets): they never conflict.

When a hand needs the next card of the sequence and the dealer has not revealed it yet, the
participation *waits*: :attr:`Participation.hands` has a due hand owed a card and
:meth:`Participation.need` reports the sequence index it waits for (``("card", i)``). The
application keeps those needs in its index, so the dealer knows which card to reveal without
loading every participation, and each waiting participation takes the card with
:meth:`Participation.sync` once it is revealed.

Invariants (as in :mod:`domain.round`): a command is decided before anything is recorded;
event bodies only apply state; each wager is settled exactly once, or refunded; money is exact
``Decimal`` in state and decimal strings in events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.boundless.shared import SharedHand
from domain.events import Consequence, Decided, Derived, Input, Requested
from domain.game import commands as C
from domain.game import player as P
from domain.game.facts import Fact
from domain.game.hands import Hand
from domain.game.player import NOTHING, Need, PlayerState, check_player_id
from domain.game.sequence import Entry, PlayerHands
from domain.game.wagers import BOUNDLESS_BET_RULES, Wager
from domain.ids import stable_id
from domain.kept import KeptValues
from domain.recorder import Delegated, HandsRecorder
from domain.rules.base import Rules

Json = dict[str, Any]


def participation_id(round_id: str | UUID, player: str) -> UUID:
    """uuid5 of the round id and the player."""
    return stable_id("participation", str(round_id), player)


#: The round ids' texts a participation's state names, one string a round (a few kept).
_ROUND_TEXTS: KeptValues[UUID, UUID, str] = KeptValues(str, most=64)


def round_text(round_id: UUID) -> str:
    """``str(round_id)``, one string for every participation of the round while kept: each
    participation's state held its own copy of the round id's text, about 80 bytes of every
    player a boundless round holds (docs/performance-history.md ``bwmem``)."""
    return _ROUND_TEXTS.kept(round_id, round_id)


#: The steps a participation takes, one frozen command each (made once, not once a step)
_OPEN, _SYNC = C.Step(what="open"), C.Step(what="sync")
_SETTLE, _REFUND = C.Step(what="settle"), C.Step(what="refund")


class Participation(HandsRecorder):
    """One player's part in one boundless round (see the module docstring)."""

    begin = staticmethod(P.joined)
    evolve = staticmethod(P.evolve)
    if TYPE_CHECKING:
        _state: PlayerState

    # ------------------------------------------------------------------ events: inputs
    class Joined(Requested, Aggregate.Created, Input):
        round_id: str
        table_id: str
        round_number: int
        player: str
        rules_key: str
        shoe_round: int

    class BetPlaced(Requested, Aggregate.Event, Input):
        #: The rule each kind of bet is placed under (its stake's debit cites it).
        BET_RULES: ClassVar[dict[str, str]] = BOUNDLESS_BET_RULES

        wager_id: str
        player: str
        kind: str
        stake: str
        balance_seen: str

    class DecisionMade(Requested, Decided, Aggregate.Event, Input):
        balance_seen: str

    class DecisionTimedOut(Requested, Aggregate.Event, Input):
        player: str
        hand: str
        window: bool

    class PlayerDisconnected(Requested, Aggregate.Event, Input):
        player: str
        window: bool

    # ------------------------------------------------------------ events: consequences
    class HandOpened(Derived, Aggregate.Event, Consequence):
        hand: str
        player: str
        cards: list[str]
        total: int
        soft: bool
        rule: str

    class CardToHand(Derived, Aggregate.Event, Consequence):
        hand: str
        card: str
        index: int
        total: int
        soft: bool
        rule: str

    class PaymentReversed(Derived, Aggregate.Event, Consequence):
        """``result`` is the settlement whose payment is taken back."""

        wager_id: str
        player: str
        result: str
        amount: str
        rule: str

    # ----------------------------------------------------------------------- creation
    @staticmethod
    def create_id(round_id: str, player: str, **_: Any) -> UUID:
        return participation_id(round_id, player)

    @classmethod
    def join(cls, shared: SharedHand, player: str, **ids: Any) -> Participation:
        """A new participation (call :meth:`place_bet` on it before saving it); ``ids``: the
        first bet's ``actor``, ``request_id``, ``client_time``."""
        return cls.opened_by(shared, C.Join(round_id=round_text(shared.id), player=player, **ids))

    @classmethod
    def opened_by(cls, shared: SharedHand, command: C.Join) -> Participation:
        """The participation ``command`` opens (its ``Joined`` fact decided by the core)."""
        return cls._create(cls.Joined, **P.join(shared.state, command).fields)

    @classmethod
    def opened_kept(cls, shared: SharedHand, command: C.Join) -> Participation:
        """:meth:`opened_by` for a participation that is never saved, re-executed to be
        compared (``Recorder.keep_facts``): its ``Joined`` is kept as a fact, as every later
        fact is, instead of being built as the library's event (``_create``: the event's
        dataclass ``__init__``, ``mutate``'s topic look-up and keyword filtering, a tenth of
        a participation's re-execution). The same id, version, state and kept facts as
        ``opened_by`` followed by ``keep_facts`` (its ``derived`` events: the same classes
        and payloads)."""
        fact = P.join(shared.state, command)
        p = cls.__new__(cls)
        p.__base_init__(
            cls.create_id(**fact.fields), cls.INITIAL_VERSION, cls.Joined.create_timestamp()
        )
        p._state = cls.begin(fact.fields)
        p.keep_facts()
        assert p._facts is not None
        p._facts.append(fact)
        return p

    def execute(self, shared: SharedHand, command: C.Command) -> list[Fact]:
        """Decide ``command`` given the shared hand and record its facts (none for a repeat)."""
        return self.record(P.decide(self._state, shared.state, command))

    def record_input(self, fact: Fact) -> None:
        """Record a stored input as it was accepted, undecided (verification re-records a bet
        placed after betting closed, a race between processes, before refunding it)."""
        self.record_fact(fact)

    # ------------------------------------------------------------------------ queries
    @property
    def state(self) -> PlayerHands | None:
        """The player's hands (None until the hand is opened after the deal)."""
        return self._state.hands

    @property
    def game(self) -> PlayerState:
        """The participation's whole state (the core's immutable state object)."""
        return self._state

    round_id = Delegated[str]()
    table_id = Delegated[str]()
    round_number = Delegated[int]()
    player = Delegated[str]()
    rules_key = Delegated[str]()
    shoe_round = Delegated[int]()
    rules = Delegated[Rules]()
    wagers = Delegated[Mapping[str, Wager]]()
    log = Delegated[tuple[Entry, ...]]()
    window_decided = Delegated[bool]()
    disconnected = Delegated[bool]()
    seated = Delegated[bool]()

    @property
    def hands(self) -> tuple[Hand, ...]:
        return () if self._state.hands is None else self._state.hands.hands

    @property
    def cursor(self) -> int:
        return 0 if self._state.hands is None else self._state.hands.cursor

    def has_seen(self, request_id: str | None) -> bool:
        return self._state.has_seen(request_id)

    def need(self, shared: SharedHand) -> Need:
        """What this participation waits for, given the shared hand's phase and sequence."""
        return P.need(self._state, shared.state)

    def options_for(self, hand: Hand, shared: SharedHand) -> list[str]:
        """The decisions open on ``hand`` now (empty when none)."""
        return P.options_for(self._state, hand, shared.state)

    # ----------------------------------------------------------------------- commands
    def place_bet(self, shared: SharedHand, **bet: Any) -> str | None:
        """Decide a bet of this player (``commands.PlaceBet``'s fields but the player) and
        record it; returns its wager id (None for a repeat)."""
        facts = self.execute(shared, C.PlaceBet(player=self.player, **bet))
        return str(facts[0].fields["wager_id"]) if facts else None

    def open_hand(self, shared: SharedHand) -> None:
        """BDL-1: after the initial deal a seated player's hand holds the shared cards."""
        self.execute(shared, _OPEN)

    def sync(self, shared: SharedHand) -> bool:
        """Take every step the hands can take by themselves now: sequence cards already
        revealed (BDL-2, D9), automatic stands (HAND-1, SCORE-2), AUTO-1. True if any."""
        return bool(self.execute(shared, _SYNC))

    # ------------------------------------------------------------------- settlement
    def settle(self, shared: SharedHand, step: C.Step = _SETTLE) -> None:
        """Settle every unsettled wager against the dealer's final hand (OUT-1..4, INS-1,
        BDL-PAIR, BDL-BUST, BDL-TRIO, BDL-POKER). ``step``: the round's settle step, with
        what settling reads of the cards made once for every player (``P.settle_step``)."""
        self.execute(shared, step)

    def refund_all(self, shared: SharedHand) -> None:
        """ERR-1: every stake back, and any payment already made taken back first."""
        self.execute(shared, _REFUND)

    def void(self, shared: SharedHand, wager_ids: Sequence[str]) -> None:
        """A bet recorded after betting closed (a concurrent race) is refunded (PHASE-1)."""
        self.execute(shared, C.Step(what="void", wagers=tuple(wager_ids)))


__all__ = ["NOTHING", "Need", "Participation", "check_player_id", "participation_id"]

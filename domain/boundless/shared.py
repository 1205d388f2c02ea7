"""The SharedHand aggregate: what every player of one boundless round has in common.

One aggregate per boundless round, with the round's id (uuid5 of table and round number, as a
:class:`~domain.round.Round`), holding the cards and the phases that are the same for everyone:

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
it). The application (``domain.boundless.service``) moves it on when the players' state says so
(every hand complete: the dealer's turn; every wager settled: ``RoundSettled``).

Invariants (as in :mod:`domain.round`): a command validates before it triggers anything; event
bodies only apply state; inputs carry actor, client time and request id; every consequence
names its rule; a settled or cancelled round refuses every command.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain import play
from domain.cards import Card
from domain.errors import RoundClosed, WrongOrder, refuse_reused, require_reason
from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.rules import get_rules
from domain.rules.base import Rules
from domain.scoring import is_blackjack, score

BETTING, DEALING, INSURANCE, PLAYING, DEALER, SETTLED, CANCELLED = (
    "betting",
    "dealing",
    "insurance",
    "playing",
    "dealer",
    "settled",
    "cancelled",
)
SHARED, DEALER_TARGET, SEQUENCE = "shared", "dealer", "sequence"
#: RULES.md "Round phases" 2 with one shared hand and a peeked hole card: the shared hand's
#: first card, the dealer's upcard, the shared hand's second card, the hole card.
INITIAL_PLAN = (SHARED, DEALER_TARGET, SHARED, DEALER_TARGET)
Json = dict[str, Any]


class SharedHand(Aggregate):
    """One boundless round's shared cards and phases (see the module docstring)."""

    # ------------------------------------------------------------------ events: inputs
    class Started(Aggregate.Created, Input):
        table_id: str
        round_number: int
        rules_key: str
        shoe_id: str
        shoe_round: int
        production: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class BettingClosed(Aggregate.Event, Input):
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CardDealt(Aggregate.Event, Input):
        card: str
        shoe_position: int | None
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class InsuranceWindowClosed(Aggregate.Event, Input):
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class Paused(Aggregate.Event, Input):
        reason: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class Resumed(Aggregate.Event, Input):
        reason: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class CancelRequested(Aggregate.Event, Input):
        reason: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    # ------------------------------------------------------------ events: consequences
    class CardToHand(Aggregate.Event, Consequence):
        """``hand`` is ``shared`` (the initial hand) or ``sequence`` (BDL-2)."""

        hand: str
        card: str
        index: int
        total: int
        soft: bool
        rule: str

    class CardToDealer(Aggregate.Event, Consequence):
        card: str
        face_up: bool
        rule: str

    class HandsOpened(Aggregate.Event, Consequence):
        seated: int
        rule: str

    class InsuranceWindowOpened(Aggregate.Event, Consequence):
        seated: int
        rule: str

    class InsuranceWindowCompleted(Aggregate.Event, Consequence):
        rule: str

    class DealerChecked(Aggregate.Event, Consequence):
        blackjack: bool
        rule: str

    class HoleCardRevealed(Aggregate.Event, Consequence):
        card: str
        total: int
        rule: str

    class PlayStarted(Aggregate.Event, Consequence):
        rule: str

    class DealerTurnStarted(Aggregate.Event, Consequence):
        rule: str

    class DealerStood(Aggregate.Event, Consequence):
        total: int
        reason: str
        rule: str

    class RoundSettled(Aggregate.Event, Consequence):
        dealer: list[str]
        dealer_total: int
        rule: str

    class RoundCancelled(Aggregate.Event, Consequence):
        reason: str
        rule: str

    # ----------------------------------------------------------------------- creation
    @staticmethod
    def create_id(table_id: str, round_number: int, **_: Any) -> UUID:
        """The round's id: uuid5 of table and round number (the same as a Round's)."""
        return stable_id("round", table_id, round_number)

    @event(Started)
    def __init__(
        self,
        table_id: str,
        round_number: int,
        rules_key: str,
        shoe_id: str,
        shoe_round: int,
        production: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.table_id = table_id
        self.round_number = round_number
        self.rules_key = rules_key
        self.shoe_id = shoe_id
        self.shoe_round = shoe_round
        self.production = production
        self.phase = BETTING
        self.paused = False
        self.cancelling = False
        self.initial: list[Card] = []
        self.dealer: list[Card] = []
        self.sequence: list[Card] = []
        self.seated: int | None = None  # known once the hands are opened
        self.hole_revealed = False
        self.dealer_blackjack = False
        self.dealer_final = False  # the dealer's hand is complete: settlement may begin
        self.played = False  # play started (PHASE-4); not after END-1 at the dealer's check
        self.request_ids: set[str] = set()
        self._seen(request_id)

    @classmethod
    def start(
        cls,
        *,
        table_id: str,
        round_number: int,
        rules_key: str,
        shoe_id: str,
        shoe_round: int = 1,
        production: bool = True,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> SharedHand:
        rules = get_rules(rules_key)
        if not rules.shared_hand:
            raise WrongOrder(f"{rules.variant} has no shared hand")
        if round_number < 1 or shoe_round < 1:
            raise WrongOrder("round_number and shoe_round must be 1 or more")
        return cls(
            table_id=table_id,
            round_number=round_number,
            rules_key=rules.key,
            shoe_id=shoe_id,
            shoe_round=shoe_round,
            production=production,
            actor=actor,
            request_id=request_id,
            client_time=client_time,
        )

    # ------------------------------------------------------------------------ queries
    @property
    def rules(self) -> Rules:
        return get_rules(self.rules_key)

    @property
    def finished(self) -> bool:
        return self.phase in (SETTLED, CANCELLED)

    @property
    def initial_dealt(self) -> bool:
        return len(self.initial) + len(self.dealer) >= len(INITIAL_PLAN)

    @property
    def upcard(self) -> Card | None:
        return play.upcard(self.dealer, self.rules)

    def dealer_visible(self) -> list[str]:
        hidden = 1 - self.rules.upcard_index
        return [
            c.code
            for i, c in enumerate(self.dealer)
            if self.hole_revealed or self.finished or i != hidden
        ]

    @property
    def dealer_wants_card(self) -> bool:
        """DEALER-1 in the dealer's turn (D10: whatever the players did, unless a BJ)."""
        if self.phase != DEALER or self.dealer_final:
            return False
        if is_blackjack(self.dealer[:2], split=False):
            return False
        return play.dealer_must_draw(self.dealer)

    def own_card_need(self) -> dict[str, str] | None:
        """The next card this aggregate itself knows it needs (initial deal, dealer's draws).
        A sequence card is needed when a player's hand demands it: the caller knows that."""
        if self.paused or self.finished or self.cancelling:
            return None
        if self.phase == DEALING and not self.initial_dealt:
            return {"for": INITIAL_PLAN[len(self.initial) + len(self.dealer)]}
        if self.dealer_wants_card:
            return {"for": DEALER_TARGET}
        return None

    # ----------------------------------------------------------------------- commands
    def check_open(self, request_id: str | None = None) -> bool:
        """Common guard: the round takes commands, and ``request_id`` is new in its shared hand
        (a reused one is refused, :func:`~domain.errors.refuse_reused`). Always True."""
        if self.finished:
            raise RoundClosed(f"round {self.table_id}#{self.round_number} is {self.phase}")
        if self.cancelling:
            raise RoundClosed(
                f"round {self.table_id}#{self.round_number} is being cancelled (ERR-1)",
                rule="ERR-1",
            )
        if self.paused:
            raise RoundClosed(
                f"round {self.table_id}#{self.round_number} is paused (ERR-1): resume or cancel",
                rule="ERR-1",
            )
        refuse_reused(request_id, self.request_ids, f"round {self.table_id}#{self.round_number}")
        return True

    def close_betting(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        if not self.check_open(request_id):
            return
        if self.phase != BETTING:
            raise WrongOrder("betting is already closed")
        self._betting_closed(actor=actor, request_id=request_id, client_time=client_time)

    @event(BettingClosed)
    def _betting_closed(
        self, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.phase = DEALING

    def deal(
        self,
        card: str | Card,
        *,
        demand: int | None = None,
        shoe_position: int | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> str:
        """Record the next card out of the shoe and say where it went (returns the target).

        During play a card goes into the sequence only when ``demand`` (the sequence index some
        player's hand waits for, known from the players' state) is the next index (BDL-2)."""
        c = card if isinstance(card, Card) else Card.parse(card)
        if not self.check_open(request_id):
            return ""
        need = self.own_card_need()
        target = need["for"] if need is not None else None
        if target is None and self.phase == PLAYING and demand == len(self.sequence):
            target = SEQUENCE
        if target is None:
            raise WrongOrder(
                f"the round needs no card now (phase {self.phase}); {c.code} was not recorded"
            )
        self._card_dealt(
            card=c.code,
            shoe_position=shoe_position,
            actor=actor or {"kind": "dealer", "id": self.table_id},
            request_id=request_id,
            client_time=client_time,
        )
        if target == SHARED:
            s = score([*self.initial, c])
            self._card_to_hand(
                hand=SHARED, card=c.code, index=len(self.initial), total=s.total, soft=s.soft,
                rule="BDL-1",
            )  # fmt: skip
        elif target == SEQUENCE:
            self._card_to_hand(
                hand=SEQUENCE, card=c.code, index=len(self.sequence), total=0, soft=False,
                rule="BDL-2",
            )  # fmt: skip
        elif self.phase == DEALING:
            face_up = len(self.dealer) == self.rules.upcard_index
            self._card_to_dealer(card=c.code, face_up=face_up, rule="PHASE-2")
        else:
            self._card_to_dealer(card=c.code, face_up=True, rule="DEALER-1")
        return target

    @event(CardDealt)
    def _card_dealt(
        self,
        card: str,
        shoe_position: int | None,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)

    @event(CardToHand)
    def _card_to_hand(
        self, hand: str, card: str, index: int, total: int, soft: bool, rule: str
    ) -> None:
        (self.initial if hand == SHARED else self.sequence).append(Card.parse(card))

    @event(CardToDealer)
    def _card_to_dealer(self, card: str, face_up: bool, rule: str) -> None:
        self.dealer.append(Card.parse(card))

    def open_hands(self, seated: int) -> None:
        """The initial deal is complete and ``seated`` players got their hand (BDL-1): open
        the insurance window on an ace (INS-1), check a ten-value upcard at once (D5), or
        start play."""
        if self.phase != DEALING or not self.initial_dealt or self.seated is not None:
            raise WrongOrder("hands open once, after the initial deal")
        self._hands_opened(seated=seated, rule="PHASE-2")
        up = self.upcard
        assert up is not None
        rules = self.rules
        if up.is_ace and rules.insurance and seated > 0:
            self._insurance_window_opened(seated=seated, rule="INS-1")
            return
        if rules.peeks and up.is_ten_value:
            self._peek()
            if self.dealer_final:
                return
        self._play_started(rule="PHASE-4")

    @event(HandsOpened)
    def _hands_opened(self, seated: int, rule: str) -> None:
        self.seated = seated

    @event(InsuranceWindowOpened)
    def _insurance_window_opened(self, seated: int, rule: str) -> None:
        self.phase = INSURANCE

    def complete_window(self) -> None:
        """Every seated player decided: the window closes without waiting for the timer."""
        if self.phase != INSURANCE:
            raise WrongOrder("no insurance window is open")
        self._insurance_window_completed(rule="INS-1")
        self._after_window()

    @event(InsuranceWindowCompleted)
    def _insurance_window_completed(self, rule: str) -> None:
        pass

    def close_window(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The insurance timer ran out: every undecided player declines (INS-1)."""
        if not self.check_open(request_id):
            return
        if self.phase != INSURANCE:
            raise WrongOrder("no insurance window is open")
        self._insurance_window_closed(actor=actor, request_id=request_id, client_time=client_time)
        self._after_window()

    @event(InsuranceWindowClosed)
    def _insurance_window_closed(
        self, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)

    def _after_window(self) -> None:
        if self.rules.peeks:
            self._peek()
            if self.dealer_final:
                return
        self._play_started(rule="PHASE-4")

    def _peek(self) -> None:
        """D5: the dealer checks the hole card; END-1 ends the round on a dealer BJ."""
        bj = is_blackjack(self.dealer[:2], split=False)
        self._dealer_checked(blackjack=bj, rule="D5")
        if bj:
            hole = self.dealer[1 - self.rules.upcard_index]
            self._hole_card_revealed(card=hole.code, total=21, rule="END-1")

    @event(DealerChecked)
    def _dealer_checked(self, blackjack: bool, rule: str) -> None:
        self.dealer_blackjack = blackjack
        if blackjack:  # END-1: no further cards; settlement follows
            self.phase = DEALER
            self.dealer_final = True

    @event(HoleCardRevealed)
    def _hole_card_revealed(self, card: str, total: int, rule: str) -> None:
        self.hole_revealed = True

    @event(PlayStarted)
    def _play_started(self, rule: str) -> None:
        self.phase = PLAYING
        self.played = True

    def dealer_turn(self) -> None:
        """Every player's hands are complete (PHASE-5): the dealer shows the hole card."""
        if self.phase != PLAYING:
            raise WrongOrder(f"the dealer's turn follows play, not phase {self.phase}")
        self._dealer_turn_started(rule="PHASE-5")
        if self.rules.peeks:
            hole = self.dealer[1 - self.rules.upcard_index]
            self._hole_card_revealed(card=hole.code, total=score(self.dealer).total, rule="PHASE-5")

    @event(DealerTurnStarted)
    def _dealer_turn_started(self, rule: str) -> None:
        self.phase = DEALER

    def dealer_stand(self) -> None:
        """BDL-3 / D10: the dealer's hand is complete by DEALER-1."""
        if self.phase != DEALER or self.dealer_final or self.dealer_wants_card:
            raise WrongOrder("the dealer's hand is not ready to stand")
        s = score(self.dealer)
        bj = is_blackjack(self.dealer, split=False)
        reason = "blackjack" if bj else ("bust" if s.bust else "stands")
        self._dealer_stood(total=s.total, reason=reason, rule="DEALER-1")

    @event(DealerStood)
    def _dealer_stood(self, total: int, reason: str, rule: str) -> None:
        self.dealer_final = True
        if len(self.dealer) == 2 and is_blackjack(self.dealer, split=False):
            self.dealer_blackjack = True

    def round_settled(self) -> None:
        """Every wager of every player is settled (PHASE-6)."""
        if self.finished or self.cancelling:
            raise WrongOrder(f"round is {self.phase}")
        self._round_settled(
            dealer=[c.code for c in self.dealer],
            dealer_total=score(self.dealer).total if self.dealer else 0,
            rule="PHASE-6",
        )

    @event(RoundSettled)
    def _round_settled(self, dealer: list[str], dealer_total: int, rule: str) -> None:
        self.phase = SETTLED

    # ------------------------------------------------------------ supervisor (ERR-1)
    def pause(
        self,
        *,
        reason: str,
        actor: dict[str, str],
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        if self.finished or self.cancelling:
            raise RoundClosed(f"round is {self.phase}")
        if self.paused:
            raise WrongOrder("round is already paused")
        require_reason(reason)
        self._paused(reason=reason, actor=actor, request_id=request_id, client_time=client_time)

    @event(Paused)
    def _paused(
        self, reason: str, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.paused = True

    def resume(
        self,
        *,
        reason: str,
        actor: dict[str, str],
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        if self.finished or self.cancelling:
            raise RoundClosed(f"round is {self.phase}")
        if not self.paused:
            raise WrongOrder("round is not paused")
        require_reason(reason)
        self._resumed(reason=reason, actor=actor, request_id=request_id, client_time=client_time)

    @event(Resumed)
    def _resumed(
        self, reason: str, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.paused = False

    def cancel(
        self,
        *,
        reason: str,
        actor: dict[str, str],
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """ERR-1: the round will refund every stake of every player, then close."""
        if self.finished:
            raise RoundClosed(f"round is {self.phase}: it can no longer be cancelled")
        if self.cancelling:
            raise WrongOrder("the round is already being cancelled", rule="ERR-1")
        require_reason(reason)
        self._cancel_requested(
            reason=reason, actor=actor, request_id=request_id, client_time=client_time
        )

    @event(CancelRequested)
    def _cancel_requested(
        self, reason: str, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.cancelling = True
        self.cancel_reason = reason

    def round_cancelled(self) -> None:
        """Every player's stakes are refunded: the round is closed (ERR-1)."""
        if not self.cancelling or self.finished:
            raise WrongOrder("the round is not being cancelled")
        self._round_cancelled(reason=self.cancel_reason, rule="ERR-1")

    @event(RoundCancelled)
    def _round_cancelled(self, reason: str, rule: str) -> None:
        self.phase = CANCELLED
        self.paused = False
        self.cancelling = False

    # ------------------------------------------------------------------------ helpers
    def _seen(self, request_id: str | None) -> None:
        if request_id is not None:
            self.request_ids.add(request_id)

"""The Participation aggregate: one player in one boundless round.

One aggregate per (round, player), id uuid5 of the round id and the player, created by the
player's first accepted bet. It holds everything that is that player's own:

* their bets: a main bet (a *seated* player, BDL-1) and side bets, which need no main bet
  (BDL-1) and are withdrawn after their round of the shoe (BDL-AVAIL);
* their decisions, each with actor, client time, request id, the options open and the balance
  seen; decision timers that expired and a disconnection (AUTO-1, DISC-1);
* their hands, derived from the shared initial cards, the shared sequence and their own
  decisions by :mod:`domain.boundless.hands` (D9): the ``@event`` bodies apply the same pure
  transitions, so the recorded hands can be recomputed from the sequence and the decision log
  alone (:attr:`Participation.log`); FUNDS-2 turns a split or double without balance into a hit
  (11 or less) or a stand;
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

Invariants (as in :mod:`domain.round`): commands validate and raise a domain error before
triggering anything; event bodies only apply state; each wager is settled exactly once, or
refunded; money is exact ``Decimal`` in state and decimal strings in events.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain import play
from domain.boundless import hands as H
from domain.boundless.shared import (
    BETTING,
    DEALER,
    DEALING,
    INSURANCE,
    PLAYING,
    SharedHand,
)
from domain.cards import Card
from domain.errors import (
    BetLimit,
    BettingClosed,
    HandComplete,
    IllegalAction,
    InsufficientFunds,
    OutOfTurn,
    SideBetUnavailable,
    UnknownPlayer,
    refuse_reused,
)
from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.money import ZERO, Ratio, half_down, money_str, parse_money, pay
from domain.rules import get_rules
from domain.rules.base import Rules
from domain.scoring import is_blackjack, score
from domain.settlement import wager_settled_fields
from domain.sidebets import (
    SideBetOutcome,
    evaluate_bust_bonus,
    evaluate_lucky_trio,
    evaluate_pair,
    evaluate_poker_trio,
)

RESERVED_NAMES = frozenset({"dealer", "shared", "sequence"})
HAND_KINDS = ("main", "split", "double")
SIDE_KINDS = ("pair", "bust", "trio", "poker")
Json = dict[str, Any]
Need = tuple[str, int]
"""What a participation waits for: ``("none", 0)``, ``("open", 0)`` (a hand to open after the
deal), ``("window", 0)`` (an insurance decision), ``("decision", 0)``, ``("card", i)`` (sequence
card ``i``), ``("auto", 0)`` (steps it can take by itself), ``("settle", 0)``, ``("refund", 0)``.
"""
NOTHING: Need = ("none", 0)


@dataclass
class WagerState:
    id: str
    kind: str
    stake: Decimal
    hand: str | None
    settled: bool = False
    payout: Decimal = ZERO
    result: str | None = None


def participation_id(round_id: str | UUID, player: str) -> UUID:
    """uuid5 of the round id and the player."""
    return stable_id("participation", str(round_id), player)


def check_player_id(player: object) -> str:
    if (
        not isinstance(player, str)
        or not player.strip()
        or player in RESERVED_NAMES
        or "." in player
        or ":" in player
        or len(player) > 200
    ):
        raise UnknownPlayer(
            f"player id {player!r} is not usable: non-empty, no '.' or ':', "
            f"not one of {', '.join(sorted(RESERVED_NAMES))}"
        )
    return player


class Participation(Aggregate):
    """One player's part in one boundless round (see the module docstring)."""

    # ------------------------------------------------------------------ events: inputs
    class Joined(Aggregate.Created, Input):
        round_id: str
        table_id: str
        round_number: int
        player: str
        rules_key: str
        shoe_round: int
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class BetPlaced(Aggregate.Event, Input):
        wager_id: str
        player: str
        kind: str
        stake: str
        balance_seen: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class DecisionMade(Aggregate.Event, Input):
        player: str
        hand: str
        action: str
        amount: str | None
        options: list[str]
        balance_seen: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class DecisionTimedOut(Aggregate.Event, Input):
        player: str
        hand: str
        window: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class PlayerDisconnected(Aggregate.Event, Input):
        player: str
        window: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    # ------------------------------------------------------------ events: consequences
    class HandOpened(Aggregate.Event, Consequence):
        hand: str
        player: str
        cards: list[str]
        total: int
        soft: bool
        rule: str

    class CardToHand(Aggregate.Event, Consequence):
        hand: str
        card: str
        index: int
        total: int
        soft: bool
        rule: str

    class HandHit(Aggregate.Event, Consequence):
        hand: str
        rule: str

    class HandDoubled(Aggregate.Event, Consequence):
        hand: str
        rule: str

    class HandSplit(Aggregate.Event, Consequence):
        hand: str
        into: list[str]
        rule: str

    class HandSurrendered(Aggregate.Event, Consequence):
        hand: str
        rule: str

    class WagerAdded(Aggregate.Event, Consequence):
        wager_id: str
        player: str
        kind: str
        hand: str
        stake: str
        balance_seen: str
        rule: str

    class DecisionConverted(Aggregate.Event, Consequence):
        hand: str
        requested: str
        applied: str
        balance_seen: str
        needed: str
        rule: str

    class AutoActed(Aggregate.Event, Consequence):
        hand: str
        action: str
        total: int
        rule: str

    class HandStood(Aggregate.Event, Consequence):
        hand: str
        reason: str
        total: int
        rule: str

    class WagerSettled(Aggregate.Event, Consequence):
        wager_id: str
        player: str
        kind: str
        hand: str | None
        stake: str
        result: str
        ratio: str | None
        payout: str
        net: str
        rounding: str
        pattern: str | None
        paytable: dict[str, str] | None
        rule: str

    class PaymentReversed(Aggregate.Event, Consequence):
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

    @event(Joined)
    def __init__(
        self,
        round_id: str,
        table_id: str,
        round_number: int,
        player: str,
        rules_key: str,
        shoe_round: int,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.round_id = round_id
        self.table_id = table_id
        self.round_number = round_number
        self.player = player
        self.rules_key = rules_key
        self.shoe_round = shoe_round
        self.wagers: dict[str, WagerState] = {}
        self.state: H.PlayerHands | None = None
        self.log: list[H.Entry] = []
        self.window_decided = False
        self.disconnected = False
        self.request_ids: set[str] = set()

    @classmethod
    def join(
        cls,
        shared: SharedHand,
        player: str,
        *,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Participation:
        """A new participation (call :meth:`place_bet` on it before saving it)."""
        check_player_id(player)
        return cls(
            round_id=str(shared.id),
            table_id=shared.table_id,
            round_number=shared.round_number,
            player=player,
            rules_key=shared.rules_key,
            shoe_round=shared.shoe_round,
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )

    # ------------------------------------------------------------------------ queries
    @property
    def rules(self) -> Rules:
        return get_rules(self.rules_key)

    @property
    def seated(self) -> bool:
        """BDL-1: a player with a main bet (not one refunded as placed too late)."""
        main = self.wagers.get(f"{self.player}:main")
        return main is not None and main.result != "refund"

    @property
    def hands(self) -> tuple[H.Hand, ...]:
        return () if self.state is None else self.state.hands

    @property
    def cursor(self) -> int:
        return 0 if self.state is None else self.state.cursor

    def has_seen(self, request_id: str | None) -> bool:
        return request_id is not None and request_id in self.request_ids

    def check_request(self, request_id: str | None) -> None:
        """A request id is new in this player's part of the round (scoped to the player:
        another player may use the same one); a reused one is refused, never dropped."""
        refuse_reused(request_id, self.request_ids, f"{self.player}'s part of this round")

    def need(self, shared: SharedHand) -> Need:
        """What this participation waits for, given the shared hand's phase and sequence."""
        if shared.finished:
            return NOTHING
        if shared.cancelling:
            done = all(w.result == "refund" for w in self.wagers.values())
            return NOTHING if done else ("refund", 0)
        phase = shared.phase
        if phase == DEALING:
            if shared.initial_dealt and shared.seated is None and self.seated and not self.state:
                return ("open", 0)
            return NOTHING
        if phase == INSURANCE:
            if self.state is not None and not self.window_decided and not self.disconnected:
                return ("window", 0)
            return NOTHING
        if phase == PLAYING:
            if self.state is None:
                return NOTHING
            if H.next_step(self.state, shared.sequence, self.rules) is not None:
                return ("auto", 0)
            demand = self.state.demand
            if demand is not None:
                return ("card", demand)
            return ("decision", 0) if not self.state.complete else NOTHING
        if (
            phase == DEALER
            and shared.dealer_final
            and any(not w.settled for w in self.wagers.values())
        ):
            return ("settle", 0)
        return NOTHING

    def options_for(self, hand: H.Hand, shared: SharedHand) -> list[str]:
        """The decisions open on ``hand`` now (empty when none)."""
        if shared.paused or shared.finished or shared.cancelling or self.state is None:
            return []
        if shared.phase == INSURANCE:
            if hand.id == self.player and not self.window_decided and not self.disconnected:
                return play.window_options(hand.facts(), self.rules)
            return []
        if shared.phase != PLAYING or hand.owed or hand.finished:
            return []
        if H.next_step(self.state, shared.sequence, self.rules) is not None:
            return []  # automatic steps come first (they are taken before any decision)
        due = self.state.due()
        if due is None or due.id != hand.id:
            return []
        return play.play_options(hand.facts(), shared.dealer, self.rules)

    # ------------------------------------------------------------------------ betting
    def place_bet(
        self,
        shared: SharedHand,
        *,
        kind: str,
        amount: object,
        balance: Decimal,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> str | None:
        """Accept a bet in the betting phase; returns its wager id (None for a repeat).

        ``kind`` is ``main`` (at most one, BDL-1) or a side bet (``pair``, ``bust``, ``trio``,
        ``poker``), with or without a main bet (BDL-1), while it is offered (BDL-AVAIL)."""
        shared.check_open(None)
        self.check_request(request_id)
        if shared.phase != BETTING:
            raise BettingClosed("betting is closed for this round")
        rules = self.rules
        stake = parse_money(amount, field="stake")
        if kind == "main":
            if not rules.min_bet <= stake <= rules.max_bet:
                raise BetLimit(
                    f"main bet {money_str(stake)} is outside the table limits "
                    f"{money_str(rules.min_bet)}-{money_str(rules.max_bet)}"
                )
        elif kind in SIDE_KINDS and kind in rules.side_bets:
            limit = rules.side_bet_round_limits.get(kind)
            if limit is not None and self.shoe_round > limit:
                raise SideBetUnavailable(
                    f"the {kind} side bet is withdrawn after round {limit} of the shoe; "
                    f"this is round {self.shoe_round}",
                    rule="BDL-AVAIL",
                )
            if not rules.side_min_bet <= stake <= rules.side_max_bet:
                raise BetLimit(
                    f"{kind} bet {money_str(stake)} is outside the side-bet limits "
                    f"{money_str(rules.side_min_bet)}-{money_str(rules.side_max_bet)}"
                )
        else:
            offered = ", ".join(("main", *(k for k in SIDE_KINDS if k in rules.side_bets)))
            raise IllegalAction(f"{rules.variant} takes no {kind!r} bet; it takes {offered}")
        wager_id = (
            f"{self.player}:main" if kind == "main" else f"{self.player}:{kind}:{self.player}"
        )
        if wager_id in self.wagers:
            raise IllegalAction(
                f"wager {wager_id} is already placed in this round"
                + (" (one main bet per player, BDL-1)" if kind == "main" else ""),
                rule="BDL-1" if kind == "main" else None,
            )
        if stake > balance:
            raise InsufficientFunds(
                f"stake {money_str(stake)} is more than the balance {money_str(balance)}"
            )
        self._bet_placed(
            wager_id=wager_id,
            player=self.player,
            kind=kind,
            stake=money_str(stake),
            balance_seen=money_str(balance),
            actor=actor or {"kind": "player", "id": self.player},
            request_id=request_id,
            client_time=client_time,
        )
        return wager_id

    @event(BetPlaced)
    def _bet_placed(
        self,
        wager_id: str,
        player: str,
        kind: str,
        stake: str,
        balance_seen: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        hand = self.player if kind == "main" else None
        self.wagers[wager_id] = WagerState(wager_id, kind, Decimal(stake), hand)

    # ------------------------------------------------------------------------ dealing
    def open_hand(self, shared: SharedHand) -> None:
        """BDL-1: after the initial deal a seated player's hand holds the shared cards."""
        if not self.seated or self.state is not None or not shared.initial_dealt:
            raise IllegalAction(f"{self.player} has no hand to open")
        s = score(shared.initial)
        self._hand_opened(
            hand=self.player,
            player=self.player,
            cards=[c.code for c in shared.initial],
            total=s.total,
            soft=s.soft,
            rule="BDL-1",
        )

    @event(HandOpened)
    def _hand_opened(
        self, hand: str, player: str, cards: list[str], total: int, soft: bool, rule: str
    ) -> None:
        self.state = H.opened(player, [Card.parse(c) for c in cards])
        if self.disconnected:
            self.state = H.disconnect(self.state)

    # ------------------------------------------------------------------------ playing
    def sync(self, shared: SharedHand) -> bool:
        """Take every step the hands can take by themselves now: sequence cards already
        revealed (BDL-2, D9), automatic stands (HAND-1, SCORE-2), AUTO-1. True if any."""
        if shared.phase != PLAYING or self.state is None or shared.paused:
            return False
        moved = False
        rules = self.rules
        while (step := H.next_step(self.state, shared.sequence, rules)) is not None:
            moved = True
            if isinstance(step, H.Take):
                self._card_to_hand(
                    hand=step.hand,
                    card=step.card.code,
                    index=step.index,
                    total=step.total,
                    soft=step.soft,
                    rule=step.rule,
                )
            elif isinstance(step, H.Stand):
                self._hand_stood(
                    hand=step.hand, reason=step.reason, total=step.total, rule=step.rule
                )
            else:
                self._auto_acted(
                    hand=step.hand, action=step.action, total=step.total, rule=step.rule
                )
                if step.action == play.STAND:
                    self._hand_stood(hand=step.hand, reason="auto", total=step.total, rule="AUTO-1")
        return moved

    @event(CardToHand)
    def _card_to_hand(
        self, hand: str, card: str, index: int, total: int, soft: bool, rule: str
    ) -> None:
        assert self.state is not None
        self.state = H.take(self.state, H.Take(hand, Card.parse(card), index, total, soft, rule))

    @event(HandStood)
    def _hand_stood(self, hand: str, reason: str, total: int, rule: str) -> None:
        assert self.state is not None
        self.state = H.finish(self.state, hand, reason)

    @event(AutoActed)
    def _auto_acted(self, hand: str, action: str, total: int, rule: str) -> None:
        assert self.state is not None
        self.state = H.take(self.state, H.Auto(hand, action, total, rule))

    def _resolve_hand(self, shared: SharedHand, hand_id: str | None) -> H.Hand:
        if self.state is None:
            if not self.seated:
                raise UnknownPlayer(
                    f"player {self.player!r} has only side bets in this round: no hand (BDL-1)"
                )
            raise OutOfTurn(f"{self.player}'s hand opens after the initial deal")
        if hand_id is not None:
            try:
                return self.state.hand(hand_id)
            except KeyError:
                raise IllegalAction(f"hand {hand_id!r} is not {self.player}'s") from None
        if shared.phase == INSURANCE:
            return self.state.hands[0]
        due = self.state.due()
        if due is None:
            raise HandComplete(f"every hand of {self.player} is complete")
        return due

    def decide(
        self,
        shared: SharedHand,
        *,
        action: str,
        balance: Decimal,
        hand: str | None = None,
        amount: object = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> bool:
        """The player's decision on their due hand (or the one named). False for a repeat."""
        shared.check_open(None)
        self.check_request(request_id)
        if action not in (*play.PLAY_ACTIONS, *play.WINDOW_ACTIONS):
            raise IllegalAction(f"unknown action {action!r}")
        self.sync(shared)
        h = self._resolve_hand(shared, hand)
        if action in play.WINDOW_ACTIONS:
            if shared.phase != INSURANCE or h.id != self.player:
                raise IllegalAction(
                    f"{action} needs the insurance window (dealer's upcard an ace)", rule="INS-1"
                )
            if self.window_decided or self.disconnected:
                raise IllegalAction(
                    f"hand {h.id} already made its insurance decision", rule="INS-1"
                )
        else:
            if shared.phase != PLAYING:
                raise OutOfTurn(f"{action} is not open in phase {shared.phase}")
            if h.finished:
                raise HandComplete(f"hand {h.id} is complete ({h.finish_reason})")
            assert self.state is not None
            due = self.state.due()
            if due is None or due.id != h.id:
                raise OutOfTurn(
                    f"it is not hand {h.id}'s turn" + (f"; hand {due.id} is due" if due else "")
                )
            if h.owed:
                raise OutOfTurn(f"hand {h.id} is waiting for a card")
        options = self.options_for(h, shared)
        if action not in options:
            raise IllegalAction(
                f"{action} is not allowed on hand {h.id} now; open: {', '.join(options) or 'none'}",
                rule=play.ACTION_RULES.get(action),
            )
        needed: Decimal | None = None
        main = self.wagers[f"{self.player}:main"]
        if action == play.INSURANCE:
            needed = half_down(main.stake)
            if amount is not None and parse_money(amount, field="insurance") != needed:
                raise IllegalAction(
                    f"insurance costs exactly half the stake: {money_str(needed)}", rule="INS-1"
                )
            if needed > balance:
                raise InsufficientFunds(
                    f"insurance needs {money_str(needed)}, balance is {money_str(balance)}",
                    rule="INS-1",
                )
        elif action == play.DOUBLE:
            needed = sum(
                (
                    w.stake
                    for w in self.wagers.values()
                    if w.hand == h.id and w.kind in ("main", "split")
                ),
                ZERO,
            )
        elif action == play.SPLIT:
            needed = main.stake
        self._decision_made(
            player=self.player,
            hand=h.id,
            action=action,
            amount=money_str(needed) if needed is not None else None,
            options=options,
            balance_seen=money_str(balance),
            actor=actor or {"kind": "player", "id": self.player},
            request_id=request_id,
            client_time=client_time,
        )
        self._apply_decision(h, action, balance, needed)
        self.sync(shared)
        return True

    def _apply_decision(
        self, h: H.Hand, action: str, balance: Decimal, needed: Decimal | None
    ) -> None:
        if action == play.NO_INSURANCE:
            return
        if action == play.INSURANCE:
            assert needed is not None
            self._wager_added(
                wager_id=f"{h.id}:insurance",
                player=self.player,
                kind="insurance",
                hand=h.id,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="INS-1",
            )
            return
        if action == play.STAND:
            self._hand_stood(hand=h.id, reason="stand", total=h.score.total, rule="PHASE-4")
            return
        if action == play.HIT:
            self._hand_hit(hand=h.id, rule="PHASE-4")
            return
        if action == play.SURRENDER:
            self._hand_surrendered(hand=h.id, rule="SURR-1")
            self._hand_stood(hand=h.id, reason="surrender", total=h.score.total, rule="SURR-1")
            return
        assert needed is not None
        if needed > balance:  # FUNDS-2 (boundless: a double as well as a split)
            applied = play.funds_fallback(h.cards)
            self._decision_converted(
                hand=h.id,
                requested=action,
                applied=applied,
                balance_seen=money_str(balance),
                needed=money_str(needed),
                rule="FUNDS-2",
            )
            if applied == play.HIT:
                self._hand_hit(hand=h.id, rule="FUNDS-2")
            else:
                self._hand_stood(hand=h.id, reason="funds", total=h.score.total, rule="FUNDS-2")
            return
        if action == play.DOUBLE:
            self._wager_added(
                wager_id=f"{h.id}:double",
                player=self.player,
                kind="double",
                hand=h.id,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="DBL-1",
            )
            self._hand_doubled(hand=h.id, rule="DBL-1")
            return
        first, second = H.split_ids(h.id)
        self._hand_split(hand=h.id, into=[first, second], rule="SPLIT-1")
        self._wager_added(
            wager_id=f"{second}:split",
            player=self.player,
            kind="split",
            hand=second,
            stake=money_str(needed),
            balance_seen=money_str(balance),
            rule="SPLIT-1",
        )

    @event(DecisionMade)
    def _decision_made(
        self,
        player: str,
        hand: str,
        action: str,
        amount: str | None,
        options: list[str],
        balance_seen: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        if action in play.WINDOW_ACTIONS:
            self.window_decided = True
        else:
            self.log.append(H.Entry(action, hand))

    @event(DecisionConverted)
    def _decision_converted(
        self, hand: str, requested: str, applied: str, balance_seen: str, needed: str, rule: str
    ) -> None:
        entry = H.Entry(H.HIT, hand, rule) if applied == play.HIT else H.Entry(H.FUNDS_STAND, hand)
        self.log[-1] = entry

    @event(HandHit)
    def _hand_hit(self, hand: str, rule: str) -> None:
        assert self.state is not None
        self.state = H.hit(self.state, hand, rule)

    @event(HandDoubled)
    def _hand_doubled(self, hand: str, rule: str) -> None:
        assert self.state is not None
        self.state = H.double(self.state, hand)

    @event(HandSurrendered)
    def _hand_surrendered(self, hand: str, rule: str) -> None:
        assert self.state is not None
        self.state = H.surrender(self.state, hand)

    @event(HandSplit)
    def _hand_split(self, hand: str, into: list[str], rule: str) -> None:
        assert self.state is not None
        self.state = H.split(self.state, hand)
        for w in self.wagers.values():
            if w.hand == hand:
                w.hand = into[0]

    @event(WagerAdded)
    def _wager_added(
        self,
        wager_id: str,
        player: str,
        kind: str,
        hand: str,
        stake: str,
        balance_seen: str,
        rule: str,
    ) -> None:
        self.wagers[wager_id] = WagerState(wager_id, kind, Decimal(stake), hand)

    def time_out(
        self,
        shared: SharedHand,
        *,
        hand: str | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> bool:
        """The decision timer expired: the insurance window declines, or AUTO-1 plays the
        hand that waited for a decision."""
        shared.check_open(None)
        self.check_request(request_id)
        self.sync(shared)
        h = self._resolve_hand(shared, hand)
        window = shared.phase == INSURANCE
        if window:
            if h.id != self.player or self.window_decided or self.disconnected:
                raise IllegalAction(f"hand {h.id} has no insurance decision open")
        else:
            assert self.state is not None
            due = self.state.due()
            if shared.phase != PLAYING or due is None or due.id != h.id or h.owed:
                raise OutOfTurn(f"hand {h.id} is not waiting for a decision")
        self._decision_timed_out(
            player=self.player,
            hand=h.id,
            window=window,
            actor=actor or SYSTEM,
            request_id=request_id,
            client_time=client_time,
        )
        self.sync(shared)
        return True

    @event(DecisionTimedOut)
    def _decision_timed_out(
        self,
        player: str,
        hand: str,
        window: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        if window:
            self.window_decided = True  # no decision in time: no insurance
            return
        self.log.append(H.Entry(H.TIMEOUT, hand))
        assert self.state is not None
        self.state = H.time_out(self.state, hand)

    def disconnect(
        self,
        shared: SharedHand,
        *,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> bool:
        """DISC-1: the round goes on; AUTO-1 plays the player's hands when they are due and an
        open insurance decision is declined."""
        shared.check_open(None)
        self.check_request(request_id)
        if self.disconnected:
            return False
        self.sync(shared)
        window = shared.phase == INSURANCE and self.state is not None and not self.window_decided
        self._player_disconnected(
            player=self.player,
            window=window,
            actor=actor or SYSTEM,
            request_id=request_id,
            client_time=client_time,
        )
        self.sync(shared)
        return True

    @event(PlayerDisconnected)
    def _player_disconnected(
        self,
        player: str,
        window: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        self.disconnected = True
        if window:
            self.window_decided = True
        self.log.append(H.Entry(H.DISCONNECT))
        if self.state is not None:
            self.state = H.disconnect(self.state)

    # ------------------------------------------------------------------- settlement
    def settle(self, shared: SharedHand) -> None:
        """Settle every unsettled wager against the dealer's final hand (OUT-1..4, INS-1,
        BDL-PAIR, BDL-BUST, BDL-TRIO, BDL-POKER)."""
        if not shared.dealer_final:
            raise IllegalAction("the dealer's hand is not final yet")
        rules = self.rules
        dealer = shared.dealer
        dealer_bj = is_blackjack(dealer[:2], split=False) and len(dealer) == 2
        for w in list(self.wagers.values()):
            if w.settled:
                continue
            if w.kind in HAND_KINDS:
                assert w.hand is not None
                assert self.state is not None
                h = self.state.hand(w.hand)
                out = play.main_outcome(
                    h.facts(),
                    surrendered=h.surrendered,
                    dealer=dealer,
                    dealer_blackjack=dealer_bj,
                    rules=rules,
                )
                if out.result == "surrender":
                    p = pay(w.stake, Ratio(1, 2))
                    self._settle(w, "surrender", None, p.amount, p.rounding, out.rule)
                elif out.ratio is None:
                    self._settle(w, out.result, None, ZERO, ZERO, out.rule)
                else:
                    p = pay(w.stake, out.ratio)
                    self._settle(w, out.result, out.ratio, w.stake + p.amount, p.rounding, out.rule)
            elif w.kind == "insurance":
                if dealer_bj:
                    p = pay(w.stake, rules.insurance_pays)
                    self._settle(
                        w, "win", rules.insurance_pays, w.stake + p.amount, p.rounding, "INS-1"
                    )
                else:
                    self._settle(w, "lose", None, ZERO, ZERO, "INS-1")
            else:
                self._settle_side(w, shared)

    def _settle_side(self, w: WagerState, shared: SharedHand) -> None:
        paytable = self.rules.side_bets[w.kind]
        first, second = shared.initial[0], shared.initial[1]
        d1 = shared.dealer[0]
        outcome: SideBetOutcome
        if w.kind == "pair":
            outcome = evaluate_pair(first, second, d1, paytable=paytable, rule="BDL-PAIR")
        elif w.kind == "bust":
            outcome = evaluate_bust_bonus(shared.dealer, paytable=paytable)
        elif w.kind == "trio":
            outcome = evaluate_lucky_trio(first, second, d1, paytable=paytable)
        else:
            outcome = evaluate_poker_trio(first, second, d1, paytable=paytable)
        table = {k: str(v) for k, v in paytable.items()}
        if outcome.ratio is None:
            self._settle(w, "lose", None, ZERO, ZERO, outcome.rule, outcome.pattern, table)
            return
        p = pay(w.stake, outcome.ratio)
        self._settle(
            w,
            "win",
            outcome.ratio,
            w.stake + p.amount,
            p.rounding,
            outcome.rule,
            outcome.pattern,
            table,
        )

    def refund_all(self, rule: str = "ERR-1") -> None:
        """ERR-1: every stake back, and any payment already made taken back first."""
        for w in list(self.wagers.values()):
            if w.result == "refund":
                continue
            if w.settled and w.payout > 0:
                self._payment_reversed(
                    wager_id=w.id,
                    player=self.player,
                    result=w.result or "",
                    amount=money_str(w.payout),
                    rule=rule,
                )
            self._settle(w, "refund", None, w.stake, ZERO, rule)

    def void(self, wager_ids: list[str]) -> None:
        """A bet recorded after betting closed (a concurrent race) is refunded (PHASE-1)."""
        for wid in wager_ids:
            w = self.wagers.get(wid)
            if w is not None and not w.settled:
                self._settle(w, "refund", None, w.stake, ZERO, "PHASE-1")

    def _settle(
        self,
        w: WagerState,
        result: str,
        ratio: Ratio | None,
        payout: Decimal,
        rounding: Decimal,
        rule: str,
        pattern: str | None = None,
        paytable: dict[str, str] | None = None,
    ) -> None:
        self._wager_settled(
            **wager_settled_fields(
                w, self.player, result, ratio, payout, rounding, rule, pattern, paytable
            )
        )

    @event(WagerSettled)
    def _wager_settled(
        self,
        wager_id: str,
        player: str,
        kind: str,
        hand: str | None,
        stake: str,
        result: str,
        ratio: str | None,
        payout: str,
        net: str,
        rounding: str,
        pattern: str | None,
        paytable: dict[str, str] | None,
        rule: str,
    ) -> None:
        w = self.wagers[wager_id]
        w.settled = True
        w.result = result
        w.payout = Decimal(payout)

    @event(PaymentReversed)
    def _payment_reversed(
        self, wager_id: str, player: str, result: str, amount: str, rule: str
    ) -> None:
        w = self.wagers[wager_id]
        w.settled = False
        w.payout = ZERO

    # ------------------------------------------------------------------------ helpers
    def _seen(self, request_id: str | None) -> None:
        if request_id is not None:
            self.request_ids.add(request_id)

"""The Round aggregate: one round of one table, recorded event by event.

The round takes the table's inputs (bets, cards from the shoe, decisions, timeouts, supervisor
actions), applies the rules of its variant (``domain.rules``, ``domain.play``,
``domain.sidebets``) and records inputs and consequences as events (see ``domain.events``).

Invariants:

* A public command validates first and raises a :class:`~domain.errors.DomainError` before
  triggering anything: a refused command records nothing.
* Event bodies (the ``@event`` methods) only apply state; they never check a rule, so an old
  round stays readable when a rule changes.
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

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain import play
from domain.cards import Card
from domain.errors import (
    BetLimit,
    BettingClosed,
    IllegalAction,
    InsufficientFunds,
    InvalidRequest,
    OutOfTurn,
    RoundClosed,
    UnknownPlayer,
    WrongOrder,
    refuse_reused,
    require_reason,
)
from domain.events import SYSTEM, Consequence, Input
from domain.ids import stable_id
from domain.money import ZERO, Ratio, half_down, money_str, parse_money, pay
from domain.rules import get_rules
from domain.rules.base import Rules
from domain.scoring import is_blackjack, score
from domain.settlement import wager_settled_fields
from domain.sidebets import SideBetOutcome, evaluate_lucky7, evaluate_pair

BETTING, DEALING, INSURANCE, PLAYING, DEALER, SETTLED, CANCELLED = (
    "betting",
    "dealing",
    "insurance",
    "playing",
    "dealer",
    "settled",
    "cancelled",
)
DEALER_TARGET = "dealer"
RESERVED_NAMES = frozenset({DEALER_TARGET})
MAIN_KINDS = ("main", "split")
BEHIND_KINDS = ("behind", "behind_double", "behind_split")
HAND_KINDS = (*MAIN_KINDS, "double", *BEHIND_KINDS)
SIDE_KINDS = ("pair", "lucky7")  # boundless's Bust Bonus, Trios: domain/boundless
Json = dict[str, Any]


@dataclass
class HandState:
    """A player hand as the round sees it (state only; rebuilt from events)."""

    id: str
    player: str
    spot: str
    cards: list[Card] = field(default_factory=list)
    is_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    surrendered: bool = False
    even_money: bool = False
    finished: bool = False
    finish_reason: str | None = None
    actions: int = 0
    pending: int = 0  # cards owed to this hand now
    pending_rule: str = "PHASE-4"
    auto: bool = False  # AUTO-1: the system plays this hand
    window_decided: bool = False

    def facts(self) -> play.HandFacts:
        return play.HandFacts(tuple(self.cards), self.is_split, self.split_aces, self.actions)

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, split=self.is_split)


@dataclass
class WagerState:
    id: str
    player: str
    kind: str
    stake: Decimal
    spot: str | None
    hand: str | None
    settled: bool = False
    payout: Decimal = ZERO
    result: str | None = None
    follow_double: bool = False
    follow_split: bool = False
    window_decided: bool = False


class Round(Aggregate):
    """One round: see the module docstring for its invariants."""

    # ------------------------------------------------------------------ events: inputs
    class Started(Aggregate.Created, Input):
        table_id: str
        round_number: int
        rules_key: str
        shoe_id: str
        shoe_round: int
        production: bool
        seats: dict[str, str]
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class BetPlaced(Aggregate.Event, Input):
        wager_id: str
        player: str
        kind: str
        spot: str | None
        stake: str
        requested: str
        balance_seen: str
        follow_double: bool
        follow_split: bool
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class SeatBetMirrored(Aggregate.Event, Consequence):
        """DLX-2: the seat bet of a two-seat player, mirrored or split onto the other seat."""

        wager_id: str
        player: str
        spot: str
        stake: str
        mode: str
        rule: str

    class DecisionPreselected(Aggregate.Event, Input):
        """PRE-1: a decision chosen (or changed) before the hand's turn starts."""

        player: str
        hand: str
        action: str
        options: list[str]
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

    class DecisionMade(Aggregate.Event, Input):
        player: str
        hand: str
        action: str
        amount: str | None
        options: list[str]
        balance_seen: str | None
        others_balance: dict[str, str]
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class DecisionTimedOut(Aggregate.Event, Input):
        player: str
        hand: str
        actor: dict[str, str]
        request_id: str | None
        client_time: str | None

    class PlayerDisconnected(Aggregate.Event, Input):
        player: str
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
    class HandOpened(Aggregate.Event, Consequence):
        hand: str
        player: str
        spot: str
        rule: str

    class CardToHand(Aggregate.Event, Consequence):
        hand: str
        card: str
        total: int
        soft: bool
        rule: str

    class CardToDealer(Aggregate.Event, Consequence):
        card: str
        face_up: bool
        rule: str

    class InsuranceWindowOpened(Aggregate.Event, Consequence):
        hands: list[str]
        rule: str

    class InsuranceWindowCompleted(Aggregate.Event, Consequence):
        """Every hand in the window decided: it closes without waiting for the timer."""

        rule: str

    class DealerChecked(Aggregate.Event, Consequence):
        blackjack: bool
        rule: str

    class HoleCardRevealed(Aggregate.Event, Consequence):
        card: str
        total: int
        rule: str

    class WagerAdded(Aggregate.Event, Consequence):
        wager_id: str
        player: str
        kind: str
        hand: str
        stake: str
        balance_seen: str
        rule: str

    class HandSplit(Aggregate.Event, Consequence):
        hand: str
        into: list[str]
        rule: str

    class HandDoubled(Aggregate.Event, Consequence):
        hand: str
        rule: str

    class HandSurrendered(Aggregate.Event, Consequence):
        hand: str
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

    class DealerStood(Aggregate.Event, Consequence):
        total: int
        reason: str
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
        wager_id: str
        player: str
        amount: str
        reverses: str  # the result whose payment is taken back (e.g. even_money)
        rule: str

    class PlayStarted(Aggregate.Event, Consequence):
        rule: str

    class HandHit(Aggregate.Event, Consequence):
        hand: str
        rule: str

    class DealerTurnStarted(Aggregate.Event, Consequence):
        rule: str

    class BehindFollowed(Aggregate.Event, Consequence):
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
        """Deterministic: uuid5 of table and round number, so a re-executed round matches."""
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
        seats: dict[str, str],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self.table_id = table_id
        self.seats = dict(seats)  # deluxe table: seat -> player when the round began (DLX-1)
        self.preselected: dict[str, str] = {}  # PRE-1: hand -> the last choice before its turn
        self.round_number = round_number
        self.rules_key = rules_key
        self.shoe_id = shoe_id
        self.shoe_round = shoe_round
        self.production = production
        self.phase = BETTING
        self.paused = False
        self.hands: dict[str, HandState] = {}
        self.hand_order: list[str] = []
        self.wagers: dict[str, WagerState] = {}
        self.spot_owner: dict[str, str] = {}
        self.players: list[str] = []
        self.dealer: list[Card] = []
        self.hole_revealed = False
        self.deal_plan: list[str] = []
        self.first_cards: dict[str, list[Card]] = {}  # spot -> the box's first cards (L7-3)
        self.disconnected: set[str] = set()
        self.window_hands: list[str] = []
        self.request_ids: set[str] = set()
        self.dealer_blackjack = False

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
        seats: Mapping[str, str] | None = None,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Round:
        """Open a round. ``seats`` is the deluxe table's seat map (seat -> player) when the
        round began; without it (test rigs, box variants) a main bet claims its seat/box.

        Refuses shared-hand rules (boundless, BDL-1): those rounds are a ``SharedHand`` and one
        ``Participation`` per player (``domain.boundless``)."""
        rules = get_rules(rules_key)  # raises UnknownRules
        if rules.shared_hand:
            raise InvalidRequest(
                f"{rules.key} is a shared-hand variant: boundless rounds are played as a "
                "SharedHand with one Participation per player (domain/boundless), not as a Round",
                rule="BDL-1",
            )
        seat_map = {str(k): v for k, v in (seats or {}).items()}
        if seat_map and not rules.bet_behind:
            raise IllegalAction(f"{rules.variant} has boxes, not a table's seats")
        for seat in seat_map:
            if not seat.isdigit() or not 1 <= int(seat) <= rules.max_spots:
                raise IllegalAction(f"seat {seat!r} is not one of 1-{rules.max_spots}")
        if round_number < 1:
            raise WrongOrder("round_number must be 1 or more")
        if shoe_round < 1:
            raise WrongOrder("shoe_round must be 1 or more")
        return cls(
            table_id=table_id,
            round_number=round_number,
            rules_key=rules.key,
            shoe_id=shoe_id,
            shoe_round=shoe_round,
            production=production,
            seats=seat_map,
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

    def player_hands(self, player: str) -> list[HandState]:
        return [self.hands[h] for h in self.hand_order if self.hands[h].player == player]

    def due_hands(self) -> list[HandState]:
        """The hand whose turn it is (at most one: hands play one at a time in seat/box order)."""
        if self.phase != PLAYING:
            return []
        open_hands = [self.hands[h] for h in self.hand_order if not self.hands[h].finished]
        return open_hands[:1]

    @property
    def card_needed(self) -> dict[str, str] | None:
        """What the next card from the shoe is for, or None when the round needs no card."""
        if self.paused or self.finished:
            return None
        if self.phase == DEALING and len(self.deal_plan) > self._initial_cards_dealt():
            target = self.deal_plan[self._initial_cards_dealt()]
            return {"for": target}
        if self.phase == PLAYING:
            for h in self.due_hands():
                if h.pending:
                    return {"for": h.id}
            return None
        if self.phase == DEALER and self._dealer_wants_card():
            return {"for": DEALER_TARGET}
        return None

    def options_for(self, hand: HandState) -> list[str]:
        if self.phase == INSURANCE and hand.id in self.window_hands and not hand.window_decided:
            return play.window_options(hand.facts(), self.rules)
        if self.phase == PLAYING and hand in self.due_hands() and not hand.pending:
            return play.play_options(hand.facts(), self.dealer, self.rules)
        return []

    def view(self) -> Json:
        """A plain-JSON picture of the table now (for the API, the CLI and replays)."""
        rules = self.rules
        dealer_visible = [
            c.code
            for i, c in enumerate(self.dealer)
            if self.hole_revealed
            or self.finished
            or not (rules.peeks and i == 1 - rules.upcard_index)
        ]
        return {
            "round_id": str(self.id),
            "table_id": self.table_id,
            "round_number": self.round_number,
            "rules_key": self.rules_key,
            "variant": rules.variant,
            "phase": self.phase,
            "paused": self.paused,
            "card_needed": self.card_needed,
            "dealer": {
                "cards": dealer_visible,
                "total": score(self.dealer).total if self.hole_revealed or self.finished else None,
            },
            "hands": [
                {
                    "hand": h.id,
                    "player": h.player,
                    "spot": h.spot,
                    "cards": [c.code for c in h.cards],
                    "total": score(h.cards).total,
                    "soft": score(h.cards).soft,
                    "blackjack": h.blackjack,
                    "bust": score(h.cards).bust,
                    "doubled": h.doubled,
                    "surrendered": h.surrendered,
                    "finished": h.finished,
                    "finish_reason": h.finish_reason,
                    "options": self.options_for(h),
                }
                for h in (self.hands[i] for i in self.hand_order)
            ],
            "wagers": [
                {
                    "wager_id": w.id,
                    "player": w.player,
                    "kind": w.kind,
                    "stake": money_str(w.stake),
                    "hand": w.hand,
                    "settled": w.settled,
                    "result": w.result,
                    "payout": money_str(w.payout),
                    "options": self._wager_options(w),
                }
                for w in self.wagers.values()
            ],
        }

    def _wager_options(self, w: WagerState) -> list[str]:
        """What a wager's own player may decide for it now: a bet behind owes its own insurance
        decision while the window is open (DLX-6); every other decision is a hand's."""
        if (
            self.phase == INSURANCE
            and w.kind == "behind"
            and w.hand in self.window_hands
            and not w.window_decided
        ):
            return [play.INSURANCE, play.NO_INSURANCE]
        return []

    # ----------------------------------------------------------------------- commands
    def _check_open(self, request_id: str | None) -> bool:
        """Common guard: the round takes commands, and ``request_id`` is new in it
        (:func:`~domain.errors.refuse_reused`: a reused request id is refused, never dropped).
        Always True (the callers' repeat branch is kept for the stored format's sake)."""
        if self.finished:
            raise RoundClosed(f"round {self.table_id}#{self.round_number} is {self.phase}")
        if self.paused:
            raise RoundClosed(
                f"round {self.table_id}#{self.round_number} is paused (ERR-1): resume or cancel",
                rule="ERR-1",
            )
        refuse_reused(request_id, self.request_ids, f"round {self.table_id}#{self.round_number}")
        return True

    def place_bet(
        self,
        *,
        player: str,
        kind: str,
        amount: object,
        balance: Decimal,
        spot: str | None = None,
        follow_double: bool = False,
        follow_split: bool = False,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> str | None:
        """Accept a bet during the betting phase; returns its wager id (None if a repeat).

        ``kind`` is ``main``, a side bet the variant offers (``pair``, ``lucky7``) or, in
        deluxe, ``behind`` (DLX-5) with its follow-double/follow-split choices
        (DLX-7, DLX-8; both default No)."""
        if not self._check_open(request_id):
            return None
        if self.phase != BETTING:
            raise BettingClosed("betting is closed for this round")
        rules = self.rules
        stake = parse_money(amount, field="stake")
        if not player or player in RESERVED_NAMES or "." in player or ":" in player:
            raise UnknownPlayer(
                f"player id {player!r} is not usable: non-empty, no '.' or ':', "
                f"not one of {', '.join(sorted(RESERVED_NAMES))}"
            )
        spot = self._bet_spot(player, kind, spot, rules)
        if kind == "main":
            if not rules.min_bet <= stake <= rules.max_bet:
                raise BetLimit(
                    f"main bet {money_str(stake)} is outside the table limits "
                    f"{money_str(rules.min_bet)}-{money_str(rules.max_bet)}"
                )
            wager_id = f"{spot}:main"
        elif kind == "behind":
            if not rules.bet_behind:
                raise IllegalAction(f"{rules.variant} has no bet behind", rule="DLX-5")
            if player in (self.spot_owner.get(spot), self.seats.get(spot)):
                raise IllegalAction(
                    f"{player} cannot bet behind seat {spot}: it is their own seat", rule="DLX-5"
                )
            if not rules.min_bet <= stake <= rules.max_bet:
                raise BetLimit(
                    f"bet behind {money_str(stake)} is outside the table limits "
                    f"{money_str(rules.min_bet)}-{money_str(rules.max_bet)}"
                )
            wager_id = f"{spot}:behind:{player}"
        elif kind in SIDE_KINDS and kind in rules.side_bets:
            if kind == "lucky7":
                if (
                    f"{spot}:main" not in self.wagers
                    or self.wagers[f"{spot}:main"].player != player
                ):
                    raise IllegalAction(
                        f"Lucky 7 needs the player's main bet on box {spot} first", rule="L7-1"
                    )
                if rules.lucky7_max_stake is not None and stake > rules.lucky7_max_stake:
                    raise BetLimit(
                        f"Lucky 7 stake {money_str(stake)} is above one chip unit "
                        f"({money_str(rules.lucky7_max_stake)})",
                        rule="L7-1",
                    )
            if not rules.side_min_bet <= stake <= rules.side_max_bet:
                raise BetLimit(
                    f"{kind} bet {money_str(stake)} is outside the side-bet limits "
                    f"{money_str(rules.side_min_bet)}-{money_str(rules.side_max_bet)}"
                )
            wager_id = f"{spot}:{kind}:{player}"
        else:
            offered = ", ".join(
                (
                    "main",
                    *(["behind"] if rules.bet_behind else []),
                    *(k for k in SIDE_KINDS if k in rules.side_bets),
                )
            )
            raise IllegalAction(f"{rules.variant} takes no {kind!r} bet; it takes {offered}")
        if wager_id in self.wagers:
            two_seats = kind == "main" and len([p for p in self.seats.values() if p == player]) > 1
            raise IllegalAction(
                f"wager {wager_id} is already placed in this round"
                + (
                    f": {player}'s seat bets are equal, one bet covers both seats (DLX-2)"
                    if two_seats
                    else ""
                ),
                rule="DLX-2" if two_seats else None,
            )
        if stake > balance:
            raise InsufficientFunds(
                f"stake {money_str(stake)} is more than the balance {money_str(balance)}"
            )
        mirror = self._mirror(player, kind, spot, stake, balance) if kind == "main" else None
        self._bet_placed(
            wager_id=wager_id,
            player=player,
            kind=kind,
            spot=spot,
            stake=money_str(stake if mirror is None else mirror[1]),
            requested=money_str(stake),
            balance_seen=money_str(balance),
            follow_double=bool(follow_double) and kind == "behind",
            follow_split=bool(follow_split) and kind == "behind",
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )
        if mirror is not None:
            other, each, mode = mirror
            self._seat_bet_mirrored(
                wager_id=f"{other}:main",
                player=player,
                spot=other,
                stake=money_str(each),
                mode=mode,
                rule="DLX-2",
            )
        return wager_id

    def _bet_spot(self, player: str, kind: str, spot: str | None, rules: Rules) -> str:
        if spot is None or not str(spot).isdigit():
            raise IllegalAction(f"a {rules.variant} bet needs a seat/box number, got {spot!r}")
        spot = str(int(spot))
        if not 1 <= int(spot) <= rules.max_spots:
            raise IllegalAction(f"{rules.variant} has boxes/seats 1-{rules.max_spots}, not {spot}")
        owner = self.spot_owner.get(spot) or self.seats.get(spot)
        if kind == "main" and self.seats:
            if self.seats.get(spot) != player:
                raise IllegalAction(
                    f"seat {spot} is "
                    + (f"taken by {self.seats[spot]}" if spot in self.seats else "not occupied")
                    + f": {player} must sit there before betting on it",
                    rule="DLX-1",
                )
        elif kind == "main":
            if owner is not None and owner != player:
                raise IllegalAction(f"seat/box {spot} is taken by {owner}")
            mine = [s for s, p in self.spot_owner.items() if p == player]
            if owner is None and len(mine) >= rules.max_spots_per_player:
                raise IllegalAction(
                    f"{player} already plays {len(mine)} seat(s)/box(es), the most allowed",
                    rule="DLX-1" if rules.variant == "deluxe" else None,
                )
        elif owner is None:
            raise IllegalAction(f"a side bet needs an occupied seat/box; {spot} is empty")
        return spot

    def _mirror(
        self, player: str, kind: str, spot: str, stake: Decimal, balance: Decimal
    ) -> tuple[str, Decimal, str] | None:
        """DLX-2: a two-seat player's seat bet is mirrored on the other seat when the balance
        allows, else split equally between the two. Returns (other seat, stake each, mode)."""
        others = [s for s, p in self.seats.items() if p == player and s != spot]
        if kind != "main" or not others:
            return None
        other = others[0]
        if f"{other}:main" in self.wagers:
            raise IllegalAction(
                f"{player}'s seat bets are equal (DLX-2): the bet on seat {other} already covers "
                f"seat {spot}",
                rule="DLX-2",
            )
        if stake * 2 <= balance:
            return other, stake, "mirrored"
        half = stake / 2
        if half != half.quantize(Decimal("0.01")) or half < self.rules.min_bet:
            raise BetLimit(
                f"the balance {money_str(balance)} does not cover {money_str(stake)} on both "
                f"seats, and {money_str(stake)} cannot be split equally into two valid seat bets "
                "(DLX-2)",
                rule="DLX-2",
            )
        return other, half, "split"

    @event(SeatBetMirrored)
    def _seat_bet_mirrored(
        self, wager_id: str, player: str, spot: str, stake: str, mode: str, rule: str
    ) -> None:
        self.spot_owner[spot] = player
        self.wagers[wager_id] = WagerState(wager_id, player, "main", Decimal(stake), spot, None)

    @event(BetPlaced)
    def _bet_placed(
        self,
        wager_id: str,
        player: str,
        kind: str,
        spot: str | None,
        stake: str,
        requested: str,
        balance_seen: str,
        follow_double: bool,
        follow_split: bool,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        if player not in self.players:
            self.players.append(player)
        if kind == "main" and spot is not None:
            self.spot_owner[spot] = player
        self.wagers[wager_id] = WagerState(
            wager_id,
            player,
            kind,
            Decimal(stake),
            spot,
            None,
            follow_double=follow_double,
            follow_split=follow_split,
        )

    def close_betting(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        if not self._check_open(request_id):
            return
        if self.phase != BETTING:
            raise WrongOrder("betting is already closed")
        self._betting_closed(actor=actor, request_id=request_id, client_time=client_time)
        main_spots = self._main_spots()
        for w in list(self.wagers.values()):
            if w.spot in self.seats and w.spot not in main_spots and w.kind in ("behind", "pair"):
                # DLX-3: no valid seat bet on this seat: its bets behind and Pair bets go back
                self._settle_wager(w, "refund", None, w.stake, ZERO, "DLX-3")
        for spot in main_spots:
            player = self.spot_owner[spot]
            self._hand_opened(hand=spot, player=player, spot=spot, rule="PHASE-2")
        if not main_spots:
            self._round_settled(dealer=[], dealer_total=0, rule="PHASE-6")
            return
        self._progress()

    def seats_with_bets(self) -> list[int]:
        """Seats of the table's seat map that carry a seat bet (reported back to the Table)."""
        return sorted(int(s) for s in self._main_spots() if s in self.seats)

    # ------------------------------------------------------------------ PRE-1
    def preselect(
        self,
        *,
        player: str,
        action: str,
        hand: str | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """PRE-1: choose or change a decision before the hand's turn; the last choice counts
        and is played as the hand's first decision when its turn starts."""
        if not self._check_open(request_id):
            return
        rules = self.rules
        if not rules.pre_decisions:
            raise IllegalAction(f"{rules.variant} takes no decisions before the turn", rule="PRE-1")
        if self.phase not in (INSURANCE, PLAYING):
            raise WrongOrder(
                "decisions can be chosen once the initial deal is complete", rule="PRE-1"
            )
        h = self._resolve_hand(player, hand)
        if h.finished:
            raise IllegalAction(f"hand {h.id} is complete ({h.finish_reason})")
        if self.phase == PLAYING and h in self.due_hands():
            raise OutOfTurn(f"hand {h.id}'s turn has started: decide now", rule="PRE-1")
        if h.actions:
            raise IllegalAction(f"hand {h.id} has already acted", rule="PRE-1")
        options = play.play_options(h.facts(), self.dealer, rules)
        if action not in options:
            raise IllegalAction(
                f"{action} will not be open on hand {h.id}; open: {', '.join(options)}",
                rule="PRE-1",
            )
        self._decision_preselected(
            player=player,
            hand=h.id,
            action=action,
            options=options,
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )

    @event(DecisionPreselected)
    def _decision_preselected(
        self,
        player: str,
        hand: str,
        action: str,
        options: list[str],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        self.preselected[hand] = action

    def preselection_due(self) -> tuple[str, str, str] | None:
        """(player, hand, action) of a PRE-1 choice whose hand's turn has just started."""
        if self.phase != PLAYING or self.paused:
            return None
        for h in self.due_hands():
            action = self.preselected.get(h.id)
            if action and not h.pending and not h.actions and action in self.options_for(h):
                return h.player, h.id, action
        return None

    def _main_spots(self) -> list[str]:
        spots = [w.spot for w in self.wagers.values() if w.kind == "main" and w.spot is not None]
        return sorted(spots, key=int)

    @event(BettingClosed)
    def _betting_closed(
        self, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.phase = DEALING
        first = self._main_spots()
        plan = [*first, DEALER_TARGET, *first]
        if self.rules.hole_card != "none":
            plan.append(DEALER_TARGET)
        self.deal_plan = plan

    @event(HandOpened)
    def _hand_opened(self, hand: str, player: str, spot: str, rule: str) -> None:
        self.hands[hand] = HandState(hand, player, spot)
        self.hand_order.append(hand)
        for w in self.wagers.values():
            if w.spot == spot and w.kind in ("main", "behind"):
                w.hand = hand

    def deal(
        self,
        card: str | Card,
        *,
        shoe_position: int | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """Record the next card out of the shoe and route it where the rules say."""
        c = card if isinstance(card, Card) else Card.parse(card)
        if not self._check_open(request_id):
            return
        need = self.card_needed
        if need is None:
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
        self._route(c, need)
        self._progress()

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

    def _route(self, card: Card, need: dict[str, str]) -> None:
        target = need["for"]
        rules = self.rules
        if self.phase == DEALING:
            if target == DEALER_TARGET:
                n = len(self.dealer)
                face_up = rules.hole_card == "none" or n == rules.upcard_index
                self._card_to_dealer(card=card.code, face_up=face_up, rule="PHASE-2")
            else:
                self._give(self.hands[target], card, "PHASE-2")
            return
        if target == DEALER_TARGET:
            self._card_to_dealer(card=card.code, face_up=True, rule="DEALER-1")
            return
        hand = self.hands[target]
        self._give(hand, card, hand.pending_rule)

    def _give(self, hand: HandState, card: Card, rule: str) -> None:
        s = score([*hand.cards, card])
        self._card_to_hand(hand=hand.id, card=card.code, total=s.total, soft=s.soft, rule=rule)

    @event(CardToHand)
    def _card_to_hand(self, hand: str, card: str, total: int, soft: bool, rule: str) -> None:
        c = Card.parse(card)
        h = self.hands[hand]
        h.cards.append(c)
        if self.phase != DEALING:
            h.pending = max(0, h.pending - 1)
        first = self.first_cards.setdefault(h.spot, [])
        if len(first) < 3 and (h.id in (h.spot, f"{h.spot}.1")):
            first.append(c)

    @event(CardToDealer)
    def _card_to_dealer(self, card: str, face_up: bool, rule: str) -> None:
        self.dealer.append(Card.parse(card))

    # ------------------------------------------------------------------- the engine
    def _initial_cards_dealt(self) -> int:
        main = sum(min(len(self.hands[h].cards), 2) for h in self.hand_order)
        return main + min(len(self.dealer), self._dealer_initial_count())

    def _dealer_initial_count(self) -> int:
        return 1 if self.rules.hole_card == "none" else 2

    def _progress(self) -> None:
        """Derive every consequence the rules allow until an outside input is needed."""
        while not self.finished and not self.paused:
            if self.phase == DEALING:
                if self._initial_cards_dealt() < len(self.deal_plan):
                    return
                self._after_initial_deal()
                continue
            if self.phase == INSURANCE:
                if all(self.hands[h].window_decided for h in self.window_hands) and all(
                    w.window_decided
                    for w in self.wagers.values()
                    if w.kind == "behind" and w.hand in self.window_hands
                ):
                    self._insurance_window_completed(rule="INS-1")
                    self._after_window()
                    continue
                return
            if self.phase == PLAYING:
                if self._play_step():
                    continue
                if all(h.finished for h in self.hands.values()):
                    self._to_dealer()
                    continue
                return
            if self.phase == DEALER:
                if self._dealer_wants_card():
                    return
                self._dealer_done()
                continue
            return

    def _after_initial_deal(self) -> None:
        rules = self.rules
        up = play.upcard(self.dealer, rules)
        assert up is not None
        eligible = [h for h in self.hand_order if self.hands[h].player in self.players]
        if up.is_ace and rules.insurance and eligible:
            self._insurance_window_opened(hands=eligible, rule="INS-1")
            return
        if rules.peeks and up.is_ten_value:
            self._peek()
            if self.finished:
                return
        self._start_play()

    @event(InsuranceWindowOpened)
    def _insurance_window_opened(self, hands: list[str], rule: str) -> None:
        self.phase = INSURANCE
        self.window_hands = list(hands)
        for h in hands:  # DISC-1: a disconnected player takes no insurance
            if self.hands[h].player in self.disconnected:
                self.hands[h].window_decided = True
        for w in self.wagers.values():
            if w.kind == "behind" and w.player in self.disconnected:
                w.window_decided = True

    def close_insurance_window(
        self,
        *,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The insurance timer ran out: every undecided hand declines (INS-1)."""
        if not self._check_open(request_id):
            return
        if self.phase != INSURANCE:
            raise WrongOrder("no insurance window is open")
        self._insurance_window_closed(actor=actor, request_id=request_id, client_time=client_time)
        self._after_window()
        self._progress()

    @event(InsuranceWindowCompleted)
    def _insurance_window_completed(self, rule: str) -> None:
        self._close_window()

    @event(InsuranceWindowClosed)
    def _insurance_window_closed(
        self, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self._close_window()

    def _close_window(self) -> None:
        for h in self.window_hands:
            self.hands[h].window_decided = True
        for w in self.wagers.values():
            if w.kind == "behind":
                w.window_decided = True

    def _after_window(self) -> None:
        if self.rules.peeks:
            self._peek()
            if self.finished:
                return
        self._start_play()

    def _peek(self) -> None:
        """D5: the dealer checks the hole card; END-1 ends the round on a dealer BJ."""
        bj = is_blackjack(self.dealer[:2], split=False)
        self._dealer_checked(blackjack=bj, rule="D5")
        if bj:
            hole = self.dealer[1 - self.rules.upcard_index]
            self._hole_card_revealed(card=hole.code, total=21, rule="END-1")
            self._settle()

    @event(DealerChecked)
    def _dealer_checked(self, blackjack: bool, rule: str) -> None:
        self.dealer_blackjack = blackjack

    @event(HoleCardRevealed)
    def _hole_card_revealed(self, card: str, total: int, rule: str) -> None:
        self.hole_revealed = True

    def _start_play(self) -> None:
        self._play_started(rule="PHASE-4")
        for hid in list(self.hand_order):
            h = self.hands[hid]
            if h.finished:
                continue
            if h.blackjack:
                self._hand_stood(hand=h.id, reason="blackjack", total=21, rule="HAND-1")

    @event(PlayStarted)
    def _play_started(self, rule: str) -> None:
        self.phase = PLAYING

    def _play_step(self) -> bool:
        """One automatic step for the due hand (AUTO-1, HAND-1); a hand owed a card waits for
        it. Returns True when something was recorded."""
        for h in self.due_hands():
            if h.pending:
                continue
            reason = play.stands_automatically(h.facts(), self.rules, doubled=h.doubled)
            if reason is not None:
                rule = "SCORE-2" if reason == "bust" else "HAND-1"
                self._hand_stood(hand=h.id, reason=reason, total=score(h.cards).total, rule=rule)
                return True
            if (h.auto or h.player in self.disconnected) and h.id not in self.preselected:
                action = play.auto_play_action(h.cards)
                self._auto_acted(
                    hand=h.id, action=action, total=score(h.cards).total, rule="AUTO-1"
                )
                if action == play.STAND:
                    self._hand_stood(
                        hand=h.id, reason="auto", total=score(h.cards).total, rule="AUTO-1"
                    )
                return True
        return False

    @event(AutoActed)
    def _auto_acted(self, hand: str, action: str, total: int, rule: str) -> None:
        h = self.hands[hand]
        h.auto = True
        if action == play.HIT:
            h.pending = 1
            h.pending_rule = "AUTO-1"
            h.actions += 1

    @event(HandStood)
    def _hand_stood(self, hand: str, reason: str, total: int, rule: str) -> None:
        h = self.hands[hand]
        h.finished = True
        h.finish_reason = reason

    # -------------------------------------------------------------------- decisions
    def _resolve_hand(self, player: str, hand_id: str | None) -> HandState:
        if player not in self.players:
            raise UnknownPlayer(f"player {player!r} has no bet in this round")
        mine = self.player_hands(player)
        if not mine:
            raise UnknownPlayer(f"player {player!r} has no hand in this round")
        if hand_id is not None:
            if hand_id not in self.hands or self.hands[hand_id].player != player:
                raise IllegalAction(f"hand {hand_id!r} is not {player}'s")
            return self.hands[hand_id]
        if self.phase == INSURANCE:
            for h in mine:
                if h.id in self.window_hands and not h.window_decided:
                    return h
            raise IllegalAction(f"{player} has no insurance decision open")
        due = [h for h in self.due_hands() if h.player == player]
        if due:
            return due[0]
        open_hands = [h for h in mine if not h.finished]
        if open_hands:
            return open_hands[0]
        raise IllegalAction(f"every hand of {player} is complete")

    def decide(
        self,
        *,
        player: str,
        action: str,
        balance: Decimal,
        hand: str | None = None,
        amount: object = None,
        balance_of: Callable[[str], Decimal] | None = None,
        actor: dict[str, str] | None = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """A player's decision on their hand that is due (or the one named).

        ``balance`` is the acting player's balance now; ``balance_of`` gives other players'
        balances (bets behind that may follow a double or split, DLX-7/DLX-8)."""
        if not self._check_open(request_id):
            return
        behind = self._behind_window_wager(player, hand, action)
        if behind is not None:
            self._decide_behind_window(
                behind, action, amount, balance, actor, request_id, client_time
            )
            self._progress()
            return
        h = self._resolve_hand(player, hand)
        rules = self.rules
        if action in play.WINDOW_ACTIONS:
            if self.phase != INSURANCE or h.id not in self.window_hands:
                raise IllegalAction(
                    f"{action} needs the insurance window (dealer's upcard an ace)", rule="INS-1"
                )
            if h.window_decided:
                raise IllegalAction(
                    f"hand {h.id} already made its insurance decision", rule="INS-1"
                )
        elif action in play.PLAY_ACTIONS:
            if self.phase != PLAYING:
                raise OutOfTurn(f"{action} is not open in phase {self.phase}")
            if h.finished:
                raise IllegalAction(f"hand {h.id} is complete ({h.finish_reason})")
            if h not in self.due_hands():
                due = self.due_hands()
                raise OutOfTurn(
                    f"it is not hand {h.id}'s turn"
                    + (f"; hand {due[0].id} of {due[0].player} is due" if due else "")
                )
            if h.pending:
                raise OutOfTurn(f"hand {h.id} is waiting for a card")
        else:
            raise IllegalAction(f"unknown action {action!r}")
        options = self.options_for(h)
        if action not in options:
            raise IllegalAction(
                f"{action} is not allowed on hand {h.id} now; open: {', '.join(options) or 'none'}",
                rule=play.ACTION_RULES.get(action),
            )
        stake = self._hand_stake(h)
        needed: Decimal | None = None
        if action == play.INSURANCE:
            needed = half_down(self.wagers[f"{h.spot}:main"].stake)
            if amount is not None and parse_money(amount, field="insurance") != needed:
                raise IllegalAction(
                    f"insurance costs exactly half the stake: {money_str(needed)}", rule="INS-1"
                )
            if needed > balance:
                raise InsufficientFunds(
                    f"insurance needs {money_str(needed)}, balance is {money_str(balance)}",
                    rule="INS-1",
                )
        elif action in (play.DOUBLE, play.SPLIT):
            needed = stake if action == play.DOUBLE else self._split_stake(h)
            policy = rules.double_funds if action == play.DOUBLE else rules.split_funds
            if needed > balance and policy == "refuse":
                raise InsufficientFunds(
                    f"{action} needs {money_str(needed)}, balance is {money_str(balance)}"
                )
        others: dict[str, str] = {}
        if action in (play.DOUBLE, play.SPLIT) and balance_of is not None:
            others = {
                w.player: money_str(balance_of(w.player))
                for w in self.wagers.values()
                if w.kind in ("behind", "behind_split") and w.hand == h.id
            }
        self._decision_made(
            player=player,
            hand=h.id,
            action=action,
            amount=money_str(needed) if needed is not None else None,
            options=options,
            balance_seen=money_str(balance),
            others_balance=others,
            actor=actor or {"kind": "player", "id": player},
            request_id=request_id,
            client_time=client_time,
        )
        self._apply_decision(h, action, balance, needed)
        if action in (play.DOUBLE, play.SPLIT) and needed is not None and needed <= balance:
            self._follow_behind(h, action, {p: Decimal(b) for p, b in others.items()})
        self._progress()

    def _behind_window_wager(self, player: str, hand: str | None, action: str) -> WagerState | None:
        """DLX-6: the bet behind whose insurance decision this is, if it is one."""
        if action not in (play.INSURANCE, play.NO_INSURANCE) or self.phase != INSURANCE:
            return None
        if hand is not None and hand in self.hands and self.hands[hand].player == player:
            return None
        if hand is None and any(
            h.id in self.window_hands and not h.window_decided for h in self.player_hands(player)
        ):
            return None
        for w in self.wagers.values():
            if (
                w.kind == "behind"
                and w.player == player
                and w.hand in self.window_hands
                and not w.window_decided
                and (hand is None or w.hand == hand)
            ):
                return w
        return None

    def _decide_behind_window(
        self,
        w: WagerState,
        action: str,
        amount: object,
        balance: Decimal,
        actor: dict[str, str] | None,
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        assert w.hand is not None
        needed = half_down(w.stake)
        if action == play.INSURANCE:
            if amount is not None and parse_money(amount, field="insurance") != needed:
                raise IllegalAction(
                    f"insurance on a bet behind costs half its stake: {money_str(needed)}",
                    rule="INS-1",
                )
            if needed > balance:
                raise InsufficientFunds(
                    f"insurance needs {money_str(needed)}, balance is {money_str(balance)}",
                    rule="INS-1",
                )
        self._decision_made(
            player=w.player,
            hand=w.hand,
            action=action,
            amount=money_str(needed) if action == play.INSURANCE else None,
            options=[play.INSURANCE, play.NO_INSURANCE],
            balance_seen=money_str(balance),
            others_balance={},
            actor=actor or {"kind": "player", "id": w.player},
            request_id=request_id,
            client_time=client_time,
        )
        if action == play.INSURANCE:
            self._wager_added(
                wager_id=f"{w.hand}:insurance:{w.player}",
                player=w.player,
                kind="insurance",
                hand=w.hand,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="DLX-6",
            )

    def _follow_behind(self, h: HandState, action: str, balances: dict[str, Decimal]) -> None:
        """DLX-7 / DLX-8: each bet behind on the hand follows the double or split, or not."""
        rule = "DLX-7" if action == play.DOUBLE else "DLX-8"
        hand_now = f"{h.id}.1" if action == play.SPLIT else h.id
        second = f"{h.id}.2"
        following = [
            w
            for w in self.wagers.values()
            if w.kind in ("behind", "behind_split") and w.hand == hand_now
        ]
        for w in following:
            wants = w.follow_double if action == play.DOUBLE else w.follow_split
            seen = balances.get(w.player, ZERO)
            if not wants:
                followed, reason = False, f"follow {action} is No"
            elif w.stake > seen:
                followed, reason = False, "too little balance"
            else:
                followed, reason = True, f"follow {action} is Yes"
            self._behind_followed(
                wager_id=w.id,
                player=w.player,
                hand=hand_now,
                seat_action=action,
                followed=followed,
                reason=reason,
                balance_seen=money_str(seen),
                needed=money_str(w.stake),
                rule=rule,
            )
            if followed:
                kind = "behind_double" if action == play.DOUBLE else "behind_split"
                target = h.id if action == play.DOUBLE else second
                self._wager_added(
                    wager_id=f"{target}:{kind}:{w.player}",
                    player=w.player,
                    kind=kind,
                    hand=target,
                    stake=money_str(w.stake),
                    balance_seen=money_str(seen),
                    rule=rule,
                )

    @event(BehindFollowed)
    def _behind_followed(
        self,
        wager_id: str,
        player: str,
        hand: str,
        seat_action: str,
        followed: bool,
        reason: str,
        balance_seen: str,
        needed: str,
        rule: str,
    ) -> None:
        pass

    def _split_stake(self, h: HandState) -> Decimal:
        return self.wagers[f"{h.spot}:main"].stake

    def _hand_stake(self, h: HandState) -> Decimal:
        main = [w for w in self.wagers.values() if w.hand == h.id and w.kind in MAIN_KINDS]
        return sum((w.stake for w in main), ZERO)

    def _apply_decision(
        self, h: HandState, action: str, balance: Decimal, needed: Decimal | None
    ) -> None:
        rules = self.rules
        if action == play.NO_INSURANCE:
            return
        if action == play.INSURANCE:
            assert needed is not None
            self._wager_added(
                wager_id=f"{h.id}:insurance",
                player=h.player,
                kind="insurance",
                hand=h.id,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="INS-1",
            )
            return
        if action == play.EVEN_MONEY:
            w = self.wagers[f"{h.spot}:main"]
            p = pay(w.stake, play.WIN)
            self._settle_wager(w, "even_money", play.WIN, w.stake + p.amount, p.rounding, "EVEN-1")
            self._hand_stood(hand=h.id, reason="even_money", total=21, rule="EVEN-1")
            return
        if action == play.STAND:
            self._hand_stood(hand=h.id, reason="stand", total=score(h.cards).total, rule="PHASE-4")
            return
        if action == play.HIT:
            self._hit(h, "PHASE-4")
            return
        if action == play.SURRENDER:
            self._hand_surrendered(hand=h.id, rule="SURR-1")
            self._hand_stood(
                hand=h.id, reason="surrender", total=score(h.cards).total, rule="SURR-1"
            )
            return
        assert needed is not None
        if needed > balance:
            policy = rules.double_funds if action == play.DOUBLE else rules.split_funds
            applied = play.HIT if policy == "double_becomes_hit" else play.funds_fallback(h.cards)
            rule = "FUNDS-1" if policy == "double_becomes_hit" else "FUNDS-2"
            self._decision_converted(
                hand=h.id,
                requested=action,
                applied=applied,
                balance_seen=money_str(balance),
                needed=money_str(needed),
                rule=rule,
            )
            if applied == play.HIT:
                self._hit(h, rule)
            else:
                self._hand_stood(hand=h.id, reason="funds", total=score(h.cards).total, rule=rule)
            return
        if action == play.DOUBLE:
            self._wager_added(
                wager_id=f"{h.id}:double",
                player=h.player,
                kind="double",
                hand=h.id,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="DBL-1",
            )
            self._hand_doubled(hand=h.id, rule="DBL-1")
            return
        if action == play.SPLIT:
            first, second = f"{h.id}.1", f"{h.id}.2"
            self._hand_split(hand=h.id, into=[first, second], rule="SPLIT-1")
            self._wager_added(
                wager_id=f"{second}:split",
                player=h.player,
                kind="split",
                hand=second,
                stake=money_str(needed),
                balance_seen=money_str(balance),
                rule="SPLIT-1",
            )

    def _hit(self, h: HandState, rule: str) -> None:
        self._hand_hit(hand=h.id, rule=rule)

    @event(HandHit)
    def _hand_hit(self, hand: str, rule: str) -> None:
        h = self.hands[hand]
        h.pending = 1
        h.pending_rule = rule
        h.actions += 1

    @event(DecisionMade)
    def _decision_made(
        self,
        player: str,
        hand: str,
        action: str,
        amount: str | None,
        options: list[str],
        balance_seen: str | None,
        others_balance: dict[str, str],
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        h = self.hands[hand]
        if action in play.PLAY_ACTIONS:
            self.preselected.pop(hand, None)
        if action in play.WINDOW_ACTIONS:
            if player == h.player:
                h.window_decided = True
            else:  # DLX-6: a bet behind decides its own insurance
                self.wagers[f"{h.spot}:behind:{player}"].window_decided = True

    @event(DecisionConverted)
    def _decision_converted(
        self, hand: str, requested: str, applied: str, balance_seen: str, needed: str, rule: str
    ) -> None:
        pass

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
        spot = self.hands[hand].spot
        w = WagerState(wager_id, player, kind, Decimal(stake), spot, hand)
        if kind == "behind_split":  # it keeps the choices of the bet behind it came from
            origin = self.wagers[f"{spot}:behind:{player}"]
            w.follow_double, w.follow_split = origin.follow_double, origin.follow_split
        self.wagers[wager_id] = w

    @event(HandDoubled)
    def _hand_doubled(self, hand: str, rule: str) -> None:
        h = self.hands[hand]
        h.doubled = True
        h.pending = 1
        h.pending_rule = "DBL-1"
        h.actions += 1

    @event(HandSurrendered)
    def _hand_surrendered(self, hand: str, rule: str) -> None:
        self.hands[hand].surrendered = True

    @event(HandSplit)
    def _hand_split(self, hand: str, into: list[str], rule: str) -> None:
        h = self.hands.pop(hand)
        aces = h.cards[0].is_ace
        pos = self.hand_order.index(hand)
        new = []
        for hid, card in zip(into, h.cards, strict=True):
            nh = HandState(hid, h.player, h.spot, [card], is_split=True, split_aces=aces)
            nh.pending = 1
            if aces:
                nh.pending_rule = "SPLIT-3" if self.rules.split_aces == "one_card" else "D7"
            else:
                nh.pending_rule = "SPLIT-1"
            nh.auto = h.auto
            self.hands[hid] = nh
            new.append(hid)
        self.hand_order[pos : pos + 1] = new
        for w in self.wagers.values():
            if w.hand == hand:
                w.hand = into[0]

    def time_out(
        self,
        *,
        player: str,
        hand: str | None = None,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """The decision timer of the player's due hand expired: AUTO-1 plays it."""
        if not self._check_open(request_id):
            return
        h = self._resolve_hand(player, hand)
        if self.phase == INSURANCE:
            if h.id not in self.window_hands or h.window_decided:
                raise IllegalAction(f"hand {h.id} has no insurance decision open")
        elif self.phase != PLAYING or h not in self.due_hands() or h.pending:
            raise OutOfTurn(f"hand {h.id} is not waiting for a decision")
        self._decision_timed_out(
            player=player, hand=h.id, actor=actor, request_id=request_id, client_time=client_time
        )
        self._progress()

    @event(DecisionTimedOut)
    def _decision_timed_out(
        self,
        player: str,
        hand: str,
        actor: dict[str, str],
        request_id: str | None,
        client_time: str | None,
    ) -> None:
        self._seen(request_id)
        h = self.hands[hand]
        if self.phase == INSURANCE:
            h.window_decided = True  # no decision in time: no insurance
        else:
            h.auto = True

    def disconnect(
        self,
        *,
        player: str,
        actor: dict[str, str] = SYSTEM,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> None:
        """DISC-1: the round goes on; AUTO-1 plays the player's hands when they are due."""
        if not self._check_open(request_id):
            return
        if player not in self.players:
            raise UnknownPlayer(f"player {player!r} has no bet in this round")
        if player in self.disconnected:
            return
        self._player_disconnected(
            player=player, actor=actor, request_id=request_id, client_time=client_time
        )
        self._progress()

    @event(PlayerDisconnected)
    def _player_disconnected(
        self, player: str, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)
        self.disconnected.add(player)
        for h in self.hands.values():
            if h.player == player and self.phase == INSURANCE and h.id in self.window_hands:
                h.window_decided = True

    # ----------------------------------------------------------------------- dealer
    def _live_hands(self) -> list[HandState]:
        """Hands whose result still depends on the dealer (D15)."""
        out = []
        for h in self.hands.values():
            if h.surrendered or h.even_money or h.finish_reason == "even_money":
                continue
            if score(h.cards).bust or h.blackjack:
                continue
            out.append(h)
        return out

    def _to_dealer(self) -> None:
        rules = self.rules
        self._dealer_turn_started(rule="PHASE-5")
        if rules.dealer_draws == "while_result_depends" and not self._live_hands():
            all_bj = bool(self.hands) and all(h.blackjack for h in self.hands.values())
            rule = "END-2" if all_bj and rules.end_when_all_blackjack else "D15"
            self._dealer_stood(total=score(self.dealer).total, reason="result decided", rule=rule)
            self._settle()
            return
        if rules.peeks:
            hole = self.dealer[1 - rules.upcard_index]
            self._hole_card_revealed(card=hole.code, total=score(self.dealer).total, rule="PHASE-5")

    @event(DealerTurnStarted)
    def _dealer_turn_started(self, rule: str) -> None:
        self.phase = DEALER

    def _dealer_wants_card(self) -> bool:
        if self.phase != DEALER:
            return False
        if len(self.dealer) < 2:
            return True  # european: the second card after the players
        if is_blackjack(self.dealer[:2], split=False):
            return False
        return play.dealer_must_draw(self.dealer)

    def _dealer_done(self) -> None:
        s = score(self.dealer)
        bj = is_blackjack(self.dealer, split=False)
        reason = "blackjack" if bj else ("bust" if s.bust else "stands")
        self._dealer_stood(total=s.total, reason=reason, rule="DEALER-1")
        self._settle()

    @event(DealerStood)
    def _dealer_stood(self, total: int, reason: str, rule: str) -> None:
        if len(self.dealer) == 2 and is_blackjack(self.dealer, split=False):
            self.dealer_blackjack = True

    # ------------------------------------------------------------------- settlement
    def _settle(self) -> None:
        rules = self.rules
        dealer_bj = is_blackjack(self.dealer[:2], split=False) and len(self.dealer) == 2
        for w in list(self.wagers.values()):
            if w.settled:
                continue
            if w.kind in HAND_KINDS:
                assert w.hand is not None
                h = self.hands[w.hand]
                out = play.main_outcome(
                    h.facts(),
                    surrendered=h.surrendered,
                    dealer=self.dealer,
                    dealer_blackjack=dealer_bj,
                    rules=rules,
                )
                if (
                    dealer_bj
                    and rules.dealer_bj_takes == "original_bets_only"
                    and w.kind in ("double", "split")
                ):
                    self._settle_wager(w, "refund", None, w.stake, ZERO, "D8")
                    continue
                rule = out.rule
                if (
                    dealer_bj
                    and out.result == "lose"
                    and out.rule == "OUT-1"
                    and rules.dealer_bj_takes == "all_stakes"
                ):
                    rule = "D8"
                if out.result == "surrender":
                    p = pay(w.stake, Ratio(1, 2))
                    self._settle_wager(w, "surrender", None, p.amount, p.rounding, rule)
                elif out.ratio is None:
                    self._settle_wager(w, out.result, None, ZERO, ZERO, rule)
                else:
                    p = pay(w.stake, out.ratio)
                    self._settle_wager(
                        w, out.result, out.ratio, w.stake + p.amount, p.rounding, rule
                    )
            elif w.kind == "insurance":
                if dealer_bj:
                    p = pay(w.stake, rules.insurance_pays)
                    self._settle_wager(
                        w, "win", rules.insurance_pays, w.stake + p.amount, p.rounding, "INS-1"
                    )
                else:
                    self._settle_wager(w, "lose", None, ZERO, ZERO, "INS-1")
            else:
                self._settle_side(w, dealer_bj)
        self._round_settled(
            dealer=[c.code for c in self.dealer],
            dealer_total=score(self.dealer).total,
            rule="PHASE-6",
        )

    def _settle_side(self, w: WagerState, dealer_bj: bool) -> None:
        rules = self.rules
        paytable = rules.side_bets[w.kind]
        assert w.spot is not None
        first = self.first_cards.get(w.spot, [])
        outcome: SideBetOutcome
        if w.kind == "pair":  # deluxe, the one Round variant with a Pair bet
            d1 = self.dealer[0] if self.dealer else None
            outcome = evaluate_pair(first[0], first[1], d1, paytable=paytable, rule="DLX-PAIR")
        else:
            assert w.kind == "lucky7", w.kind  # place_bet takes only SIDE_KINDS
            outcome = evaluate_lucky7(first[:3], dealer_blackjack=dealer_bj, paytable=paytable)
        table = {k: str(v) for k, v in paytable.items()}
        if outcome.ratio is None:
            self._settle_wager(w, "lose", None, ZERO, ZERO, outcome.rule, outcome.pattern, table)
        else:
            p = pay(w.stake, outcome.ratio)
            self._settle_wager(
                w,
                "win",
                outcome.ratio,
                w.stake + p.amount,
                p.rounding,
                outcome.rule,
                outcome.pattern,
                table,
            )

    def _settle_wager(
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
                w, w.player, result, ratio, payout, rounding, rule, pattern, paytable
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
        if result == "even_money" and hand is not None:
            self.hands[hand].even_money = True

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
        if self.finished:
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
        if self.finished:
            raise RoundClosed(f"round is {self.phase}")
        if not self.paused:
            raise WrongOrder("round is not paused")
        require_reason(reason)
        self._resumed(reason=reason, actor=actor, request_id=request_id, client_time=client_time)
        self._progress()

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
        """ERR-1: refund every stake of the round and reverse any payment already made."""
        if self.finished:
            raise RoundClosed(f"round is {self.phase}: it can no longer be cancelled")
        require_reason(reason)
        self._cancel_requested(
            reason=reason, actor=actor, request_id=request_id, client_time=client_time
        )
        for w in list(self.wagers.values()):
            if w.settled and w.result == "refund":
                continue  # already returned (DLX-3): the stake is back with its owner
            if w.settled and w.payout > 0:
                self._payment_reversed(
                    wager_id=w.id,
                    player=w.player,
                    amount=money_str(w.payout),
                    reverses=w.result or "",
                    rule="ERR-1",
                )
            self._settle_wager(w, "refund", None, w.stake, ZERO, "ERR-1")
        self._round_cancelled(reason=reason, rule="ERR-1")

    @event(CancelRequested)
    def _cancel_requested(
        self, reason: str, actor: dict[str, str], request_id: str | None, client_time: str | None
    ) -> None:
        self._seen(request_id)

    @event(PaymentReversed)
    def _payment_reversed(
        self, wager_id: str, player: str, amount: str, reverses: str, rule: str
    ) -> None:
        w = self.wagers[wager_id]
        w.settled = False
        w.payout = ZERO

    @event(RoundCancelled)
    def _round_cancelled(self, reason: str, rule: str) -> None:
        self.phase = CANCELLED
        self.paused = False

    # ------------------------------------------------------------------------ helpers
    def _seen(self, request_id: str | None) -> None:
        if request_id is not None:
            self.request_ids.add(request_id)

    def iter_wagers(self) -> Iterator[WagerState]:
        return iter(self.wagers.values())

"""The boundless participation's decider: one player in one boundless round.

Everything that is that player's own: their bets (a main bet makes them *seated*, BDL-1; side
bets need none, BDL-1, and are withdrawn after their round of the shoe, BDL-AVAIL), their
decisions, decision timers and disconnection (AUTO-1, DISC-1), their hands taken from the shared
initial cards and the shared sequence (D9, :mod:`domain.game.sequence`), and the settlement of
their wagers once the dealer's hand is final, or their refund (ERR-1).

    decide(state, shared, command) -> Decision (facts, state)   evolve(state, fact) -> state

The shared hand (:class:`~domain.game.shared.SharedState`) is read, never written: two players'
decisions decide on disjoint states. The decisions, their costs and effects, automatic play
and settlement are the same functions a classic round uses (:mod:`domain.game.decisions`,
:mod:`domain.game.hands`, :mod:`domain.game.settlement`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.cards import Card
from domain.errors import (
    BettingClosed,
    HandComplete,
    IllegalAction,
    OutOfTurn,
    UnknownPlayer,
    refuse_reused,
)
from domain.events import SYSTEM
from domain.game import decisions, play
from domain.game import hands as H
from domain.game import sequence as Q
from domain.game import settlement as S
from domain.game import wagers as W
from domain.game.commands import (
    Command,
    Decide,
    Disconnect,
    Join,
    PlaceBet,
    Step,
    TimeOut,
    record,
)
from domain.game.facts import Decision, Fact, creation
from domain.game.hands import Hand
from domain.game.phases import (
    BETTING,
    DEALER,
    DEALING,
    INSURANCE,
    PLAYING,
    evolve_table,
    seen_ids,
)
from domain.game.shared import SharedState
from domain.game.state import fast_init, replace
from domain.game.wagers import Wager
from domain.money import ZERO, money_str, parse_money
from domain.rules import get_rules
from domain.rules.base import Rules
from domain.scoring import score

RESERVED_NAMES = frozenset({"dealer", "shared", "sequence"})
Fields = Mapping[str, Any]
Actor = Mapping[str, str]
Need = tuple[str, int]
"""What a participation waits for: ``("none", 0)``, ``("open", 0)`` (a hand to open after the
deal), ``("window", 0)`` (an insurance decision), ``("decision", 0)``, ``("card", i)`` (sequence
card ``i``), ``("auto", 0)`` (steps it can take by itself), ``("settle", 0)``, ``("refund", 0)``.
"""
NOTHING: Need = ("none", 0)
AUTO: Need = ("auto", 0)
DECISION: Need = ("decision", 0)


@fast_init
@dataclass(frozen=True, slots=True)
class PlayerState:
    """One player's part in one boundless round."""

    rules: Rules
    round_id: str
    table_id: str
    round_number: int
    player: str
    rules_key: str
    shoe_round: int
    wagers: Mapping[str, Wager] = field(default_factory=dict)
    hands: Q.PlayerHands | None = None  # once the hand is opened (a seated player)
    log: tuple[Q.Entry, ...] = ()  # the applied decisions (D9)
    window_decided: bool = False
    disconnected: bool = False
    request_ids: frozenset[str] = frozenset()

    def __deepcopy__(self, memo: dict[int, Any]) -> PlayerState:
        return self  # immutable

    @property
    def seated(self) -> bool:
        """BDL-1: a player with a main bet (not one refunded as placed too late)."""
        main = self.wagers.get(f"{self.player}:main")
        return main is not None and main.result != "refund"

    def has_seen(self, request_id: str | None) -> bool:
        return request_id is not None and request_id in self.request_ids


def check_player_id(player: object) -> str:
    return W.check_player_id(player, RESERVED_NAMES)


# ------------------------------------------------------------------------------ evolve
def joined(f: Fields) -> PlayerState:
    """The state a ``Joined`` fact opens (its request id is the first bet's: not kept)."""
    return PlayerState(
        rules=get_rules(f["rules_key"]),
        round_id=f["round_id"],
        table_id=f["table_id"],
        round_number=f["round_number"],
        player=f["player"],
        rules_key=f["rules_key"],
        shoe_round=f["shoe_round"],
    )


def evolve(s: PlayerState, name: str, f: Fields) -> PlayerState:
    """The state after one fact (a stored event's payload, or a fact just decided): its
    name looked up once in :data:`_EVOLVE` (a fact it does not name changes nothing)."""
    handler = _EVOLVE.get(name)
    return s if handler is None else handler(s, f)


def _hand_fact(name: str) -> Any:
    """The evolve of one of the hand facts every round records alike (``H.HAND_FACTS``) on
    the player's hand it names."""

    def evolve(s: PlayerState, f: Fields) -> PlayerState:
        hands = s.hands
        assert hands is not None
        h = H.evolve_hand(hands.hand(f["hand"]), name, f)
        assert h is not None, name
        return replace(s, hands=replace(hands, hands=H.put(hands.hands, h)))

    return evolve


def _wager(s: PlayerState, f: Fields, hand: str | None, **more: Any) -> PlayerState:
    w = Wager(f["wager_id"], s.player, f["kind"], W.money_value(f["stake"]), s.player, hand)
    return replace(s, wagers={**s.wagers, w.id: w}, **more)


def _bet_placed(s: PlayerState, f: Fields) -> PlayerState:
    hand = s.player if f["kind"] == "main" else None
    return _wager(s, f, hand, request_ids=seen_ids(s, f))


def _hand_opened(s: PlayerState, f: Fields) -> PlayerState:
    hands = Q.opened(f["player"], [Card.parse(c) for c in f["cards"]])
    return replace(s, hands=Q.disconnect(hands) if s.disconnected else hands)


def _card_to_hand(s: PlayerState, f: Fields) -> PlayerState:
    assert s.hands is not None
    step = Q.Take(f["hand"], Card.parse(f["card"]), f["index"], f["total"], f["soft"], f["rule"])
    return replace(s, hands=Q.take(s.hands, step))


def _decision_made(s: PlayerState, f: Fields) -> PlayerState:
    ids = seen_ids(s, f)
    if f["action"] in play.WINDOW_ACTIONS:
        return replace(s, request_ids=ids, window_decided=True)
    return replace(s, request_ids=ids, log=(*s.log, Q.Entry(f["action"], f["hand"])))


def _converted(s: PlayerState, f: Fields) -> PlayerState:
    hand = f["hand"]
    funds = Q.Entry(Q.HIT, hand, f["rule"]) if f["applied"] == play.HIT else None
    return replace(s, log=(*s.log[:-1], funds or Q.Entry(Q.FUNDS_STAND, hand)))


def _hand_split(s: PlayerState, f: Fields) -> PlayerState:
    assert s.hands is not None
    hand, into = f["hand"], f["into"]
    wagers = {k: (replace(w, hand=into[0]) if w.hand == hand else w) for k, w in s.wagers.items()}
    hands = Q.split(s.hands, hand, s.rules.split_aces)
    return replace(s, hands=hands, wagers=wagers)


def _timed_out(s: PlayerState, f: Fields) -> PlayerState:
    ids = seen_ids(s, f)
    if f["window"]:
        # no decision in time: no insurance
        return replace(s, request_ids=ids, window_decided=True)
    assert s.hands is not None
    hands = Q.time_out(s.hands, f["hand"])
    return replace(s, request_ids=ids, hands=hands, log=(*s.log, Q.Entry(Q.TIMEOUT, f["hand"])))


def _disconnected(s: PlayerState, f: Fields) -> PlayerState:
    hands = s.hands if s.hands is None else Q.disconnect(s.hands)
    return replace(
        s,
        request_ids=seen_ids(s, f),
        disconnected=True,
        window_decided=s.window_decided or f["window"],
        log=(*s.log, Q.Entry(Q.DISCONNECT)),
        hands=hands,
    )


def _settled(s: PlayerState, f: Fields) -> PlayerState:
    w = replace(
        s.wagers[f["wager_id"]], settled=True, result=f["result"], payout=W.money_value(f["payout"])
    )
    return replace(s, wagers={**s.wagers, w.id: w})


def _reversed(s: PlayerState, f: Fields) -> PlayerState:
    w = replace(s.wagers[f["wager_id"]], settled=False, payout=ZERO)
    return replace(s, wagers={**s.wagers, w.id: w})


#: A participation's own facts' evolves by name (``handler(state, fields) -> state``);
#: :data:`_EVOLVE` adds the hand facts every round records alike (``H.HAND_FACTS``), none
#: named twice (:func:`phases.evolve_table`).
_PLAYER_EVOLVE: dict[str, Any] = {
    "BetPlaced": _bet_placed,
    "HandOpened": _hand_opened,
    "CardToHand": _card_to_hand,
    "DecisionMade": _decision_made,
    "DecisionConverted": _converted,
    "HandSplit": _hand_split,
    "WagerAdded": lambda s, f: _wager(s, f, f["hand"]),
    "DecisionTimedOut": _timed_out,
    "PlayerDisconnected": _disconnected,
    "WagerSettled": _settled,
    "PaymentReversed": _reversed,
}


_EVOLVE = evolve_table({name: _hand_fact(name) for name in sorted(H.HAND_FACTS)}, _PLAYER_EVOLVE)


# ----------------------------------------------------------------------------- queries
def need(s: PlayerState, shared: SharedState) -> Need:
    """What this participation waits for, given the shared hand's phase and sequence."""
    if shared.finished:
        return NOTHING
    if shared.cancelling:
        done = all(w.result == "refund" for w in s.wagers.values())
        return NOTHING if done else ("refund", 0)
    phase = shared.phase
    if phase == DEALING:
        if shared.initial_dealt and shared.seated is None and s.seated and not s.hands:
            return ("open", 0)
        return NOTHING
    if phase == INSURANCE:
        if s.hands is not None and not s.window_decided and not s.disconnected:
            return ("window", 0)
        return NOTHING
    if phase == PLAYING:
        hands = s.hands
        if hands is None:
            return NOTHING
        h = hands.due()
        if h is None:  # every hand complete
            return NOTHING
        if Q.has_step(hands, h, shared.sequence, s.rules):
            return AUTO
        # the due hand waits for a card not revealed yet (``PlayerHands.demand``), or decides
        return ("card", hands.cursor) if h.owed else DECISION
    if (
        phase == DEALER
        and shared.dealer_hand.final
        and any(not w.settled for w in s.wagers.values())
    ):
        return ("settle", 0)
    return NOTHING


def options_for(s: PlayerState, hand: Hand, shared: SharedState) -> list[str]:
    """The decisions open on ``hand`` now (empty when none)."""
    if shared.paused or shared.finished or shared.cancelling or s.hands is None:
        return []
    if shared.phase == INSURANCE:
        if hand.id == s.player and not s.window_decided and not s.disconnected:
            return play.window_options(hand.facts(), s.rules)
        return []
    if shared.phase != PLAYING or hand.owed or hand.finished:
        return []
    due = s.hands.due()
    if due is None or due.id != hand.id:
        return []
    if Q.has_step(s.hands, due, shared.sequence, s.rules):
        return []  # automatic steps come first (they are taken before any decision)
    return play.play_options(hand.facts(), shared.dealer, s.rules)


# ---------------------------------------------------------------------------- decide
def join(shared: SharedState, c: Join) -> Fact:
    """The ``Joined`` fact of a player's first accepted bet in the round."""
    player = check_player_id(c.player)
    d = creation()
    d.input(
        "Joined",
        actor=c.actor or {"kind": "player", "id": player},
        request_id=c.request_id,
        client_time=c.client_time,
        round_id=c.round_id,
        table_id=shared.table_id,
        round_number=shared.round_number,
        player=player,
        rules_key=shared.rules_key,
        shoe_round=shared.shoe_round,
    )
    return d.facts[0]


def decide(state: PlayerState, shared: SharedState, c: Command) -> Decision[PlayerState]:
    """The facts ``c`` decides on ``state`` given the shared hand; a request id this player's
    part recorded already is refused (:func:`~domain.errors.refuse_reused`)."""
    d = Decision(state, evolve)
    if isinstance(c, Step):
        _STEPS[c.what](d, shared, c)
        return d
    shared.check_open(None)
    # scoped to the player: another player may use the same request id
    refuse_reused(c.request_id, state.request_ids, lambda: f"{state.player}'s part of this round")
    if isinstance(c, PlaceBet):
        _place_bet(d, shared, c)
    elif isinstance(c, Decide):
        _decide(d, shared, c)
    elif isinstance(c, TimeOut):
        _time_out(d, shared, c)
    else:
        assert isinstance(c, Disconnect), c
        _disconnect(d, shared, c)
    return d


def _place_bet(d: Decision[PlayerState], shared: SharedState, c: PlaceBet) -> None:
    """A main bet (at most one, BDL-1) or a side bet, with or without a main bet (BDL-1),
    while it is offered (BDL-AVAIL)."""
    s = d.state
    rules = s.rules
    if shared.phase != BETTING:
        raise BettingClosed("betting is closed for this round")
    stake = parse_money(c.amount, field="stake")
    W.check_kind(rules, c.kind, s.shoe_round, offered=("main", *rules.side_bets))
    W.check_stake(rules, c.kind, stake)
    p = s.player
    wager_id = f"{p}:main" if c.kind == "main" else f"{p}:{c.kind}:{p}"
    if wager_id in s.wagers:
        raise IllegalAction(
            f"wager {wager_id} is already placed in this round"
            + (" (one main bet per player, BDL-1)" if c.kind == "main" else ""),
            rule="BDL-1" if c.kind == "main" else None,
        )
    W.check_funds(stake, c.balance)
    record(
        d,
        "BetPlaced",
        c,
        {"kind": "player", "id": p},
        wager_id=wager_id,
        player=p,
        kind=c.kind,
        stake=money_str(stake),
        balance_seen=money_str(c.balance),
    )


def _open(d: Decision[PlayerState], shared: SharedState, c: Step) -> None:
    """BDL-1: after the initial deal a seated player's hand holds the shared cards."""
    s = d.state
    if not s.seated or s.hands is not None or not shared.initial_dealt:
        raise IllegalAction(f"{s.player} has no hand to open")
    t = score(shared.initial)
    d.consequence(
        "HandOpened",
        rule="BDL-1",
        hand=s.player,
        player=s.player,
        cards=[x.code for x in shared.initial],
        total=t.total,
        soft=t.soft,
    )


def _sync(d: Decision[PlayerState], shared: SharedState, c: Step | None = None) -> None:
    """Every step the hands take by themselves now: sequence cards already revealed (BDL-2,
    D9), automatic stands (HAND-1, SCORE-2), AUTO-1."""
    if shared.phase != PLAYING or d.state.hands is None or shared.paused:
        return
    rules = d.state.rules
    while (hands := d.state.hands) is not None and (
        step := Q.next_step(hands, shared.sequence, rules)
    ) is not None:
        if isinstance(step, Q.Take):
            d.consequence(
                "CardToHand", rule=step.rule, hand=step.hand, card=step.card.code,
                index=step.index, total=step.total, soft=step.soft,
            )  # fmt: skip
        else:
            H.record(d, step)


def _resolve_hand(s: PlayerState, shared: SharedState, hand_id: str | None) -> Hand:
    if s.hands is None:
        if not s.seated:
            raise UnknownPlayer(
                f"player {s.player!r} has only side bets in this round: no hand (BDL-1)"
            )
        raise OutOfTurn(f"{s.player}'s hand opens after the initial deal")
    if hand_id is not None:
        try:
            return s.hands.hand(hand_id)
        except KeyError:
            raise IllegalAction(f"hand {hand_id!r} is not {s.player}'s") from None
    if shared.phase == INSURANCE:
        return s.hands.hands[0]
    due = s.hands.due()
    if due is None:
        raise HandComplete(f"every hand of {s.player} is complete")
    return due


def _decide(d: Decision[PlayerState], shared: SharedState, c: Decide) -> None:
    """The player's decision on their due hand (or the one named)."""
    decisions.check_action(c.action)
    _sync(d, shared)
    s = d.state
    h = _resolve_hand(s, shared, c.hand)
    if c.action in play.WINDOW_ACTIONS:
        open_ = shared.phase == INSURANCE and h.id == s.player
        decisions.check_window(c.action, h, open_=open_, decided=s.window_decided or s.disconnected)
    else:
        assert s.hands is not None
        decisions.check_turn(c.action, shared.phase, h, s.hands.due())
    options = options_for(s, h, shared)
    decisions.check_option(c.action, h, options)
    main = s.wagers[f"{s.player}:main"]
    needed = decisions.cost(
        c.action,
        main=main.stake,
        wagers=s.wagers,
        hand=h.id,
        amount=c.amount,
        balance=c.balance,
        rules=s.rules,
    )
    decisions.record_decision(d, c, h.id, options, needed)
    decisions.apply(d, h, c.action, balance=c.balance, needed=needed, main=main, rules=s.rules)
    _sync(d, shared)


def _time_out(d: Decision[PlayerState], shared: SharedState, c: TimeOut) -> None:
    """The decision timer expired: the insurance window declines, or AUTO-1 plays the hand
    that waited for a decision."""
    _sync(d, shared)
    s = d.state
    h = _resolve_hand(s, shared, c.hand)
    window = shared.phase == INSURANCE
    if window:
        if h.id != s.player or s.window_decided or s.disconnected:
            raise IllegalAction(f"hand {h.id} has no insurance decision open")
    else:
        assert s.hands is not None
        due = s.hands.due()
        if shared.phase != PLAYING or due is None or due.id != h.id or h.owed:
            raise OutOfTurn(f"hand {h.id} is not waiting for a decision")
    record(d, "DecisionTimedOut", c, SYSTEM, player=s.player, hand=h.id, window=window)
    _sync(d, shared)


def _disconnect(d: Decision[PlayerState], shared: SharedState, c: Disconnect) -> None:
    """DISC-1: the round goes on; AUTO-1 plays the player's hands when they are due and an
    open insurance decision is declined."""
    if d.state.disconnected:
        return
    _sync(d, shared)
    s = d.state
    window = shared.phase == INSURANCE and s.hands is not None and not s.window_decided
    record(d, "PlayerDisconnected", c, SYSTEM, player=s.player, window=window)
    _sync(d, shared)


def _settle(d: Decision[PlayerState], shared: SharedState, c: Step) -> None:
    """Every unsettled wager against the dealer's final hand (OUT-1..4, INS-1, BDL-PAIR,
    BDL-BUST, BDL-TRIO, BDL-POKER). ``c.against``: what the round's engine made once of the
    cards (:func:`settle_step`), taken when it was made of this very shared initial hand,
    dealer's hand and rules; else one is made for this settlement alone (the same facts)."""
    if not shared.dealer_hand.final:
        raise IllegalAction("the dealer's hand is not final yet")
    s = d.state
    hands = s.hands
    initial, dealer, rules = shared.initial, shared.dealer, s.rules
    against = c.against  # the round's, made once for every player (``settle_step``)
    if against is None or not _made_of(against, shared, rules):
        against = S.SettledAgainst(dealer, rules, first=initial)
    S.settle_all(
        d,
        list(s.wagers.values()),
        hand=lambda hand_id: _hand_of(hands, hand_id),
        dealer=dealer,
        first_cards=lambda w: initial,
        rules=rules,
        against=against,
    )


def settle_step(shared: SharedState, kept: Step | None = None) -> Step:
    """The ``settle`` step of every player of the round whose shared state is ``shared``,
    with what settling reads of the cards made once (``against``: the dealer's blackjack and
    score, each side bet kind's outcome and paytable text): every player of a boundless round
    is settled against the same shared initial hand and dealer's hand (BDL-1, BDL-3), so
    their side bets' outcomes (BDL-PAIR, BDL-BUST, BDL-TRIO, BDL-POKER) are the same.
    ``kept``: the step made for an earlier player of the round (its owner, the round's
    ``domain.boundless.engine.Engine``, holds it), returned while it was made of these very
    (immutable) card tuples and rules; else a new one."""
    if kept is not None and kept.against is not None and _made_of(kept.against, shared):
        return kept
    against = S.SettledAgainst(shared.dealer, shared.rules, first=shared.initial)
    return Step(what="settle", against=against)


def _made_of(against: S.SettledAgainst, shared: SharedState, rules: Rules | None = None) -> bool:
    """Whether ``against`` was made of this very shared initial hand, dealer's hand and
    ``rules`` (the shared hand's by default; a player's are the same object: one key)."""
    return against.first is shared.initial and against.is_for(
        shared.dealer, shared.rules if rules is None else rules
    )


def _hand_of(hands: Q.PlayerHands | None, hand_id: str) -> Hand:
    assert hands is not None
    return hands.hand(hand_id)


def _refund(d: Decision[PlayerState], shared: SharedState, c: Step) -> None:
    """ERR-1: every stake back, and any payment already made taken back first."""
    S.refund_all(d, list(d.state.wagers.values()), rule="ERR-1", reversal=_result)


def _result(w: Wager) -> dict[str, Any]:
    return {"result": w.result or ""}


def _void(d: Decision[PlayerState], shared: SharedState, c: Step) -> None:
    """A bet recorded after betting closed (a race between processes) is refunded
    (PHASE-1)."""
    for wid in c.wagers:
        w = d.state.wagers.get(wid)
        if w is not None and not w.settled:
            S.refund(d, w, "PHASE-1")


_STEPS: dict[str, Any] = {
    "open": _open,
    "sync": _sync,
    "settle": _settle,
    "refund": _refund,
    "void": _void,
}


__all__ = [
    "NOTHING",
    "RESERVED_NAMES",
    "Command",
    "Decide",
    "Disconnect",
    "Join",
    "Need",
    "PlaceBet",
    "PlayerState",
    "Step",
    "TimeOut",
    "check_player_id",
    "decide",
    "evolve",
    "join",
    "joined",
    "need",
    "options_for",
    "settle_step",
]

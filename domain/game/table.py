"""The classic round's decider: seats or boxes dealt in turn.

Every variant whose rules deal hand by hand to seats or boxes (``card_routing="in_turn"``:
deluxe, multihand, lucky7, european, and any new rules object of that shape) is played here:

    decide(state, command) -> facts        evolve(state, fact) -> state   (table_state.evolve)

A command is one input (:class:`PlaceBet`, :class:`Deal`, :class:`Decide`...). :func:`decide`
refuses it with a :class:`~domain.errors.DomainError` (nothing decided), or returns the input
fact followed by every consequence the rules derive before the round needs its next input
(:func:`_progress`: the initial deal's end, the insurance window and the dealer's check,
automatic play, the dealer's turn, settlement). A repeated request id decides nothing.

The ``Round`` aggregate (``domain.round``) records these facts; verification re-executes a
stored round by deciding its recorded inputs again (:func:`command_for`) and comparing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from domain import play
from domain.cards import Card
from domain.errors import (
    BettingClosed,
    HandComplete,
    IllegalAction,
    InvalidRequest,
    OutOfTurn,
    UnknownPlayer,
    WrongOrder,
)
from domain.events import SYSTEM
from domain.game import dealer as D
from domain.game import decisions, phases
from domain.game import hands as H
from domain.game import settlement as S
from domain.game import wagers as W
from domain.game.facts import Decision, Fact, creation
from domain.game.hands import Hand
from domain.game.phases import BETTING, DEALER, DEALING, INSURANCE, PLAYING
from domain.game.table_state import (
    DEALER_TARGET,
    TableState,
    card_needed,
    dealer_wants_card,
    due_hands,
    evolve,
    initial_cards_dealt,
    main_spots,
    options_for,
    player_hands,
)
from domain.game.wagers import Wager
from domain.money import money_str, parse_money
from domain.rules import get_rules
from domain.scoring import score

RESERVED_NAMES = frozenset({DEALER_TARGET})
Actor = Mapping[str, str]


# ---------------------------------------------------------------------------- commands
@dataclass(frozen=True, kw_only=True)
class Command:
    """An input; ``actor`` defaults to who usually sends it."""

    actor: Actor | None = None
    request_id: str | None = None
    client_time: str | None = None


@dataclass(frozen=True, kw_only=True)
class Start(Command):
    table_id: str
    round_number: int
    rules_key: str
    shoe_id: str
    shoe_round: int = 1
    production: bool = True
    seats: Mapping[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class PlaceBet(Command):
    player: str
    kind: str
    amount: object
    balance: Decimal
    spot: str | None = None
    follow_double: bool = False
    follow_split: bool = False


@dataclass(frozen=True, kw_only=True)
class CloseBetting(Command):
    pass


@dataclass(frozen=True, kw_only=True)
class Preselect(Command):
    player: str
    action: str
    hand: str | None = None


@dataclass(frozen=True, kw_only=True)
class Deal(Command):
    card: Card
    shoe_position: int | None = None


@dataclass(frozen=True, kw_only=True)
class Decide(Command):
    """``balance_of``: other players' balances (bets behind that may follow, DLX-7/8)."""

    player: str
    action: str
    balance: Decimal
    hand: str | None = None
    amount: object = None
    balance_of: Callable[[str], Decimal] | None = None


@dataclass(frozen=True, kw_only=True)
class TimeOut(Command):
    player: str
    hand: str | None = None


@dataclass(frozen=True, kw_only=True)
class Disconnect(Command):
    player: str


@dataclass(frozen=True, kw_only=True)
class CloseWindow(Command):
    pass


@dataclass(frozen=True, kw_only=True)
class Supervise(Command):
    """A supervisor's ``pause``, ``resume`` or ``cancel`` (ERR-1), with its reason code."""

    what: str
    reason: str


# ------------------------------------------------------------------------------ decide
def start(c: Start) -> Fact:
    """The ``Started`` fact of a new round (refused for shared-hand rules: BDL-1)."""
    rules = get_rules(c.rules_key)  # raises UnknownRules
    if rules.shared_hand:
        raise InvalidRequest(
            f"{rules.key} is a shared-hand variant: boundless rounds are played as a "
            "SharedHand with one Participation per player (domain/boundless), not as a Round",
            rule="BDL-1",
        )
    seats = {str(k): v for k, v in (c.seats or {}).items()}
    if seats and not rules.bet_behind:
        raise IllegalAction(f"{rules.variant} has boxes, not a table's seats")
    for seat in seats:
        if not seat.isdigit() or not 1 <= int(seat) <= rules.max_spots:
            raise IllegalAction(f"seat {seat!r} is not one of 1-{rules.max_spots}")
    if c.round_number < 1:
        raise WrongOrder("round_number must be 1 or more")
    if c.shoe_round < 1:
        raise WrongOrder("shoe_round must be 1 or more")
    d = creation()
    d.input(
        "Started",
        actor=c.actor or SYSTEM,
        request_id=c.request_id,
        client_time=c.client_time,
        table_id=c.table_id,
        round_number=c.round_number,
        rules_key=rules.key,
        shoe_id=c.shoe_id,
        shoe_round=c.shoe_round,
        production=c.production,
        seats=seats,
    )
    return d.facts[0]


def decide(state: TableState, c: Command) -> Decision[TableState]:
    """The facts ``c`` decides on ``state`` and the state they leave (no facts for a repeated
    request id)."""
    d = Decision(state, evolve)
    if isinstance(c, Supervise):
        _supervise(d, c)
        return d
    phases.check_open(state.label, state.phase, paused=state.paused)
    if c.request_id is not None and c.request_id in state.request_ids:
        return d
    _DECIDE[type(c)](d, c)
    return d


def _input(d: Decision[TableState], name: str, c: Command, actor: Actor, **fields: Any) -> None:
    d.input(
        name,
        actor=c.actor or actor,
        request_id=c.request_id,
        client_time=c.client_time,
        **fields,
    )


def _player(player: str) -> Actor:
    return {"kind": "player", "id": player}


# ---------------------------------------------------------------------------- betting
def _place_bet(d: Decision[TableState], c: PlaceBet) -> None:
    s = d.state
    rules = s.rules
    if s.phase != BETTING:
        raise BettingClosed("betting is closed for this round")
    stake = parse_money(c.amount, field="stake")
    player, kind = W.check_player_id(c.player, RESERVED_NAMES), c.kind
    spot = _bet_spot(s, player, kind, c.spot)
    W.check_kind(rules, kind, s.shoe_round, offered=_offered(s))
    if kind == "main":
        wager_id = f"{spot}:main"
    elif kind == "behind":
        if player in (s.spot_owner.get(spot), s.seats.get(spot)):
            raise IllegalAction(
                f"{player} cannot bet behind seat {spot}: it is their own seat", rule="DLX-5"
            )
        wager_id = f"{spot}:behind:{player}"
    else:
        main = s.wagers.get(f"{spot}:main")
        if kind == "lucky7" and (main is None or main.player != player):
            raise IllegalAction(
                f"Lucky 7 needs the player's main bet on box {spot} first", rule="L7-1"
            )
        wager_id = f"{spot}:{kind}:{player}"
    W.check_stake(rules, kind, stake)
    if wager_id in s.wagers:
        two_seats = kind == "main" and len([p for p in s.seats.values() if p == player]) > 1
        raise IllegalAction(
            f"wager {wager_id} is already placed in this round"
            + (
                f": {player}'s seat bets are equal, one bet covers both seats (DLX-2)"
                if two_seats
                else ""
            ),
            rule="DLX-2" if two_seats else None,
        )
    W.check_funds(stake, c.balance)
    mirror = _mirror(s, player, spot, stake, c.balance) if kind == "main" else None
    _input(
        d,
        "BetPlaced",
        c,
        _player(player),
        wager_id=wager_id,
        player=player,
        kind=kind,
        spot=spot,
        stake=money_str(stake if mirror is None else mirror[1]),
        requested=money_str(stake),
        balance_seen=money_str(c.balance),
        follow_double=bool(c.follow_double) and kind == "behind",
        follow_split=bool(c.follow_split) and kind == "behind",
    )
    if mirror is not None:
        other, each, mode, rule = mirror
        d.consequence(
            "SeatBetMirrored",
            rule=rule,
            wager_id=f"{other}:main",
            player=player,
            spot=other,
            stake=money_str(each),
            mode=mode,
        )


def _offered(s: TableState) -> tuple[str, ...]:
    return ("main", *(["behind"] if s.rules.bet_behind else []), *s.rules.side_bets)


def _bet_spot(s: TableState, player: str, kind: str, spot: str | None) -> str:
    rules = s.rules
    if spot is None or not str(spot).isdigit():
        raise IllegalAction(f"a {rules.variant} bet needs a seat/box number, got {spot!r}")
    spot = str(int(spot))
    if not 1 <= int(spot) <= rules.max_spots:
        raise IllegalAction(f"{rules.variant} has boxes/seats 1-{rules.max_spots}, not {spot}")
    owner = s.spot_owner.get(spot) or s.seats.get(spot)
    if kind == "main" and s.seats:
        if s.seats.get(spot) != player:
            raise IllegalAction(
                f"seat {spot} is "
                + (f"taken by {s.seats[spot]}" if spot in s.seats else "not occupied")
                + f": {player} must sit there before betting on it",
                rule="DLX-1",
            )
    elif kind == "main":
        if owner is not None and owner != player:
            raise IllegalAction(f"seat/box {spot} is taken by {owner}")
        mine = [x for x, p in s.spot_owner.items() if p == player]
        if owner is None and len(mine) >= rules.max_spots_per_player:
            raise IllegalAction(
                f"{player} already plays {len(mine)} seat(s)/box(es), the most allowed",
                rule="DLX-1" if rules.bet_behind else None,
            )
    elif owner is None:
        raise IllegalAction(f"a side bet needs an occupied seat/box; {spot} is empty")
    return spot


def _mirror(
    s: TableState, player: str, spot: str, stake: Decimal, balance: Decimal
) -> tuple[str, Decimal, str, str] | None:
    """DLX-2 (D17): a two-seat player's seat bet on the other seat. Returns (other seat,
    stake on each, mode, rule)."""
    others = [x for x, p in s.seats.items() if p == player and x != spot]
    if not others:
        return None
    other = others[0]
    if f"{other}:main" in s.wagers:
        raise IllegalAction(
            f"{player}'s seat bets are equal (DLX-2): the bet on seat {other} already covers "
            f"seat {spot}",
            rule="DLX-2",
        )
    return (other, *W.seat_split(stake, balance, s.rules))


def _close_betting(d: Decision[TableState], c: CloseBetting) -> None:
    if d.state.phase != BETTING:
        raise WrongOrder("betting is already closed")
    _input(d, "BettingClosed", c, SYSTEM)
    s = d.state
    spots = main_spots(s)
    for w in list(s.wagers.values()):
        if w.spot in s.seats and w.spot not in spots and w.kind in ("behind", "pair"):
            S.refund(d, w, "DLX-3")  # no valid seat bet on this seat: its bets go back
    for spot in spots:
        player = d.state.spot_owner[spot]
        d.consequence("HandOpened", rule="PHASE-2", hand=spot, player=player, spot=spot)
    if not spots:
        d.consequence("RoundSettled", rule="PHASE-6", dealer=[], dealer_total=0)
        return
    _progress(d)


def _preselect(d: Decision[TableState], c: Preselect) -> None:
    s = d.state
    rules = s.rules
    if not rules.pre_decisions:
        raise IllegalAction(f"{rules.variant} takes no decisions before the turn", rule="PRE-1")
    if s.phase not in (INSURANCE, PLAYING):
        raise WrongOrder("decisions can be chosen once the initial deal is complete", rule="PRE-1")
    h = _resolve_hand(s, c.player, c.hand)
    if h.finished:
        raise HandComplete(f"hand {h.id} is complete ({h.finish_reason})")
    if s.phase == PLAYING and h in due_hands(s):
        raise OutOfTurn(f"hand {h.id}'s turn has started: decide now", rule="PRE-1")
    if h.actions:
        raise IllegalAction(f"hand {h.id} has already acted", rule="PRE-1")
    options = play.play_options(h.facts(), s.dealer, rules)
    if c.action not in options:
        raise IllegalAction(
            f"{c.action} will not be open on hand {h.id}; open: {', '.join(options)}",
            rule="PRE-1",
        )
    _input(
        d,
        "DecisionPreselected",
        c,
        _player(c.player),
        player=c.player,
        hand=h.id,
        action=c.action,
        options=options,
    )


# ------------------------------------------------------------------------------ cards
def _deal(d: Decision[TableState], c: Deal) -> None:
    s = d.state
    need = card_needed(s)
    if need is None:
        raise WrongOrder(
            f"the round needs no card now (phase {s.phase}); {c.card.code} was not recorded"
        )
    dealer_actor = {"kind": "dealer", "id": s.table_id}
    _input(d, "CardDealt", c, dealer_actor, card=c.card.code, shoe_position=c.shoe_position)
    target = need["for"]
    s = d.state
    if target == DEALER_TARGET:
        D.card_to_dealer(d, s.dealer, c.card, s.rules, dealing=s.phase == DEALING)
    else:
        h = s.hand(target)
        rule = "PHASE-2" if s.phase == DEALING else H.card_rule(h, s.rules)
        total = score([*h.cards, c.card])
        d.consequence(
            "CardToHand", rule=rule, hand=h.id, card=c.card.code, total=total.total, soft=total.soft
        )
    _progress(d)


# -------------------------------------------------------------------------- the engine
def _progress(d: Decision[TableState]) -> None:
    """Derive every consequence the rules allow until an outside input is needed."""
    while not d.state.finished and not d.state.paused:
        s = d.state
        if s.phase == DEALING:
            if initial_cards_dealt(s) < len(s.deal_plan):
                return
            _after_initial_deal(d)
        elif s.phase == INSURANCE:
            if not _window_complete(s):
                return
            d.consequence("InsuranceWindowCompleted", rule="INS-1")
            _after(d, D.after_window(d, d.state.dealer, s.rules))
        elif s.phase == PLAYING:
            if _play_step(d):
                continue
            if not all(h.finished for h in s.hands):
                return
            _to_dealer(d)
        elif s.phase == DEALER:
            if dealer_wants_card(s):
                return
            D.stand(d, s.dealer)
            _settle(d)
        else:
            return


def _window_complete(s: TableState) -> bool:
    window = s.window_hands
    return all(s.hand(h).window_decided for h in window) and all(
        w.window_decided for w in s.wagers.values() if w.kind == "behind" and w.hand in window
    )


def _after_initial_deal(d: Decision[TableState]) -> None:
    s = d.state
    eligible = [h.id for h in s.hands if h.player in s.players]
    outcome = D.after_deal(d, s.dealer, s.rules, window=bool(eligible))
    if outcome == D.WINDOW:
        d.consequence("InsuranceWindowOpened", rule="INS-1", hands=eligible)
        return
    _after(d, outcome)


def _after(d: Decision[TableState], outcome: str) -> None:
    """After the dealer's check: END-1 settles at once; else play starts (PHASE-4) and every
    blackjack stands (HAND-1)."""
    if outcome == D.CHECKED_BLACKJACK:
        _settle(d)
        return
    d.consequence("PlayStarted", rule="PHASE-4")
    for h in d.state.hands:
        if not h.finished and h.blackjack:
            d.consequence("HandStood", rule="HAND-1", hand=h.id, reason="blackjack", total=21)


def _play_step(d: Decision[TableState]) -> bool:
    """One automatic step for the due hand (HAND-1, AUTO-1); a hand owed a card waits for it.
    True when something was decided."""
    s = d.state
    for h in due_hands(s):
        if h.owed:
            return False
        auto = (h.auto or h.player in s.disconnected) and h.id not in s.preselected
        return H.play_automatically(d, h, s.rules, auto=auto)
    return False


def _live_hands(s: TableState) -> list[Hand]:
    """Hands whose result still depends on the dealer (D15)."""
    return [
        h
        for h in s.hands
        if not (h.surrendered or h.even_money or h.finish_reason == "even_money")
        and not h.score.bust
        and not h.blackjack
    ]


def _to_dealer(d: Decision[TableState]) -> None:
    s = d.state
    rules = s.rules
    D.turn(d, s.dealer, rules, reveal=False)
    if rules.dealer_draws == "while_result_depends" and not _live_hands(s):
        all_bj = bool(s.hands) and all(h.blackjack for h in s.hands)
        rule = "END-2" if all_bj and rules.end_when_all_blackjack else "D15"
        total = score(s.dealer).total
        d.consequence("DealerStood", rule=rule, total=total, reason="result decided")
        _settle(d)
        return
    D.reveal_hole(d, s.dealer, rules)


def _settle(d: Decision[TableState]) -> None:
    s = d.state
    S.settle_all(
        d,
        list(s.wagers.values()),
        hand=s.hand,
        dealer=s.dealer,
        first_cards=lambda w: s.first_cards.get(w.spot or "", ()),
        rules=s.rules,
    )
    dealer = d.state.dealer
    d.consequence(
        "RoundSettled",
        rule="PHASE-6",
        dealer=[c.code for c in dealer],
        dealer_total=score(dealer).total,
    )


# -------------------------------------------------------------------------- decisions
def _resolve_hand(s: TableState, player: str, hand_id: str | None) -> Hand:
    if player not in s.players:
        raise UnknownPlayer(f"player {player!r} has no bet in this round")
    mine = player_hands(s, player)
    if not mine:
        raise UnknownPlayer(f"player {player!r} has no hand in this round")
    if hand_id is not None:
        if not s.has_hand(hand_id) or s.hand(hand_id).player != player:
            raise IllegalAction(f"hand {hand_id!r} is not {player}'s")
        return s.hand(hand_id)
    if s.phase == INSURANCE:
        for h in mine:
            if h.id in s.window_hands and not h.window_decided:
                return h
        raise IllegalAction(f"{player} has no insurance decision open")
    due = [h for h in due_hands(s) if h.player == player]
    if due:
        return due[0]
    open_hands = [h for h in mine if not h.finished]
    if open_hands:
        return open_hands[0]
    raise HandComplete(f"every hand of {player} is complete")


def _decide(d: Decision[TableState], c: Decide) -> None:
    s = d.state
    behind = _behind_window_wager(s, c.player, c.hand, c.action)
    if behind is not None:
        _decide_behind_window(d, c, behind)
        _progress(d)
        return
    decisions.check_action(c.action)
    h = _resolve_hand(s, c.player, c.hand)
    rules = s.rules
    if c.action in play.WINDOW_ACTIONS:
        in_window = s.phase == INSURANCE and h.id in s.window_hands
        decisions.check_window(c.action, h, open_=in_window, decided=h.window_decided)
    else:
        decisions.check_turn(c.action, s.phase, h, H.due(s.hands))
    options = options_for(s, h)
    decisions.check_option(c.action, h, options)
    main = s.wagers.get(f"{h.spot}:main")
    needed = decisions.cost(
        c.action,
        main=main.stake if main is not None else Decimal(0),
        hand=W.hand_stake(s.wagers, h.id),
        amount=c.amount,
        balance=c.balance,
        rules=rules,
    )
    others: dict[str, str] = {}
    if c.action in (play.DOUBLE, play.SPLIT) and c.balance_of is not None:
        others = {
            w.player: money_str(c.balance_of(w.player))
            for w in s.wagers.values()
            if w.kind in ("behind", "behind_split") and w.hand == h.id
        }
    _input(
        d,
        "DecisionMade",
        c,
        _player(c.player),
        player=c.player,
        hand=h.id,
        action=c.action,
        amount=money_str(needed) if needed is not None else None,
        options=options,
        balance_seen=money_str(c.balance),
        others_balance=others,
    )
    decisions.apply(d, h, c.action, balance=c.balance, needed=needed, main=main, rules=rules)
    if c.action in (play.DOUBLE, play.SPLIT) and needed is not None and needed <= c.balance:
        balances = {p: Decimal(b) for p, b in others.items()}
        decisions.follow_behind(d, h, c.action, d.state.wagers, balances)
    _progress(d)


def _behind_window_wager(s: TableState, player: str, hand: str | None, action: str) -> Wager | None:
    """DLX-6: the bet behind whose insurance decision this is, if it is one."""
    if action not in (play.INSURANCE, play.NO_INSURANCE) or s.phase != INSURANCE:
        return None
    if hand is not None and s.has_hand(hand) and s.hand(hand).player == player:
        return None
    if hand is None and any(
        h.id in s.window_hands and not h.window_decided for h in player_hands(s, player)
    ):
        return None
    for w in s.wagers.values():
        if (
            w.kind == "behind"
            and w.player == player
            and w.hand in s.window_hands
            and not w.window_decided
            and (hand is None or w.hand == hand)
        ):
            return w
    return None


def _decide_behind_window(d: Decision[TableState], c: Decide, w: Wager) -> None:
    assert w.hand is not None
    needed = None
    if c.action == play.INSURANCE:
        needed = W.insurance_cost(
            w.stake, c.amount, c.balance, "on a bet behind costs half its stake"
        )
    _input(
        d,
        "DecisionMade",
        c,
        _player(w.player),
        player=w.player,
        hand=w.hand,
        action=c.action,
        amount=money_str(needed) if needed is not None else None,
        options=[play.INSURANCE, play.NO_INSURANCE],
        balance_seen=money_str(c.balance),
        others_balance={},
    )
    if needed is not None:
        decisions.behind_insurance(d, w, needed, c.balance)


def _time_out(d: Decision[TableState], c: TimeOut) -> None:
    s = d.state
    h = _resolve_hand(s, c.player, c.hand)
    if s.phase == INSURANCE:
        if h.id not in s.window_hands or h.window_decided:
            raise IllegalAction(f"hand {h.id} has no insurance decision open")
    elif s.phase != PLAYING or h not in due_hands(s) or h.owed:
        raise OutOfTurn(f"hand {h.id} is not waiting for a decision")
    _input(d, "DecisionTimedOut", c, SYSTEM, player=c.player, hand=h.id)
    _progress(d)


def _disconnect(d: Decision[TableState], c: Disconnect) -> None:
    s = d.state
    if c.player not in s.players:
        raise UnknownPlayer(f"player {c.player!r} has no bet in this round")
    if c.player in s.disconnected:
        return
    _input(d, "PlayerDisconnected", c, SYSTEM, player=c.player)
    _progress(d)


def _close_window(d: Decision[TableState], c: CloseWindow) -> None:
    """The insurance timer ran out: every undecided hand declines (INS-1)."""
    if d.state.phase != INSURANCE:
        raise WrongOrder("no insurance window is open")
    _input(d, "InsuranceWindowClosed", c, SYSTEM)
    _after(d, D.after_window(d, d.state.dealer, d.state.rules))
    _progress(d)


# ------------------------------------------------------------ supervisor (ERR-1)
def _supervise(d: Decision[TableState], c: Supervise) -> None:
    s = d.state
    assert c.actor is not None, "a supervisor's action names the supervisor"
    if c.what == "pause":
        phases.check_pause(s.phase, c.reason, paused=s.paused)
        _input(d, "Paused", c, c.actor, reason=c.reason)
    elif c.what == "resume":
        phases.check_resume(s.phase, c.reason, paused=s.paused)
        _input(d, "Resumed", c, c.actor, reason=c.reason)
        _progress(d)
    else:
        phases.check_cancel(s.phase, c.reason)
        _input(d, "CancelRequested", c, c.actor, reason=c.reason)
        S.refund_all(d, list(d.state.wagers.values()), rule="ERR-1", reversal=_reverses)
        d.consequence("RoundCancelled", rule="ERR-1", reason=c.reason)


def _reverses(w: Wager) -> dict[str, Any]:
    return {"reverses": w.result or ""}


_DECIDE: dict[type, Callable[[Decision[TableState], Any], None]] = {
    PlaceBet: _place_bet,
    CloseBetting: _close_betting,
    Preselect: _preselect,
    Deal: _deal,
    Decide: _decide,
    TimeOut: _time_out,
    Disconnect: _disconnect,
    CloseWindow: _close_window,
}


# ----------------------------------------------------------------------- re-execution
def command_for(name: str, p: Mapping[str, Any]) -> Command | Start:
    """The command that decides a stored input again (verification by re-execution): each
    input records what was checked when it was accepted (the balance seen, the others'
    balances, the card and its shoe position)."""
    common: dict[str, Any] = {
        "actor": p["actor"],
        "request_id": p["request_id"],
        "client_time": p["client_time"],
    }
    if name == "Started":
        keys = ("table_id", "round_number", "rules_key", "shoe_id", "shoe_round", "production")
        return Start(**{k: p[k] for k in keys}, seats=p["seats"], **common)
    if name == "BetPlaced":
        return PlaceBet(
            player=p["player"],
            kind=p["kind"],
            amount=p["requested"],
            balance=Decimal(p["balance_seen"]),
            spot=p["spot"],
            follow_double=p["follow_double"],
            follow_split=p["follow_split"],
            **common,
        )
    if name == "DecisionPreselected":
        return Preselect(player=p["player"], action=p["action"], hand=p["hand"], **common)
    if name == "BettingClosed":
        return CloseBetting(**common)
    if name == "CardDealt":
        return Deal(card=Card.parse(p["card"]), shoe_position=p["shoe_position"], **common)
    if name == "DecisionMade":
        others = {k: Decimal(v) for k, v in p["others_balance"].items()}
        return Decide(
            player=p["player"],
            action=p["action"],
            hand=p["hand"],
            amount=p["amount"] if p["action"] == play.INSURANCE else None,
            balance=Decimal(p["balance_seen"] or "0"),
            balance_of=lambda player: others.get(player, Decimal(0)),
            **common,
        )
    if name == "DecisionTimedOut":
        return TimeOut(player=p["player"], hand=p["hand"], **common)
    if name == "PlayerDisconnected":
        return Disconnect(player=p["player"], **common)
    if name == "InsuranceWindowClosed":
        return CloseWindow(**common)
    if name in ("Paused", "Resumed", "CancelRequested"):
        what = {"Paused": "pause", "Resumed": "resume", "CancelRequested": "cancel"}[name]
        return Supervise(what=what, reason=p["reason"], **common)
    raise TypeError(f"no command re-executes {name}")


__all__ = [
    "CloseBetting",
    "CloseWindow",
    "Command",
    "Deal",
    "Decide",
    "Disconnect",
    "PlaceBet",
    "Preselect",
    "Start",
    "Supervise",
    "TimeOut",
    "command_for",
    "decide",
    "start",
]

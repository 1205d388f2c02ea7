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

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from domain.errors import (
    BettingClosed,
    HandComplete,
    IllegalAction,
    InvalidRequest,
    OutOfTurn,
    WrongOrder,
    refuse_reused,
)
from domain.events import SYSTEM
from domain.game import phases, play
from domain.game import settlement as S
from domain.game import table_play as play_
from domain.game import wagers as W
from domain.game.commands import (
    CloseBetting,
    CloseWindow,
    Command,
    Deal,
    Decide,
    Disconnect,
    PlaceBet,
    Preselect,
    Start,
    Supervise,
    TimeOut,
    command_for,
    record,
)
from domain.game.facts import Decision, Fact
from domain.game.phases import BETTING, INSURANCE, PLAYING
from domain.game.table_play import player_actor, progress, resolve_hand
from domain.game.table_state import DEALER_TARGET, TableState, due_hands, evolve, main_spots
from domain.money import money_str, parse_money
from domain.rules import get_rules

RESERVED_NAMES = frozenset({DEALER_TARGET})


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
    return phases.start_fact(c, rules, seats=seats)


def decide(state: TableState, c: Command) -> Decision[TableState]:
    """The facts ``c`` decides on ``state`` and the state they leave. A request id the round
    recorded already is refused (:func:`~domain.errors.refuse_reused`), never dropped."""
    d = Decision(state, evolve)
    if isinstance(c, Supervise):
        play_.supervise(d, c)
        return d
    phases.check_open(state)
    refuse_reused(c.request_id, state.request_ids, lambda: f"round {state.label}")
    _DECIDE[type(c)](d, c)
    return d


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
    record(
        d,
        "BetPlaced",
        c,
        player_actor(player),
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
    record(d, "BettingClosed", c, SYSTEM)
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
    progress(d)


def _preselect(d: Decision[TableState], c: Preselect) -> None:
    s = d.state
    rules = s.rules
    if not rules.pre_decisions:
        raise IllegalAction(f"{rules.variant} takes no decisions before the turn", rule="PRE-1")
    if s.phase not in (INSURANCE, PLAYING):
        raise WrongOrder("decisions can be chosen once the initial deal is complete", rule="PRE-1")
    h = resolve_hand(s, c.player, c.hand)
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
    record(
        d,
        "DecisionPreselected",
        c,
        player_actor(c.player),
        player=c.player,
        hand=h.id,
        action=c.action,
        options=options,
    )


_DECIDE: dict[type, Callable[[Decision[TableState], Any], None]] = {
    PlaceBet: _place_bet,
    CloseBetting: _close_betting,
    Preselect: _preselect,
    Deal: play_.deal,
    Decide: play_.decide_play,
    TimeOut: play_.time_out,
    Disconnect: play_.disconnect,
    CloseWindow: play_.close_window,
}


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

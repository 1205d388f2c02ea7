"""The inputs the core decides on: one vocabulary of commands for every model of a round.

A command is one input to a decider (``domain.game.table`` for a classic round,
``domain.game.shared`` and ``domain.game.player`` for a boundless one): a bet, a card, a
decision, a timer that expired, a disconnection, the end of betting, the insurance timer, a
supervisor's action; and the steps a boundless round takes when its players' state makes them
due (:class:`Step`). Each carries who sends it (``actor``; by default who usually does), the
request id that makes it idempotent and the client's time.

:func:`record` turns a command into its input fact. :func:`command_for` reads a stored input
back as the command it records (each input records what was checked when it was accepted: the
balance seen, the others' balances, the card and its shoe position), which is how verification
decides every stored input again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from domain.cards import Card
from domain.game.facts import Decision
from domain.game.state import fast_init

if TYPE_CHECKING:
    from domain.game.settlement import SettledAgainst

Actor = Mapping[str, str]
SUPERVISOR_ACTIONS = {"Paused": "pause", "Resumed": "resume", "CancelRequested": "cancel"}


@fast_init
@dataclass(frozen=True, kw_only=True)
class Command:
    """An input; ``actor`` defaults to who usually sends it."""

    actor: Actor | None = None
    request_id: str | None = None
    client_time: str | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class Start(Command):
    """A round opens; ``seats``: a deluxe table's seat map when the round began (DLX-1)."""

    table_id: str
    round_number: int
    rules_key: str
    shoe_id: str
    shoe_round: int = 1
    production: bool = True
    seats: Mapping[str, str] | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class Join(Command):
    """A player's first bet in a boundless round makes their participation (BDL-1)."""

    round_id: str
    player: str


@fast_init
@dataclass(frozen=True, kw_only=True)
class PlaceBet(Command):
    """A bet: ``main``, a side bet, or (deluxe) ``behind`` a seat with its follow choices."""

    player: str
    kind: str
    amount: object
    balance: Decimal
    spot: str | None = None
    follow_double: bool = False
    follow_split: bool = False


@fast_init
@dataclass(frozen=True, kw_only=True)
class CloseBetting(Command):
    """The betting countdown ended (PHASE-1)."""


@fast_init
@dataclass(frozen=True, kw_only=True)
class Preselect(Command):
    """PRE-1: a decision chosen before the hand's turn."""

    player: str
    action: str
    hand: str | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class Deal(Command):
    """A card out of the shoe. ``demand`` (boundless): the sequence index some player's hand
    waits for, known from the players' state; a card goes into the sequence only when it is
    the next index (BDL-2)."""

    card: Card
    shoe_position: int | None = None
    demand: int | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class Decide(Command):
    """A player's decision. ``balance_of``: other players' balances (bets behind that may
    follow a double or a split, DLX-7/8)."""

    player: str
    action: str
    balance: Decimal
    hand: str | None = None
    amount: object = None
    balance_of: Callable[[str], Decimal] | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class TimeOut(Command):
    """The player's decision timer expired (AUTO-1; in the insurance window: no insurance)."""

    player: str
    hand: str | None = None


@fast_init
@dataclass(frozen=True, kw_only=True)
class Disconnect(Command):
    """The player dropped (DISC-1)."""

    player: str


@fast_init
@dataclass(frozen=True, kw_only=True)
class CloseWindow(Command):
    """The insurance timer ran out: every undecided hand declines (INS-1)."""


@fast_init
@dataclass(frozen=True, kw_only=True)
class Supervise(Command):
    """A supervisor's ``pause``, ``resume`` or ``cancel`` (ERR-1), with its reason code."""

    what: str
    reason: str


@fast_init
@dataclass(frozen=True, kw_only=True)
class Step(Command):
    """A step a boundless round's state makes due. The shared hand's: ``open_hands``
    (``seated`` players got their hand, BDL-1), ``complete_window`` (every seated player
    decided), ``dealer_turn`` (every hand complete, PHASE-5), ``dealer_stand`` (BDL-3),
    ``settled`` (PHASE-6), ``cancelled`` (ERR-1). A participation's: ``open`` (BDL-1),
    ``sync`` (revealed cards, HAND-1, AUTO-1), ``settle``, ``refund`` (ERR-1), ``void``
    (``wagers`` recorded after betting closed, refunded under PHASE-1). ``against``: for
    ``settle``, what the round's engine made once of the cards every player is settled
    against (:class:`~domain.game.settlement.SettledAgainst`), taken only when made of the
    very cards and rules settled (else the settlement makes its own)."""

    what: str
    seated: int = 0
    wagers: Sequence[str] = ()
    against: SettledAgainst | None = None


def supervisor_action(
    what: str,
    reason: str,
    actor: Actor,
    *,
    request_id: str | None = None,
    client_time: str | None = None,
) -> Supervise:
    """A supervisor's ``pause``, ``resume`` or ``cancel`` with its reason code (ERR-1), sent by
    ``actor`` (the supervisor named, and the key that sent it: ``domain.events.supervisor``),
    with the request id and client time it was sent with (None when the source sent none)."""
    return Supervise(
        what=what, reason=reason, actor=actor, request_id=request_id, client_time=client_time
    )


def record(d: Decision[Any], name: str, c: Command, actor: Actor, **fields: Any) -> None:
    """The input fact of command ``c`` (``actor``: who sends it when ``c`` names nobody)."""
    d.add_input(name, fields, c.actor or actor, c.request_id, c.client_time)


def command_for(name: str, p: Mapping[str, Any], *, demand: int | None = None) -> Command:
    """The command a stored input (its class name and payload) records, to be decided again.
    ``demand``: for a boundless card, the sequence index the players wait for now.

    Each input's command is made by its own reader (:data:`_READERS`, looked up once by the
    input's name); every reader reads the sender's fields (``actor``, ``request_id``,
    ``client_time``) first, then the input's own, each by name."""
    read = _READERS.get(name)
    if read is None:
        _sent(p)  # a payload without the sender's fields is refused for that first
        raise TypeError(f"no command re-executes {name}")
    return read(p, demand)


def _sent(p: Mapping[str, Any]) -> dict[str, Any]:
    """The fields every input records about its sending (for the readers of the rare inputs;
    the frequent ones name them in their call, which makes no keyword dict)."""
    return {"actor": p["actor"], "request_id": p["request_id"], "client_time": p["client_time"]}


def _started(p: Mapping[str, Any], demand: int | None) -> Command:
    sent = _sent(p)
    keys = ("table_id", "round_number", "rules_key", "shoe_id", "shoe_round", "production")
    return Start(**{k: p[k] for k in keys}, seats=p.get("seats"), **sent)


def _bet(p: Mapping[str, Any], demand: int | None) -> Command:
    return PlaceBet(
        actor=p["actor"],
        request_id=p["request_id"],
        client_time=p["client_time"],
        player=p["player"],
        kind=p["kind"],
        amount=p.get("requested", p["stake"]),
        balance=Decimal(p["balance_seen"]),
        spot=p.get("spot"),
        follow_double=p.get("follow_double", False),
        follow_split=p.get("follow_split", False),
    )


def _card(p: Mapping[str, Any], demand: int | None) -> Command:
    return Deal(
        actor=p["actor"],
        request_id=p["request_id"],
        client_time=p["client_time"],
        card=Card.parse(p["card"]),
        shoe_position=p["shoe_position"],
        demand=demand,
    )


def _decision(p: Mapping[str, Any], demand: int | None) -> Command:
    actor, request_id, client_time = p["actor"], p["request_id"], p["client_time"]
    others = {k: Decimal(v) for k, v in p.get("others_balance", {}).items()}
    return Decide(
        actor=actor,
        request_id=request_id,
        client_time=client_time,
        player=p["player"],
        action=p["action"],
        hand=p["hand"],
        amount=p["amount"] if p["action"] == "insurance" else None,
        balance=Decimal(p["balance_seen"] or "0"),
        balance_of=lambda player: others.get(player, Decimal(0)),
    )


def _close_betting(p: Mapping[str, Any], demand: int | None) -> Command:
    return CloseBetting(actor=p["actor"], request_id=p["request_id"], client_time=p["client_time"])


def _supervisor(what: str) -> Callable[[Mapping[str, Any], int | None], Command]:
    """The reader of a supervisor's ``what`` (ERR-1)."""

    def read(p: Mapping[str, Any], demand: int | None) -> Command:
        sent = _sent(p)
        return Supervise(what=what, reason=p["reason"], **sent)

    return read


#: The reader of each stored input's command, by the input's class name.
_READERS: dict[str, Callable[[Mapping[str, Any], int | None], Command]] = {
    "Started": _started,
    "Joined": lambda p, _: Join(**_sent(p), round_id=p["round_id"], player=p["player"]),
    "BetPlaced": _bet,
    "DecisionPreselected": lambda p, _: Preselect(
        **_sent(p), player=p["player"], action=p["action"], hand=p["hand"]
    ),
    "BettingClosed": _close_betting,
    "CardDealt": _card,
    "DecisionMade": _decision,
    "DecisionTimedOut": lambda p, _: TimeOut(**_sent(p), player=p["player"], hand=p["hand"]),
    "PlayerDisconnected": lambda p, _: Disconnect(**_sent(p), player=p["player"]),
    "InsuranceWindowClosed": lambda p, _: CloseWindow(**_sent(p)),
    **{name: _supervisor(what) for name, what in SUPERVISOR_ACTIONS.items()},
}


__all__ = [
    "CloseBetting",
    "CloseWindow",
    "Command",
    "Deal",
    "Decide",
    "Disconnect",
    "Join",
    "PlaceBet",
    "Preselect",
    "Start",
    "Step",
    "Supervise",
    "TimeOut",
    "command_for",
    "record",
    "supervisor_action",
]

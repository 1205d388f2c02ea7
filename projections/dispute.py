"""The dispute timeline: for one round and one player, every event that touched them, in order.

A query-time projection: it reads the round's own events (``app.events.get(round_id)``) and the
player's wallet movements of that round when asked, so it is exact the moment a command has
been saved and needs no tracking or rebuild.

What is shown for each entry (:class:`TimelineEntry`):

* the event (its version in the round is ``seq``), input or consequence, and its **actor**: a
  player, the dealer, a supervisor, or the system; a consequence is the system's (the rules')
  and names the input that caused it (``caused_by``);
* the client's time and request id (inputs) beside the server's timestamp;
* for a decision: the **options open** at that moment and the **action taken**; the **balance
  seen** when a balance was checked (bets, decisions, DLX-7/8 follows, FUNDS-1/2 conversions)
  and the **balance after** (from the wallet's movement when money moved, else unchanged);
* the **rule ID** of every consequence, so every automatic action shows ``AUTO-1``,
  ``FUNDS-1``/``FUNDS-2`` or ``HAND-1``;
* for each decision (the player's, a timeout, an AUTO-1 step, a conversion), the **cards it led
  to** (the cards dealt to that hand, or its split hands, before the next decision on it), and
  the consequences it led to (``led_to``).

Which events touch a player: their bets, wagers, decisions, timeouts, disconnection and
settlements; every event of their hands (and of the seat hands their bets behind or side bets
ride on: the seat player's decisions decide those); and the round-wide events (dealer cards,
insurance window, dealer check, phases, supervisor pause, resume and cancel).

This module answers "I pressed stand and it hit" (a ``DecisionMade`` with action ``stand``, its
actor, options and the ``HandStood`` it led to), "I was disconnected and the system played my
hand" (``PlayerDisconnected``, then ``AutoActed`` with ``AUTO-1`` and the cards) and "my double
became a hit" (``DecisionMade`` double with the balance seen, ``DecisionConverted`` under
``FUNDS-1``, the card).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from domain.boundless.participation import Participation, participation_id
from domain.boundless.shared import SharedHand
from domain.errors import RoundNotFound, UnknownPlayer, WalletNotFound
from domain.events import event_kind
from projections.base import name_of

if TYPE_CHECKING:
    from domain.application import RoundAudit

SYSTEM_RULES = {"kind": "system", "id": "rules"}
PLAY_ACTIONS = frozenset({"hit", "stand", "double", "split", "surrender"})
_PSEUDO = frozenset({"shared", "sequence"})
#: Events every player of the round sees (dealer, phases, supervisor).
_ROUND_WIDE = frozenset(
    {
        "Started",
        "BettingClosed",
        "CardToDealer",
        "HandsOpened",
        "InsuranceWindowOpened",
        "InsuranceWindowClosed",
        "InsuranceWindowCompleted",
        "DealerChecked",
        "HoleCardRevealed",
        "PlayStarted",
        "DealerTurnStarted",
        "DealerStood",
        "RoundSettled",
        "RoundCancelled",
        "Paused",
        "Resumed",
        "CancelRequested",
    }
)
#: Events of one hand.
_HAND_EVENTS = frozenset(
    {
        "HandOpened",
        "CardToHand",
        "HandSplit",
        "HandDoubled",
        "HandSurrendered",
        "HandHit",
        "HandStood",
        "AutoActed",
        "DecisionConverted",
        "DecisionTimedOut",
        "DecisionMade",
        "DecisionPreselected",
    }
)
#: Events that name a player.
_PLAYER_EVENTS = frozenset(
    {
        "Joined",
        "BetPlaced",
        "SeatBetMirrored",
        "WagerAdded",
        "WagerSettled",
        "PaymentReversed",
        "BehindFollowed",
        "PlayerDisconnected",
        "DecisionMade",
        "DecisionTimedOut",
        "DecisionPreselected",
    }
)


@dataclass
class TimelineEntry:
    """One event of the round, as the player's dispute sees it."""

    seq: int  # position among all the round's events (a Round: its version)
    event: str
    kind: str  # input, consequence, lifecycle
    scope: str  # "player": the player's own; "hand": a hand their bet rides on; "round"
    actor: dict[str, str]
    server_time: str
    client_time: str | None = None
    request_id: str | None = None
    caused_by: int | None = None
    player: str | None = None
    hand: str | None = None
    wager_id: str | None = None
    options: list[str] | None = None
    action: str | None = None
    amount: Decimal | None = None
    balance_seen: Decimal | None = None
    balance_after: Decimal | None = None
    rule: str | None = None
    result: str | None = None
    card: str | None = None
    total: int | None = None
    shoe_position: int | None = None
    detail: str = ""
    cards_led_to: list[str] = field(default_factory=list)
    led_to: list[str] = field(default_factory=list)
    source: str = "Round"  # the aggregate that recorded it (Round, SharedHand, Participation)
    version: int = 0  # its version in that aggregate

    @property
    def is_decision(self) -> bool:
        return (self.event == "DecisionMade" and self.action in PLAY_ACTIONS) or self.event in (
            "AutoActed",
            "DecisionTimedOut",
        )

    def actor_text(self) -> str:
        kind, ident = self.actor.get("kind", "?"), self.actor.get("id", "")
        return f"{kind} {ident}".strip()

    def as_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(self).items()}


@dataclass
class Timeline:
    round_id: str
    table_id: str
    round_number: int
    rules_key: str
    production: bool
    player: str
    entries: list[TimelineEntry]

    def find(self, event: str, **where: Any) -> list[TimelineEntry]:
        """Entries of an event type whose fields equal ``where`` (for tests and tools)."""
        return [
            e
            for e in self.entries
            if e.event == event and all(getattr(e, k) == v for k, v in where.items())
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "round_id": self.round_id,
            "table_id": self.table_id,
            "round_number": self.round_number,
            "rules_key": self.rules_key,
            "production": self.production,
            "player": self.player,
            "entries": [e.as_json() for e in self.entries],
        }


def timeline(app: RoundAudit, round_id: str | UUID, player: str) -> Timeline:
    """The dispute timeline of ``player`` in round ``round_id`` (see the module docstring).

    Raises ``RoundNotFound`` for an unknown round and ``UnknownPlayer`` when the player had no
    bet in it."""
    try:
        rid = round_id if isinstance(round_id, UUID) else UUID(str(round_id))
    except ValueError:
        raise RoundNotFound(f"{round_id!r} is not a valid round id (a UUID)") from None
    events: list[Any] = list(app.events.get(rid))
    if not events or name_of(events[0]) != "Started":
        raise RoundNotFound(f"round {round_id} not found")
    if isinstance(events[0], SharedHand.Started):
        # boundless: the shared hand, merged with the player's own participation by server
        # time (each aggregate's own order is kept)
        own = list(app.events.get(participation_id(rid, player)))
        if not own:
            raise UnknownPlayer(f"player {player!r} has no bet in this round")
        events = list(heapq.merge(events, own, key=lambda e: e.timestamp))
    movements = _movements(app, player, str(rid))
    return build_timeline(events, player, movements)


def _movements(app: RoundAudit, player: str, rid: str) -> list[dict[str, Any]]:
    try:
        wallet = app.wallet(player)
    except WalletNotFound:
        return []
    return [dict(m) for m in wallet.movements if m["round_id"] == rid]


def build_timeline(
    events: Sequence[Any], player: str, movements: Sequence[dict[str, Any]] = ()
) -> Timeline:
    """The timeline from a round's events (and the player's wallet movements of the round)."""
    started = events[0]
    own, watched = _hands_of(events, player)
    if (
        not own
        and not watched
        and not any(name_of(e) == "BetPlaced" and e.player == player for e in events)
    ):
        raise UnknownPlayer(f"player {player!r} has no bet in this round")
    after = _balances_after(movements)
    entries: list[TimelineEntry] = []
    cause_seq: int | None = None
    cause: TimelineEntry | None = None
    dealt: Any = None
    for position, e in enumerate(events, start=1):
        name = name_of(e)
        if name == "CardDealt":
            dealt = e  # an input, but the card's routing belongs to what asked for the card
            continue
        scope = _scope(e, player, own, watched)
        is_input = event_kind(e) == "input"
        if is_input:
            cause_seq, cause = position, None
        if scope is None:
            continue
        entry = _entry(e, scope, player, after)
        entry.seq = position
        if name in ("CardToHand", "CardToDealer") and dealt is not None:
            entry.shoe_position = dealt.shoe_position
            entry.actor = dict(dealt.actor)  # who dealt it: the dealer, or the RNG shoe
            entry.client_time = dealt.client_time
            entry.request_id = dealt.request_id
        if is_input:
            cause = entry
        else:
            entry.caused_by = cause_seq
            if cause is not None:
                cause.led_to.append(_short(entry))
        entries.append(entry)
    _cards_led_to(entries)
    _balance_after_decisions(entries)
    return Timeline(
        round_id=str(started.originator_id),
        table_id=started.table_id,
        round_number=int(started.round_number),
        rules_key=started.rules_key,
        production=bool(started.production),
        player=player,
        entries=entries,
    )


def _hands_of(events: Sequence[Any], player: str) -> tuple[set[str], set[str]]:
    """(the player's own hands, the other hands their wagers ride on), splits included."""
    own: set[str] = set()
    watched: set[str] = set()
    spots: set[str] = set()
    for e in events:
        name = name_of(e)
        if name == "BetPlaced" and e.player == player and getattr(e, "spot", None) is not None:
            spots.add(e.spot)
        elif name == "HandOpened":
            if e.player == player:
                own.add(e.hand)
            elif getattr(e, "spot", None) in spots:
                watched.add(e.hand)
        elif name == "WagerAdded" and e.player == player and e.hand not in own:
            watched.add(e.hand)
        elif name == "HandSplit":
            for group in (own, watched):
                if e.hand in group:
                    group.update(e.into)
    return own, watched - own


def _scope(e: Any, player: str, own: set[str], watched: set[str]) -> str | None:
    name = name_of(e)
    if isinstance(e, Participation.Event | Participation.Joined):
        return "player"  # a boundless participation holds only its player's events
    if name in _PLAYER_EVENTS and getattr(e, "player", None) == player:
        return "player"
    if name in _HAND_EVENTS:
        hand = getattr(e, "hand", None)
        if hand in _PSEUDO:
            return None
        if hand in own:
            return "player"
        if hand in watched:
            return "hand"
        return None
    if name in _ROUND_WIDE:
        return "round"
    return None


def _balances_after(movements: Sequence[dict[str, Any]]) -> dict[tuple[str, str | None], Decimal]:
    """(movement kind, wager id) -> balance after the movement (the last one if several)."""
    return {(m["kind"], m["wager_id"]): Decimal(m["balance_after"]) for m in movements}


def _dec(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def _entry(
    e: Any, scope: str, player: str, after: dict[tuple[str, str | None], Decimal]
) -> TimelineEntry:
    kind = event_kind(e)
    name = name_of(e)
    entry = TimelineEntry(
        seq=int(e.originator_version),
        event=name,
        source=type(e).__qualname__.split(".")[0],
        version=int(e.originator_version),
        kind=kind,
        scope=scope,
        actor=dict(getattr(e, "actor", None) or SYSTEM_RULES),
        server_time=e.timestamp.isoformat(),
        client_time=getattr(e, "client_time", None),
        request_id=getattr(e, "request_id", None),
        player=getattr(e, "player", None),
        hand=getattr(e, "hand", None),
        wager_id=getattr(e, "wager_id", None),
        rule=getattr(e, "rule", None),
    )
    mine = entry.player == player
    if name == "Started":
        entry.detail = f"round {e.table_id}#{e.round_number} under {e.rules_key}" + (
            "" if e.production else " (test table)"
        )
    elif name == "BetPlaced":
        entry.amount = Decimal(e.stake)
        entry.balance_seen = Decimal(e.balance_seen)
        entry.balance_after = after.get(("stake", e.wager_id))
        spot = getattr(e, "spot", None)
        where = f" on {spot}" if spot else ""
        follow = ""
        if e.kind == "behind":
            follow = (
                f" (follow double: {'yes' if e.follow_double else 'no'},"
                f" follow split: {'yes' if e.follow_split else 'no'})"
            )
        entry.detail = f"{e.kind} bet {e.stake}{where}{follow}"
    elif name == "WagerAdded":
        entry.amount = Decimal(e.stake)
        entry.balance_seen = Decimal(e.balance_seen)
        entry.balance_after = after.get(("stake", e.wager_id))
        entry.detail = f"{e.kind} stake {e.stake} added on hand {e.hand}"
    elif name == "DecisionMade":
        entry.options = list(e.options)
        entry.action = e.action
        entry.amount = _dec(e.amount)
        if mine:
            entry.balance_seen = _dec(e.balance_seen)
        elif player in (getattr(e, "others_balance", None) or {}):
            entry.balance_seen = Decimal(e.others_balance[player])
        if entry.actor.get("id") == "PRE-1":
            entry.rule = "PRE-1"
            entry.detail = (
                f"{e.player}'s choice made ahead, {e.action}, played on hand {e.hand} as its "
                f"turn started; open: {', '.join(e.options)}"
            )
        else:
            entry.detail = (
                f"{e.player} chose {e.action} on hand {e.hand}; open: {', '.join(e.options)}"
            )
    elif name == "DecisionPreselected":
        entry.options = list(e.options)
        entry.action = e.action
        entry.rule = "PRE-1"
        entry.detail = f"{e.player} chose {e.action} ahead of hand {e.hand}'s turn"
    elif name == "SeatBetMirrored":
        entry.amount = Decimal(e.stake)
        entry.balance_after = after.get(("stake", e.wager_id))
        entry.detail = f"seat bet {e.mode} on seat {e.spot}: {e.stake}"
    elif name == "DecisionTimedOut":
        entry.detail = f"no decision from {e.player} on hand {e.hand} in time: AUTO-1 plays it"
        entry.rule = "AUTO-1"
    elif name == "PlayerDisconnected":
        entry.detail = f"{e.player} disconnected; the round goes on (DISC-1), AUTO-1 plays"
        entry.rule = "DISC-1"
    elif name == "DecisionConverted":
        entry.action = e.applied
        entry.amount = Decimal(e.needed)
        entry.balance_seen = Decimal(e.balance_seen)
        entry.balance_after = Decimal(e.balance_seen)  # nothing was debited
        entry.detail = (
            f"{e.requested} on hand {e.hand} became {e.applied}: needed {e.needed}, "
            f"balance {e.balance_seen}"
        )
    elif name == "AutoActed":
        entry.action = e.action
        entry.total = int(e.total)
        entry.detail = f"system {e.action}s hand {e.hand} at {e.total}"
    elif name == "CardToHand":
        entry.card = e.card
        entry.total = int(e.total)
        entry.detail = f"{e.card} to hand {e.hand}: {'soft ' if e.soft else ''}{e.total}"
    elif name == "CardToDealer":
        entry.card = e.card if e.face_up else None
        entry.detail = f"{e.card if e.face_up else 'a face-down card'} to the dealer"
    elif name == "HoleCardRevealed":
        entry.card = e.card
        entry.total = int(e.total)
        entry.detail = f"hole card {e.card}: dealer {e.total}"
    elif name == "HandStood":
        entry.total = int(e.total)
        entry.action = "stand"
        entry.detail = f"hand {e.hand} stands ({e.reason}) at {e.total}"
    elif name == "HandHit":
        entry.action = "hit"
        entry.detail = f"hand {e.hand} takes a card"
    elif name == "HandDoubled":
        entry.detail = f"hand {e.hand} doubled: one more card"
    elif name == "HandSplit":
        entry.detail = f"hand {e.hand} split into {', '.join(e.into)}"
    elif name == "HandSurrendered":
        entry.detail = f"hand {e.hand} surrendered"
    elif name == "HandOpened":
        cards = getattr(e, "cards", None)
        entry.detail = f"hand {e.hand} of {e.player} on {getattr(e, 'spot', e.player)}" + (
            f": {' '.join(cards)} = {e.total}" if cards else ""
        )
    elif name == "HandsOpened":
        entry.detail = f"hands open for the {e.seated} seated players"
    elif name == "Joined":
        entry.detail = f"{e.player} joins the round"
    elif name == "BehindFollowed":
        entry.balance_seen = Decimal(e.balance_seen)
        entry.amount = Decimal(e.needed)
        entry.detail = (
            f"bet behind {'followed' if e.followed else 'did not follow'} the {e.seat_action} "
            f"on hand {e.hand}: {e.reason}"
        )
    elif name == "WagerSettled":
        entry.amount = Decimal(e.payout)
        entry.result = e.result
        moved = "refund" if e.result == "refund" else "payout"
        entry.balance_after = after.get((moved, e.wager_id))
        ratio = f" at {e.ratio}" if e.ratio else ""
        pattern = f", {e.pattern}" if e.pattern else ""
        entry.detail = (
            f"{e.kind} {e.wager_id}: {e.result}{ratio}{pattern}; stake {e.stake}, "
            f"paid {e.payout}, net {e.net}"
        )
    elif name == "PaymentReversed":
        entry.amount = Decimal(e.amount)
        entry.balance_after = after.get(("reversal", e.wager_id))
        entry.detail = f"payment of {e.amount} on {e.wager_id} reversed"
    elif name == "InsuranceWindowOpened":
        hands = getattr(e, "hands", None)
        entry.detail = (
            f"insurance window opens for hands {', '.join(hands)}"
            if hands is not None
            else f"insurance window opens for the {e.seated} seated players"
        )
    elif name == "InsuranceWindowClosed":
        entry.detail = "insurance timer ran out: undecided hands decline"
    elif name == "InsuranceWindowCompleted":
        entry.detail = "every insurance decision made: the window closes"
    elif name == "DealerChecked":
        found = "blackjack" if e.blackjack else "no blackjack"
        entry.detail = f"dealer checks the hole card: {found}"
    elif name == "DealerStood":
        entry.total = int(e.total)
        entry.detail = f"dealer stands at {e.total} ({e.reason})"
    elif name == "RoundSettled":
        entry.detail = f"round settled; dealer {' '.join(e.dealer)} = {e.dealer_total}"
    elif name == "RoundCancelled":
        entry.detail = f"round cancelled: {e.reason}; every stake refunded"
    elif name in ("Paused", "Resumed", "CancelRequested"):
        entry.detail = f"{type(e).__name__.lower()} by {entry.actor_text()}: {e.reason}"
    elif name == "BettingClosed":
        entry.detail = "betting closed"
    elif name == "PlayStarted":
        entry.detail = "decisions begin"
    elif name == "DealerTurnStarted":
        entry.detail = "the dealer plays"
    return entry


def _short(entry: TimelineEntry) -> str:
    rule = f" ({entry.rule})" if entry.rule else ""
    return f"#{entry.seq} {entry.event}: {entry.detail}{rule}"


def _family(hand: str, other: str | None) -> bool:
    return other is not None and (other == hand or other.startswith(hand + "."))


def _cards_led_to(entries: list[TimelineEntry]) -> None:
    """Each decision gets the cards its hand (or its split hands) received before the next
    decision on that hand."""
    for i, entry in enumerate(entries):
        if not (entry.is_decision or entry.event == "DecisionConverted") or entry.hand is None:
            continue
        for later in entries[i + 1 :]:
            if later.is_decision and _family(entry.hand, later.hand):
                break
            if later.event == "CardToHand" and _family(entry.hand, later.hand):
                assert later.card is not None
                entry.cards_led_to.append(later.card)


def _balance_after_decisions(entries: list[TimelineEntry]) -> None:
    """A decision that checked the balance: after = the balance after the stake it added,
    or the balance seen when it moved no money (stand, hit, a conversion)."""
    for i, entry in enumerate(entries):
        if entry.event != "DecisionMade" or entry.balance_seen is None:
            continue
        entry.balance_after = entry.balance_seen
        for later in entries[i + 1 :]:
            if later.caused_by != entry.seq:
                break
            if later.event == "WagerAdded" and later.balance_after is not None:
                entry.balance_after = later.balance_after


# ------------------------------------------------------------------------------ printing


def format_timeline(t: Timeline) -> str:
    """The timeline as text for an investigator (``roundaudit dispute``)."""
    lines = [
        f"Round {t.table_id}#{t.round_number} ({t.round_id}), rules {t.rules_key}"
        + ("" if t.production else ", test table"),
        f"Timeline of player {t.player}: {len(t.entries)} events",
        "",
    ]
    for e in t.entries:
        mark = {"player": "*", "hand": "+", "round": " "}[e.scope]
        head = f"{mark}#{e.seq:<4} {e.server_time}  {e.event} [{e.kind}] by {e.actor_text()}"
        if e.caused_by is not None:
            head += f" <- #{e.caused_by}"
        lines.append(head)
        lines.append(f"        {e.detail}")
        facts = []
        if e.client_time or e.request_id:
            facts.append(f"client time {e.client_time or '-'}, request {e.request_id or '-'}")
        if e.options is not None:
            facts.append(f"options open: {', '.join(e.options) or 'none'}; taken: {e.action}")
        if e.balance_seen is not None or e.balance_after is not None:
            seen = "-" if e.balance_seen is None else str(e.balance_seen)
            aft = "-" if e.balance_after is None else str(e.balance_after)
            facts.append(f"balance seen {seen}, after {aft}")
        if e.rule:
            facts.append(f"rule {e.rule}")
        if e.shoe_position is not None:
            facts.append(f"shoe position {e.shoe_position}")
        if e.cards_led_to:
            facts.append(f"led to card(s) {' '.join(e.cards_led_to)}")
        for fact in facts:
            lines.append(f"        {fact}")
    lines.append("")
    lines.append("* the player's own events   + a hand the player's bet rides on   round-wide")
    return "\n".join(lines)


__all__ = ["Timeline", "TimelineEntry", "build_timeline", "format_timeline", "timeline"]

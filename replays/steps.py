"""Step-by-step replay: the table after each stored event of a round (the dispute view).

This module owns :func:`replay_steps` and its text and JSON rendering. It replays both models:

* **A classic round** (``domain.round``): the stored events are applied one by one to a
  ``Round`` exactly as the event store rebuilds it (``event.mutate(round)``), and after each one
  the round's own :meth:`~domain.round.Round.view` is taken: every hand with its cards and
  total, its stake(s), the options the rules allowed at that moment, the dealer's visible cards
  (the hole card is shown apart, marked, for the auditor). A step's position is the event's
  version.
* **A boundless round** (``domain.boundless``, recognised by its first event,
  ``SharedHand.Started``): the events of the shared hand and of every player's participation,
  merged in commit order, are folded each into its own aggregate (``event.mutate``, per stream,
  each checked to be the next version of its stream), and the view is the one the application
  gives (:meth:`~domain.boundless.engine.Engine.view`): every player's hands with cards, totals
  and options, the wagers, the dealer, the sequence, plus ``shared``, the shared initial cards.
  A step's position is its 1-based place in the merged list. Each player's part of the view is
  taken again only when that player's participation changed, or when the shared hand changed in
  a way that can change it (phase, pause, cards); the other parts are kept, so the work of a
  step does not grow with the number of players beyond copying the view's two lists (a memory
  copy; steps share the kept parts: treat a step's view as read-only). Each
  step says whose event it is (``owner``: ``shared`` or the player) and whose part of the table
  changed (``changed``); the text shows those players' hands, grouped per player, and the whole
  table at the last step.

Nothing is recomputed from the rules: the aggregates are rebuilt from what was recorded, as the
store rebuilds them. Balances are the ones the events recorded as seen (a bet's
``balance_seen``, a decision's) and, where the round's wallet movements are given, the wallet
balance after each movement the step caused (``<round>/<wager>/stake|<result>|reverse``).

A step whose event cannot be applied (a tampered or missing event) ends the replay with the
reason: the state after it would be fiction.

:func:`iter_steps` yields the steps one at a time (``stopped`` is known once it is exhausted),
and :func:`text_chunks` / :func:`json_chunks` render such a stream without holding it, which is
how ``roundaudit replay`` prints a large round.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.utils import get_topic

from domain.boundless.engine import Engine
from domain.boundless.participation import Participation, participation_id
from domain.boundless.shared import SharedHand
from domain.events import event_kind
from domain.round import Round
from replays.bundle import Decoded, RoundBundle, payload_json

Json = dict[str, Any]
SHARED = "shared"
_STARTED_TOPIC = get_topic(SharedHand.Started)
_HAND_KINDS = ("main", "split", "double", "behind", "behind_double", "behind_split")


@dataclass
class Step:
    position: int
    event: str
    kind: str
    rule: str | None
    summary: str
    view: Json
    hole: list[str]
    balances: dict[str, str]
    movements: list[str] = field(default_factory=list)
    #: boundless only: whose event it is (``shared`` or the player) and the players whose part
    #: of the table (hands, wagers, options) this step changed, in table order.
    owner: str | None = None
    changed: list[str] | None = None
    #: boundless, for the text (not in the JSON, which has the whole view): the hands and
    #: wagers of the players the step concerns (its owner, those it changed), and how many
    #: players the table has
    shown: dict[str, tuple[list[Json], list[Json]]] | None = field(
        default=None, repr=False, compare=False
    )
    seated: int = field(default=0, repr=False, compare=False)
    #: the event's server time (ISO 8601) and its payload as recorded (``payload_json``: the
    #: actor, client time and request id of an input, the options open and the action taken,
    #: the balance seen, the rule...), for a reader that shows who did what and when
    server_time: str | None = None
    payload: Json | None = None

    def as_json(self) -> Json:
        out: Json = {
            "position": self.position,
            "event": self.event,
            "kind": self.kind,
            "rule": self.rule,
            "summary": self.summary,
            "view": self.view,
            "dealer_hole": self.hole,
            "balances": self.balances,
            "movements": self.movements,
            "server_time": self.server_time,
            "payload": self.payload,
        }
        if self.owner is not None:
            out["owner"] = self.owner
            out["changed"] = self.changed or []
        return out


@dataclass
class Replay:
    round_id: str
    steps: list[Step]
    stopped: str | None = None  # why the replay ended early
    events: int | None = None  # how many stored events were given (default: the steps)

    def as_json(self) -> Json:
        return {
            "round_id": self.round_id,
            "steps": [s.as_json() for s in self.steps],
            "stopped": self.stopped,
        }


# ------------------------------------------------------------------------------ summaries
def summarize(e: Any, player: str | None = None) -> str:
    """One line saying what an event records (``player``: whose participation a boundless
    event belongs to, when the event does not name the player itself).

    >>> class Fake: pass
    >>> summarize(Fake())
    ''
    """
    p = payload_json(e) if hasattr(e, "__dict__") else {}
    if isinstance(e, Participation.Event):
        who = player or p.get("player") or "?"
        return f"{who}: {_participation_summary(e, p)}"
    if isinstance(e, SharedHand.Event):
        said = _shared_summary(e, p)
        if said is not None:
            return said
    if isinstance(e, Round.Started):
        return f"round {p['round_number']} of table {p['table_id']} under {p['rules_key']}"
    if isinstance(e, Round.BetPlaced):
        return (
            f"{p['player']} bets {p['stake']} ({p['kind']}) on {p['spot']}, balance seen "
            f"{p['balance_seen']}"
        )
    if isinstance(e, Round.CardDealt | SharedHand.CardDealt):
        return f"card {p['card']} out of the shoe (position {p['shoe_position']})"
    if isinstance(e, Round.CardToHand):
        return f"{p['card']} to hand {p['hand']} (total {p['total']}{_soft(p)})"
    if isinstance(e, Round.CardToDealer | SharedHand.CardToDealer):
        return f"{p['card'] if p['face_up'] else 'hole card'} to the dealer"
    if isinstance(e, Round.DecisionMade):
        extra = f" {p['amount']}" if p.get("amount") else ""
        return (
            f"{p['player']} on hand {p['hand']}: {p['action']}{extra} (open: "
            f"{', '.join(p['options'])}; balance seen {p['balance_seen']})"
        )
    if isinstance(e, Round.WagerSettled):
        return (
            f"{p['wager_id']} ({p['player']}): {p['result']}, stake {p['stake']}, payout "
            f"{p['payout']}"
        )
    if isinstance(e, Round.HandStood):
        return f"hand {p['hand']} stands on {p['total']} ({p['reason']})"
    if isinstance(e, Round.DealerStood | SharedHand.DealerStood):
        return f"dealer stands on {p['total']} ({p['reason']})"
    if isinstance(e, Round.Event):
        said = _round_summary(type(e).__name__, p)
        if said is not None:
            return said
    keys = [k for k in p if k not in ("actor", "request_id", "client_time", "rule")]
    return ", ".join(f"{k}={p[k]}" for k in keys[:6])


def _round_summary(name: str, p: Json) -> str | None:
    """A classic round's event in words (None: the generic wording)."""
    who = p.get("player")
    hand = p.get("hand")
    said: dict[str, Callable[[], str]] = {
        "DecisionTimedOut": lambda: f"{who}'s decision timer expired on hand {hand}",
        "PlayerDisconnected": lambda: f"{who} disconnected; the round goes on",
        "AutoActed": lambda: f"hand {hand} plays {p['action']} on {p['total']} automatically",
        "DecisionConverted": lambda: (
            f"{p['requested']} on hand {hand} becomes {p['applied']}: it needs {p['needed']}, "
            f"balance seen {p['balance_seen']}"
        ),
        "DecisionPreselected": lambda: f"{who} chooses {p['action']} ahead of hand {hand}'s turn",
        "HandOpened": lambda: f"hand {hand} opens for {who} on {p.get('spot')}",
        "WagerAdded": lambda: (
            f"{p['kind']} wager {p['wager_id']} of {p['stake']} on hand {hand} ({who}), "
            f"balance seen {p['balance_seen']}"
        ),
        "SeatBetMirrored": lambda: (
            f"{who}'s seat bet {p['mode']} on seat {p['spot']}: {p['stake']}"
        ),
        "HandSplit": lambda: f"hand {hand} splits into {', '.join(p['into'])}",
        "HandDoubled": lambda: f"hand {hand} doubles",
        "HandSurrendered": lambda: f"hand {hand} surrenders",
        "HandHit": lambda: f"hand {hand} hits",
        "BehindFollowed": lambda: (
            f"the bet behind {'follows' if p.get('followed') else 'does not follow'} the "
            f"{p.get('seat_action')} on hand {hand}: {p.get('reason')}"
        ),
        "BettingClosed": lambda: "betting closed",
        "PlayStarted": lambda: "players' decisions open",
        "DealerTurnStarted": lambda: "every hand is complete: the dealer's turn",
        "InsuranceWindowOpened": lambda: "insurance window open",
        "InsuranceWindowClosed": lambda: "insurance timer ran out: undecided hands decline",
        "InsuranceWindowCompleted": lambda: "every insurance decision is in: the window closes",
        "DealerChecked": lambda: (
            "dealer checks the hole card: "
            + ("blackjack" if p.get("blackjack") else "no blackjack")
        ),
        "HoleCardRevealed": lambda: f"hole card {p['card']} revealed (dealer total {p['total']})",
        "RoundSettled": lambda: (
            f"round settled; dealer {' '.join(p['dealer'])} = {p['dealer_total']}"
        ),
        "RoundCancelled": lambda: f"round cancelled ({p.get('reason')})",
        "PaymentReversed": lambda: f"payment {p['amount']} of {p['wager_id']} reversed",
    }
    if name in ("Paused", "Resumed", "CancelRequested"):
        what = {"Paused": "paused", "Resumed": "resumed", "CancelRequested": "cancel requested"}
        actor = p.get("actor") or {}
        return f"{what[name]} by {actor.get('id')}: {p.get('reason')}"
    make = said.get(name)
    try:
        return make() if make is not None else None
    except (KeyError, TypeError):  # a payload without the expected fields: the generic wording
        return None


def _soft(p: Json) -> str:
    return " soft" if p.get("soft") else ""


def _shared_summary(e: Any, p: Json) -> str | None:
    """A boundless shared-hand event in words (None: the common wording fits)."""
    S = SharedHand
    if isinstance(e, S.Started):
        return (
            f"boundless round {p['round_number']} of table {p['table_id']} under "
            f"{p['rules_key']} (round {p['shoe_round']} of the shoe)"
        )
    if isinstance(e, S.BettingClosed):
        return "betting closed"
    if isinstance(e, S.CardToHand):
        if p["hand"] == SHARED:
            return f"{p['card']} to the shared hand (total {p['total']}{_soft(p)})"
        return f"{p['card']} revealed as sequence card {p['index'] + 1}"
    if isinstance(e, S.HandsOpened):
        return f"the shared hand opens for {p['seated']} seated players"
    if isinstance(e, S.InsuranceWindowOpened):
        return f"insurance window open for {p['seated']} seated players"
    if isinstance(e, S.InsuranceWindowCompleted):
        return "every insurance decision is in: the window closes"
    if isinstance(e, S.InsuranceWindowClosed):
        return "insurance timer ran out: undecided players decline"
    if isinstance(e, S.DealerChecked):
        return "dealer checks the hole card: " + ("blackjack" if p["blackjack"] else "no blackjack")
    if isinstance(e, S.HoleCardRevealed):
        return f"hole card {p['card']} revealed (dealer total {p['total']})"
    if isinstance(e, S.PlayStarted):
        return "players' decisions open"
    if isinstance(e, S.DealerTurnStarted):
        return "every hand is complete: the dealer's turn"
    if isinstance(e, S.RoundSettled):
        return f"round settled; dealer {' '.join(p['dealer'])} = {p['dealer_total']}"
    if isinstance(e, S.Paused | S.Resumed | S.CancelRequested):
        what = {"Paused": "paused", "Resumed": "resumed", "CancelRequested": "cancel requested"}
        return f"{what[type(e).__name__]} by {p['actor'].get('id')}: {p['reason']}"
    if isinstance(e, S.RoundCancelled):
        return f"round cancelled ({p['reason']})"
    return None


def _participation_summary(e: Any, p: Json) -> str:
    P = Participation
    if isinstance(e, P.Joined):
        return f"joins (round {p['shoe_round']} of the shoe)"
    if isinstance(e, P.BetPlaced):
        return f"bets {p['stake']} ({p['kind']}), balance seen {p['balance_seen']}"
    if isinstance(e, P.DecisionMade):
        extra = f" {p['amount']}" if p.get("amount") else ""
        return (
            f"{p['action']}{extra} on hand {p['hand']} (open: {', '.join(p['options'])}; "
            f"balance seen {p['balance_seen']})"
        )
    if isinstance(e, P.DecisionTimedOut):
        where = "the insurance decision" if p["window"] else f"hand {p['hand']}"
        return f"decision timer expired on {where}"
    if isinstance(e, P.PlayerDisconnected):
        return "disconnected" + (" (insurance declined)" if p["window"] else "")
    if isinstance(e, P.HandOpened):
        return f"hand {p['hand']} opens with {' '.join(p['cards'])} (total {p['total']}{_soft(p)})"
    if isinstance(e, P.CardToHand):
        return (
            f"{p['card']} (sequence card {p['index'] + 1}) to hand {p['hand']} "
            f"(total {p['total']}{_soft(p)})"
        )
    if isinstance(e, P.HandHit):
        return f"hand {p['hand']} hits"
    if isinstance(e, P.HandDoubled):
        return f"hand {p['hand']} doubles"
    if isinstance(e, P.HandSplit):
        return f"hand {p['hand']} splits into {', '.join(p['into'])}"
    if isinstance(e, P.HandSurrendered):
        return f"hand {p['hand']} surrenders"
    if isinstance(e, P.WagerAdded):
        return (
            f"{p['kind']} wager {p['wager_id']} of {p['stake']} on hand {p['hand']}, balance "
            f"seen {p['balance_seen']}"
        )
    if isinstance(e, P.DecisionConverted):
        return (
            f"{p['requested']} on hand {p['hand']} becomes {p['applied']}: it needs "
            f"{p['needed']}, balance seen {p['balance_seen']}"
        )
    if isinstance(e, P.AutoActed):
        return f"hand {p['hand']} plays {p['action']} on {p['total']} automatically"
    if isinstance(e, P.HandStood):
        return f"hand {p['hand']} stands on {p['total']} ({p['reason']})"
    if isinstance(e, P.WagerSettled):
        pattern = f" ({p['pattern']})" if p.get("pattern") else ""
        ratio = p.get("ratio")
        ratio = f" at {ratio}" if ratio and not str(ratio).startswith("0:") else ""
        return (
            f"{p['wager_id']}: {p['result']}{pattern}{ratio}, stake {p['stake']}, payout "
            f"{p['payout']}"
        )
    if isinstance(e, P.PaymentReversed):
        return f"payment {p['amount']} of {p['wager_id']} ({p['result']}) reversed"
    keys = [k for k in p if k not in ("actor", "request_id", "client_time", "rule", "player")]
    return ", ".join(f"{k}={p[k]}" for k in keys[:6])


# ------------------------------------------------------------------------------ replaying
class StepStream:
    """The steps of one round, one at a time; ``stopped`` says why they ended early, once the
    stream is exhausted (None: every event was applied)."""

    def __init__(
        self, decoded: Sequence[Decoded], *, movements: Iterable[Decoded] = (), round_id: str = ""
    ) -> None:
        self.decoded = decoded
        self.round_id = round_id
        self.events = len(decoded)
        self.stopped: str | None = None
        self.by_tid: dict[str, Any] = {
            str(m.event.transaction_id): m.event for m in movements if m.event is not None
        }
        self.boundless = is_boundless(decoded)

    def __iter__(self) -> Iterator[Step]:
        return self._boundless() if self.boundless else self._round()

    # ------------------------------------------------------------------ classic rounds
    def _round(self) -> Iterator[Step]:
        rnd: Any = None
        seen: dict[str, str] = {}
        for d in self.decoded:
            e = d.event
            if e is None:
                self.stopped = f"position {d.version}: the stored event does not decode ({d.error})"
                return
            try:
                rnd = e.mutate(rnd)
                view = rnd.view()
            except Exception as exc:  # a tampered log: report where the replay had to stop
                self.stopped = (
                    f"position {d.version}: {type(e).__qualname__} cannot be applied ({exc})"
                )
                return
            p = payload_json(e)
            _note_balances(seen, p, p.get("player"))
            yield Step(
                position=d.version,
                event=f"Round.{type(e).__name__}",
                kind=event_kind(e),
                rule=_rule(p),
                summary=summarize(e),
                view=view,
                hole=_hidden(rnd),
                balances=dict(seen),
                movements=self._moved(str(d.record.originator_id), e),
                server_time=_time(e),
                payload=p,
            )

    # --------------------------------------------------------------- boundless rounds
    def _boundless(self) -> Iterator[Step]:
        table = _Table()
        seen: dict[str, str] = {}
        for index, d in enumerate(self.decoded, start=1):
            # the place in the round's merged log (kept when only some streams are replayed)
            position = d.at if d.at is not None else index
            e = d.event
            if e is None:
                self.stopped = f"position {position}: the stored event does not decode ({d.error})"
                return
            try:
                owner, changed = table.apply(d.record.originator_id, e)
                view = table.view()
            except _Refused as why:
                self.stopped = f"position {position}: {type(e).__qualname__} {why}"
                return
            except Exception as exc:  # an event body or the view failed on a tampered log
                self.stopped = (
                    f"position {position}: {type(e).__qualname__} cannot be applied "
                    f"({type(exc).__name__}: {exc})"
                )
                return
            p = payload_json(e)
            player = None if owner == SHARED else owner
            _note_balances(seen, p, player)
            assert table.shared is not None
            yield Step(
                position=position,
                event=type(e).__qualname__,
                kind=event_kind(e),
                rule=_rule(p),
                summary=summarize(e, player),
                view=view,
                hole=_hidden(table.shared),
                balances=dict(seen),
                movements=self._moved(str(table.shared.id), e),
                owner=owner,
                changed=changed,
                shown=table.shown(dict.fromkeys([*([player] if player else []), *changed])),
                seated=len(table.parts),
                server_time=_time(e),
                payload=p,
            )

    def _moved(self, rid: str, e: Any) -> list[str]:
        out = []
        for tid in _transactions(rid, e):
            m = self.by_tid.get(tid)
            if m is not None:
                out.append(
                    f"{m.transaction_id}: {type(m).__name__} {m.amount}, balance after "
                    f"{m.balance_after}"
                )
        return out


def _time(e: Any) -> str | None:
    ts = getattr(e, "timestamp", None)
    return None if ts is None else str(ts.isoformat())


def is_boundless(decoded: Sequence[Decoded]) -> bool:
    """Whether the events are a boundless round's (first event ``SharedHand.Started``)."""
    if not decoded:
        return False
    first = decoded[0]
    return isinstance(first.event, SharedHand.Started) or first.record.topic == _STARTED_TOPIC


def _rule(p: Json) -> str | None:
    rule = p.get("rule")
    return rule if isinstance(rule, str) else None


def _note_balances(seen: dict[str, str], p: Json, player: object) -> None:
    """The balances an event recorded as seen (its player's, and others' where it has them)."""
    if isinstance(player, str) and isinstance(p.get("balance_seen"), str):
        seen[player] = p["balance_seen"]
    for other, bal in (p.get("others_balance") or {}).items():
        seen[other] = bal


class _Refused(Exception):
    """An event that is not the next one of its stream (the reason is the message)."""


class _Table:
    """A boundless round folded event by event: the shared hand, each participation, an
    :class:`Engine` over them (for what the round waits for), and each participation's part of
    the view, kept until it changes (see the module docstring).

    The parts are kept in table order (the order players joined, as ``Engine.view`` lists them)
    and also as two flat lists, the view's ``hands`` and ``wagers``, updated in place: a step
    copies them (a memory copy) instead of assembling the view from every player again."""

    def __init__(self) -> None:
        self.shared: SharedHand | None = None
        self.engine: Engine | None = None
        self.parts: dict[UUID, Participation] = {}
        self.slot: dict[UUID, int] = {}  # table order
        self.by_player: dict[str, int] = {}
        self.hands: list[list[Json]] = []  # each participation's hands, by slot
        self.wagers: list[list[Json]] = []
        self.hand_len: list[int] = []
        self.wager_len: list[int] = []
        self.flat_hands: list[Json] = []
        self.flat_wagers: list[Json] = []
        self._key: tuple[object, ...] | None = None

    def apply(self, oid: UUID, e: Any) -> tuple[str, list[str]]:
        """Apply one event to its aggregate; returns whose event it is (``shared`` or the
        player) and the players whose part of the view changed."""
        s = self.shared
        if s is None:
            if not isinstance(e, SharedHand.Started):
                raise _Refused(
                    "cannot be applied: the round's first event is not SharedHand.Started"
                )
            self._check_version(e, None, "the shared hand")
            shared = e.mutate(None)
            assert isinstance(shared, SharedHand)
            self.shared, self.engine = shared, Engine(shared)
            return SHARED, self._refresh(None)
        if oid == s.id:
            if not isinstance(e, SharedHand.Event) or isinstance(e, SharedHand.Started):
                raise _Refused("cannot be applied: it is not a next event of the shared hand")
            self._check_version(e, s, "the shared hand")
            e.mutate(s)
            return SHARED, self._refresh(None)
        if not isinstance(e, Participation.Event):
            raise _Refused(
                f"cannot be applied: stream {oid} is neither the shared hand nor a participation"
            )
        assert self.engine is not None
        p = self.parts.get(oid)
        if isinstance(e, Participation.Joined):
            if p is not None:
                raise _Refused(f"cannot be applied: {p.player} has already joined")
            if e.round_id != str(s.id) or oid != participation_id(s.id, e.player):
                raise _Refused(f"cannot be applied: it joins round {e.round_id}, not {s.id}")
            self._check_version(e, None, f"{e.player}'s participation")
            p = e.mutate(None)
            assert isinstance(p, Participation)
            self.parts[oid] = p
            self.slot[oid] = self.by_player[p.player] = len(self.hands)
            self.hands.append([])
            self.wagers.append([])
            self.hand_len.append(0)
            self.wager_len.append(0)
            self.engine.add(p)
        else:
            if p is None:
                raise _Refused(f"cannot be applied: participation {oid} has no Joined before it")
            self._check_version(e, p, f"{p.player}'s participation")
            e.mutate(p)
            self.engine.touch(oid)
        return p.player, self._refresh(oid, joined=isinstance(e, Participation.Joined))

    @staticmethod
    def _check_version(e: Any, agg: Any, whose: str) -> None:
        expected = 1 if agg is None else agg.version + 1
        if e.originator_version != expected:
            raise _Refused(
                f"cannot be applied: it is event {e.originator_version} of {whose}, where event "
                f"{expected} comes next (an event is missing or out of order)"
            )

    def _refresh(self, oid: UUID | None, *, joined: bool = False) -> list[str]:
        """Take again the parts of the view that may have changed: the participation ``oid``,
        or every one when the shared hand moved in a way that can change players' options."""
        s = self.shared
        assert s is not None
        key = (
            s.phase, s.paused, s.cancelling, s.dealer_final, s.hole_revealed, s.seated,
            len(s.initial), len(s.dealer), len(s.sequence),
        )  # fmt: skip
        everyone = key != self._key
        self._key = key
        ids: Iterable[UUID] = self.parts if everyone else (() if oid is None else (oid,))
        changed: list[str] = []
        for pid in ids:
            i = self.slot[pid]
            hands, wagers = self._part(self.parts[pid])
            if hands != self.hands[i] or wagers != self.wagers[i] or (joined and pid == oid):
                changed.append(self.parts[pid].player)
                if not everyone:
                    self._splice(self.flat_hands, self.hand_len, i, hands)
                    self._splice(self.flat_wagers, self.wager_len, i, wagers)
                self.hands[i], self.wagers[i] = hands, wagers
                self.hand_len[i], self.wager_len[i] = len(hands), len(wagers)
        if everyone and changed:
            self.flat_hands = list(chain.from_iterable(self.hands))
            self.flat_wagers = list(chain.from_iterable(self.wagers))
        return changed

    def _part(self, p: Participation) -> tuple[list[Json], list[Json]]:
        """One participation's hands and wagers, as the application's view gives them."""
        assert self.shared is not None
        one = Engine(self.shared)
        one.add(p)
        v = one.view()
        return v["hands"], v["wagers"]

    @staticmethod
    def _splice(flat: list[Json], lengths: list[int], i: int, new: list[Json]) -> None:
        """Put slot ``i``'s new part in place in a flat list (the lengths are the old ones)."""
        start = sum(lengths[:i])
        flat[start : start + lengths[i]] = new

    def shown(self, players: Iterable[str]) -> dict[str, tuple[list[Json], list[Json]]]:
        return {
            player: (self.hands[self.by_player[player]], self.wagers[self.by_player[player]])
            for player in players
        }

    def _card_needed(self) -> dict[str, str] | None:
        """``Engine.card_needed``, answered at once while some participation can still take
        steps by itself (the answer is then None): the engine would sort all of them to say so,
        at every step of a window where thousands take a revealed card."""
        engine = self.engine
        assert engine is not None
        s = engine.shared
        if s.own_card_need() is None and (
            engine.waiting("auto") or any(engine.waiting("card", i) for i in range(len(s.sequence)))
        ):
            return None
        return engine.card_needed()

    def view(self) -> Json:
        """The round's view as ``Engine.view`` gives it, with the shared initial cards."""
        s, engine = self.shared, self.engine
        assert s is not None
        assert engine is not None
        head = Engine(s).view()  # round, phase, dealer, sequence: nothing of the players
        return {
            **head,
            "card_needed": self._card_needed(),
            "shared": [c.code for c in s.initial],
            "hands": list(self.flat_hands),
            "wagers": list(self.flat_wagers),
        }


def _hidden(rnd: Any) -> list[str]:
    """The dealer's cards the table does not see yet (as the view hides them)."""
    if rnd.hole_revealed or rnd.finished or not rnd.rules.peeks:
        return []
    hole = 1 - rnd.rules.upcard_index
    return [c.code for i, c in enumerate(rnd.dealer) if i == hole]


_STAKES = (
    Round.BetPlaced,
    Round.WagerAdded,
    Round.SeatBetMirrored,
    Participation.BetPlaced,
    Participation.WagerAdded,
)


def _transactions(rid: str, e: Any) -> list[str]:
    """The wallet transaction ids the application gives the movements ``e`` causes
    (``domain.movements``; ``rid`` is the round id, a boundless round's shared hand's)."""
    if isinstance(e, _STAKES):
        return [f"{rid}/{e.wager_id}/stake"]
    if isinstance(e, Round.WagerSettled | Participation.WagerSettled):
        return [f"{rid}/{e.wager_id}/{e.result}"]
    if isinstance(e, Round.PaymentReversed | Participation.PaymentReversed):
        return [f"{rid}/{e.wager_id}/reverse"]
    return []


def iter_steps(
    decoded: Sequence[Decoded], *, movements: Iterable[Decoded] = (), round_id: str = ""
) -> StepStream:
    """The table after each event, one step at a time (see the module docstring)."""
    return StepStream(decoded, movements=movements, round_id=round_id)


def iter_bundle(bundle: RoundBundle) -> StepStream:
    return iter_steps(bundle.round, movements=bundle.money, round_id=str(bundle.round_id))


def player_stream(bundle: RoundBundle, player: str) -> StepStream:
    """The round as ``player`` lived it (the dispute view of one player): a classic round's
    every step (its table is one, seen by everyone); a boundless round's shared hand and that
    player's participation only, each step at its place in the round's merged log, so the
    steps of thousands of other players are never built. Wallet movements: the player's own.
    Pass the steps through :func:`focus_steps` to keep other players' balances out."""
    from domain.wallet import Wallet

    wallet = Wallet.create_id(player)
    money = [m for m in bundle.money if m.record.originator_id == wallet]
    decoded: Sequence[Decoded] = bundle.round
    if is_boundless(decoded):
        streams = {bundle.round_id, participation_id(bundle.round_id, player)}
        decoded = [d for d in decoded if d.record.originator_id in streams]
    return iter_steps(decoded, movements=money, round_id=str(bundle.round_id))


_OTHERS_BALANCE = re.compile(r"[,;]? ?balance[ _]seen[ =]-?[0-9.]+")


def focus_steps(steps: Iterable[Step], player: str) -> Iterator[Step]:
    """The steps with nothing of another player's balance: the balances seen are the
    player's only, and another player's event loses its ``balance_seen`` (payload and
    summary) and every event its ``others_balance``."""
    for step in steps:
        payload = dict(step.payload or {})
        payload.pop("others_balance", None)
        summary = step.summary
        if payload.get("player", player) != player and "balance_seen" in payload:
            payload["balance_seen"] = None
            summary = _OTHERS_BALANCE.sub("", summary).removeprefix(", ")
        balances = {p: b for p, b in step.balances.items() if p == player}
        yield replace(step, payload=payload, summary=summary, balances=balances)


def replay_steps(
    decoded: Sequence[Decoded], *, movements: Iterable[Decoded] = (), round_id: str = ""
) -> Replay:
    """The table after each event (see the module docstring)."""
    stream = iter_steps(decoded, movements=movements, round_id=round_id)
    steps = list(stream)
    return Replay(round_id, steps, stream.stopped, events=stream.events)


def replay_bundle(bundle: RoundBundle) -> Replay:
    return replay_steps(bundle.round, movements=bundle.money, round_id=str(bundle.round_id))


# ------------------------------------------------------------------------------ text
def _hand_line(h: Json, stakes: dict[str, list[str]], *, player: bool = True) -> str:
    cards = " ".join(h["cards"]) or "-"
    flags = [
        name
        for name, on in (
            ("BJ", h["blackjack"]),
            ("bust", h["bust"]),
            ("doubled", h["doubled"]),
            ("surrendered", h["surrendered"]),
        )
        if on
    ]
    total = f"{h['total']}{' soft' if h['soft'] else ''}" if h["cards"] else "-"
    state = h["finish_reason"] or ("done" if h["finished"] else "")
    options = ", ".join(h["options"]) or "-"
    who = f"{h['player']:<14} " if player else ""
    return (
        f"{'    ' if player else '      '}hand {h['hand']:<6} {who}{cards:<22} = {total:<8} "
        f"{' '.join(flags):<12} stakes {', '.join(stakes.get(h['hand'], [])) or '-':<26} "
        f"{state:<10} options: {options}"
    )


def _wager_text(w: Json) -> str:
    return f"{w['kind']} {w['stake']}" + (
        f" -> {w['result']} {w['payout']}" if w["settled"] else ""
    )


def _stakes(
    hands: Iterable[Json], wagers: Iterable[Json]
) -> tuple[dict[str, list[str]], list[Json]]:
    """The wagers on ``hands`` by hand id (another player's marked), and the other wagers."""
    owner = {h["hand"]: h["player"] for h in hands}
    stakes: dict[str, list[str]] = {}
    loose: list[Json] = []
    for w in wagers:
        if w["hand"] is not None and w["kind"] in _HAND_KINDS:
            text = _wager_text(w)
            stakes.setdefault(w["hand"], []).append(
                text if w["player"] == owner.get(w["hand"]) else f"{w['player']}: {text}"
            )
        else:
            loose.append(w)
    return stakes, loose


def step_lines(step: Step, *, everyone: bool = False) -> list[str]:
    """A step as text. A boundless step shows the players it concerns or changed, each with
    their hands and wagers (``everyone``: every player, as for the last step)."""
    v = step.view
    rule = f" [{step.rule}]" if step.rule else ""
    said = f": {step.summary}" if step.summary else ""
    out = [f"#{step.position:<3} {step.kind:<11} {step.event}{rule}{said}"]
    dealer = " ".join(v["dealer"]["cards"]) or "-"
    if step.hole:
        dealer += " [" + " ".join(step.hole) + " face down]"
    total = v["dealer"]["total"]
    out.append(
        f"    phase {v['phase']}{' (paused)' if v['paused'] else ''}; dealer {dealer}"
        + (f" = {total}" if total is not None else "")
        + (f"; shared {' '.join(v['shared'])}" if v.get("shared") else "")
        + (f"; sequence {' '.join(v['sequence'])}" if v.get("sequence") else "")
    )
    if step.owner is not None:
        out += _player_lines(step, everyone)
    else:
        stakes, loose = _stakes(v["hands"], v["wagers"])
        out += [_hand_line(h, stakes) for h in v["hands"]]
        if loose:
            out.append(
                "    other wagers: "
                + "; ".join(f"{w['player']} {_wager_text(w)} ({w['wager_id']})" for w in loose)
            )
        if step.balances:
            out.append(
                "    balances seen: "
                + ", ".join(f"{p} {b}" for p, b in sorted(step.balances.items()))
            )
    out += [f"    wallet: {m}" for m in step.movements]
    return out


def _player_lines(step: Step, everyone: bool) -> list[str]:
    """A boundless step's players, grouped: each player's hands, then their other wagers."""
    v = step.view
    shown = step.shown
    if everyone or shown is None:
        wanted = None if everyone else _concerned(step)
        shown = {}
        for h in v["hands"]:
            if wanted is None or h["player"] in wanted:
                shown.setdefault(h["player"], ([], []))[0].append(h)
        for w in v["wagers"]:
            if wanted is None or w["player"] in wanted:
                shown.setdefault(w["player"], ([], []))[1].append(w)
        if wanted is not None:  # in the step's order, with players who have nothing yet
            shown = {p: shown.get(p, ([], [])) for p in wanted}
    out: list[str] = []
    for player, (hands, wagers) in shown.items():
        seen = step.balances.get(player)
        out.append(f"    {player}" + (f" (balance seen {seen})" if seen is not None else ""))
        stakes, loose = _stakes(hands, wagers)
        out += [_hand_line(h, stakes, player=False) for h in hands]
        if loose:
            out.append(
                "      other wagers: "
                + "; ".join(f"{_wager_text(w)} ({w['wager_id']})" for w in loose)
            )
        if not hands and not wagers:
            out.append("      no bet yet")
    if not everyone:
        seated = step.seated or len(
            {w["player"] for w in v["wagers"]} | {h["player"] for h in v["hands"]}
        )
        rest = seated - len(shown)
        if rest > 0:
            other = " other" if shown else ""
            out.append(f"    ({rest}{other} player{'s' if rest != 1 else ''} unchanged)")
    return out


def _concerned(step: Step) -> list[str]:
    """The players a boundless step concerns: its owner, then those whose part it changed."""
    owner = [step.owner] if step.owner is not None and step.owner != SHARED else []
    return list(dict.fromkeys([*owner, *(step.changed or [])]))


def text_chunks(
    round_id: str, events: int, steps: Iterable[Step], stopped: Callable[[], str | None]
) -> Iterator[str]:
    """The text of a replay, a step at a time (``stopped`` is asked once the steps are done)."""
    yield f"round {round_id}: {events} events\n"
    last: Step | None = None
    for s in steps:
        if last is not None:
            yield "\n".join(step_lines(last)) + "\n"
        last = s
    if last is not None:
        yield "\n".join(step_lines(last, everyone=True)) + "\n"
    why = stopped()
    if why:
        yield f"REPLAY STOPPED at {why}\n"


def json_chunks(
    round_id: str, steps: Iterable[Step], stopped: Callable[[], str | None]
) -> Iterator[bytes]:
    """``Replay.as_json`` as indented JSON, a step at a time: the same bytes as
    ``orjson.dumps(replay.as_json(), option=orjson.OPT_INDENT_2, default=str)``."""
    yield b'{\n  "round_id": ' + orjson.dumps(round_id) + b',\n  "steps": ['
    first = True
    for s in steps:
        body = orjson.dumps(s.as_json(), option=orjson.OPT_INDENT_2, default=str)
        yield (b"\n    " if first else b",\n    ") + body.replace(b"\n", b"\n    ")
        first = False
    yield (b"]" if first else b"\n  ]") + b',\n  "stopped": ' + orjson.dumps(stopped()) + b"\n}"


def replay_text(replay: Replay) -> str:
    events = replay.events if replay.events is not None else len(replay.steps)
    return "".join(text_chunks(replay.round_id, events, replay.steps, lambda: replay.stopped))


__all__ = [
    "Replay",
    "Step",
    "StepStream",
    "focus_steps",
    "is_boundless",
    "iter_bundle",
    "iter_steps",
    "json_chunks",
    "player_stream",
    "replay_bundle",
    "replay_steps",
    "replay_text",
    "step_lines",
    "summarize",
    "text_chunks",
]

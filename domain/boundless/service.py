"""The boundless round in the application: persistence, batching and wallets.

:class:`BoundlessService` is what ``RoundAudit`` hands a boundless round to (its public
commands dispatch here when the round id names a :class:`SharedHand`; see :func:`dispatch`).
It owns three things:

* **Aggregate boundaries.** A player's bet or decision writes only that player's
  :class:`Participation` and wallet; it *reads* the shared hand. Concurrent decisions of
  different players therefore touch disjoint aggregates and never conflict. The shared hand is
  written only by the dealer's side of the round (close, cards, window, dealer, end).
* **The round index.** For each round in use, an :class:`~domain.boundless.engine.Engine`
  (the shared hand, every participation, and what each one waits for) is kept in memory as a
  projection of the notification log: before each command it reads the new notifications of
  the boundless and wallet topics since its last position (one query; our own writes are
  skipped by version without decoding) and applies them. So the dealer knows which sequence
  card is demanded, whether anyone is still deciding, and who has wagers to settle, without
  loading every participation; and settlement needs no per-player load at all. The index is
  rebuilt from the round's first notification (its position is kept in a side table when the
  round starts), so several processes can serve the same round: each catches up from the log,
  and their writes meet only on optimistic version checks, retried on fresh state.
* **Batching.** Work that touches many participations (opening the hands after the deal,
  letting waiting hands take a revealed card, settlement, refunds) is done ``batch_size``
  participations per transaction (``app.save(*participations, *wallets)``): on PostgreSQL the
  inserts serialise on a table lock, so throughput comes from many events per transaction
  (DESIGN.md). :meth:`BoundlessService.decide_many` and :meth:`BoundlessService.place_bets`
  record many players' commands in one transaction the same way, each command validated on
  its own (a refused one records nothing and is reported in its place).

Wallet movements of a participation's stakes, payouts, refunds and reversals are saved in the
same transaction as its events, idempotent by transaction id (as ``WalletBook`` does for
rounds).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    IntegrityError,
    Notification,
    RecordConflictError,
    Recording,
    StoredEvent,
)
from eventsourcing.utils import get_topic

from domain.boundless.engine import DEFAULT_BATCH, Engine
from domain.boundless.participation import Participation, check_player_id, participation_id
from domain.boundless.shared import SharedHand
from domain.errors import (
    DomainError,
    IllegalAction,
    RoundNotFound,
    UnknownPlayer,
    WalletNotFound,
    WrongOrder,
)
from domain.events import SYSTEM
from domain.movements import apply_movements
from domain.shoe import Shoe
from domain.wallet import Wallet

if TYPE_CHECKING:
    from domain.application import RoundAudit

Json = dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
_RETRIES = 8
_PAGE = 5000
_KEEP_FINISHED = 2  # finished rounds whose index stays in memory (views rebuild from the log)
_START_TOPIC = "roundaudit:boundless-start-position"


def _event_topics(*aggregates: type) -> tuple[str, ...]:
    return tuple(
        get_topic(obj)
        for agg in aggregates
        for obj in vars(agg).values()
        if isinstance(obj, type) and issubclass(obj, Aggregate.Event) and obj.__name__ != "Event"
    )


SHARED_TOPICS = _event_topics(SharedHand)
PARTICIPATION_TOPICS = _event_topics(Participation)
WALLET_TOPICS = _event_topics(Wallet)
ROUND_TOPICS = SHARED_TOPICS + PARTICIPATION_TOPICS
STARTED = get_topic(SharedHand.Started)
BETTING_CLOSED = get_topic(SharedHand.BettingClosed)
JOINED = get_topic(Participation.Joined)
BET_PLACED = get_topic(Participation.BetPlaced)
FINAL = frozenset({get_topic(SharedHand.RoundSettled), get_topic(SharedHand.RoundCancelled)})


def project(aggregate: Any, events: Iterable[Any]) -> Any:
    """A plain projector: the library's default one spends most of its time in a runtime
    Protocol check (DESIGN.md pitfalls)."""
    for e in events:
        aggregate = e.mutate(aggregate)
    return aggregate


@dataclass(frozen=True)
class Bet:
    """One bet of :meth:`BoundlessService.place_bets`."""

    player: str
    amount: object
    kind: str = "main"
    request_id: str | None = None
    client_time: str | None = None


@dataclass(frozen=True)
class Decision:
    """One decision of :meth:`BoundlessService.decide_many`; ``action`` ``"timeout"`` is an
    expired decision timer (AUTO-1)."""

    player: str
    action: str
    hand: str | None = None
    amount: object = None
    request_id: str | None = None
    client_time: str | None = None


class Tracked:
    """One round in use: its engine, its place in the notification log, its lock and the
    wallets of its players (kept current from the log like the participations)."""

    def __init__(self, rid: UUID, start: int | None) -> None:
        self.rid = rid
        self.lock = threading.RLock()
        self.position = 0 if start is None else start - 1
        self.engine: Engine | None = None
        self.close_position: int | None = None
        self.wallets: dict[str, Wallet] = {}
        self.wallet_players: dict[UUID, str] = {}

    @property
    def eng(self) -> Engine:
        if self.engine is None:
            raise RoundNotFound(f"round {self.rid} not found")
        return self.engine


class Book:
    """The wallets one transaction touches, and the movements its participations' new events
    imply (stakes, payouts, refunds, reversals), as ``WalletBook`` does for a Round."""

    def __init__(self, svc: BoundlessService, t: Tracked) -> None:
        self.svc = svc
        self.t = t
        self.touched: dict[str, tuple[Wallet, int]] = {}

    def get(self, player: str) -> Wallet:
        if player in self.touched:
            return self.touched[player][0]
        w = self.t.wallets.get(player)
        if w is None:
            got = self.svc.load(Wallet.create_id(player))
            if not isinstance(got, Wallet):
                raise WalletNotFound(f"wallet of {player!r} not found")
            w = got
            self.t.wallets[player] = w
            self.t.wallet_players[w.id] = player
        self.touched[player] = (w, w.version)
        return w

    def balance(self, player: str) -> Decimal:
        return self.get(player).balance

    def apply(self, p: Participation) -> None:
        apply_movements(p.round_id, p.pending_events, self.get)

    def changed(self) -> list[Wallet]:
        return [w for w, _ in self.touched.values() if w.pending_events]

    def discard(self) -> None:
        """Forget every touched wallet that moved (its movements were not saved)."""
        for player, (w, version) in self.touched.items():
            if w.version != version and self.t.wallets.get(player) is w:
                del self.t.wallets[player]
        self.touched.clear()


class BoundlessService:
    """Boundless rounds for ``RoundAudit`` (see the module docstring)."""

    def __init__(self, app: RoundAudit, *, batch_size: int = DEFAULT_BATCH) -> None:
        self.app = app
        self.batch_size = batch_size
        self._starts = app.factory.aggregate_recorder(purpose="boundless_starts")
        self._rounds: OrderedDict[UUID, Tracked] = OrderedDict()
        self._rounds_lock = threading.Lock()
        self._kinds: dict[UUID, bool] = {}
        self._topics = (*ROUND_TOPICS, *WALLET_TOPICS)
        #: Notifications read per query when following the log (a round's index reads at most
        #: one page past the round's end).
        self.page_size = _PAGE

    def load(self, ident: UUID) -> Aggregate | None:
        """An aggregate straight from its stored events (None if it has none). Not through
        ``app.repository``: RoundAudit's ``AGGREGATE_CACHE_MAXSIZE=0`` is an *unbounded*
        cache in eventsourcing 9.5 that deep-copies on every get."""
        agg = project(None, self.app.events.get(ident))
        return agg if isinstance(agg, Aggregate) else None

    def _save(self, t: Tracked, *objs: Aggregate | None) -> list[Recording[UUID]]:
        """``app.save``, then move the index past its own writes when nobody else wrote in
        between (so the next catch-up does not read them back)."""
        recordings = self._record(*objs)
        ids = [r.notification.id for r in recordings]
        if ids and ids[0] == t.position + 1 and ids == list(range(ids[0], ids[0] + len(ids))):
            for r in recordings:
                self._own(t, r)
            t.position = ids[-1]
        return recordings

    def _record(self, *objs: Aggregate | None) -> list[Recording[UUID]]:
        """``app.save(*objs)`` without the library's two runtime ``Protocol`` checks per object
        (``isinstance`` against a Protocol costs tens of microseconds on Python 3.11: with
        thousands of aggregates per transaction it was the largest single cost; DESIGN.md
        pitfalls). The same steps as ``Application.save``; if the application overrides
        ``save``, that is used instead."""
        app = self.app
        if type(app).save is not Application.save:
            return app.save(*objs)
        pe: ProcessingEvent[UUID] = ProcessingEvent()
        for obj in objs:
            if obj is not None:
                pe.events.extend(obj.collect_events())
                pe.aggregates[obj.id] = obj
        recordings = app._record(pe)
        app._take_snapshots(pe)
        app._notify(recordings)
        app.notify(pe.events)  # deprecated hook, called by save too
        return recordings

    def _own(self, t: Tracked, r: Recording[UUID]) -> None:
        """What the tail would have noted from one of our own notifications."""
        e = r.domain_event
        if isinstance(e, SharedHand.BettingClosed) and e.originator_id == t.rid:
            t.close_position = r.notification.id

    # ------------------------------------------------------------------ dispatch
    def owns(self, round_id: object) -> bool:
        """Whether ``round_id`` names a boundless round (a SharedHand)."""
        rid = _as_uuid(round_id)
        if rid is None:
            return False
        known = self._kinds.get(rid)
        if known is not None:
            return known
        first = self.app.recorder.select_events(rid, limit=1)
        if not first:
            return False
        self._kinds[rid] = first[0].topic == STARTED
        return self._kinds[rid]

    def start(
        self,
        *,
        table_id: str,
        round_number: int,
        rules_key: str,
        shoe_id: str,
        shoe_round: int,
        production: bool,
        actor: dict[str, str],
        new_shoe: Shoe | None,
    ) -> str:
        """Start a boundless round (``RoundAudit.start_round`` has checked ids and the shoe)."""
        shared = SharedHand.start(
            table_id=table_id,
            round_number=round_number,
            rules_key=rules_key,
            shoe_id=shoe_id,
            shoe_round=shoe_round,
            production=production,
            actor=actor,
        )
        recordings = self._retry(lambda: self.app.save(shared, new_shoe))
        for r in recordings:
            if r.domain_event.originator_id == shared.id and r.domain_event.originator_version == 1:
                self.register_start(shared.id, r.notification.id)
        self._kinds[shared.id] = True
        return str(shared.id)

    # ------------------------------------------------------------------ queries
    def shared(self, round_id: str | UUID) -> SharedHand:
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            return t.eng.shared

    def participation(self, round_id: str | UUID, player: str) -> Participation:
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            p = t.eng.participation(player)
            if p is None:
                raise UnknownPlayer(f"player {player!r} has no bet in this round")
            return p

    def participations(self, round_id: str | UUID) -> list[Participation]:
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            return list(t.eng.in_order())

    def round_view(self, round_id: str | UUID) -> Json:
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            return t.eng.view()

    def pending(self, round_id: str | UUID) -> list[Json]:
        """The hands waiting for their player's decision: player, hand, cards, options."""
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            eng = t.eng
            out: list[Json] = []
            for kind in ("window", "decision"):
                for pid in sorted(eng.waiting(kind), key=eng.order.__getitem__):
                    p = eng.parts[pid]
                    h = p.hands[0] if kind == "window" else p.state.due() if p.state else None
                    if h is None:
                        continue
                    out.append(
                        {
                            "player": p.player,
                            "hand": h.id,
                            "cards": [c.code for c in h.cards],
                            "options": p.options_for(h, eng.shared),
                        }
                    )
            return out

    def round_events(self, round_id: str | UUID) -> list[Json]:
        """The round's events (shared hand and every participation) in log order."""
        from domain.application import event_json

        return [event_json(e) for e in self.round_log(round_id)]

    def round_log(self, round_id: str | UUID) -> list[Any]:
        """The round's domain events (shared hand and every participation) in the order of
        the notification log, i.e. the order they were committed."""
        rid = _as_uuid(round_id)
        if rid is None or not self.owns(rid):
            raise RoundNotFound(f"round {round_id} not found")
        return [self.app.mapper.to_domain_event(n) for n in self.round_notifications(rid)]

    def round_notifications(
        self, rid: UUID, streams: Iterable[UUID] = ()
    ) -> Iterator[Notification]:
        """The round's records in commit order, from its ``SharedHand.Started`` to its shared
        hand's last event: the shared hand's, and every participation's. A participation is
        the round's when its ``Participation.Joined`` names the round and its id is
        ``participation_id(round, player)``, or when ``streams`` names it (the seal keeps them,
        so a stream whose ``Joined`` is gone is still read)."""
        mine = {rid, *streams}
        start = self.start_position(rid)
        position = 0 if start is None else start - 1
        while True:
            notes = self.app.recorder.select_notifications(
                start=position, limit=self.page_size, topics=ROUND_TOPICS, inclusive_of_start=False
            )
            for n in notes:
                oid = cast(UUID, _as_uuid(n.originator_id))
                if oid not in mine:
                    if n.topic != JOINED or not self._joins(n, rid):
                        continue
                    mine.add(oid)
                yield n
                if oid == rid and n.topic in FINAL:
                    return
            if len(notes) < self.page_size:
                return
            position = notes[-1].id

    def _joins(self, n: Notification, rid: UUID) -> bool:
        """Whether a ``Participation.Joined`` record joins round ``rid`` (its id says so too);
        an unreadable one cannot be attributed to a round."""
        try:
            e = self.app.mapper.to_domain_event(n)
        except Exception:
            return False
        player = getattr(e, "player", None)
        return (
            getattr(e, "round_id", None) == str(rid)
            and isinstance(player, str)
            and e.originator_id == participation_id(rid, player)
        )

    # ------------------------------------------------------------------ commands
    def place_bet(
        self,
        round_id: str | UUID,
        *,
        player: str,
        kind: str = "main",
        amount: object,
        spot: object = None,
        follow_double: bool = False,
        follow_split: bool = False,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Json:
        """A bet of one player (BDL-1: no seats; ``spot`` and the follow choices of a bet
        behind do not apply to boundless and are ignored)."""
        results = self.place_bets(
            round_id,
            [Bet(player, amount, kind, request_id=request_id, client_time=client_time)],
        )
        if results[0] is not None:
            raise results[0]
        return self.round_view(round_id)

    def place_behind(self, round_id: str | UUID, **_: Any) -> Json:
        raise IllegalAction("boundless has no bet behind (no seats: BDL-1)", rule="DLX-5")

    def preselect(self, round_id: str | UUID, **_: Any) -> Json:
        raise IllegalAction(
            "boundless takes no decision before the turn: every player decides at once",
            rule="PRE-1",
        )

    def place_bets(self, round_id: str | UUID, bets: Sequence[Bet]) -> list[DomainError | None]:
        """Many players' bets in one transaction; each entry of the result is None (recorded
        or a repeat) or the domain error that refused that bet (it recorded nothing)."""
        t = self._tracked(round_id)
        with t.lock:

            def run() -> list[DomainError | None]:
                self._catch_up(t)
                eng = t.eng
                shared = eng.shared
                book = Book(self, t)
                results: list[DomainError | None] = []
                seen: dict[UUID, tuple[Participation, int]] = {}
                new: dict[str, Participation] = {}
                try:
                    for b in bets:
                        try:
                            p = eng.participation(b.player) or new.get(b.player)
                            fresh = p is None
                            if p is None:
                                shared.check_open(b.request_id)
                                p = Participation.join(
                                    shared,
                                    check_player_id(b.player),
                                    request_id=b.request_id,
                                    client_time=b.client_time,
                                )
                            elif b.player not in new:
                                seen.setdefault(p.id, (p, p.version))
                            p.place_bet(
                                shared,
                                kind=b.kind,
                                amount=b.amount,
                                balance=book.balance(b.player),
                                request_id=b.request_id,
                                client_time=b.client_time,
                            )
                            # the stake now, so that the player's next bet in this batch sees
                            # the balance left (the wallet ignores a repeated transaction id)
                            book.apply(p)
                            if fresh:
                                new[b.player] = p
                            results.append(None)
                        except DomainError as e:
                            results.append(e)
                    parts = [p for p, _ in seen.values() if p.pending_events]
                    parts += [p for p in new.values() if p.pending_events]
                    if parts:  # each accepted bet's stake is in the book already
                        self._save(t, *parts, *book.changed())
                except BaseException:
                    book.discard()
                    for p, version in seen.values():
                        if p.version != version:
                            self._reload_part(t, p.id)
                    raise
                for p in new.values():
                    eng.add(p)
                eng.touch(*seen)
                return results

            return self._retry(run)

    def close_betting(self, round_id: str | UUID, *, request_id: str | None = None) -> Json:
        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.close_betting(request_id=request_id)
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def deal_card(
        self,
        round_id: str | UUID,
        card: str,
        *,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Json:
        """A live card from the studio's reader: checked by the shoe's card accounting
        (SHOE-3), then placed by the shared hand (into the sequence only when a player's hand
        demands it, BDL-2). Refused whole when either refuses."""

        def fn(t: Tracked) -> list[Aggregate]:
            eng = t.eng
            shared = eng.shared
            if not shared.check_open(request_id):
                return []
            if eng.card_needed() is None:
                raise WrongOrder(
                    f"round needs no card now (phase {shared.phase}); {card} not recorded"
                )
            shoe = self.app.shoe(shared.shoe_id)
            if shoe.kind != "live":
                raise WrongOrder(f"this round is dealt from a {shoe.kind} shoe; cards come from it")
            taken = shoe.draw(card=card, round_id=str(shared.id), request_id=request_id)
            shared.deal(
                taken,
                demand=eng.demand(),
                shoe_position=shoe.position - 1,
                request_id=request_id,
                client_time=client_time,
            )
            return [shared, shoe]

        return self._shared_command(round_id, fn)

    def close_insurance_window(self, round_id: str | UUID) -> Json:
        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.close_insurance_window()
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def pause(self, round_id: str | UUID, *, reason: str, supervisor: str) -> Json:
        who = {"kind": "supervisor", "id": supervisor}

        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.pause(reason=reason, actor=who)
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def resume(self, round_id: str | UUID, *, reason: str, supervisor: str) -> Json:
        who = {"kind": "supervisor", "id": supervisor}

        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.resume(reason=reason, actor=who)
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def cancel(self, round_id: str | UUID, *, reason: str, supervisor: str) -> Json:
        """ERR-1: every stake of every player is refunded (in batches), then the round
        closes; a payment already made in it is taken back first."""
        who = {"kind": "supervisor", "id": supervisor}

        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.cancel(reason=reason, actor=who)
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def decide(
        self,
        round_id: str | UUID,
        *,
        player: str,
        action: str,
        hand: str | None = None,
        amount: object = None,
        request_id: str | None = None,
        client_time: str | None = None,
    ) -> Json:
        d = Decision(player, action, hand, amount, request_id, client_time)
        return self._one(round_id, d)

    def time_out(self, round_id: str | UUID, *, player: str, hand: str | None = None) -> Json:
        return self._one(round_id, Decision(player, "timeout", hand))

    def disconnect(self, round_id: str | UUID, *, player: str) -> Json:
        return self._one(round_id, Decision(player, "disconnect"))

    def _one(self, round_id: str | UUID, d: Decision) -> Json:
        results = self.decide_many(round_id, [d])
        if results[0] is not None:
            raise results[0]
        return self.round_view(round_id)

    def decide_many(
        self, round_id: str | UUID, decisions: Sequence[Decision], *, advance: bool = True
    ) -> list[DomainError | None]:
        """Many players' decisions (or expired timers, ``"timeout"``, or disconnections,
        ``"disconnect"``) in one transaction: each loads only its player's participation and
        wallet and reads the shared hand. Returns, in order, None for each recorded decision
        (or repeat) and the domain error for each refused one (which recorded nothing). Then
        the round moves on (cards revealed, dealer, settlement) unless ``advance`` is False."""
        t = self._tracked(round_id)
        with t.lock:
            results = self._retry(lambda: self._decide_many(t, decisions))
            if advance:
                self._advance(t)
        self._forget_if_finished()
        return results

    def _decide_many(self, t: Tracked, decisions: Sequence[Decision]) -> list[DomainError | None]:
        self._catch_up(t)
        eng = t.eng
        shared = eng.shared
        book = Book(self, t)
        results: list[DomainError | None] = []
        seen: dict[UUID, tuple[Participation, int]] = {}
        try:
            for d in decisions:
                p = eng.participation(d.player)
                if p is None:  # refused alone, like every other refusal in the batch
                    try:
                        shared.check_open(None)
                        check_player_id(d.player)
                    except DomainError as e:
                        results.append(e)
                        continue
                    results.append(UnknownPlayer(f"player {d.player!r} has no bet in this round"))
                    continue
                seen.setdefault(p.id, (p, p.version))
                before = p.version
                try:
                    if d.action == "timeout":
                        p.time_out(shared, hand=d.hand, request_id=d.request_id)
                    elif d.action == "disconnect":
                        p.disconnect(shared, request_id=d.request_id)
                    else:
                        p.decide(
                            shared,
                            action=d.action,
                            balance=book.balance(d.player),
                            hand=d.hand,
                            amount=d.amount,
                            request_id=d.request_id,
                            client_time=d.client_time,
                        )
                    results.append(None)
                except DomainError as e:
                    if p.version != before and len(decisions) == 1:
                        raise  # a single refused command records nothing at all
                    results.append(e)
            parts = [p for p, _ in seen.values() if p.pending_events]
            for p in parts:
                book.apply(p)
            if parts:
                self._save(t, *parts, *book.changed())
        except BaseException:
            book.discard()
            for p, version in seen.values():
                if p.version != version:
                    self._reload_part(t, p.id)
            raise
        eng.touch(*seen)
        return results

    def advance(self, round_id: str | UUID, *, dealer: bool = True) -> Json:
        """Do every piece of automatic work the round allows now (open hands, reveal cards
        from an RNG or test shoe, let waiting hands take them, dealer, settlement, refunds),
        a batch of participations per transaction. ``dealer=False`` stops before the
        dealer's turn (benchmarks time settlement on its own). Returns a summary (phase,
        card needed, sequence, how many players are deciding), not the whole view."""
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            self._advance(t, dealer=dealer)
            s = t.eng.shared
            summary = {
                "phase": s.phase,
                "card_needed": t.eng.card_needed(),
                "sequence": [c.code for c in s.sequence],
                "deciding": t.eng.count("decision") + t.eng.count("window"),
            }
        self._forget_if_finished()
        return summary

    # ------------------------------------------------------------------ engine
    def _shared_command(
        self, round_id: str | UUID, fn: Callable[[Tracked], list[Aggregate]]
    ) -> Json:
        t = self._tracked(round_id)
        with t.lock:

            def run() -> None:
                self._catch_up(t)
                shared = t.eng.shared
                version = shared.version
                try:
                    changed = fn(t)
                    if changed:
                        for r in self._save(t, *changed):
                            self._own(t, r)
                except BaseException:
                    if shared.version != version:
                        self._reload_shared(t)
                    raise

            self._retry(run)
            self._advance(t)
            view = t.eng.view()
        self._forget_if_finished()
        return view

    def _advance(self, t: Tracked, *, dealer: bool = True) -> None:
        self._catch_up(t)  # other instances may have written since this command began
        eng = t.eng
        shoe: Shoe | None = None
        failures = 0
        while True:
            s = eng.shared
            changed = eng.step(self.batch_size, hold_dealer=not dealer)
            if changed is None:
                need = eng.card_needed()
                if need is None:
                    return
                if shoe is None:
                    shoe = self.app.shoe(s.shoe_id)
                if shoe.kind not in ("rng", "test"):
                    return  # a live shoe: the studio's reader sends the card (deal_card)
                card = shoe.draw(seed=self.app._sealed_seed(shoe), round_id=str(s.id))
                s.deal(card, demand=eng.demand(), shoe_position=shoe.position - 1, actor=SYSTEM)
                changed = [s, shoe]
            try:
                self._save_step(t, changed)
                failures = 0
            except (IntegrityError, RecordConflictError) as exc:
                failures += 1
                self._reset(t, changed)
                shoe = None
                if failures >= _RETRIES:
                    from domain.application import ConcurrentUpdate

                    raise ConcurrentUpdate(
                        "another writer kept changing the round while its automatic steps "
                        "(cards, dealer, settlement) were being saved; what the command itself "
                        f"recorded stands, and the next command carries on ({exc})"
                    ) from exc
                self._catch_up(t)

    def _save_step(self, t: Tracked, changed: list[Aggregate]) -> None:
        book = Book(self, t)
        try:
            for a in changed:
                if isinstance(a, Participation):
                    book.apply(a)
            self._save(t, *changed, *book.changed())
        except BaseException:
            book.discard()
            raise

    def _reset(self, t: Tracked, changed: list[Aggregate]) -> None:
        """A save failed: put fresh copies of what it would have changed in the index."""
        for a in changed:
            if isinstance(a, Participation):
                self._reload_part(t, a.id)
            elif isinstance(a, SharedHand):
                self._reload_shared(t)

    def _retry(self, fn: Callable[[], T]) -> T:
        from domain.application import ConcurrentUpdate

        last: Exception | None = None
        for _ in range(_RETRIES):
            try:
                return fn()
            except (IntegrityError, RecordConflictError) as exc:
                last = exc
        raise ConcurrentUpdate(
            f"another writer kept changing the same records; nothing was recorded ({last})"
        )

    # ------------------------------------------------------------------ the index
    def _tracked(self, round_id: str | UUID) -> Tracked:
        rid = _as_uuid(round_id)
        if rid is None:
            raise RoundNotFound(f"{round_id!r} is not a valid id (a UUID)")
        with self._rounds_lock:
            t = self._rounds.get(rid)
            if t is None:
                if not self.owns(rid):
                    raise RoundNotFound(f"round {round_id} not found")
                t = Tracked(rid, self.start_position(rid))
                self._rounds[rid] = t
            self._rounds.move_to_end(rid)
            return t

    def _forget_if_finished(self) -> None:
        with self._rounds_lock:
            finished = [r for r, x in self._rounds.items() if x.engine and x.engine.shared.finished]
            for rid in finished[: max(0, len(finished) - _KEEP_FINISHED)]:
                del self._rounds[rid]

    def start_position(self, rid: UUID) -> int | None:
        """The notification id of the round's ``SharedHand.Started`` (None if not recorded)."""
        found = self._starts.select_events(rid, limit=1)
        return int(found[0].state.decode()) if found else None

    def register_start(self, rid: UUID, notification_id: int) -> None:
        """Record where a round starts in the log (``start`` does it; an import too)."""
        if self.start_position(rid) is not None:
            return
        self._starts.insert_events(
            [
                StoredEvent(
                    originator_id=rid,
                    originator_version=1,
                    topic=_START_TOPIC,
                    state=str(notification_id).encode(),
                )
            ]
        )
        self._kinds[rid] = True

    def _catch_up(self, t: Tracked) -> None:
        """Apply the notifications recorded since the index's last position. A finished round
        takes nothing more (its shared hand's last event ends it), so the scan stops there:
        viewing an old round reads the log from its start to its end, not to the log's end."""
        rec = self.app.recorder
        while not (t.engine is not None and t.engine.shared.finished):
            notes = rec.select_notifications(
                start=t.position,
                limit=self.page_size,
                topics=self._topics,
                inclusive_of_start=False,
            )
            for n in notes:
                self._apply(t, n)
                t.position = n.id
                if n.topic in FINAL and t.engine is not None and t.engine.shared.finished:
                    break
            if len(notes) < self.page_size:
                break
        if t.engine is None:
            raise RoundNotFound(f"round {t.rid} not found")

    def _apply(self, t: Tracked, n: Notification) -> None:
        oid = cast(UUID, n.originator_id)
        eng = t.engine
        e: Any
        if oid == t.rid:
            if n.topic == BETTING_CLOSED:
                t.close_position = n.id
            if eng is None:
                if n.topic == STARTED:
                    e = self.app.mapper.to_domain_event(n)
                    shared = e.mutate(None)
                    assert isinstance(shared, SharedHand)
                    t.engine = Engine(shared)
                return
            self._forward(eng.shared, n, lambda: self._reload_shared(t))
            return
        if eng is None:
            return
        p = eng.parts.get(oid)
        if p is not None:
            if n.topic == BET_PLACED and t.close_position is not None and n.id > t.close_position:
                e = self.app.mapper.to_domain_event(n)
                eng.late.setdefault(oid, set()).add(e.wager_id)
            if self._forward(p, n, lambda: self._reload_part(t, oid)):
                eng.touch(oid)
            return
        if n.topic == JOINED:
            e = self.app.mapper.to_domain_event(n)
            if getattr(e, "round_id", None) == str(t.rid):
                joined = e.mutate(None)
                assert isinstance(joined, Participation)
                eng.add(joined)
            return
        player = t.wallet_players.get(oid)
        if player is not None and player in t.wallets:
            self._forward(t.wallets[player], n, lambda: t.wallets.pop(player, None))

    def _forward(self, agg: Aggregate, n: Notification, reload: Callable[[], object]) -> bool:
        """Apply ``n`` to ``agg`` if it is its next event; True when ``agg`` changed."""
        if n.originator_version <= agg.version:
            return False  # already applied (our own write, or a fresh reload)
        if n.originator_version == agg.version + 1:
            e: Any = self.app.mapper.to_domain_event(n)
            e.mutate(agg)
        else:
            reload()
        return True

    def _reload_part(self, t: Tracked, pid: UUID) -> None:
        p = self.load(pid)
        assert isinstance(p, Participation)
        t.eng.replace(p)

    def _reload_shared(self, t: Tracked) -> None:
        s = self.load(t.rid)
        assert isinstance(s, SharedHand)
        t.eng.shared = s
        t.eng.touch(*t.eng.parts)


def _as_uuid(value: object) -> UUID | None:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        return None


def dispatch(fn: Callable[Concatenate[Any, Any, P], R]) -> Callable[Concatenate[Any, Any, P], R]:
    """Decorate a ``RoundAudit`` round command: a boundless round's id sends the call, with the
    same arguments, to the ``BoundlessService`` method of the same name."""

    @functools.wraps(fn)
    def wrapper(app: Any, round_id: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        service: BoundlessService = app.boundless
        if service.owns(round_id):
            result: R = getattr(service, fn.__name__)(round_id, *args, **kwargs)
            return result
        return fn(app, round_id, *args, **kwargs)

    return wrapper


__all__ = [
    "Bet",
    "BoundlessService",
    "Decision",
    "dispatch",
    "project",
]

"""The boundless round in the application: its commands, batching and wallets.

:class:`BoundlessService` is what ``RoundAudit`` hands a boundless round to (its public
commands dispatch here when the round id names a :class:`SharedHand`; see :func:`dispatch`).
Each command builds the game core's input (``domain.game.commands``) and has the participation
or the shared hand decide it. The service owns three things:

* **Aggregate boundaries.** A player's bet or decision writes only that player's
  :class:`Participation` and wallet; it *reads* the shared hand. Concurrent decisions of
  different players therefore touch disjoint aggregates and never conflict. The shared hand is
  written only by the dealer's side of the round (close, cards, window, dealer, end).
* **The round index** (:class:`~domain.boundless.index.RoundIndex`, which this service is):
  every round in use kept in memory as a projection of the notification log, so the dealer
  knows which sequence card is demanded, whether anyone is still deciding and who has wagers to
  settle, without loading every participation.
* **Batching.** Work that touches many participations (opening the hands after the deal,
  letting waiting hands take a revealed card, settlement, refunds) is done ``batch_size``
  participations per transaction (``app.save(*participations, *wallets)``): on PostgreSQL the
  inserts serialise on a table lock, so throughput comes from many events per transaction
  (DESIGN.md). :meth:`BoundlessService.decide_many` and :meth:`BoundlessService.place_bets`
  record many players' commands in one transaction the same way, each command validated on
  its own (a refused one records nothing and is reported in its place). While a command
  runs, automatic garbage collection waits (``domain.collector``): with a round's thousands
  of participations and wallets in memory, the collector's passes over each batch's
  allocations were about a quarter of the CPU of deciding and settling.

Wallet movements of a participation's stakes, payouts, refunds and reversals are saved in the
same transaction as its events, idempotent by transaction id
(:class:`~domain.movements.WalletBook`); the wallets a round keeps, and how each is first
read, belong to :mod:`domain.boundless.wallets`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Concatenate, ParamSpec, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.boundless.engine import DEFAULT_BATCH
from domain.boundless.index import Tracked, as_uuid
from domain.boundless.participation import Participation, check_player_id
from domain.boundless.shared import SharedHand
from domain.boundless.wallets import RoundWallets
from domain.collector import paused
from domain.errors import (
    ConcurrentUpdate,
    DomainError,
    IllegalAction,
    RoundNotFound,
    UnknownPlayer,
    WrongOrder,
)
from domain.events import SYSTEM, copied, event_json
from domain.events import supervisor as supervisor_of
from domain.game import commands as C
from domain.movements import WalletBook
from domain.services.base import AuditBase
from domain.shoe import Shoe
from domain.side_rows import SideRows
from domain.store import CONFLICTS, retry
from domain.wallet import check_money_kind

Json = dict[str, Any]
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
_RETRIES = 8


@dataclass(frozen=True)
class Bet:
    """One bet of :meth:`BoundlessService.place_bets`."""

    player: str
    amount: object
    kind: str = "main"
    request_id: str | None = None
    client_time: str | None = None
    actor: dict[str, str] | None = None  # default: the player


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
    actor: dict[str, str] | None = None  # default: the player (a timer, a disconnection: system)


class BoundlessService(RoundWallets):
    """Boundless rounds for ``RoundAudit`` (see the module docstring)."""

    def __init__(self, app: AuditBase, *, batch_size: int = DEFAULT_BATCH) -> None:
        super().__init__(app)
        self.batch_size = batch_size

    def start(self, command: C.Start, *, new_shoe: Shoe | None, what: str, side: SideRows) -> str:
        """Start a boundless round (``RoundAudit.start_round`` has checked ids and the shoe,
        and gives the rows to save with it: ``domain.side_rows``)."""
        shared = SharedHand.opened_by(command)
        # where the round starts in the log, written by the transaction that starts it
        side += SideRows(boundless_starts=(shared.id,))
        self.app._save_new(shared, new_shoe, what=what, side=side)
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

    def players_view(self, round_id: str | UUID, players: Iterable[str]) -> Json:
        """The round with only ``players``' hands and wagers (``Engine.players_view``): what
        their own commands answer, at a cost that does not grow with the round."""
        t = self._tracked(round_id)
        with t.lock:
            self._catch_up(t)
            return t.eng.players_view(players)

    def pending(self, round_id: str | UUID) -> list[Json]:
        """The hands waiting for their player's decision: player, hand, cards, options (a
        few objects for each of thousands of players: read with the collector held off, as
        a command runs)."""
        t = self._tracked(round_id)
        with t.lock, paused():
            self._catch_up(t)
            eng = t.eng
            out: list[Json] = []
            for kind in ("window", "decision"):
                for p in eng.waiting_in_order(kind):
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
        return [event_json(e) for e in self.round_log(round_id)]

    def round_log(self, round_id: str | UUID) -> list[Any]:
        """The round's domain events (shared hand and every participation) in the order of
        the notification log, i.e. the order they were committed (read by the round's own
        streams on SQLite and PostgreSQL: ``RoundIndex.round_records``). Automatic garbage
        collection waits while the records are read and decoded, as while a command runs
        (thousands of events allocated, no reference cycle among them)."""
        rid = as_uuid(round_id)
        if rid is None or not self.owns(rid):
            raise RoundNotFound(f"round {round_id} not found")
        with paused():
            return [self.app.mapper.to_domain_event(n) for n in self.round_records(rid)]

    # ------------------------------------------------------------------ commands
    def place_bet(self, round_id: str | UUID, *, spot: object = None, **bet: Any) -> Json:
        """A bet of one player: ``RoundAudit.place_bet``'s arguments (BDL-1: no seats; ``spot``
        and the follow choices of a bet behind do not apply to boundless and are ignored)."""
        bet.pop("follow_double", None)
        bet.pop("follow_split", None)
        actor = copied(bet.pop("actor", None))
        one = replace(Bet(**bet), actor=actor)
        results = self.place_bets(round_id, [one])
        if results[0] is not None:
            raise results[0]
        return self.players_view(round_id, (one.player,))

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
        with t.lock, paused():

            def run() -> list[DomainError | None]:
                self._catch_up(t)
                eng = t.eng
                shared = eng.shared
                book = self._book(t)
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
                                    actor=b.actor,
                                    request_id=b.request_id,
                                    client_time=b.client_time,
                                )
                            elif b.player not in new:
                                seen.setdefault(p.id, (p, p.version))
                            wallet = book.get(b.player)
                            check_money_kind(
                                wallet.account_type, production=shared.production, player=b.player
                            )
                            bet = C.PlaceBet(
                                player=b.player,
                                kind=b.kind,
                                amount=b.amount,
                                balance=wallet.balance,
                                actor=b.actor,
                                request_id=b.request_id,
                                client_time=b.client_time,
                            )
                            p.execute(shared, bet)
                            # the stake now, so that the player's next bet in this batch sees
                            # the balance left (the wallet ignores a repeated transaction id)
                            book.apply(p.round_id, p.pending_events)
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
                    self._discard(t, book)
                    for p, version in seen.values():
                        if p.version != version:
                            self._reload_part(t, p.id)
                    raise
                for p in new.values():
                    eng.add(p)
                eng.touch(*seen)
                return results

            return self._retry(run)

    def close_betting(
        self, round_id: str | UUID, *, actor: dict[str, str] | None = None, **ids: str | None
    ) -> Json:
        return self._shared(round_id, C.CloseBetting(actor=copied(actor), **ids))

    def deal_card(
        self,
        round_id: str | UUID,
        card: str,
        *,
        request_id: str | None = None,
        client_time: str | None = None,
        actor: dict[str, str] | None = None,
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
            taken = shoe.draw(
                card=card,
                round_id=str(shared.id),
                actor=copied(actor) or SYSTEM,
                request_id=request_id,
                client_time=client_time,
            )
            shared.deal(
                taken,
                demand=eng.demand(),
                shoe_position=shoe.position - 1,
                actor=copied(actor),
                request_id=request_id,
                client_time=client_time,
            )
            return [shared, shoe]

        return self._shared_command(round_id, fn)

    # ``ids`` below: the ``request_id`` and ``client_time`` the input was sent with
    def close_insurance_window(
        self, round_id: str | UUID, *, actor: dict[str, str] | None = None, **ids: str | None
    ) -> Json:
        return self._shared(round_id, C.CloseWindow(actor=copied(actor), **ids))

    def pause(
        self, round_id: str | UUID, *, reason: str, supervisor: str, **kw: Any
    ) -> Json:  # kw: ``actor`` (the key that sent it) and ``ids``
        return self._supervise(round_id, "pause", reason, supervisor, **kw)

    def resume(self, round_id: str | UUID, *, reason: str, supervisor: str, **kw: Any) -> Json:
        return self._supervise(round_id, "resume", reason, supervisor, **kw)

    def cancel(self, round_id: str | UUID, *, reason: str, supervisor: str, **kw: Any) -> Json:
        """ERR-1: every stake of every player is refunded (in batches), then the round
        closes; a payment already made in it is taken back first."""
        return self._supervise(round_id, "cancel", reason, supervisor, **kw)

    def _supervise(
        self,
        round_id: str | UUID,
        what: str,
        reason: str,
        supervisor: str,
        actor: dict[str, str] | None = None,
        **ids: str | None,
    ) -> Json:
        who = supervisor_of(supervisor, actor)
        return self._shared(round_id, C.supervisor_action(what, reason, who, **ids))

    def _shared(self, round_id: str | UUID, command: C.Command) -> Json:
        """A command of the table's side of the round, decided on the shared hand."""

        def fn(t: Tracked) -> list[Aggregate]:
            t.eng.shared.execute(command)
            return [t.eng.shared]

        return self._shared_command(round_id, fn)

    def decide(self, round_id: str | UUID, **decision: Any) -> Json:
        """A player's decision: ``RoundAudit.decide``'s arguments (player, action, hand,
        amount, request id, client time)."""
        actor = copied(decision.pop("actor", None))
        return self._one(round_id, replace(Decision(**decision), actor=actor))

    def time_out(
        self,
        round_id: str | UUID,
        *,
        player: str,
        hand: str | None = None,
        actor: dict[str, str] | None = None,
        **ids: str | None,
    ) -> Json:
        return self._one(round_id, Decision(player, "timeout", hand, actor=copied(actor), **ids))

    def disconnect(
        self, round_id: str | UUID, *, player: str, actor: dict[str, str] | None = None, **ids: Any
    ) -> Json:
        return self._one(round_id, Decision(player, "disconnect", actor=copied(actor), **ids))

    def _one(self, round_id: str | UUID, d: Decision) -> Json:
        results = self.decide_many(round_id, [d])
        if results[0] is not None:
            raise results[0]
        return self.players_view(round_id, (d.player,))

    def decide_many(
        self, round_id: str | UUID, decisions: Sequence[Decision], *, advance: bool = True
    ) -> list[DomainError | None]:
        """Many players' decisions (or expired timers, ``"timeout"``, or disconnections,
        ``"disconnect"``) in one transaction: each loads only its player's participation and
        wallet and reads the shared hand. Returns, in order, None for each recorded decision
        (or repeat) and the domain error for each refused one (which recorded nothing). Then
        the round moves on (cards revealed, dealer, settlement) unless ``advance`` is False."""
        t = self._tracked(round_id)
        with t.lock, paused():
            results = self._retry(lambda: self._decide_many(t, decisions))
            if advance:
                self._advance(t)
        self._forget_if_finished()
        return results

    def _decide_many(self, t: Tracked, decisions: Sequence[Decision]) -> list[DomainError | None]:
        self._catch_up(t)
        eng = t.eng
        shared = eng.shared
        book = self._book(t)
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
                    p.execute(shared, _command(d, book))
                    results.append(None)
                except DomainError as e:
                    if p.version != before and len(decisions) == 1:
                        raise  # a single refused command records nothing at all
                    results.append(e)
            parts = [p for p, _ in seen.values() if p.pending_events]
            for p in parts:
                book.apply(p.round_id, p.pending_events)
            if parts:
                self._save(t, *parts, *book.changed())
        except BaseException:
            self._discard(t, book)
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
        with t.lock, paused():
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
        with t.lock, paused():

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
                eng.release(changed)  # the settled (or refunded) ones: saved, let go
            except CONFLICTS as exc:
                failures += 1
                self._reset(t, changed)
                shoe = None
                if failures >= _RETRIES:
                    raise ConcurrentUpdate(
                        "another writer kept changing the round while its automatic steps "
                        "(cards, dealer, settlement) were being saved; what the command itself "
                        f"recorded stands, and the next command carries on ({exc})"
                    ) from exc
                self._catch_up(t)

    def _save_step(self, t: Tracked, changed: list[Aggregate]) -> None:
        book = self._book(t)
        try:
            for a in changed:
                if isinstance(a, Participation):
                    book.apply(a.round_id, a.pending_events)
            self._save(t, *changed, *book.changed())
        except BaseException:
            self._discard(t, book)
            raise

    def _reset(self, t: Tracked, changed: list[Aggregate]) -> None:
        """A save failed: put fresh copies of what it would have changed in the index."""
        for a in changed:
            if isinstance(a, Participation):
                self._reload_part(t, a.id)
            elif isinstance(a, SharedHand):
                self._reload_shared(t)

    def _retry(self, fn: Callable[[], T]) -> T:
        return retry(fn, _RETRIES)


def _ids(d: Decision) -> dict[str, str | None]:
    return {"request_id": d.request_id, "client_time": d.client_time}


def _command(d: Decision, book: WalletBook) -> C.Command:
    """The game core's input of one decision of a batch (a timer, a disconnection, or a
    decision checked against the player's balance now)."""
    if d.action == "timeout":
        return C.TimeOut(player=d.player, hand=d.hand, actor=d.actor, **_ids(d))
    if d.action == "disconnect":
        return C.Disconnect(player=d.player, actor=d.actor, **_ids(d))
    return C.Decide(
        player=d.player,
        action=d.action,
        balance=book.balance(d.player),
        hand=d.hand,
        amount=d.amount,
        actor=d.actor,
        request_id=d.request_id,
        client_time=d.client_time,
    )


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
]

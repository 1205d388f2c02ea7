"""The boundless round in memory: one SharedHand, its Participations, and who needs what.

:class:`Engine` is the part of the boundless round that needs no storage: it keeps the shared
hand and the participations of one round, an index of what each participation waits for
(:meth:`Participation.need`: a hand to open, an insurance decision, a decision, sequence card
``i``, automatic steps, settlement, a refund) grouped so that the round's questions are answered
without looking at every participation:

* which sequence card is needed (:meth:`card_needed`): some participation waits for card
  ``len(sequence)`` (BDL-2: "the dealer reveals cards until no player's hand needs another");
* is anyone still deciding; is every insurance decision in; who has wagers to settle.

:meth:`step` does the next piece of automatic work (open the hands after the deal, let waiting
hands take a revealed card, start the dealer's turn, stand the dealer, settle or refund
participations) on at most ``limit`` participations, and returns the aggregates it changed, so
the caller can save them as one transaction; None means the round waits for an input (a
decision, a card, a timer). A step takes its participations in the round's order, from each
group's members sorted once and consumed from the front (:meth:`Engine._first_of`), so a
phase of N players in steps of B costs N, not N * N / B. The settlement's steps give every
participation the round's settle step (``domain.game.player.settle_step``), which the engine
holds: what settling reads of the shared cards made once a round, not once a player. The
application (``service.py``) persists each step; verification (``verify.py``) runs the same
steps on re-executed inputs.

A need depends on the shared hand's phase: when it changes, every need is recomputed (a few
microseconds per participation); a newly revealed card changes only the needs of those waiting
for a card; otherwise only the participations a command or a step touched are recomputed. The
phase and the sequence are looked at only when the shared hand's (immutable) state is another
object than the last time: a need is a function of the participation's state and that one.

Once the dealer's hand is final (or the round is cancelling), a participation that waits for
nothing more and whose events are saved is let go (:meth:`Engine.release`, called by the
service after each saved step): the engine keeps its id, player and version
(:class:`Released`) and reads it back from the store (``load``, the index's) when it is asked
for again, by a view or a late command; its need is ``NOTHING`` either way. A settled round
held every player's whole state until the process forgot it.

Inside, the participations are keyed by their ids' integers (``UUID.int``, hashed in C; a
``UUID`` hashes in Python, and the needs, groups and queues look a participation up hundreds
of thousands of times in a large round); what the engine shows (``parts``, ``players``,
``late``, :meth:`waiting`, :meth:`touch`, :meth:`rank`) is keyed by the ids themselves.
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, ValuesView
from itertools import islice
from operator import attrgetter
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.boundless.participation import NOTHING, Need, Participation
from domain.boundless.shared import (
    BETTING,
    DEALER,
    DEALING,
    INSURANCE,
    PLAYING,
    SEQUENCE,
    SharedHand,
)
from domain.game.commands import Step
from domain.game.hands import hand_json
from domain.game.phases import view_head
from domain.game.player import settle_step
from domain.game.wagers import wager_json

Json = dict[str, Any]
DEFAULT_BATCH = 500
_UNSEEN = object()
_INT = attrgetter("int")  # a participation's key inside the engine: its id's integer


class Released:
    """A settled participation the engine no longer holds (:meth:`Engine.release`): its id,
    player and the version its saved events reached. It waits for nothing (``need``); any
    other use reads it back from the store (:meth:`Engine.held`)."""

    __slots__ = ("id", "player", "version")

    def __init__(self, p: Participation) -> None:
        self.id: UUID = p.id
        self.player: str = p.player
        self.version: int = p.version

    def need(self, shared: SharedHand) -> Need:
        return NOTHING


class Parts(Mapping[UUID, Participation]):
    """The engine's participations by id, in the round's order: a view of the ones it keys
    by their ids' integers (no second dict of them: a large round's thousands). A released
    one is read back from the store when it is asked for (:meth:`Engine.held`)."""

    __slots__ = ("_by", "_engine")

    def __init__(self, engine: Engine) -> None:
        self._by = engine._by
        self._engine = engine

    def __getitem__(self, pid: UUID) -> Participation:
        return self._engine.held(pid.int)

    def __contains__(self, pid: object) -> bool:
        return isinstance(pid, UUID) and pid.int in self._by

    def get(self, pid: UUID, default: Any = None) -> Any:
        key = pid.int
        return self._engine.held(key) if key in self._by else default

    def __iter__(self) -> Iterator[UUID]:
        return (p.id for p in self._by.values())

    def __len__(self) -> int:
        return len(self._by)

    def values(self) -> ValuesView[Participation]:
        if self._engine.released:
            return ValuesView(self)  # each released one read back as it comes
        return self._by.values()  # type: ignore[return-value]  # none released: all held


class Engine:
    """One boundless round in memory (see the module docstring)."""

    def __init__(self, shared: SharedHand) -> None:
        self.shared = shared
        self.players: dict[str, UUID] = {}
        self.late: dict[UUID, set[str]] = {}  # bets recorded after betting closed (races)
        # inside, each participation is keyed by its id's integer (module docstring); a
        # settled one whose events are saved may be :class:`Released` (:meth:`release`)
        self._by: dict[int, Participation | Released] = {}
        self.parts = Parts(self)
        #: how many of ``_by`` are released; ``load`` reads one back by its id (the index's)
        self.released = 0
        self.load: Callable[[UUID], Participation] | None = None
        self._rank: dict[int, int] = {}  # each one's place in the round's order (:meth:`rank`)
        self._need: dict[int, Need] = {}
        self._groups: dict[Need, set[int]] = defaultdict(set)
        #: each group's members in the round's order, sorted once and consumed from the front
        #: (:meth:`_ordered`); dropped when a member joins the group
        self._queues: dict[Need, deque[int]] = {}
        self._dirty: set[int] = set()
        self._key: tuple[object, ...] | None = None
        self._seq_len = 0
        self._seen: object = _UNSEEN  # the shared hand's state when the key was last taken
        #: the round's settle step, what settling reads of the cards made once for every
        #: player (``domain.game.player.settle_step``): held by the round, not by a module
        self._settle: Step | None = None

    # ------------------------------------------------------------------ membership
    def add(self, p: Participation) -> None:
        pid = p.id
        key = pid.int
        if key not in self._rank:
            self._rank[key] = len(self._rank)
            # a participation's player never changes: named once, when it first comes
            self.players[p.player] = pid
        held = self._by.get(key)
        if held is not p:  # (each input adds its participation again)
            if type(held) is Released:
                self.released -= 1
            self._by[key] = p
        self._dirty.add(key)

    def replace(self, p: Participation) -> None:
        """Put a fresh copy of a participation in place of the one held."""
        self.add(p)

    def release(self, parts: Iterable[Aggregate]) -> None:
        """Let go of each participation of ``parts`` whose events are saved and that waits for
        nothing more once the dealer's hand is final or the round is cancelling (settled or
        refunded): the engine keeps only its id, player and version (:class:`Released`), and
        reads it back from the store (:attr:`load`) if it is asked for again (a view, a late
        command, which is then refused as before). A boundless round held every settled
        player's whole state until the process forgot the round
        (docs/performance-history.md ``bwrec``)."""
        s = self.shared
        if self.load is None or not (s.dealer_final or s.cancelling or s.finished):
            return
        self.refresh()
        by, needs = self._by, self._need
        for p in parts:
            if not isinstance(p, Participation) or p.pending_events:
                continue
            key = p.id.int
            if by.get(key) is p and needs.get(key) == NOTHING and key not in self._dirty:
                by[key] = Released(p)
                self.released += 1

    def held(self, key: int) -> Participation:
        """The participation keyed ``key``, read back from the store if it was released."""
        p = self._by[key]
        if type(p) is not Released:
            return p  # type: ignore[return-value]  # (a Participation)
        assert self.load is not None  # (only released with a way back)
        back = self.load(p.id)
        self._by[key] = back
        self.released -= 1
        self._dirty.add(key)
        return back

    def kept(self, pid: UUID) -> Participation | Released | None:
        """What the engine holds for ``pid`` as it is (a released one not read back)."""
        return self._by.get(pid.int)

    def rank(self, pid: UUID) -> int:
        """The participation's place in the round's order (the order they came in)."""
        return self._rank[pid.int]

    def touch(self, *ids: UUID) -> None:
        self._dirty.update(map(_INT, ids))

    def participation(self, player: str) -> Participation | None:
        pid = self.players.get(player)
        return None if pid is None else self.parts[pid]

    def in_order(self) -> Iterator[Participation]:
        return iter(self.parts.values())

    # ----------------------------------------------------------------------- needs
    def _phase_key(self) -> tuple[object, ...]:
        s = self.shared
        return (
            s.phase,
            s.initial_dealt,
            s.seated,
            s.dealer_final,
            s.cancelling,
            s.paused,
            s.finished,
        )

    def refresh(self) -> None:
        state = self.shared.state
        dirty = self._dirty
        if state is self._seen and not dirty:
            return  # nothing moved since the last refresh (most of a step's questions)
        if state is not self._seen:
            # a participation's need is a function of its own state and the shared hand's
            # (``Participation.need``), which is immutable: replaced when anything changes,
            # so while it is the same object neither the phase nor the sequence moved
            self._seen = state
            key = self._phase_key()
            if key != self._key:
                self._key = key
                self._dirty.update(self._by)
            n = len(state.sequence)  # (``SharedHand.sequence`` is a copy)
            if n != self._seq_len:  # a revealed card changes only what card waiters need
                self._seq_len = n
                for (kind, _), ids in self._groups.items():
                    if kind == "card":
                        self._dirty.update(ids)
        shared, parts, needs = self.shared, self._by, self._need
        for pid in dirty:
            old = needs.get(pid)
            new = parts[pid].need(shared)
            if old == new:
                continue
            if old is not None:
                group = self._groups.get(old)
                if group is not None:
                    group.discard(pid)
                    if not group:
                        # a set emptied by discards keeps its table, and walking it (to copy
                        # or iterate it) costs as much as when it held thousands of players:
                        # an empty group goes, and is made again small when needed
                        del self._groups[old]
                        self._queues.pop(old, None)
            needs[pid] = new
            if new != NOTHING:
                self._groups[new].add(pid)
                self._queues.pop(new, None)  # a member out of order: sorted again when asked
        dirty.clear()

    def need_of(self, pid: UUID) -> Need:
        self.refresh()
        return self._need.get(pid.int, NOTHING)

    def waiting(self, kind: str, index: int = 0) -> set[UUID]:
        by = self._by
        return {by[key].id for key in self._waiting(kind, index)}

    def waiting_in_order(self, kind: str, index: int = 0) -> list[Participation]:
        """The participations :meth:`waiting` names, in the round's order."""
        held, rank = self.held, self._rank
        return [held(key) for key in sorted(self._waiting(kind, index), key=rank.__getitem__)]

    def _waiting(self, kind: str, index: int = 0) -> set[int]:
        """:meth:`waiting`, by the participations' keys (what the engine's own questions
        ask: whether anyone waits)."""
        self.refresh()
        return self._groups.get((kind, index), set())

    def count(self, kind: str) -> int:
        self.refresh()
        return sum(len(ids) for (k, _), ids in self._groups.items() if k == kind)

    def demand(self) -> int | None:
        """The next sequence index some player's hand waits for, if any (BDL-2)."""
        n = len(self.shared.sequence)
        return n if self._waiting("card", n) else None

    def card_needed(self) -> dict[str, str] | None:
        """What the next card from the shoe is for, or None when the round needs none."""
        own = self.shared.own_card_need()
        if own is not None:
            return own
        s = self.shared
        if s.phase != PLAYING or s.paused or s.cancelling or self._ready_now():
            return None
        n = self.demand()
        return {"for": SEQUENCE, "index": str(n)} if n is not None else None

    def _progressable(self, limit: int) -> list[UUID]:
        """Participations that can take steps by themselves (AUTO-1, HAND-1, revealed cards)."""
        self.refresh()
        by = self._by
        return [by[key].id for key in self._ready(len(self.shared.state.sequence), limit)]

    def _ready(self, n: int, limit: int) -> list[int]:
        """:meth:`_progressable` once refreshed, ``n`` the cards revealed in the sequence."""
        ready = [(k, i) for k, i in self._groups if (k == "card" and i < n) or k == "auto"]
        return self._first_of(ready, limit) if ready else []

    def _ready_now(self) -> bool:
        """Whether a participation can take a step by itself (:meth:`_progressable`)."""
        self.refresh()
        return bool(self._ready(len(self.shared.state.sequence), 1))

    def _deciding(self) -> bool:
        """Once refreshed: whether a participation waits for a sequence card or a decision
        (``count("card") or count("decision")``; a group is never held empty)."""
        return any(k in {"card", "decision"} for k, _ in self._groups)

    def _first(self, ids: Any, limit: int) -> list[UUID]:
        return sorted(ids, key=self.rank)[:limit]

    def _first_of(self, needs: Iterable[Need], limit: int) -> list[int]:
        """The first ``limit`` participations in the round's order among those waiting with
        any of ``needs``: the same as sorting the groups' members, without sorting a group
        again at each step of a few hundred (a settlement of N players in steps of B sorted
        about N * N / 2B members; now N once)."""
        ordered = [self._ordered(need) for need in needs if need in self._groups]
        if len(ordered) <= 1:
            return list(islice(ordered[0], limit)) if ordered else []
        return list(islice(heapq.merge(*ordered, key=self._rank.__getitem__), limit))

    def _ordered(self, need: Need) -> Iterator[int]:
        """The members of ``need``'s group in the round's order. The group's queue is its
        members sorted once; a member that has left the group since is skipped (and dropped
        from the front), and a member that joins it drops the queue (:meth:`refresh`), so the
        queue always holds every member. Take what is needed at once: the queue changes on
        the next call."""
        group = self._groups.get(need)
        if not group:
            return iter(())
        queue = self._queues.get(need)
        if queue is None:
            queue = self._queues[need] = deque(sorted(group, key=self._rank.__getitem__))
        while queue and queue[0] not in group:
            queue.popleft()
        return (pid for pid in queue if pid in group)

    # ----------------------------------------------------------------------- steps
    def step(
        self, limit: int = DEFAULT_BATCH, *, hold_dealer: bool = False
    ) -> list[Aggregate] | None:
        """One piece of automatic work; the aggregates it changed (participations first, the
        shared hand last), or None when the round waits for an input (``hold_dealer``: also
        before the dealer's turn)."""
        s = self.shared
        st = s.state  # its fields read once (each of ``s``'s is a call)
        if st.finished:
            return None
        if st.cancelling:
            self.refresh()
            keys = self._first_of([("refund", 0)], limit)
            refunded = [self.held(key) for key in keys]
            for p in refunded:
                p.refund_all(s)
            changed: list[Aggregate] = [*refunded]
            self._dirty.update(keys)
            if not self._waiting("refund"):
                s.round_cancelled()
                changed.append(s)
            return changed
        phase = st.phase
        if st.paused or phase == BETTING:
            # nothing to do, and no need read: the needs of those who bet are recomputed
            # when they are next asked (betting's end changes every need anyway)
            return None
        self.refresh()
        if self.late:
            ids = self._first(self.late, limit)
            for pid in ids:
                self.parts[pid].void(s, sorted(self.late.pop(pid)))
            self.touch(*ids)
            return [self.parts[pid] for pid in ids]
        if phase == DEALING:
            return self._dealing_step(limit)
        if phase == INSURANCE:
            if self._waiting("window"):
                return None
            s.complete_window()
            return [s]
        if phase == PLAYING:
            keys = self._ready(len(st.sequence), limit)
            if keys:
                held = self.held  # (a waiting participation is never released)
                synced: list[Aggregate] = []
                for key in keys:
                    p = held(key)
                    p.sync(s)
                    synced.append(p)
                self._dirty.update(keys)
                return synced
            if hold_dealer or self._deciding():
                return None
            s.dealer_turn()
            return [s]
        if phase == DEALER:
            if not s.dealer_final:
                if s.dealer_wants_card:
                    return None
                s.dealer_stand()
                return [s]
            keys = self._first_of([("settle", 0)], limit)
            settled = [self.held(key) for key in keys]
            settle = self._settle = settle_step(st, self._settle)
            for p in settled:
                p.settle(s, settle)
            self._dirty.update(keys)
            changed = [*settled]
            if not self._waiting("settle"):
                s.round_settled()
                changed.append(s)
            return changed
        return None

    def _dealing_step(self, limit: int) -> list[Aggregate] | None:
        s = self.shared
        if not self.parts:  # nobody bet: the round ends at once
            s.round_settled()
            return [s]
        if not s.initial_dealt:
            return None
        keys = self._first_of([("open", 0)], limit)
        opened = [self.held(key) for key in keys]
        for p in opened:
            p.open_hand(s)
        self._dirty.update(keys)
        changed: list[Aggregate] = [*opened]
        if not self._waiting("open"):
            s.open_hands(seated=sum(1 for p in self.parts.values() if p.state is not None))
            changed.append(s)
        return changed

    # ------------------------------------------------------------------------ view
    def view(self) -> Json:
        """The round as plain JSON, in the shape of ``Round.view`` (every player's hands)."""
        return self._view(self.parts.values())

    def players_view(self, players: Iterable[str]) -> Json:
        """The round in the same shape with only ``players``' hands and wagers, in the round's
        order (a player without a participation adds none): the answer to their commands, whose
        cost must not grow with the thousands of others (the whole round: :meth:`view`)."""
        pids = {self.players[p] for p in players if p in self.players}
        return self._view(self.parts[pid] for pid in sorted(pids, key=self.rank))

    def _view(self, parts: Iterable[Participation]) -> Json:
        s = self.shared
        hands: list[Json] = []
        wagers: list[Json] = []
        for p in parts:
            hands.extend(hand_json(h, p.options_for(h, s)) for h in p.hands)
            wagers.extend(wager_json(w) for w in p.wagers.values())
        return {
            **view_head(s.state, str(s.id), self.card_needed()),
            "hands": hands,
            "wagers": wagers,
            "sequence": [c.code for c in s.sequence],
        }

"""The boundless rounds in use, kept in memory as a projection of the notification log.

For each round in use, a :class:`Tracked` holds an :class:`~domain.boundless.engine.Engine`
(the shared hand, every participation, and what each one waits for), its position in the
notification log, its lock and the wallets of its players. Before each command the index reads
the new notifications of the boundless and wallet topics since its last position (one query;
its own writes are skipped by version without decoding) and applies them (:meth:`catch_up`).
So the dealer knows which sequence card is demanded, whether anyone is still deciding, and who
has wagers to settle, without loading every participation. A round the process does not hold
(after a restart, or started by another process) is first loaded on SQLite and PostgreSQL by
its own streams (:meth:`RoundIndex._load_by_streams`: the records :meth:`read_by_streams`
gives, applied in commit order, the position then set to the log's last id read first), on
other stores by following the log from the round's first notification (its position is kept
in a side table when the round starts); either way it then follows the log. So several
processes can serve the same round: each catches up from the log, and their writes meet only
on optimistic version checks, retried on fresh state.

A round's records in commit order (the round log, ``BoundlessService.round_log``, and the
verifier's bundle, ``replays.bundle.StoreReader.shared_log``) have one home here:
:meth:`RoundIndex.round_records`, which on SQLite and PostgreSQL reads the round by its own
streams (:meth:`RoundIndex.read_by_streams`: its participations found by one query of the
``Participation.Joined`` rows between its start and its end, then their streams read whole;
the SQL is :mod:`domain.boundless.streams`) and on other stores scans the log
(:meth:`RoundIndex.round_notifications`), both giving the same records in the same order.
:meth:`RoundIndex.member` is the one rule of which participation is a round's, for the scan,
the read by streams and the index's catch-up alike.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Notification, Recording, StoredEvent
from eventsourcing.utils import get_topic

from domain.boundless.engine import Engine, Released
from domain.boundless.participation import Participation, participation_id
from domain.boundless.shared import SharedHand
from domain.boundless.streams import Row, StreamRows
from domain.collector import paused
from domain.errors import RoundNotFound
from domain.services.base import AuditBase
from domain.side_rows import BOUNDLESS_STARTS, start_row
from domain.store import ends_at, log_end_of, project
from domain.wallet import Wallet

_PAGE = 5000
_KEEP_FINISHED = 2  # finished rounds whose index stays in memory (views rebuild from the log)


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
_ROUND_TOPIC_SET = frozenset(ROUND_TOPICS)
STARTED = get_topic(SharedHand.Started)
BETTING_CLOSED = get_topic(SharedHand.BettingClosed)
JOINED = get_topic(Participation.Joined)
BET_PLACED = get_topic(Participation.BetPlaced)
FINAL = frozenset({get_topic(SharedHand.RoundSettled), get_topic(SharedHand.RoundCancelled)})


@dataclass
class RoundRead:
    """A boundless round read by its own streams (:meth:`RoundIndex.read_by_streams`)."""

    round_id: UUID
    #: The round's records in commit order: those the scan of the log meets.
    records: list[StoredEvent]
    #: Each stream read (the shared hand's and the participations'), whole, in version order,
    #: with the notification ids.
    streams: dict[UUID, list[Row]]
    #: :attr:`records` with their notification ids.
    rows: list[Row]
    #: The log's last notification id when the read began: nothing above it is among the
    #: records, everything of the round up to it is.
    cap: int
    #: The last version among :attr:`records` of each stream that has one there.
    last: dict[UUID, int] = field(default_factory=dict)
    #: Each participation found by its ``Participation.Joined`` row (not one the caller named):
    #: that row as read, and the event it decoded to (:meth:`RoundIndex.joining`). The same
    #: record read again with its stream, of the same bytes, decodes to the same event: the
    #: verifier's bundle takes it instead of decoding those bytes a second time
    #: (``replays.bundle.decode_stored``'s ``decoded``).
    joined: dict[UUID, tuple[StoredEvent, Any]] = field(default_factory=dict)

    def later(self, mine: Iterable[UUID]) -> list[StoredEvent]:
        """The records of the streams ``mine`` after the last version among :attr:`records`
        (committed after the round's end, or after the read began), stream by stream: the
        shared hand's first, then by id. A stream's rows are in version order: those after
        its last version met are the end of them."""
        out: list[StoredEvent] = []
        for oid in sorted(mine, key=lambda u: (u != self.round_id, u.hex)):
            rows = self.streams.get(oid)
            if not rows:
                continue
            top = self.last.get(oid, 0)
            at = len(rows)
            while at and rows[at - 1][1].originator_version > top:
                at -= 1
            out += [e for _, e in rows[at:]]
        return out


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


class RoundIndex:
    """The boundless rounds in use of one application (see the module docstring)."""

    def __init__(self, app: AuditBase) -> None:
        self.app = app
        # written by the transaction that starts the round (domain.side_rows)
        self._starts = app.commit_table(BOUNDLESS_STARTS)
        self._log_end = log_end_of(app.recorder)  # domain.sqlite_watch, when it knows
        self._rounds: OrderedDict[UUID, Tracked] = OrderedDict()
        self._rounds_lock = threading.Lock()
        self._kinds: dict[UUID, bool] = {}
        self._topics = (*ROUND_TOPICS, *WALLET_TOPICS)
        #: Notifications read per query when following the log (a round's index reads at most
        #: one page past the round's end).
        self.page_size = _PAGE

    def load(self, ident: UUID) -> Aggregate | None:
        """An aggregate straight from its stored events (None if it has none). Not through
        ``app.repository``: its cache deep-copies on every get."""
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
        """``app.save(*objs)``: ``AuditBase.save``, which collects the events without the
        library's run-time Protocol checks per object (``domain.services.base.Collected``)."""
        return self.app.save(*objs)

    def _own(self, t: Tracked, r: Recording[UUID]) -> None:
        """What the tail would have noted from one of our own notifications."""
        e = r.domain_event
        if isinstance(e, SharedHand.BettingClosed) and e.originator_id == t.rid:
            t.close_position = r.notification.id

    def owns(self, round_id: object) -> bool:
        """Whether ``round_id`` names a boundless round (a SharedHand)."""
        rid = as_uuid(round_id)
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

    def recorded_classic(self, rid: UUID) -> None:
        """Round ``rid`` has just been recorded as a classic round (a ``Round``): not a
        boundless one, ever, so :meth:`owns` need not read its first event."""
        self._kinds[rid] = False

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
                oid = cast(UUID, as_uuid(n.originator_id))
                if oid not in mine:
                    if n.topic != JOINED or not self.joins(n, rid):
                        continue
                    mine.add(oid)
                yield n
                if oid == rid and n.topic in FINAL:
                    return
            if len(notes) < self.page_size:
                return
            position = notes[-1].id

    def round_records(self, rid: UUID, streams: Iterable[UUID] = ()) -> list[StoredEvent]:
        """:meth:`round_notifications`'s records (the same records, in the same order): read
        by the round's own streams on SQLite and PostgreSQL (:meth:`read_by_streams`), by the
        scan on other stores."""
        read = self.read_by_streams(rid, dict.fromkeys([rid, *streams]))
        if read is None:
            return list(self.round_notifications(rid, streams))
        return read.records

    def read_by_streams(
        self, rid: UUID, mine: dict[UUID, None], rows: StreamRows | None = None
    ) -> RoundRead | None:
        """The round's records read by its own streams, the records and order of
        :meth:`round_notifications` (with ``mine`` as its ``streams``; the participations found
        are added to ``mine``); None when the store is neither SQLite nor PostgreSQL.
        ``rows``: the queries to use (the verifier's reader counts the rows they fetch).

        What the scan meets is what was committed when it ran: the log's last notification id
        is read first, and nothing above it is among the records. The shared hand's stream and
        the streams of ``mine`` are read whole; the round ends at its shared hand's first
        ``RoundSettled``/``RoundCancelled`` from its start (none: that last id). One query of
        the ``Participation.Joined`` rows between the start and that end (a range of the
        notification ids, filtered by topic in the database: no other record is returned)
        finds every participation whose ``Joined`` names the round (:meth:`joining`, the scan's
        rule), committed with the shared hand or alone; their streams are then read whole. Of
        those streams, the records the scan meets (from the round's start, or from the
        participation's first ``Joined`` naming it, to the end; the round's topics) are the
        round's records, in notification-id order."""
        rows = StreamRows(self.app.recorder) if rows is None else rows
        cap = rows.last_id()
        if cap is None:
            return None
        start = self.start_position(rid)
        first = 1 if start is None else start
        found = rows.streams(list(mine))
        assert found is not None  # the same store answered above
        end = cap  # the first end from the start (a record moved may break version order)
        for nid, e in found.get(rid, []):
            if first <= nid <= end and e.topic in FINAL:
                end = nid
        joined = rows.topic_between(JOINED, first, end)
        assert joined is not None
        entry: dict[UUID, int] = dict.fromkeys(mine, first)
        joins: dict[UUID, tuple[StoredEvent, Any]] = {}
        for nid, e in joined:
            oid = cast(UUID, e.originator_id)
            if oid not in entry:
                event = self.joining(e, rid)
                if event is not None:
                    entry[oid] = nid
                    mine.setdefault(oid)
                    joins[oid] = (e, event)
        more = rows.streams([oid for oid in entry if oid not in found])
        assert more is not None
        found.update(more)
        met: list[tuple[int, StoredEvent]] = []
        last: dict[UUID, int] = {}
        topics = _ROUND_TOPIC_SET
        for oid, at in entry.items():
            # a stream's records the scan meets, as the (id, record) pairs read (one
            # comprehension a stream, not a call or two a record: a round has tens of
            # thousands); its highest version among them (0 and below: none)
            kept = [p for p in found.get(oid, ()) if at <= p[0] <= end and p[1].topic in topics]
            if kept:
                met += kept
                # a stream's rows come in version order (``StreamRows.streams``): its last
                # kept is its highest
                top = kept[-1][1].originator_version
                if top > 0:
                    last[oid] = top
        met.sort(key=itemgetter(0))
        return RoundRead(rid, [e for _, e in met], found, met, cap, last, joins)

    def joins(self, n: StoredEvent, rid: UUID) -> bool:
        """Whether a ``Participation.Joined`` record joins round ``rid`` (:meth:`joining`)."""
        return self.joining(n, rid) is not None

    def joining(self, n: StoredEvent, rid: UUID) -> Any | None:
        """The decoded ``Participation.Joined`` of record ``n`` when it joins round ``rid``
        (:meth:`member`), else None; an unreadable one cannot be attributed to a round. The
        one rule of who belongs to a round, for the scan, the read by streams (the round log's
        and the verifier's, ``replays.bundle.StoreReader.shared_log``) and the live index's
        catch-up (:meth:`_apply`)."""
        try:
            e = self.app.mapper.to_domain_event(n)
        except Exception:
            return None
        return e if self.member(e, rid) else None

    @staticmethod
    def member(e: object, rid: UUID) -> bool:
        """Whether a decoded ``Participation.Joined`` joins round ``rid``: it names the round
        and a player, and its id is ``participation_id(rid, player)`` (as every participation
        the service creates: a ``Joined`` naming the round under another id is not the
        round's on any path)."""
        player = getattr(e, "player", None)
        return (
            getattr(e, "round_id", None) == str(rid)
            and isinstance(player, str)
            and getattr(e, "originator_id", None) == participation_id(rid, player)
        )

    def _tracked(self, round_id: str | UUID) -> Tracked:
        rid = as_uuid(round_id)
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
        """Record where a round starts in the log (an import: a round started here has it
        written by the transaction that starts it, ``domain.side_rows``)."""
        if self.start_position(rid) is not None:
            return
        self._starts.insert_events([start_row(rid, notification_id)])
        self._kinds[rid] = True

    def _catch_up(self, t: Tracked) -> None:
        """Apply the notifications recorded since the index's last position. The first load of
        a round the process does not hold reads the round by its own streams on SQLite and
        PostgreSQL (:meth:`_load_by_streams`); then (and on other stores from the round's
        start) the log is followed from the last position. A finished round takes nothing more
        (its shared hand's last event ends it), so the scan stops there: viewing an old round
        on the in-memory store reads the log from its start to its end, not to the log's end.
        A SQLite file store that knows its log ends at the index's position (nothing committed
        by anyone since its own last commit, the index's own writes: ``domain.sqlite_watch``)
        reads nothing: the query would return no row."""
        if t.engine is None:
            self._load_by_streams(t)
        rec = self.app.recorder
        if t.engine is not None and ends_at(self._log_end, t.position):
            return
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

    def _load_by_streams(self, t: Tracked) -> None:
        """The first load of a round: its records read by its own streams
        (:meth:`read_by_streams`: what the scan from its start would meet up to the log's last
        id, read first), applied in commit order as the scan applies them (:meth:`_apply`, the
        same membership rule), then the index's position moved to that last id. Nothing is
        done on stores the read does not serve, or when no ``Started`` was read (the scan then
        runs from the round's start as before). The players' wallets are not kept yet (a
        command reads them), so the wallet records the scan would pass are not needed.
        Automatic garbage collection waits while the round is read and applied (a dozen events
        and their objects a player, alive until the engine holds them, no cycle among them), as
        while a command runs."""
        with paused():
            read = self.read_by_streams(t.rid, {t.rid: None})
            if read is None:
                return
            for nid, e in read.rows:
                self._apply(
                    t, Notification(e.originator_id, e.originator_version, e.topic, e.state, nid)
                )
        if t.engine is None:
            t.close_position = None
            return
        t.position = max(t.position, read.cap)

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
                    t.engine.load = self._load_part  # a released participation read back
                return
            self._forward(eng.shared, n, lambda: self._reload_shared(t))
            return
        if eng is None:
            return
        kept = eng.kept(oid)
        if isinstance(kept, Released) and n.originator_version <= kept.version:
            return  # saved before it was released (our own write): nothing to apply
        p = eng.parts.get(oid)  # (a released one read back: another process wrote to it)
        if p is not None:
            if n.topic == BET_PLACED and t.close_position is not None and n.id > t.close_position:
                e = self.app.mapper.to_domain_event(n)
                eng.late.setdefault(oid, set()).add(e.wager_id)
            if self._forward(p, n, lambda: self._reload_part(t, oid)):
                eng.touch(oid)
            return
        if n.topic == JOINED:
            e = self.app.mapper.to_domain_event(n)
            if self.member(e, t.rid):
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
        t.eng.replace(self._load_part(pid))

    def _load_part(self, pid: UUID) -> Participation:
        """A participation as its stored events make it."""
        p = self.load(pid)
        assert isinstance(p, Participation)
        return p

    def _reload_shared(self, t: Tracked) -> None:
        s = self.load(t.rid)
        assert isinstance(s, SharedHand)
        t.eng.shared = s
        t.eng.touch(*t.eng.parts)


def as_uuid(value: object) -> UUID | None:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        return None


__all__ = [
    "BET_PLACED",
    "FINAL",
    "JOINED",
    "ROUND_TOPICS",
    "STARTED",
    "RoundIndex",
    "RoundRead",
    "Tracked",
    "as_uuid",
]

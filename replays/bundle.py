"""A round's evidence as stored records: its events, its shoe, its money, and its seal.

This module owns :class:`RoundBundle` (everything verification and export need about one round)
and :class:`StoreReader`, which reads bundles from an event store **record by record** through
the recorder, never through the repository. A record whose bytes no longer decode, a version
gap, or an aggregate that would no longer load are findings to report, not reasons to stop;
and a wallet or a shared shoe only partly present (as after an import) is still readable.

The store reader keeps the decoded streams of shoes and wallets it has read (a verification of
thousands of rounds reads each bot's wallet once) and brings them up to date with one small
query (``gt=<last version read>``) each time a round needs them; on SQLite and PostgreSQL the
wallets a round names that it has not read yet are read a few hundred streams per query (a
boundless round names thousands), and so are the last versions of a boundless round's streams
(to find any record committed after the round's end).

A boundless round (:meth:`StoreReader.shared_log`) is read on SQLite and PostgreSQL by its own
streams: its participations found by one query of the ``Participation.Joined`` rows between the
round's start and end in the log, then the streams read whole and merged by notification id, the
very records and order the scan of the log gives (other stores scan,
``RoundIndex.round_notifications``); it reads no other round's records but those ``Joined`` rows.
That read is the round index's (``RoundIndex.read_by_streams``, which the service's round log
uses too), and the queries of many streams are :class:`domain.boundless.streams.StreamRows`.

:meth:`StoreReader.read_ahead` reads many rounds at once for a verification of many rounds
(``StoreVerifier.verify_many``): their records with one query per few hundred rounds, their
shoes' and players' wallets' new records with one query per few hundred streams (each stream
from the last version already read), after which :meth:`StoreReader.round_bundle` of each of
those rounds makes no query of the event table.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder, Mapper, StoredEvent
from eventsourcing.utils import get_topic

from domain.boundless.shared import SharedHand
from domain.boundless.streams import StreamRows
from domain.events import event_kind
from domain.round import Round
from domain.shoe import Shoe
from domain.wallet import Wallet
from replays.chain import Record

if TYPE_CHECKING:
    from domain.application import RoundAudit
    from replays.log import StoredCheckpoint, TrustPolicy
    from replays.merkle import Checkpoint

Json = dict[str, Any]
FINISHING = (
    Round.RoundSettled,
    Round.RoundCancelled,
    SharedHand.RoundSettled,
    SharedHand.RoundCancelled,
)
STARTS = (Round.Started, SharedHand.Started)
#: The first record of a boundless round (a shared hand with one participation per player).
SHARED_STARTED_TOPIC = get_topic(SharedHand.Started)
#: The events that name a round's player (and so the wallets its money is in).
PLAYER_EVENTS = frozenset({"BetPlaced", "WagerAdded", "WagerSettled", "PaymentReversed", "Joined"})
MONEY_EVENTS = (
    Wallet.StakeDebited,
    Wallet.PayoutCredited,
    Wallet.RefundCredited,
    Wallet.PaymentReversed,
)


@functools.lru_cache(maxsize=1 << 16)
def wallet_id(player: str) -> UUID:
    """The id of ``player``'s wallet (``Wallet.create_id``: a name-based UUID, computed once
    per player: a boundless round's checks ask for each player's several times)."""
    return Wallet.create_id(player)


@dataclass
class Decoded:
    """A record and what it decodes to (``event`` None and ``error`` set when it does not)."""

    record: Record
    event: Any  # None when it does not decode
    error: str | None = None
    #: The position in a boundless round's merged log (1-based); None: the record's version.
    at: int | None = None

    @property
    def position(self) -> int:
        """Where the event is in its round's log: its version for a ``Round``, its place in the
        merged log (shared hand and participations, in commit order) for a boundless round."""
        return self.at if self.at is not None else self.record.version

    @property
    def name(self) -> str:
        if self.event is not None:
            return type(self.event).__qualname__
        return self.record.topic.rpartition(":")[2] or self.record.topic

    @property
    def version(self) -> int:
        return self.record.version


@dataclass
class Seal:
    """What the Merkle log holds for a sealed round, and the proof that ties it to a checkpoint.

    ``chain`` is the per-event chain values (h_1..h_n) recorded when the round was sealed: they
    locate the first changed record. ``inclusion`` is the audit path of the leaf in
    ``checkpoint`` (None when no checkpoint covers the leaf yet)."""

    leaf_index: int
    leaf_bytes: bytes
    chain: list[str]
    checkpoint: Checkpoint | None = None
    inclusion: list[str] | None = None
    public_key: str | None = None  # raw hex, as carried by an export (for convenience only)
    problems: list[str] = field(default_factory=list)  # e.g. the seal record is unreadable
    #: A boundless round's participation stream ids when it was sealed (found again from them
    #: even if a stream's first record is gone from the log).
    streams: list[UUID] = field(default_factory=list)

    @property
    def leaf(self) -> Json:
        import orjson

        data = orjson.loads(self.leaf_bytes)
        assert isinstance(data, dict)
        return data


@dataclass
class CommitEvidence:
    """What the Merkle log says about a round's records (seal at commit): the leaves that
    commit to them (by leaf index, their exact bytes), one checkpoint, and each covered leaf's
    inclusion path in it (RFC 6962). From the store (``MerkleLog.evidence``) or an export."""

    leaves: dict[int, bytes] = field(default_factory=dict)
    checkpoint: StoredCheckpoint | None = None
    inclusion: dict[int, list[bytes]] = field(default_factory=dict)
    #: Problems of the log itself met while gathering the evidence (e.g. leaves removed).
    problems: list[str] = field(default_factory=list)
    #: The size of the store's log (None for an export).
    log_size: int | None = None


@dataclass
class RoundBundle:
    round_id: UUID
    round: list[Decoded]
    shoe_id: UUID | None = None
    shoe: list[Decoded] = field(default_factory=list)
    money: list[Decoded] = field(default_factory=list)
    seal: Seal | None = None
    transcoder: str = ""
    evidence: CommitEvidence | None = None

    # -------------------------------------------------------------------- derived facts
    @property
    def shared(self) -> bool:
        """Whether this is a boundless round: a SharedHand stream and one Participation stream
        per player, ``round`` holding all of them merged in commit order."""
        return bool(self.round) and self.round[0].record.topic == SHARED_STARTED_TOPIC

    @property
    def events(self) -> list[Any]:
        """The round's decodable events, in stored order."""
        return [d.event for d in self.round if d.event is not None]

    @property
    def started(self) -> Any | None:
        first = self.round[0].event if self.round else None
        return first if isinstance(first, STARTS) else None

    def named_shoe(self) -> UUID | None:
        """The shoe the round's start names (None: no start, or not a UUID)."""
        started = self.started
        if started is None:
            return None
        try:
            return UUID(started.shoe_id)
        except ValueError:
            return None

    def participations(self) -> dict[UUID, list[Decoded]]:
        """A boundless round's participation streams (by stream id, in log order)."""
        out: dict[UUID, list[Decoded]] = {}
        for d in self.round:
            if d.record.originator_id != self.round_id:
                out.setdefault(d.record.originator_id, []).append(d)
        return out

    @property
    def finishing(self) -> Any | None:
        """The RoundSettled/RoundCancelled event, if the round is finished."""
        for d in reversed(self.round):
            if isinstance(d.event, FINISHING):
                return d.event
        return None

    @property
    def label(self) -> str:
        s = self.started
        return f"{s.table_id}#{s.round_number}" if s is not None else "(no Round.Started)"

    def card_records(self) -> list[Record]:
        """The shoe's CardDrawn records of this round, by shoe version (chain ``cards``)."""
        rid = str(self.round_id)
        return [
            d.record
            for d in self.shoe
            if isinstance(d.event, Shoe.CardDrawn) and d.event.round_id == rid
        ]

    def money_records(self) -> list[Record]:
        """The round's wallet movements by (wallet id, version) (chain ``money``)."""
        return [
            d.record
            for d in sorted(
                self.money, key=lambda d: (d.record.originator_id.hex, d.record.version)
            )
        ]

    def players(self) -> list[str]:
        """The players the round's decodable events name, in order of first appearance (the
        events of a kind that names a player: ``PLAYER_EVENTS``)."""
        seen: dict[str, None] = {}
        for d in self.round:  # every record of a boundless round: no list of its events made
            e = d.event
            if e is not None and type(e).__name__ in PLAYER_EVENTS:
                player = getattr(e, "player", None)
                if isinstance(player, str):
                    seen.setdefault(player)
        return list(seen)

    def owners(self) -> dict[UUID, str]:
        """Who each stream of a boundless round belongs to: ``shared`` (the round id's) or the
        player its events name (its id when none does)."""
        out: dict[UUID, str] = {self.round_id: "shared"}
        for d in self.round:
            oid = d.record.originator_id
            if oid in out and out[oid] != str(oid):
                continue
            player = getattr(d.event, "player", None)
            out[oid] = player if isinstance(player, str) else str(oid)
        return out


# ------------------------------------------------------------------------------ decoding
def plaintext(mapper: Mapper[UUID], stored: StoredEvent) -> bytes:
    """The transcoded state of a stored event (decrypted/decompressed if the store does)."""
    state = stored.state
    if mapper.cipher:
        state = mapper.cipher.decrypt(state)
    if mapper.compressor:
        state = mapper.compressor.decompress(state)
    return state


def originator_uuid(stored: StoredEvent) -> UUID:
    """A stored event's originator id as a UUID (recorders give a UUID or its text)."""
    oid = stored.originator_id
    return oid if isinstance(oid, UUID) else UUID(str(oid))


def to_record(mapper: Mapper[UUID], stored: StoredEvent) -> Record:
    uid = originator_uuid(stored)
    try:
        state = plaintext(mapper, stored)
    except Exception:  # a tampered ciphertext: hash what is there, decoding will report it
        state = stored.state
    return Record(uid, int(stored.originator_version), stored.topic, bytes(state))


def stored_version(state: bytes) -> int:
    """The stored format version of an event's plain state (``class_version``; 1 when the
    state records none, as the library writes version 1). Unreadable bytes count as 1."""
    import orjson

    try:
        data = orjson.loads(state)
    except orjson.JSONDecodeError:
        return 1
    version = data.get("class_version", 1) if isinstance(data, dict) else 1
    return version if isinstance(version, int) else 1


def upcast_payload(cls: type, payload: Json, from_version: int) -> Json:
    """A payload of stored format ``from_version`` read as ``cls``'s current one: the class's
    own upcasters (``upcast_v1_v2``...) applied in turn, as the library applies them when
    it decodes the stored bytes (used for the readable part of an export written before).

    >>> from domain.round import Round
    >>> upcast_payload(Round.HandHit, {"hand": "1", "rule": "AUTO-1"}, 1)["actor"]
    {'kind': 'system', 'id': 'roundaudit'}
    """
    state = dict(payload)
    version = from_version
    while version < getattr(cls, "class_version", 1):
        getattr(cls, f"upcast_v{version}_v{version + 1}")(state)
        version += 1
    return state


def current_bytes(mapper: Mapper[UUID], event: Any) -> bytes:
    """The plain state an event is stored as today (its class's current format): for an
    event stored in an older format, the bytes its upcast payload would be stored as now."""
    plain: Mapper[UUID] = Mapper(transcoder=mapper.transcoder)
    return bytes(plain.to_stored_event(event).state)


def decode(mapper: Mapper[UUID], record: Record) -> Decoded:
    """Decode one record with the store's transcoder (``record.state`` is already plain), the
    library's way (topic, upcasting), then check that every field of the class is present."""
    return _decode(_plain_mapper(mapper), record, None)


def decode_stored(mapper: Mapper[UUID], stored: Iterable[StoredEvent]) -> list[Decoded]:
    """``[decode(mapper, to_record(mapper, e)) for e in stored]``, with ``mapper``'s plain
    mapper looked up once, and each stored event given to it as it is when it is what
    :func:`decode` would build from the record: a UUID id, an int version and the very bytes
    of the record's state (a store that neither encrypts nor compresses), so the library
    decodes the same values (reading ahead decodes every record of hundreds of rounds)."""
    plain = _plain_mapper(mapper)
    out = []
    for e in stored:
        record = to_record(mapper, e)
        same = (
            e.state is record.state
            and e.originator_id is record.originator_id
            and type(e.originator_version) is int
        )
        out.append(_decode(plain, record, e if same else None))
    return out


def _decode(plain: Mapper[UUID], record: Record, stored: StoredEvent | None) -> Decoded:
    if stored is None:
        stored = StoredEvent(record.originator_id, record.version, record.topic, record.state)
    try:
        event = plain.to_domain_event(stored)
        _check_fields(type(event), event.__dict__)
    except Exception as exc:
        cause = exc.__cause__ or exc
        return Decoded(record, None, f"unreadable: {type(cause).__name__}: {cause}")
    return Decoded(record, event)


_PLAIN: weakref.WeakKeyDictionary[Mapper[UUID], Mapper[UUID]] = weakref.WeakKeyDictionary()
_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain_mapper(mapper: Mapper[UUID]) -> Mapper[UUID]:
    """A mapper with ``mapper``'s transcoder and no cipher or compressor (one per store's
    mapper, kept while it lives: decoding a boundless round decodes a few hundred thousand
    records)."""
    plain = _PLAIN.get(mapper)
    if plain is None:
        plain = _PLAIN[mapper] = Mapper(transcoder=mapper.transcoder)
    return plain


def _check_fields(cls: type, state: dict[str, Any]) -> None:
    """The decoded state has exactly the event class's fields (nothing missing)."""
    names = _FIELDS.get(cls)
    if names is None:
        # dataclasses.fields: the class's own and inherited fields, never its ClassVars
        # (``class_version``, ``BET_RULES``), which ``__dataclass_fields__`` also lists
        names = _FIELDS[cls] = (
            tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
        )
    missing = [n for n in names if n not in state]
    if missing:
        raise ValueError(f"fields missing: {', '.join(sorted(missing))}")


def payload_json(event: Any) -> Json:
    """An event's payload as plain JSON (as ``domain.application.event_json`` gives it)."""
    return {
        k: (str(v) if isinstance(v, UUID | Decimal) else v)
        for k, v in event.__dict__.items()
        if k not in ("originator_id", "originator_version", "timestamp", "originator_topic")
    }


def kind_of(d: Decoded) -> str | None:
    return event_kind(d.event) if d.event is not None else None


def transcoder_name(mapper: Mapper[UUID]) -> str:
    t = type(mapper.transcoder)
    return f"{t.__module__}:{t.__qualname__}"


# ------------------------------------------------------------------------------ the store


@dataclass
class _Stream:
    decoded: list[Decoded] = field(default_factory=list)
    #: wallet streams: the round-linked movements by round id
    by_round: dict[str, list[Decoded]] = field(default_factory=dict)
    #: just read with others (``StoreReader._read_new``): the next ``_fresh`` needs no query
    read: bool = False

    @property
    def last(self) -> int:
        return self.decoded[-1].version if self.decoded else 0

    def extend(self, new: Iterable[Decoded]) -> None:
        for d in new:
            self.decoded.append(d)
            if isinstance(d.event, MONEY_EVENTS):
                self.by_round.setdefault(str(d.event.round_id), []).append(d)


class StoreReader:
    """Reads round bundles from a :class:`~domain.application.RoundAudit`'s store."""

    def __init__(
        self, app: RoundAudit, *, log: Any | None = None, policy: TrustPolicy | None = None
    ) -> None:
        self.app = app
        self.mapper: Mapper[UUID] = app.mapper
        self._streams: dict[UUID, _Stream] = {}
        self.log = log  # replays.log.MerkleLog, for the evidence of the log (optional)
        self.policy = policy  # which checkpoints are final (the witnesses' quorum)
        #: :meth:`read_ahead`: the decoded records of the rounds read ahead (not boundless
        #: ones), and the shoes and wallets brought up to date for them (no query until the
        #: next :meth:`read_ahead`)
        self._ahead: dict[UUID, list[Decoded]] = {}
        self._current: set[UUID] = set()
        #: the queries of many streams (and the rows they returned: what a read by streams
        #: fetched, ``rows_read``)
        self.rows = StreamRows(app.recorder)

    @property
    def rows_read(self) -> int:
        """Rows the batched queries of this reader returned (what a read by streams fetched)."""
        return self.rows.rows_read

    def records(self, originator_id: UUID, *, gt: int | None = None) -> list[Record]:
        return [
            to_record(self.mapper, s) for s in self.app.recorder.select_events(originator_id, gt=gt)
        ]

    def decoded(self, originator_id: UUID) -> list[Decoded]:
        return [decode(self.mapper, r) for r in self.records(originator_id)]

    def stream(self, originator_id: UUID) -> list[Decoded]:
        """The decoded stream of a shoe or wallet, brought up to date (kept between calls)."""
        return self._fresh(originator_id).decoded

    def _fresh(self, originator_id: UUID) -> _Stream:
        s = self._streams.get(originator_id)
        if s is None:
            s = self._streams[originator_id] = _Stream()
        elif originator_id in self._current:
            return s  # brought up to date by :meth:`read_ahead` for the rounds read ahead
        elif s.read:
            s.read = False  # read by :meth:`_read_new` for this round: up to date
            return s
        s.extend(decode(self.mapper, r) for r in self.records(originator_id, gt=s.last))
        return s

    def _read_new(self, ids: list[UUID]) -> None:
        """Read the streams of ``ids`` not read before with a few queries of many streams
        each, instead of one query a stream (the thousands of wallets of a boundless round),
        when the store can (SQLite, PostgreSQL); other stores read them one by one in
        :meth:`_fresh`."""
        new = [i for i in dict.fromkeys(ids) if i not in self._streams]
        found = self._select_many(new)
        if found is None:
            return
        for oid, events in found.items():
            stream = self._streams[oid] = _Stream(read=True)
            stream.extend(decode_stored(self.mapper, events))

    def read_ahead(self, round_ids: Iterable[UUID]) -> None:
        """Read the rounds ``round_ids`` (not boundless ones: :meth:`round_bundle` reads those
        its own way), and bring their shoes and their players' wallets up to date, with a few
        queries of many streams each; until the next call, :meth:`round_bundle` of those
        rounds and :meth:`stream` of those shoes and wallets make no query. With no rounds (or
        a store that cannot), it only forgets what the previous call read."""
        self._ahead = {}
        self._current = set()
        ids = list(dict.fromkeys(round_ids))
        if self.log is not None:  # their legacy seals, if any: one query, not one a round
            self.log.hold_seals(ids, self._select_many)
        found = self._select_many(ids) if ids else None
        if found is None:
            return
        streams: dict[UUID, None] = {}
        for rid, stored in found.items():
            if stored and stored[0].topic == SHARED_STARTED_TOPIC:
                continue
            decoded = decode_stored(self.mapper, stored)
            self._ahead[rid] = decoded
            b = RoundBundle(rid, decoded)
            shoe = b.named_shoe()
            if shoe is not None:
                streams.setdefault(shoe)
            for player in b.players():
                streams.setdefault(wallet_id(player))
        wanted = list(streams)
        known = [i for i in wanted if i in self._streams]
        self._read_new(wanted)
        tails = self._select_many(known, after=[self._streams[i].last for i in known])
        if tails is None:
            return
        for oid, events in tails.items():
            self._streams[oid].extend(decode_stored(self.mapper, events))
        for oid in wanted:
            self._streams[oid].read = False
            self._current.add(oid)

    def is_ahead(self, round_id: UUID) -> bool:
        """Whether ``round_id`` was read ahead (and so is not a boundless round)."""
        return round_id in self._ahead

    def _select_many(
        self,
        ids: list[UUID],
        *,
        after: list[int] | None = None,
        recorder: AggregateRecorder | None = None,
    ) -> dict[UUID, list[StoredEvent]] | None:
        """Every stored event of the streams ``ids`` (each in version order; with ``after``,
        only those after ``after[i]`` for ``ids[i]``), read ``MANY`` streams a query, from
        the events or ``recorder``'s table; None when the store is neither SQLite nor
        PostgreSQL."""
        rows = self.rows.many(
            ids,
            "*",
            " ORDER BY originator_id, originator_version",
            after=after,
            recorder=recorder,
        )
        if rows is None:
            return None
        found: dict[UUID, list[StoredEvent]] = {i: [] for i in ids}
        for oid, row in rows:
            found[oid].append(
                StoredEvent(oid, row["originator_version"], row["topic"], bytes(row["state"]))
            )
        return found

    def first_appearances(self, topics: Sequence[str]) -> list[UUID] | None:
        """The streams holding a record of one of ``topics``, in the order of their first such
        record (its notification id), read with one query that returns only the ids (no
        state, nothing decoded); None when the store is neither SQLite nor PostgreSQL (or keys
        its streams by text)."""
        rows = self.rows.fetch(
            (
                f"SELECT originator_id FROM {{table}} WHERE topic IN "
                f"({','.join('?' * len(topics))}) GROUP BY originator_id ORDER BY MIN(rowid)",
                list(topics),
            ),
            (
                "SELECT originator_id FROM {table} WHERE topic = ANY(%s) "
                "GROUP BY originator_id ORDER BY MIN(notification_id)",
                (list(topics),),
            ),
        )
        return None if rows is None else [UUID(str(row["originator_id"])) for row in rows]

    def _last_versions(self, ids: list[UUID]) -> dict[UUID, int] | None:
        """The last stored version of each stream of ``ids`` that has any, read ``MANY``
        streams a query (nothing decoded); None when the store is neither SQLite nor
        PostgreSQL."""
        rows = self.rows.many(
            ids, "originator_id, MAX(originator_version) AS last", " GROUP BY originator_id"
        )
        if rows is None:
            return None
        return {oid: int(row["last"]) for oid, row in rows}

    def round_bundle(self, round_id: UUID) -> RoundBundle:
        seal = self.log.seal_of(round_id) if self.log is not None else None
        ahead = self._ahead.pop(round_id, None)
        first = [] if ahead is not None else self.app.recorder.select_events(round_id, limit=1)
        if ahead is not None:
            merged = ahead
        elif first and first[0].topic == SHARED_STARTED_TOPIC:
            streams = list(seal.streams) if seal is not None else []
            if self.log is not None:
                streams += self.log.participations_of(round_id)
            merged = self.shared_log(round_id, streams)
        else:
            merged = self.decoded(round_id)
        b = RoundBundle(round_id, merged, transcoder=transcoder_name(self.mapper))
        b.shoe_id = b.named_shoe()
        if b.shoe_id is not None:
            b.shoe = list(self.stream(b.shoe_id))
        rid = str(round_id)
        players = b.players()
        self._read_new([wallet_id(p) for p in players])
        for player in players:
            b.money.extend(self._fresh(wallet_id(player)).by_round.get(rid, []))
        b.seal = seal
        if self.log is not None:
            b.evidence = self.log.evidence(b, self, self.policy)
        return b

    def wallet_stream(self, player: str) -> list[Decoded]:
        return self._fresh(wallet_id(player)).decoded

    def shared_log(self, round_id: UUID, streams: Iterable[UUID] = ()) -> list[Decoded]:
        """A boundless round's records, merged in commit order: the shared hand's and those of
        every participation (found by their ``Participation.Joined`` naming the round, or named
        by the round's seal), followed by any record of those streams committed after the
        round's last event (which verification then reports).

        On SQLite and PostgreSQL the round is read by its own streams (:meth:`_by_streams`),
        reading no other round's records; other stores scan the log
        (``RoundIndex.round_notifications``). Both give the same records in the same order."""
        mine: dict[UUID, None] = dict.fromkeys([round_id, *streams])
        merged = self._by_streams(round_id, mine)
        if merged is None:
            merged = self._scanned(round_id, mine)
        out = decode_stored(self.mapper, merged)
        for i, d in enumerate(out, start=1):
            d.at = i
        return out

    def _scanned(self, round_id: UUID, mine: dict[UUID, None]) -> list[StoredEvent]:
        """:meth:`shared_log`'s records by a scan of the log from the round's start."""
        last: dict[UUID, int] = {}
        out: list[StoredEvent] = []
        for n in self.app.boundless.round_notifications(round_id, mine):
            oid = originator_uuid(n)
            mine.setdefault(oid)
            last[oid] = max(last.get(oid, 0), int(n.originator_version))
            out.append(n)
        # what those streams hold after the round's last event: one query per ``MANY``
        # streams for their last versions, then a read of only the streams that have more
        ordered = sorted(mine, key=lambda u: (u != round_id, u.hex))
        known = self._last_versions(ordered)
        for oid in ordered:
            if known is None or known.get(oid, 0) > last.get(oid, 0):
                out += self.app.recorder.select_events(oid, gt=last.get(oid, 0))
        return out

    def _by_streams(self, round_id: UUID, mine: dict[UUID, None]) -> list[StoredEvent] | None:
        """:meth:`shared_log`'s records read by the round's streams, the same records in the
        same order as :meth:`_scanned`; None when the store is neither SQLite nor PostgreSQL:
        the round's records (``RoundIndex.read_by_streams``, the service's round log's read
        too), then each stream's records after the last version among them, stream by stream
        (the shared hand first, then by id), as the scan appends them."""
        read = self.app.boundless.read_by_streams(round_id, mine, self.rows)
        if read is None:
            return None
        return read.records + read.later(mine)


__all__ = [
    "FINISHING",
    "MONEY_EVENTS",
    "SHARED_STARTED_TOPIC",
    "STARTS",
    "CommitEvidence",
    "Decoded",
    "RoundBundle",
    "Seal",
    "StoreReader",
    "decode",
    "decode_stored",
    "kind_of",
    "originator_uuid",
    "payload_json",
    "plaintext",
    "to_record",
    "transcoder_name",
    "wallet_id",
]

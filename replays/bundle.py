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
(to find any record committed after the round's end). The verifier's digesting read of a
boundless round reads its players' wallets so too but does not keep them: it holds only the
round's movements, by their bytes' digest, and their events until the money check has read them
(:meth:`StoreReader._round_money`, :meth:`RoundBundle.money_checked`).

A reader made with ``defer`` (the verifier's) leaves some records undecoded until something
reads them (:class:`Deferred`): a boundless round's consequences that neither move money nor
name a player, which re-execution compares with the events it derives without building the
library's event when they are the same (``replays.verify.verify_bundle`` decodes the others, and
starts again with every record decoded if one of them does not decode); its participations'
inputs of those kinds (decisions), which re-execution decodes to feed them and lets go once
compared equal to their re-derived events; the verifier's digesting read's participation records
decoded on reading (a join, a bet, an added wager, a settlement: they move money or name the
player), held decoded until re-execution compares them equal and then let go the same way
(:meth:`Deferred.holding`); and the records of the players' wallets that are no movement.

A boundless round (:meth:`StoreReader.shared_log`) is read on SQLite and PostgreSQL by its own
streams: its participations found by one query of the ``Participation.Joined`` rows between the
round's start and end in the log, then the streams read whole and merged by notification id, the
very records and order the scan of the log gives (other stores scan,
``RoundIndex.round_notifications``); it reads no other round's records but those ``Joined`` rows.
That read is the round index's (``RoundIndex.read_by_streams``, which the service's round log
uses too), and the queries of many streams are :class:`domain.boundless.streams.StreamRows`;
the ``Participation.Joined`` rows it decoded to find the participations are not decoded again
(``RoundRead.joined``: :func:`decode_stored` takes their events for the same records, of the
very same bytes).

What is read is held small (a boundless round's verification holds every record of the round,
hundreds of thousands of objects): the records of one read (:func:`decode_stored`) share one
string a topic, the events decoded together one string for equal text fields and one dict for
equal actors, and ``Record``, :class:`Decoded` and :class:`Deferred` are slotted; and the
verifier's reading of a boundless round (``round_bundle(..., digest=True)``) keeps each record
it decodes by the SHA-256 of its stored bytes instead of the bytes (:class:`Digested`: the
commit check reads nothing else of it), unless the round has a legacy per-round seal, whose
chain hashes the bytes.

Decoding (:func:`_decode`) is the library's: a record of a topic it decoded before, stored at
its class's version, is decoded as ``Mapper.to_domain_event`` decodes it without repeating the
steps that answer the same for every record of the topic (:data:`_KNOWN`); any other record
goes through the library, which says why it does not decode.

:meth:`StoreReader.read_ahead` reads many rounds at once for a verification of many rounds
(``StoreVerifier.verify_many``): their records with one query per few hundred rounds, their
shoes' and players' wallets' new records with one query per few hundred streams (each stream
from the last version already read; on a store that neither encrypts nor compresses, each row
made the ``Record`` it decodes from, :func:`plain_record`, with no ``StoredEvent`` between),
after which :meth:`StoreReader.round_bundle` of each of
those rounds makes no query of the event table.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
import weakref
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import repeat
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from eventsourcing.persistence import (
    AggregateRecorder,
    Mapper,
    StoredEvent,
    find_id_convertor,
    pass_through_convertor,
)
from eventsourcing.utils import get_topic, resolve_topic

from domain.boundless.shared import SharedHand
from domain.boundless.streams import MANY, StreamRows, stored_bytes, stored_event
from domain.commit_leaf import ParsedLeaf, state_digest
from domain.events import Consequence, Input, event_kind
from domain.movements import STAKE_EVENTS
from domain.round import Round
from domain.shoe import Shoe
from domain.wallet import Wallet
from replays.chain import Record
from replays.reexecute import _MISSING, _SKIP, same_state

if TYPE_CHECKING:
    from domain.application import RoundAudit
    from replays.log import StoredCheckpoint, TrustPolicy
    from replays.merkle import Checkpoint

Json = dict[str, Any]
#: What the events decoded together share (:func:`_decoded`): one string for equal text
#: fields (by the text), one dict for equal actors (by their items, a tuple).
Shared = dict[Any, Any]
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
#: The qualified names of a participation's events begin so (:meth:`Deferred.holding`).
_PARTICIPATION = "Participation."
PLAYER_EVENTS = frozenset({"BetPlaced", "WagerAdded", "WagerSettled", "PaymentReversed", "Joined"})
#: The events that move money in the players' wallets (``domain.movements.apply_movements``).
MOVING_EVENTS = STAKE_EVENTS | {"WagerSettled", "PaymentReversed"}
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


@dataclass(slots=True)
class Decoded:
    """A record and what it decodes to (``event`` None and ``error`` set when it does not).
    Slotted, as :class:`Deferred` and ``Record``: a boundless round has hundreds of thousands."""

    record: Record
    event: Any  # None when it does not decode
    error: str | None = None
    #: The position in a boundless round's merged log (1-based); None: the record's version.
    at: int | None = None
    #: Not decoded yet (:class:`Deferred`): its ``event`` and ``error`` are not known until read.
    deferred: ClassVar[bool] = False

    @property
    def cls(self) -> type | None:
        """The class of the event (None when the record does not decode)."""
        return None if self.event is None else type(self.event)

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
    commit to them (by leaf index: their exact bytes, or parsed with their tree hash), one
    checkpoint, and each covered leaf's inclusion path in it (RFC 6962). From the store
    (``MerkleLog.evidence``: the leaves whose text hashes to the verifier's tree given
    parsed, no text held) or an export (the text)."""

    #: the leaves given as text (an export's, and a leaf read again that is not the text
    #: hashed into the verifier's tree, or not a leaf), by index
    leaves: dict[int, bytes] = field(default_factory=dict)
    #: the leaves given parsed (the store's log: no text held), by index: the tree's hash of
    #: the leaf and the parse of the very text hashed into it
    parsed: dict[int, tuple[bytes, ParsedLeaf]] = field(default_factory=dict)
    checkpoint: StoredCheckpoint | None = None
    inclusion: dict[int, list[bytes]] = field(default_factory=dict)
    #: Problems of the log itself met while gathering the evidence (e.g. leaves removed).
    problems: list[str] = field(default_factory=list)
    #: The size of the store's log (None for an export).
    log_size: int | None = None
    #: reads a leaf's text again (the store's log's ``MerkleLog.leaf``): for :meth:`text` of
    #: a leaf given parsed
    read: Callable[[int], bytes] | None = field(default=None, repr=False, compare=False)

    def indexes(self) -> list[int]:
        """Every leaf of the evidence, given as text or parsed, in index order."""
        return sorted(self.leaves.keys() | self.parsed.keys())

    def text(self, index: int) -> bytes:
        """Leaf ``index``'s text: as given, else read again (a leaf given parsed)."""
        found = self.leaves.get(index)
        if found is not None:
            return found
        if self.read is None or index not in self.parsed:
            raise KeyError(index)
        return self.read(index)


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
    #: Some records of ``round`` are :class:`Deferred` (``StoreReader(defer=True)``).
    deferring: bool = False
    #: :meth:`card_records` as the store reader indexed them when it read the shoe (None:
    #: found by a walk of ``shoe``)
    cards: list[Record] | None = None
    #: ``money``'s movements are kept by their bytes' digest, read for this bundle alone
    #: (``StoreReader._round_money``): once the money check has read them, their events are
    #: let go (:meth:`money_checked`).
    money_digested: bool = False
    #: :meth:`players`' last answer and a copy of the ``round`` list it was found in (None:
    #: not asked yet); it stands while ``round`` still equals that copy
    _players: tuple[list[Decoded], list[str]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    # -------------------------------------------------------------------- derived facts
    @functools.cached_property
    def round_text(self) -> str:
        """``str(round_id)``, made once (``UUID.__str__`` runs in Python; a round's reading
        and checks name the round by its text several times)."""
        return str(self.round_id)

    @property
    def shared(self) -> bool:
        """Whether this is a boundless round: a SharedHand stream and one Participation stream
        per player, ``round`` holding all of them merged in commit order."""
        return bool(self.round) and self.round[0].record.topic == SHARED_STARTED_TOPIC

    @property
    def events(self) -> list[Any]:
        """The round's decodable events, in stored order."""
        return [d.event for d in self.round if d.event is not None]

    def log_events(self) -> list[Any]:
        """:attr:`events`, a :class:`Deferred` record standing for its own event (the list
        re-execution reads: ``replays.boundless`` takes each one's event when it needs it)."""
        # a deferred record's class is None only once decoded to no event (read as a slot:
        # not its ``event``, a call, for each of a boundless round's held records)
        return [
            d if type(d) is Deferred else d.event
            for d in self.round
            if (d.cls if type(d) is Deferred else d.event) is not None
        ]

    def money_checked(self) -> None:
        """The money check has read ``money``'s events (``replays.verify._check_money``, before
        re-execution): with :attr:`money_digested`, each movement is from now on only its
        record (its key, topic and bytes' digest: what the commit check reads), its decoded
        event let go (:meth:`Deferred.gone`; read again, it raises :class:`DroppedState`, and
        ``replays.verify.StoreVerifier`` reads the round again, keeping everything)."""
        if self.money_digested:
            self.money = [Deferred.gone(m) for m in self.money]

    def decode_all(self) -> None:
        """Decode every :class:`Deferred` record: the bundle is then as if read without."""
        for d in self.round:
            if d.deferred:
                d.error  # noqa: B018 (decodes it)
        self.deferring = False

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
        if self.cards is not None:
            return list(self.cards)
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
        events of a kind that names a player: ``PLAYER_EVENTS``).

        Found once for the records it is asked of (reading ahead, reading the round and its
        commit check ask of every round): the answer is kept with a copy of the ``round``
        list, and stands while ``round`` equals that copy, record by record (the same
        objects, compared in C, or equal records: equal events name the same players); a
        ``round`` changed in place (a record replaced, inserted, removed) is walked again. A
        record's event is never replaced in place (a :class:`Deferred` one, whose decoding
        comes and goes, is never one of those kinds)."""
        kept = self._players
        if kept is not None and kept[0] == self.round:
            return list(kept[1])
        seen: dict[str, None] = {}
        for d in self.round:  # every record of a boundless round: no list of its events made
            if type(d) is Deferred:
                if d.deferred:
                    continue  # its class (its topic's) is never one of those kinds undecoded
                # a held one (``Deferred.holding``) is; let go, its event raises
                # ``DroppedState``
                cls = d.cls  # a slot
                if cls is None or cls.__name__ not in PLAYER_EVENTS:
                    continue
                event = (d._done or d).event  # a held one's
            else:
                event = d.event  # (``Decoded.cls``, without its property's call)
                if event is None or type(event).__name__ not in PLAYER_EVENTS:
                    continue
            player = getattr(event, "player", None)
            if isinstance(player, str):
                seen.setdefault(player)
        self._players = (list(self.round), list(seen))
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
    as_stored = bytes(stored.state)
    try:
        state = plaintext(mapper, stored)
    except Exception:  # a tampered ciphertext: hash what is there, decoding will report it
        state = as_stored
    state = bytes(state)
    kept = None if state == as_stored else as_stored  # what the leaf committed to
    return Record(uid, int(stored.originator_version), stored.topic, state, kept)


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


_new = object.__new__
_sha256 = hashlib.sha256
_set = object.__setattr__  # a slotted, frozen ``Record``'s fields, set as its ``__init__`` does
# ... or by each slot's own descriptor, which ``_set`` finds by the name and calls: called
# directly, a field set costs about half (every record a verification reads sets four or five)
_set_id = Record.__dict__["originator_id"].__set__
_set_version = Record.__dict__["version"].__set__
_set_topic = Record.__dict__["topic"].__set__
_set_state = Record.__dict__["state"].__set__
_set_stored = Record.__dict__["stored"].__set__


def decode(mapper: Mapper[UUID], record: Record) -> Decoded:
    """Decode one record with the store's transcoder (``record.state`` is already plain), the
    library's way (topic, upcasting), then check that every field of the class is present."""
    return _decode(_plain_mapper(mapper), record, None)


def plain_record(originator_id: UUID, version: int, topic: str, state: bytes) -> Record:
    """``Record(originator_id, version, topic, state)`` (a store that neither encrypts nor
    compresses: ``stored`` None), built without the frozen dataclass's ``__init__`` (every
    record a verification reads)."""
    record = _new(Record)
    _set_id(record, originator_id)
    _set_version(record, version)
    _set_topic(record, topic)
    _set_state(record, state)
    _set_stored(record, None)
    return record


def decode_stored(
    mapper: Mapper[UUID],
    stored: Iterable[StoredEvent | Record],
    *,
    defer: Callable[[str], type | None] | None = None,
    share: bool = True,
    digest: bool = False,
    decoded: Mapping[UUID, tuple[StoredEvent, Any]] | None = None,
) -> list[Decoded]:
    """``[decode(mapper, to_record(mapper, e)) for e in stored]`` (an item of ``stored`` that
    is already a ``Record``, read as it is by ``StoreReader._select_many``, is decoded as it
    is), with ``mapper``'s plain mapper looked up once, and each stored event given to it as
    it is when it is what :func:`decode` would build from the record: a UUID id, an int
    version and the very bytes of the record's state (a store that neither encrypts nor
    compresses), so the library decodes the same values (reading ahead decodes every record
    of hundreds of rounds).
    ``defer``: a record whose topic it gives a class for (:func:`deferrable`,
    :func:`unmoving`) is a :class:`Deferred` of that class, decoded when read. ``share``
    (the default): equal text fields of the events decoded together share one string
    (:func:`_decode`'s ``strings``: memory, for a boundless round's hundreds of thousands);
    without it each keeps its own (a classic round's records, read ahead a hundred rounds at
    a time: no memory to save, and a few percent of a verification's CPU). ``digest``:
    every record decoded here (not a deferred one) keeps the SHA-256 of its stored bytes
    instead of the bytes (:class:`Digested`), and so does a deferred one once it is compared
    equal to its re-derived event (``Deferred._let_go``). ``decoded``: by stream id, a record
    of it read and decoded before, with its event (a boundless round's
    ``Participation.Joined`` rows, decoded by the round index to find the round's
    participations:
    ``RoundIndex.read_by_streams``); a stored event of that stream, version and topic and of
    the very same bytes is given that event (:func:`_taken`) instead of being decoded again."""
    plain = _plain_mapper(mapper)
    # the topics of ``decoded``'s records: only a record of one of them is looked up there
    # (a ``UUID`` hashes in Python: not once for every record)
    carried = frozenset(row.topic for row, _ in decoded.values()) if decoded else frozenset()
    out: list[Decoded] = []
    as_is = mapper.cipher is None and mapper.compressor is None
    classes: dict[str, Any] = {}  # ``defer``'s answer by topic, asked once a topic
    # one string a topic for every record (a row's topic is a string of its own: about 100
    # bytes a record of a boundless round, a few dozen topics in all)
    topics: dict[str, str] = {}
    # the same for the events' text fields (``_decode``)
    strings: Shared | None = {} if share else None
    plain_records = defer is None and not digest  # a record read as it is: decoded as it is
    for e in stored:
        if plain_records and type(e) is Record:  # every record a verification reads ahead
            out.append(_decode(plain, e, None, strings))
            continue
        # a record read as it is (``StoreReader._select_many``) shares its topic string already
        topic = e.topic if type(e) is Record else topics.setdefault(e.topic, e.topic)
        if defer is None:
            cls = None
        else:
            cls = classes.get(topic, _MISSING)
            if cls is _MISSING:
                cls = classes[topic] = defer(topic)
        record: Record
        source: StoredEvent | None = None  # the stored event to decode (the record's bytes)
        if isinstance(e, Record):
            record = e
        elif (
            digest
            and cls is None
            and as_is
            and type(e.originator_id) is UUID
            and type(e.state) is bytes
            and type(e.originator_version) is int
        ):
            # decoded from the stored event itself; its record keeps only the bytes' digest
            # (what the record would have held: the very bytes, stored as they are)
            kept = _new(Digested)
            _set_id(kept, e.originator_id)
            _set_version(kept, e.originator_version)
            _set_topic(kept, topic)
            _set_sha256(kept, _sha256(e.state).digest())
            taken = _taken(kept, e, decoded, strings) if topic in carried else None
            d = _decode(plain, kept, e, strings) if taken is None else taken
            out.append(Deferred.holding(plain, d) if defer is not None else d)
            continue
        else:
            if as_is and type(e.originator_id) is UUID and type(e.state) is bytes:
                # what ``to_record`` gives for it, built without the dataclass's ``__init__``
                record = plain_record(e.originator_id, int(e.originator_version), topic, e.state)
            else:
                record = to_record(mapper, e)
                if record.topic is not topic:
                    record = dataclasses.replace(record, topic=topic)
            if (
                e.state is record.state
                and e.originator_id is record.originator_id
                and type(e.originator_version) is int
            ):
                source = e
        if cls is not None:
            # not the stored event: it would keep the row's own topic string (decoding it
            # later builds one from the record, as for a record not read as it is); its
            # ``__init__`` called as a function, not through the class's call (a keyword
            # argument there made a dict for each of a boundless round's deferred records)
            waiting = _new(Deferred)
            _init_deferred(waiting, plain, record, cls, None, digest=digest)
            out.append(waiting)
        else:
            taken = None
            if source is not None and topic in carried:
                taken = _taken(record, source, decoded, strings)
            d = _decode(plain, record, source, strings) if taken is None else taken
            if digest:
                d.record = digested(record)
                if defer is not None:
                    d = Deferred.holding(plain, d)
            out.append(d)
    return out


#: :meth:`Deferred.holding`'s answer by event class: a participation's event or not.
_HELD: dict[type, bool] = {}


def _taken(
    record: Record,
    stored: StoredEvent,
    decoded: Mapping[UUID, tuple[StoredEvent, Any]] | None,
    strings: Shared | None,
) -> Decoded | None:
    """``record`` (read as ``stored``) with the event ``decoded`` holds for its stream, when
    that event was decoded from the same record: the same version and topic and the very
    same stored bytes (compared here: the bytes the record keeps, or their digest, are those
    the commit check compares with the leaf), every field of its class there (as
    :func:`_decode` checks); None otherwise (then it is decoded from its own bytes). Decoding
    is a function of those: the event is the one decoding them again would give."""
    was = decoded.get(record.originator_id) if decoded else None
    if was is None:
        return None
    row, event = was
    if (
        row.originator_version != stored.originator_version
        or row.topic != stored.topic
        or row.state != stored.state
    ):
        return None
    state = event.__dict__
    if type(state) is not dict or not _fields(type(event)) <= state.keys():
        return None
    return _decoded(record, event, state, strings)


class Digested(Record):
    """A record decoded once and for all, kept by the SHA-256 of its stored bytes instead of
    the bytes (``sha256``, 32 bytes, against a few hundred): what a boundless round's
    verification reads of such a record after decoding it is its event and whether its bytes
    are those its leaf committed to (:func:`stored_digest`), so the bytes of its hundreds of
    thousands of records are not held (``StoreReader.round_bundle`` of the verifier's reader,
    for a round without a legacy per-round seal, whose chain hashes the bytes themselves).
    Reading its ``state`` or ``as_stored`` raises :class:`DroppedState`: nothing may take
    other bytes for them."""

    __slots__ = ("sha256",)
    sha256: bytes

    @property
    def state(self) -> bytes:
        raise DroppedState(self)

    @property
    def as_stored(self) -> bytes:
        raise DroppedState(self)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is Digested
            and self.key == other.key
            and self.topic == other.topic
            and self.sha256 == other.sha256
        )

    def __hash__(self) -> int:
        return hash((self.originator_id, self.version, self.sha256))

    def __repr__(self) -> str:
        return (
            f"Digested({self.originator_id}, {self.version}, {self.topic!r}, "
            f"sha256={self.sha256.hex()})"
        )


_set_sha256 = Digested.__dict__["sha256"].__set__


class DroppedState(Exception):
    """The bytes of a :class:`Digested` record were asked for: only their digest was kept."""

    def __init__(self, record: Digested) -> None:
        super().__init__(
            f"{record.topic} {record.originator_id} version {record.version}: only the "
            "SHA-256 of its stored bytes is kept"
        )


def digested(record: Record) -> Digested:
    """``record`` kept by the SHA-256 of its stored bytes (``as_stored``: what a leaf commits
    to) instead of its bytes."""
    d = _new(Digested)
    _set_id(d, record.originator_id)
    _set_version(d, record.version)
    _set_topic(d, record.topic)
    _set_sha256(d, _sha256(record.as_stored).digest())
    return d


def stored_digest(record: Record) -> str:
    """The lower-case hex SHA-256 of ``record``'s stored bytes (what a leaf entry holds):
    ``domain.commit_leaf.state_digest(record.as_stored)``, or the digest a :class:`Digested`
    record kept of them."""
    if type(record) is Digested:
        return record.sha256.hex()
    return state_digest(record.as_stored)


def stored_sha256(record: Record) -> bytes:
    """:func:`stored_digest`'s 32 bytes (what ``ParsedLeaf.committed`` compares: no hex
    text made for each record of a round)."""
    if type(record) is Digested:
        return record.sha256
    return _sha256(record.as_stored).digest()


def _handed_over(stored: list[Any]) -> Iterator[Any]:
    """The items of ``stored`` in order, each taken out of the list as it is handed over
    (the list is emptied): what the caller keeps of one (with ``decode_stored``'s ``digest``,
    a record decoded on reading keeps its bytes' digest, not the bytes) is then all that is
    held of it, not the stored event with its bytes until the last one is decoded (a
    boundless round's tens of thousands: the verifier's read was its peak). Taken by
    ``list.pop`` from the reversed list, a call in C an item (no generator step, and no
    comparison with a sentinel: ``iter(stored.pop, END)`` called each stored event's
    dataclass ``__eq__``, in Python)."""
    stored.reverse()
    return map(list.pop, repeat(stored, len(stored)))


def _digest_movements(money: Iterable[Decoded]) -> None:
    """A boundless round's wallet movements (``RoundBundle.money``, read for the verifier's
    digesting read) kept by the SHA-256 of their stored bytes instead of the bytes
    (:class:`Digested`), their decoded events kept: the money check reads their events, the
    commit check their digest (``stored_sha256``), and nothing else of the round reads their
    bytes (a round with a legacy per-round seal, whose chain hashes them, is not digested).
    Only the round's own movements: the reader keeps the players' wallets for later rounds,
    whose movements keep their bytes (such a round may have a legacy seal). The hash is the
    one the commit check made of the bytes: made here instead, once."""
    for d in money:
        if type(d.record) is not Digested:
            d.record = digested(d.record)


class Undecodable(Exception):
    """A :class:`Deferred` record turned out not to decode: the round is verified again with
    every record decoded first (``replays.verify.verify_bundle``), as if none were deferred."""


class Deferred(Decoded):
    """A record whose decoding waits until something reads it (:func:`decode_stored` with
    ``defer``): a boundless round's consequence that neither moves money nor names a player
    (:func:`deferrable`), which verification only compares with the one re-execution derives;
    a participation's input of those kinds (a decision), which re-execution decodes to feed it
    and then only compares; or a record of a player's wallet that is no movement
    (:func:`unmoving`), which no check reads; or a participation's record decoded on the
    verifier's digesting read (:meth:`holding`). Once compared equal to its re-derived event it
    is not held decoded (``matched``; decoded again if a check reads its event).

    :meth:`same_as` compares it with a re-derived event without building the library's event
    (the transcoder's decoding of its bytes, then the payload's fields): True only when
    decoding it would give an event of the same class whose payload equals the re-derived one,
    every field of the class present; anything else reads ``event``, which decodes it exactly
    as :func:`decode` does. Until then its class (``cls``) and ``name`` are those of its topic,
    which they are once decoded when it decodes; a record that then turns out not to decode
    raises :class:`Undecodable` where a check needs its event (:func:`real`), so that the round
    is verified again with every record decoded first, as before this class existed."""

    # ``cls`` and ``deferred`` are slots (read without a call: a boundless round's checks read
    # them for every record), kept true by each change of state (:meth:`_decoded`,
    # :meth:`_let_go`); ``event`` and ``error`` are properties, read through ``_done``.
    __slots__ = ("_digest", "_done", "_plain", "_stored", "cls", "deferred", "matched")

    #: The class of its topic until it is decoded, then its event's (None: it does not
    #: decode).
    cls: type | None
    #: Neither decoded nor compared equal to its re-derived event yet.
    deferred: bool  # type: ignore[misc]

    def __init__(
        self,
        plain: Mapper[UUID],
        record: Record,
        cls: type,
        stored: StoredEvent | None,
        *,
        digest: bool = False,
    ) -> None:
        # no dataclass ``__init__``: ``event`` and ``error`` are properties here
        self.record = record
        self.at = None
        self._plain = plain
        self.cls = cls
        self._stored = stored
        self._done: Decoded | None = None
        self.deferred = True
        #: Once compared equal, keep the SHA-256 of the stored bytes, not the bytes
        #: (:meth:`_let_go`).
        self._digest = digest
        #: Compared equal to its re-derived event (so it decodes), and not held decoded.
        self.matched = False

    @classmethod
    def holding(cls, plain: Mapper[UUID], done: Decoded) -> Decoded:
        """A participation's record decoded on the verifier's digesting read (``done``, its
        record a :class:`Digested`): a :class:`Deferred` holding it decoded until it is
        compared equal to its re-derived event (:meth:`same_as`), then let go as a deferred
        one is (its event read again raises :class:`DroppedState`), so that re-execution
        lets it go (a boundless round's bets, joins, added wagers and settlements: the money
        check, which reads them too, runs before re-execution,
        ``replays.verify._verify_bundle``); any other record (the shared hand's, one that
        does not decode) ``done`` as it is."""
        event = done.event
        if event is None:
            return done
        kind = type(event)
        held = _HELD.get(kind)
        if held is None:
            held = _HELD[kind] = kind.__qualname__.startswith(_PARTICIPATION)
        if not held:
            return done
        out = _new(cls)  # no ``__init__`` call: a boundless round has tens of thousands
        out.record = done.record
        out.at = None
        out._plain = plain
        out.cls = kind
        out._stored = None
        out._done = done
        out.deferred = False
        out._digest = True
        out.matched = False
        return out

    @classmethod
    def gone(cls, done: Decoded) -> Deferred:
        """``done`` (its record a :class:`Digested`, read by every check that reads its event)
        as a record whose event is let go: its class, name, position and record are
        ``done``'s; reading its event raises :class:`DroppedState` (a boundless round's wallet
        movements once the money check has read them, ``RoundBundle.money_checked``)."""
        event = done.event  # (``Decoded.cls``, without its call)
        out = _new(cls)
        out.record = done.record
        out.at = done.at
        out._plain = None  # type: ignore[assignment]  # never decoded: its record is digested
        out.cls = type(event) if event is not None else None
        out._stored = None
        out._done = None
        out.deferred = False
        out._digest = True
        out.matched = False
        return out

    @property
    def held(self) -> bool:
        """Held decoded: read by a check, or a held record (:meth:`holding`) not yet compared
        equal."""
        return self._done is not None

    def _let_go(self) -> None:
        """Compared equal: not held decoded, and with ``digest`` (the verifier's read of a
        boundless round, :func:`decode_stored`) its record kept by its bytes' digest
        (:class:`Digested`: what the commit check reads of it), not by the bytes. Reading its
        event again (a finding's owner, a failing aggregate's rebuild) then raises
        :class:`DroppedState` (``replays.verify.StoreVerifier`` reads the round again,
        keeping every record's bytes)."""
        self._done = None
        self.deferred = False
        self.matched = True
        if self._digest and type(self.record) is not Digested:
            self.record = digested(self.record)
            self._stored = None

    def _decoded(self) -> Decoded:
        done = self._done
        if done is None:
            if type(self.record) is Digested:  # let go once compared equal
                raise DroppedState(self.record)
            done = self._done = _decode(self._plain, self.record, self._stored)
            self.cls = done.cls
            self.deferred = False
        return done

    @property
    def event(self) -> Any:
        done = self._done  # decoded (a held one, an input fed): no call
        return (done if done is not None else self._decoded()).event

    @property
    def error(self) -> str | None:  # type: ignore[override]
        done = self._done
        return (done if done is not None else self._decoded()).error

    @property
    def name(self) -> str:
        cls = self.cls
        return cls.__qualname__ if cls is not None else self._decoded().name

    @property
    def originator_id(self) -> UUID:
        """The event's ``originator_id`` (the record's: decoding sets it so)."""
        return self.record.originator_id

    @property
    def originator_version(self) -> int:
        return self.record.version

    def same_as(self, expected: Any) -> bool:
        """``same_payload(expected, self.event)`` (``replays.reexecute``), found from the
        transcoder's decoding of the record's bytes without building the event when they are
        the same; False when they differ or it cannot tell so (``event`` then decodes it)."""
        done = self._done
        if done is not None:  # held decoded
            event = done.event
            if event is None or type(event) is not type(expected):
                return False
            if not same_state(expected.__dict__, event.__dict__):  # ``same_payload``'s own
                return False
            # decoded before (an input, to be re-executed): known to decode and to be its
            # re-derived event, it is not held decoded any longer (decoded again if read)
            self._let_go()
            return True
        cls = self.cls
        if type(expected) is not cls:
            return False
        try:
            state = self._plain.transcoder.decode(self.record.state)
        except Exception:  # decoding it again reports why
            return False
        # as ``Mapper.to_domain_event`` builds the event: this state, its ``class_version``
        # taken out, the record's id and version set on it; no upcasting (the state is stored
        # at the class's version: any other is left to the library); every field of the class
        # there (``_check_fields``)
        if type(state) is not dict:
            return False
        version, names = _SHAPES.get(cls) or _stored_shape(cls)
        stored_version = state.get("class_version", 1)
        if type(stored_version) is not int or stored_version != version:
            return False
        if not names <= state.keys():
            return False
        # compared as ``same_payload`` compares it with the decoded event's ``__dict__``, the
        # ``class_version`` the library takes out skipped
        if not same_state(expected.__dict__, state, _SKIP_STORED):
            return False
        self._let_go()
        return True


_init_deferred = Deferred.__init__


def real(e: Any) -> Any:
    """The event a re-execution's stored event stands for: a :class:`Deferred` record's
    decoded event (:class:`Undecodable` if it does not decode), anything else as it is."""
    if type(e) is not Deferred:
        return e
    event = e.event
    if event is None:
        raise Undecodable(e.error)
    return event


#: What a payload comparison skips (``same_payload``), and the stored ``class_version``
#: (the library takes it out of the state).
_SKIP_STORED = _SKIP | {"class_version"}


#: :meth:`Deferred.same_as`'s look-ups by class (:func:`_stored_shape`).
_SHAPES: dict[type, tuple[Any, frozenset[str]]] = {}


def _stored_shape(cls: type) -> tuple[Any, frozenset[str]]:
    """The ``class_version`` of ``cls`` and the fields a stored state must hold for
    :func:`_check_fields` to pass once decoded: all but the two the library sets from the
    record; kept in :data:`_SHAPES`."""
    shape = _SHAPES[cls] = (getattr(cls, "class_version", 1), _fields(cls) - _SET_ON_DECODING)
    return shape


def _topic_class(
    cache: dict[str, type | None], topic: str, keep: Callable[[type], bool]
) -> type | None:
    """The class ``topic`` resolves to when ``keep`` says so, else None (None too when it
    does not resolve), kept in ``cache`` by topic."""
    try:
        return cache[topic]
    except KeyError:
        pass
    try:
        cls: type | None = resolve_topic(topic)
    except Exception:
        cls = None
    if cls is not None and not keep(cls):
        cls = None
    cache[topic] = cls
    return cls


_DEFERRABLE: dict[str, type | None] = {}
_UNMOVING: dict[str, type | None] = {}


def deferrable(topic: str) -> type | None:
    """The class of ``topic`` when its records may be :class:`Deferred`: one that neither
    moves money (``MOVING_EVENTS``) nor names the round's players (``PLAYER_EVENTS``) and is
    either a consequence (not an input), or a participation's input (a decision, a timer
    that expired, a disconnection: re-execution decodes it when it feeds it, and lets the
    decoded event go once it is compared equal to its re-derived one); None for any other
    topic (or one that does not resolve)."""
    return _topic_class(
        _DEFERRABLE,
        topic,
        lambda cls: (
            cls.__name__ not in MOVING_EVENTS
            and cls.__name__ not in PLAYER_EVENTS
            and (
                (issubclass(cls, Consequence) and not issubclass(cls, Input))
                or (issubclass(cls, Input) and cls.__qualname__.startswith("Participation."))
            )
        ),
    )


def unmoving(topic: str) -> type | None:
    """The class of ``topic`` when its records in a wallet may be :class:`Deferred`: one that
    is no movement a round makes (``MONEY_EVENTS``: a wallet's opening, a deposit), which a
    round's verification never reads; None for any other topic (or one that does not
    resolve)."""
    return _topic_class(_UNMOVING, topic, lambda cls: not issubclass(cls, MONEY_EVENTS))


def _decode(
    plain: Mapper[UUID],
    record: Record,
    stored: StoredEvent | None,
    strings: Shared | None = None,
) -> Decoded:
    """``strings``: one string for equal text fields of the events decoded with it (a player's
    name, a wager's id, a stake: each in a dozen of a boundless round's events), and one dict
    for equal actors.

    A record of a topic the library decoded before (:data:`_KNOWN`), stored at its class's
    version, is decoded as the library's ``Mapper.to_domain_event`` decodes it (the
    transcoder's decoding of its bytes, ``class_version`` taken out, its id and version set,
    the event made of that state) without its steps that give the same answer for every record
    of the topic (the topic resolved, the id's converter found, the class's version read) and
    without a ``StoredEvent``; any other record, or one that does not decode so, is decoded by
    the library (which reports why it does not decode). ``stored``, when given, is the
    record's stored event (:func:`decode_stored`), whose bytes are decoded, as the library
    decodes them: a :class:`Digested` record no longer holds its own (asking for them raised
    :class:`DroppedState` and sent every record of a boundless round that is decoded on
    reading to the library's slower path)."""
    known = _KNOWN.get(record.topic)
    if known is not None and type(record.originator_id) is UUID:
        cls, version, names = known
        try:
            state = plain.transcoder.decode(record.state if stored is None else stored.state)
        except Exception:  # the library decodes it again, and says why
            state = None
        if type(state) is dict and state.pop("class_version", 1) == version:
            state["originator_id"] = record.originator_id
            state["originator_version"] = record.version
            shared = False  # its text fields made one string with those equal to them
            if _getsizeof(state) > _FRESH[min(len(state), _FRESH_MAX)]:
                # the same items in the same order, in a table grown as items come (_FRESH),
                # with ``strings`` each text field shared in the same pass (``_decoded``'s)
                if strings is None:
                    state = {key: value for key, value in state.items()}  # noqa: C416
                else:
                    one = strings.setdefault
                    state = {k: one(v, v) if type(v) is str else v for k, v in state.items()}
                    shared = True
            if names <= state.keys():
                event: Any = _new(cls)
                _set(event, "__dict__", state)
                if strings is None:  # no strings to share (a classic round's records)
                    return Decoded(record, event)
                return _decoded(record, event, state, strings, texts=not shared)
    if stored is None:
        stored = StoredEvent(record.originator_id, record.version, record.topic, record.state)
    try:
        event = plain.to_domain_event(stored)
        state = event.__dict__
        _check_fields(type(event), state)
    except Exception as exc:
        cause = exc.__cause__ or exc
        return Decoded(record, None, f"unreadable: {type(cause).__name__}: {cause}")
    if known is None:
        _learn(record.topic, type(event))
    return _decoded(record, event, state, strings)


def _decoded(
    record: Record, event: Any, state: dict[str, Any], strings: Shared | None, *, texts: bool = True
) -> Decoded:
    """``record`` decoded to ``event`` (whose ``__dict__`` is ``state``), its text fields made
    one string with those equal to them in ``strings`` (``texts`` False: :func:`_decode` has
    done so already, as it made ``state`` anew), and its actor one dict with those equal to it
    (by its items, in their order)."""
    if strings is not None:
        one = strings.setdefault
        if texts:
            for key, value in state.items():
                if type(value) is str:
                    state[key] = one(value, value)
        actor = state.get("actor")
        if type(actor) is dict:
            # one dict for equal actors (the system's, a player's: a dict of two strings in
            # nearly every event, about 300 bytes), kept under its items, a tuple (never equal
            # to a text field's string); an actor whose items do not hash keeps its own
            try:
                shared = one(tuple(actor.items()), actor)
            except TypeError:
                shared = actor
            state["actor"] = shared
    return Decoded(record, event)


def _fresh_sizes(most: int) -> list[int]:
    """``sys.getsizeof`` of a dict of ``n`` text keys filled one item at a time, for each
    ``n`` up to ``most``. The transcoder's decoded states come in larger tables (orjson sizes
    them ahead, and :func:`_decode` takes a key out and two in: a ``WagerSettled``'s 17 items
    held 632 bytes, 464 filled one at a time; a boundless round holds tens of thousands of
    them until its verdict), so :func:`_decode` makes such a state again, item by item.
    Measured on this interpreter, not assumed."""
    return [sys.getsizeof({str(i): i for i in range(n)}) for n in range(most + 1)]


_getsizeof = sys.getsizeof
_FRESH_MAX = 64
_FRESH = _fresh_sizes(_FRESH_MAX)


#: By topic, what :func:`_decode` needs to decode a record of it without the library's
#: ``to_domain_event``: the event class the library resolved the topic to, the class's
#: ``class_version`` and its fields (:func:`_fields`); only for a class whose events take a
#: ``UUID`` id as it is (the library's ``pass_through_convertor``).
_KNOWN: dict[str, tuple[type, Any, frozenset[str]]] = {}


def _learn(topic: str, cls: type) -> None:
    """Keep in :data:`_KNOWN` what the library's decoding of a record of ``topic`` found."""
    if resolve_topic(topic) is cls and find_id_convertor(cls, UUID) is pass_through_convertor:
        _KNOWN[topic] = (cls, getattr(cls, "class_version", 1), _fields(cls))


_PLAIN: weakref.WeakKeyDictionary[Mapper[UUID], Mapper[UUID]] = weakref.WeakKeyDictionary()
_FIELDS: dict[type, frozenset[str]] = {}


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
    names = _fields(cls)
    if names <= state.keys():
        return
    missing = [n for n in names if n not in state]
    raise ValueError(f"fields missing: {', '.join(sorted(missing))}")


def _fields(cls: type) -> frozenset[str]:
    names = _FIELDS.get(cls)
    if names is None:
        # dataclasses.fields: the class's own and inherited fields, never its ClassVars
        # (``class_version``, ``BET_RULES``), which ``__dataclass_fields__`` also lists
        names = _FIELDS[cls] = (
            frozenset(f.name for f in dataclasses.fields(cls))
            if dataclasses.is_dataclass(cls)
            else frozenset()
        )
    return names


_SET_ON_DECODING = frozenset({"originator_id", "originator_version"})


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
    #: shoe streams: the ``CardDrawn`` records by the round id they name (a str), in order
    cards: dict[str, list[Record]] = field(default_factory=dict)
    #: just read with others (``StoreReader._read_new``): the next ``_fresh`` needs no query
    read: bool = False

    @property
    def last(self) -> int:
        return self.decoded[-1].version if self.decoded else 0

    def extend(self, new: Iterable[Decoded]) -> None:
        for d in new:
            self.decoded.append(d)
            cls = d.cls  # a deferred record's (never a movement): not decoded for this
            if cls is None:
                continue
            if issubclass(cls, MONEY_EVENTS):
                self.by_round.setdefault(str(d.event.round_id), []).append(d)
            elif issubclass(cls, Shoe.CardDrawn):
                event = d.event  # None: it does not decode (RoundBundle.card_records skips it)
                if event is not None and isinstance(event.round_id, str):
                    self.cards.setdefault(event.round_id, []).append(d.record)


class StoreReader:
    """Reads round bundles from a :class:`~domain.application.RoundAudit`'s store."""

    def __init__(
        self,
        app: RoundAudit,
        *,
        log: Any | None = None,
        policy: TrustPolicy | None = None,
        defer: bool = False,
    ) -> None:
        """``defer``: a boundless round's consequences that neither move money nor name a
        player are read as :class:`Deferred` records (for ``replays.verify.verify_bundle``,
        which decodes each one that is not the event re-execution derives), and so are the
        records of its players' wallets that are no movement (read many at a time: their
        openings and deposits, which no check reads)."""
        self.app = app
        self.defer = defer
        self.mapper: Mapper[UUID] = app.mapper
        self._streams: dict[UUID, _Stream] = {}
        self.log = log  # replays.log.MerkleLog, for the evidence of the log (optional)
        self.policy = policy  # which checkpoints are final (the witnesses' quorum)
        #: :meth:`read_ahead`: the decoded records of the rounds read ahead (not boundless
        #: ones), and the shoes and wallets brought up to date for them (no query until the
        #: next :meth:`read_ahead`)
        self._ahead: dict[UUID, list[Decoded]] = {}
        #: the players each round read ahead names (``RoundBundle.players``' kept answer)
        self._ahead_players: dict[UUID, Any] = {}
        #: the shoe each round read ahead names (``RoundBundle.named_shoe``'s answer)
        self._ahead_shoes: dict[UUID, UUID | None] = {}
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

    def _read_new(self, ids: list[UUID], shoes: Container[UUID] = ()) -> None:
        """Read the streams of ``ids`` not read before with a few queries of many streams
        each, instead of one query a stream (the thousands of wallets of a boundless round),
        when the store can (SQLite, PostgreSQL); other stores read them one by one in
        :meth:`_fresh`. With ``defer``, a wallet's records that are no movement are
        :class:`Deferred` (:func:`unmoving`); a shoe's (those of ``shoes``) never are: every
        one of them is read at once, by the stream's index of cards and by the shoe's check."""
        new = [i for i in dict.fromkeys(ids) if i not in self._streams]
        found = self._select_many(new, records=True)
        if found is None:
            return
        wallets = unmoving if self.defer else None
        # the wallets' records decoded by one call (what it costs a call, its caches and the
        # mapper's look-up, once and not once a wallet: a boundless round's thousands), each
        # stream then given its own records, in order
        streams: list[tuple[_Stream, int]] = []
        together: list[Any] = []
        for oid, events in found.items():
            stream = self._streams[oid] = _Stream(read=True)
            if oid in shoes:  # a classic round's shoe: its strings not shared (as its rounds')
                stream.extend(decode_stored(self.mapper, events, share=False))
            else:
                streams.append((stream, len(events)))
                together += events
        decoded = decode_stored(self.mapper, together, defer=wallets)
        at = 0
        for stream, count in streams:
            stream.extend(decoded[at : at + count])
            at += count

    def read_ahead(self, round_ids: Iterable[UUID]) -> None:
        """Read the rounds ``round_ids`` (not boundless ones: :meth:`round_bundle` reads those
        its own way), and bring their shoes and their players' wallets up to date, with a few
        queries of many streams each; until the next call, :meth:`round_bundle` of those
        rounds and :meth:`stream` of those shoes and wallets make no query. With no rounds (or
        a store that cannot), it only forgets what the previous call read."""
        self._ahead = {}
        self._ahead_players = {}
        self._ahead_shoes = {}
        self._current = set()
        ids = list(dict.fromkeys(round_ids))
        if self.log is not None:  # their legacy seals, if any: one query, not one a round
            self.log.hold_seals(ids, self._select_many)
        found = self._select_many(ids, records=True) if ids else None
        if found is None:
            return
        streams: dict[UUID, None] = {}
        shoes: set[UUID] = set()
        for rid, stored in found.items():
            if stored and stored[0].topic == SHARED_STARTED_TOPIC:
                continue
            decoded = decode_stored(self.mapper, stored, share=False)
            self._ahead[rid] = decoded
            b = RoundBundle(rid, decoded)
            shoe = self._ahead_shoes[rid] = b.named_shoe()  # the bundle read next asks too
            if shoe is not None:
                streams.setdefault(shoe)
                shoes.add(shoe)
            for player in b.players():
                streams.setdefault(wallet_id(player))
            self._ahead_players[rid] = b._players  # the bundle of the round, read next, asks
        wanted = list(streams)
        known = [i for i in wanted if i in self._streams]
        self._read_new(wanted, shoes)
        tails = self._select_many(known, after=[self._streams[i].last for i in known], records=True)
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
        records: bool = False,
    ) -> dict[UUID, list[Any]] | None:
        """Every stored event of the streams ``ids`` (each in version order; with ``after``,
        only those after ``after[i]`` for ``ids[i]``), read ``MANY`` streams a query, from
        the events or ``recorder``'s table; None when the store is neither SQLite nor
        PostgreSQL. ``records``, for a store that neither encrypts nor compresses: each row
        made the ``Record`` :func:`decode_stored` would make of it (:func:`plain_record`, its
        topic one string a topic), with no ``StoredEvent`` in between (the read ahead of a
        batch's rounds, shoes and wallets: every record a verification reads)."""
        rows = self.rows.many(
            ids,
            "originator_version, topic, state",
            " ORDER BY originator_id, originator_version",
            after=after,
            recorder=recorder,
        )
        if rows is None:
            return None
        found: dict[UUID, list[Any]] = {i: [] for i in ids}
        if records and self.mapper.cipher is None and self.mapper.compressor is None:
            topics: dict[str, str] = {}
            # a stream's rows come one after the other, sharing its id object: its list is
            # looked up once for them (a ``UUID`` hashes in Python)
            last: UUID | None = None
            into: list[Any] = []
            for oid, (_, version, topic, state) in rows:
                if oid is not last:
                    last, into = oid, found[oid]
                into.append(
                    plain_record(
                        oid, int(version), topics.setdefault(topic, topic), stored_bytes(state)
                    )
                )
            return found
        for oid, (_, version, topic, state) in rows:
            found[oid].append(stored_event(oid, version, topic, stored_bytes(state)))
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
        rows = self.rows.many(ids, "MAX(originator_version)", " GROUP BY originator_id")
        if rows is None:
            return None
        return {oid: int(row[1]) for oid, row in rows}

    def round_bundle(self, round_id: UUID, *, digest: bool = False) -> RoundBundle:
        """The round's evidence. ``digest`` (the verifier's, for a boundless round it verifies
        at once): the round's records decoded on reading keep the SHA-256 of their stored
        bytes instead of the bytes (:class:`Digested`), unless the round has a legacy
        per-round seal (whose chain hashes the bytes) or the reader has no log (no commit
        check to read the digest)."""
        seal = self.log.seal_of(round_id) if self.log is not None else None
        ahead = self._ahead.pop(round_id, None)
        first = [] if ahead is not None else self.app.recorder.select_events(round_id, limit=1)
        if ahead is not None:
            merged = ahead
        elif first and first[0].topic == SHARED_STARTED_TOPIC:
            streams = list(seal.streams) if seal is not None else []
            if self.log is not None:
                streams += self.log.participations_of(round_id)
            digest = digest and self.log is not None and not (seal and seal.leaf_bytes)
            merged = self.shared_log(round_id, streams, defer=self.defer, digest=digest)
        else:
            merged = self.decoded(round_id)
            digest = False  # only a boundless round's records and movements are digested
        b = RoundBundle(round_id, merged, transcoder=transcoder_name(self.mapper))
        b._players = self._ahead_players.pop(round_id, None)
        if ahead is None:
            b.deferring = any(d.deferred for d in merged)
            b.shoe_id = b.named_shoe()
        else:  # read ahead: decoded, none deferred; its shoe found then, from the same records
            b.shoe_id = self._ahead_shoes.pop(round_id)
        rid = b.round_text
        if b.shoe_id is not None:
            shoe = self._fresh(b.shoe_id)
            b.shoe = list(shoe.decoded)
            b.cards = list(shoe.cards.get(rid, ()))
        players = b.players()
        if digest:  # the verifier's digesting read of a boundless round
            b.money = self._round_money(rid, [wallet_id(p) for p in players])
            b.money_digested = True
        else:
            self._read_new([wallet_id(p) for p in players])
            for player in players:
                b.money.extend(self._fresh(wallet_id(player)).by_round.get(rid, []))
        b.seal = seal
        if self.log is not None:
            b.evidence = self.log.evidence(b, self, self.policy)
        return b

    def _round_money(self, rid: str, ids: list[UUID]) -> list[Decoded]:
        """The round ``rid``'s movements in the wallets ``ids`` (a boundless round's players',
        for the verifier's digesting read), in the order :meth:`round_bundle` gives them
        (wallet by wallet, each in version order), each kept by its bytes' digest
        (:func:`_digest_movements`). The wallets this reader does not keep yet are read
        ``MANY`` a query and **not kept**: of each, only the round's movements are held (a
        boundless round's thousands of wallets, their openings, deposits and decoded
        movements, were held by the reader to the verdict and beyond; a later round naming
        one reads it again). Those it keeps give theirs from its streams; a store that cannot
        read many streams at once reads each as :meth:`_fresh` does, and keeps it."""
        out: list[Decoded] = []
        wallets = unmoving if self.defer else None
        for at in range(0, len(ids), MANY):
            chunk = ids[at : at + MANY]
            new = [i for i in chunk if i not in self._streams]
            found = self._select_many(new, records=True) if new else None
            read: dict[UUID, _Stream] = {}
            if found:
                # decoded by one call a query, as ``_read_new`` decodes them
                together: list[Any] = []
                for events in found.values():
                    together += events
                decoded = decode_stored(self.mapper, together, defer=wallets)
                del together
                start = 0
                for oid, events in found.items():
                    stream = read[oid] = _Stream()  # its round-linked movements found by it
                    stream.extend(decoded[start : start + len(events)])
                    start += len(events)
            moved: list[Decoded] = []
            for oid in chunk:
                stream = read.get(oid) or self._fresh(oid)
                moved += stream.by_round.get(rid, ())
            _digest_movements(moved)  # the chunk's bytes let go before the next is read
            out += moved
        return out

    def wallet_stream(self, player: str) -> list[Decoded]:
        return self._fresh(wallet_id(player)).decoded

    def shared_log(
        self,
        round_id: UUID,
        streams: Iterable[UUID] = (),
        *,
        defer: bool = False,
        digest: bool = False,
    ) -> list[Decoded]:
        """A boundless round's records, merged in commit order: the shared hand's and those of
        every participation (found by their ``Participation.Joined`` naming the round, or named
        by the round's seal), followed by any record of those streams committed after the
        round's last event (which verification then reports).

        On SQLite and PostgreSQL the round is read by its own streams (:meth:`_by_streams`),
        reading no other round's records; other stores scan the log
        (``RoundIndex.round_notifications``). Both give the same records in the same order.
        ``defer``: the records of a :func:`deferrable` topic are :class:`Deferred`; ``digest``:
        the others keep their bytes' digest instead of the bytes (:class:`Digested`)."""
        mine: dict[UUID, None] = dict.fromkeys([round_id, *streams])
        read = self._by_streams(round_id, mine)
        merged, joined = (self._scanned(round_id, mine), None) if read is None else read
        out = decode_stored(
            self.mapper,
            _handed_over(merged) if digest else merged,
            defer=deferrable if defer else None,
            digest=digest,
            decoded=joined,
        )
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

    def _by_streams(
        self, round_id: UUID, mine: dict[UUID, None]
    ) -> tuple[list[StoredEvent], dict[UUID, tuple[StoredEvent, Any]]] | None:
        """:meth:`shared_log`'s records read by the round's streams, the same records in the
        same order as :meth:`_scanned`; None when the store is neither SQLite nor PostgreSQL:
        the round's records (``RoundIndex.read_by_streams``, the service's round log's read
        too), then each stream's records after the last version among them, stream by stream
        (the shared hand first, then by id), as the scan appends them; with them, the
        ``Participation.Joined`` rows the read decoded to find the round's participations
        (``RoundRead.joined``: :func:`decode_stored` takes their events)."""
        read = self.app.boundless.read_by_streams(round_id, mine, self.rows)
        if read is None:
            return None
        return read.records + read.later(mine), read.joined


__all__ = [
    "FINISHING",
    "MONEY_EVENTS",
    "SHARED_STARTED_TOPIC",
    "STARTS",
    "CommitEvidence",
    "Decoded",
    "Deferred",
    "Digested",
    "DroppedState",
    "RoundBundle",
    "Seal",
    "StoreReader",
    "Undecodable",
    "decode",
    "decode_stored",
    "deferrable",
    "kind_of",
    "originator_uuid",
    "payload_json",
    "plain_record",
    "plaintext",
    "real",
    "stored_digest",
    "stored_sha256",
    "to_record",
    "transcoder_name",
    "unmoving",
    "wallet_id",
]

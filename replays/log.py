"""The store's Merkle log: one leaf per transaction, C2SP checkpoints, proofs, legacy seals.

This module owns reading the log (its leaves are written **at commit** by the recorder, see
``domain.commit_leaf``: every transaction that records events appends one leaf committing to
the exact stored bytes of each of its events), the checkpoints stored beside the leaves, the
location of any stored event in the log, and the proof documents. Signing checkpoints is
``replays.signer``'s, the C2SP text formats ``replays.note``'s, the tree ``replays.merkle``'s.

**Where it lives.** The commit table ``merkle_log`` of the application (``stored_merkle_log``
on SQLite, ``roundaudit_merkle_log`` on PostgreSQL, in memory for the in-memory store), one
append-only table keyed by (originator id, version). Rows:

* leaves: originator ``LEAVES_ID``, version ``i + 1`` for leaf ``i``; topic
  ``roundaudit:merkle-leaf/v2`` for the leaf of a transaction (or of a backfill) and
  ``roundaudit:merkle-leaf`` for a round leaf of the per-round seal this log used before
  seal-at-commit (``replays.chain``; such leaves stay in the tree and keep verifying);
* checkpoints: originator ``CHECKPOINTS_ID``, version = checkpoint number; topic
  ``roundaudit:checkpoint/c2sp``, state = canonical JSON ``{"note": <the checkpoint as a C2SP
  signed note, with the operator's signature and the witnesses' cosignatures>, "signed_at":
  <ISO time>, "witnesses": {<name>: <outcome>}}``; older rows (topic ``roundaudit:checkpoint``)
  hold the signed tree heads of the per-round seal, still checked with their own format;
* legacy seal rows of the per-round seal (originator ``seal_id(round)``), read for the rounds
  sealed that way;
* the tree's interior nodes the signer stores with each checkpoint (``replays.nodes``, its
  own streams), written in the checkpoint's transaction.

**The signer's read.** The signer needs the tree, not the entries: :class:`TreeLog` reads the
leaf rows a page at a time and hashes them, nothing parsed, indexed or kept (the same tree).

**Location.** :meth:`MerkleLog.locate` gives the leaf of any stored event from an index built
as the leaves are read: per stream, the leaf index of each version (a few bytes per event).
A log read whole (a verifier without state) reads every leaf row by one query of plain
tuples (the leaves' range of the table's primary key, in its order: ``StreamRows.after``),
hashes them into the tree together (``MerkleTree.extend``, a level at a time), parses the
leaves together (``domain.commit_leaf.parse_leaves``: those kept parsed found under one lock)
and indexes each leaf a run of a stream's consecutive versions at a time
(``ParsedLeaf.runs``, made once a parsed leaf; no entry tuple made for a leaf that no round's
check reads), a large leaf an entry at a time from its columns instead (``ParsedLeaf.located``:
its runs not made and kept, the commit check makes those of its round's leaves), with the
collector held off (``python -m benchmarks.log_read`` measures it).
No leaf's text is kept: a small cache of recent leaves holds the parse of the very text
hashed into the tree (and the parsed leaves are kept by their tree hash,
``domain.commit_leaf``), a leaf's text is read again from the table when asked
(:meth:`MerkleLog.leaf`: proofs, seals, exports), and each leaf a round's evidence reads again
is compared with the hash in the tree (a leaf rewritten since is reported in the round's
evidence). A verifier that keeps its own state of the log
(``replays.logstate``) reads the tree and that index from its state and only the log's new
leaves from the store, instead of every leaf.
"""

from __future__ import annotations

import base64
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import sha256
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

import orjson
from eventsourcing.persistence import AggregateRecorder, IntegrityError, StoredEvent
from eventsourcing.utils import get_topic

from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.boundless.streams import StreamRows, stored_bytes
from domain.collector import paused
from domain.commit_leaf import (
    COMMIT,
    LEAF_TOPIC,
    LEAVES_ID,
    PURPOSE,
    ROUND_LEAF_TOPIC,
    LeafEntry,
    LeafFormatError,
    ParsedLeaf,
    kept_first,
    kept_parsed,
    parse_leaf,
    parse_leaves,
)
from domain.ids import stable_id
from domain.round import Round
from replays.bundle import CommitEvidence, RoundBundle, Seal
from replays.chain import Record, canonical, leaf_data
from replays.merkle import (
    Checkpoint,
    MerkleTree,
    checkpoint_signature_ok,
    hexes,
    leaf_hash,
    leaf_hashes,
    verify_consistency,
)
from replays.note import (
    Note,
    NoteError,
    NoteKey,
    cosignature_time,
    parse_checkpoint,
    parse_note,
    verify,
)

if TYPE_CHECKING:
    from domain.application import RoundAudit

CHECKPOINTS_ID: Final = stable_id("merkle-log", "checkpoints")
CHECKPOINT_TOPIC: Final = "roundaudit:checkpoint/c2sp"
LEGACY_CHECKPOINT_TOPIC: Final = "roundaudit:checkpoint"
SEAL_TOPIC: Final = "roundaudit:merkle-seal"
#: The log's name in its checkpoints when a deployment sets none (development only).
DEFAULT_ORIGIN: Final = "roundaudit.invalid/development"
PROOF_TYPE: Final = "roundaudit-proof/v2"
CONSISTENCY_TYPE: Final = "roundaudit-consistency-proof/v2"
#: The first record of a round (a ``Round``, or a boundless ``SharedHand``).
ROUND_STARTED_TOPICS: Final = frozenset({get_topic(Round.Started), get_topic(SharedHand.Started)})
#: Topics of a participation's events (a boundless round's per-player stream).
PARTICIPATION_TOPIC_PREFIX: Final = f"{Participation.__module__}:Participation."
#: Leaves kept in memory (recently read; a round's evidence names its shoe's leaves too, a few
#: hundred for a long-lived shoe: a smaller cache re-read them one query each, round after round).
_CACHE = 4096
#: ... and at most this many bytes of them (a boundless round's leaves can be large).
_CACHE_BYTES = 16 << 20
#: Leaves read by one query (:meth:`MerkleLog.read_leaves`), and the widest gap between two
#: wanted leaves that one query still reads across (the leaves between are read too).
_LEAF_RUN = 1000
_LEAF_GAP = 32
#: ... and, judged by the size of the leaves read so far (at first, of those in the cache), at
#: most about this many bytes of them: a boundless round's leaves are hundreds of kilobytes
#: each, and its hundred-odd leaves read by one query were all held at once (about 23 MiB at
#: 10,000 players, the verification's peak) before each was kept or let go.
_RUN_BYTES = 4 << 20
#: Leaves a read parses together (``parse_leaves``) before indexing them: what it holds parsed
#: at once, beyond the leaves kept parsed (a whole log's read is tens of thousands of leaves).
_PARSE_RUN = 512
#: A leaf whose notification ids span at most this many (a transaction's are consecutive: at
#: most this many entries) is indexed from its runs (``ParsedLeaf.runs``, made and kept with
#: the leaf: a transaction's leaf of a classic round, about 2 runs of 7 entries); a larger one
#: (a boundless round's) entry by entry, its runs not made (:meth:`MerkleLog._index_entries`).
_RUNS_MAX = 64
#: A version no leaf read so far commits to, in a stream's index.
_UNSEEN = array("q", [-1])


def _gone(index: int) -> str:
    """What is wrong with leaf ``index`` when its row is not in the table."""
    return f"leaf {index} is no longer in the table"


#: The span of notification ids of a leaf that lists none.
_NO_SPAN: Final = (-1, -1)

__all__ = [
    "CHECKPOINTS_ID",
    "CHECKPOINT_TOPIC",
    "CONSISTENCY_TYPE",
    "DEFAULT_ORIGIN",
    "LEAVES_ID",
    "PROOF_TYPE",
    "PURPOSE",
    "LogError",
    "MerkleLog",
    "StoredCheckpoint",
    "TrustPolicy",
    "WitnessKey",
    "consistency_document",
    "make_policy",
    "observed_leaf",
    "parse_witness",
    "proof_document",
    "round_proof_document",
    "seal_id",
    "tlog_proof",
]


def seal_id(round_id: UUID) -> UUID:
    """The legacy seal row of a round sealed by the per-round seal."""
    return stable_id("merkle-seal", round_id.hex)


class LogError(RuntimeError):
    """The log cannot do or prove what was asked (the message says why)."""


# ------------------------------------------------------------------------------ trust
@dataclass(frozen=True)
class WitnessKey:
    """A witness the verifier trusts: its cosignature key, and where it answers (optional)."""

    key: NoteKey  # signature type 0x04
    url: str | None = None

    @property
    def name(self) -> str:
        return self.key.name


@dataclass(frozen=True)
class TrustPolicy:
    """What a verifier pins: the operator's key (and the log's origin, its key name), and the
    witnesses with the quorum of cosignatures that makes a checkpoint final."""

    operator: NoteKey | None = None  # signature type 0x01, named like the origin
    witnesses: tuple[WitnessKey, ...] = ()
    quorum: int = 0
    #: The origin the operator key is pinned under when given as a raw key (None: each
    #: checkpoint's own origin line names the key).
    origin: str | None = None

    def operator_for(self, origin: str) -> NoteKey | None:
        if self.operator is None:
            return None
        if self.origin is None and self.operator.name != origin:
            return NoteKey(origin, self.operator.sig_type, self.operator.public)
        return self.operator

    def cosigners(self, cp: StoredCheckpoint) -> list[str]:
        """The witnesses whose valid cosignature the checkpoint carries."""
        if cp.note is None:
            return []
        return [w.name for w in self.witnesses if verify(cp.note, w.key) == "valid"]

    def bad_cosigners(self, cp: StoredCheckpoint) -> list[str]:
        if cp.note is None:
            return []
        return [w.name for w in self.witnesses if verify(cp.note, w.key) == "invalid"]

    def final(self, cp: StoredCheckpoint) -> bool:
        """A checkpoint is final when a quorum of the trusted witnesses cosigned it (with no
        witness policy, nothing is final)."""
        return bool(self.witnesses) and len(self.cosigners(cp)) >= max(1, self.quorum)


def parse_witness(text: str) -> WitnessKey:
    """A trusted witness as settings give it: its cosignature vkey, optionally followed by
    ``@`` and the URL it answers at (``name+id+key@http://host:port``)."""
    from replays.note import COSIGNATURE_V1, parse_vkey

    vkey, url = text.strip(), None
    for scheme in ("@http://", "@https://"):
        if scheme in vkey:
            vkey, _, rest = vkey.partition(scheme)
            url = scheme[1:] + rest
    key = parse_vkey(vkey)
    if key.sig_type != COSIGNATURE_V1:
        raise NoteError(f"{vkey!r} is not a witness's key (cosignature type 0x04)")
    return WitnessKey(key, url)


def make_policy(
    operator: NoteKey | None,
    *,
    origin: str | None = None,
    witnesses: Sequence[WitnessKey] = (),
    quorum: int | None = None,
) -> TrustPolicy:
    """A trust policy, checked: the quorum is 1..len(witnesses) (default: all of them)."""
    quorum = len(witnesses) if quorum is None else quorum
    if witnesses and not 1 <= quorum <= len(witnesses):
        raise ValueError(f"quorum {quorum}: 1 to the {len(witnesses)} witness(es) given")
    if not witnesses and quorum:
        raise ValueError("a quorum without any witness")
    if operator is not None and origin is not None and operator.name != origin:
        operator = NoteKey(origin, operator.sig_type, operator.public)
    return TrustPolicy(operator, tuple(witnesses), quorum, origin)


# ------------------------------------------------------------------------------ checkpoints
@dataclass
class StoredCheckpoint:
    """A checkpoint row: a C2SP signed note (``note``) or a legacy signed tree head."""

    number: int
    origin: str
    size: int
    root: bytes
    note: Note | None = None
    legacy: Checkpoint | None = None
    signed_at: str = ""
    witnesses: dict[str, str] = field(default_factory=dict)
    error: str | None = None  # the row does not parse

    @property
    def root_b64(self) -> str:
        return base64.b64encode(self.root).decode()

    @property
    def text(self) -> str:
        return self.note.encode().decode() if self.note is not None else ""

    def signed_by(self, policy: TrustPolicy) -> str:
        """``valid``, ``invalid`` or ``absent`` for the pinned operator key (``unchecked``
        when none is pinned)."""
        if policy.operator is None:
            return "unchecked"
        if self.legacy is not None:
            ok = checkpoint_signature_ok(self.legacy, policy.operator.ed25519())
            return "valid" if ok else "invalid"
        if self.note is None:
            return "invalid"
        key = policy.operator_for(self.origin)
        assert key is not None
        return verify(self.note, key)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "number": self.number,
            "origin": self.origin,
            "size": self.size,
            "root": self.root_b64,
            "signed_at": self.signed_at,
        }
        if self.note is not None:
            out["format"] = "c2sp"
            out["note"] = self.text
            out["cosignatures"] = [
                {"name": s.name, "time": cosignature_time(s)}
                for s in self.note.signatures[1:]
                if len(s.signature) == 72
            ]
        elif self.legacy is not None:
            out["format"] = "roundaudit-merkle-log-v1"
            out["legacy"] = self.legacy.as_json()
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_note(cls, number: int, note: Note, signed_at: str = "") -> StoredCheckpoint:
        body = parse_checkpoint(note.text)
        return cls(number, body.origin, body.size, body.root, note=note, signed_at=signed_at)


def checkpoint_row(s: StoredEvent) -> StoredCheckpoint:
    number = int(s.originator_version)
    try:
        data = orjson.loads(s.state)
        if s.topic == LEGACY_CHECKPOINT_TOPIC:
            data["number"] = number
            legacy = Checkpoint.from_json(data)
            root = bytes.fromhex(legacy.root)
            return StoredCheckpoint(
                number, legacy.origin, legacy.size, root, legacy=legacy, signed_at=legacy.timestamp
            )
        cp = StoredCheckpoint.from_note(
            number, parse_note(str(data["note"])), str(data.get("signed_at", ""))
        )
        cp.witnesses = {str(k): str(v) for k, v in dict(data.get("witnesses", {})).items()}
        return cp
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, NoteError) as exc:
        return StoredCheckpoint(number, "", -1, b"", error=f"unreadable checkpoint row ({exc})")


def checkpoint_event(
    number: int, note: Note, signed_at: str, witnesses: dict[str, str] | None = None
) -> StoredEvent:
    """The stored row of checkpoint #``number`` (see the module docstring)."""
    row = {"note": note.encode().decode(), "signed_at": signed_at, "witnesses": witnesses or {}}
    return StoredEvent(CHECKPOINTS_ID, number, CHECKPOINT_TOPIC, canonical(row))


def checkpoint_digest(state: bytes) -> bytes:
    """What a verifier's state keeps of a checkpoint row it checked: the SHA-256 of the row's
    stored bytes (the signed note with its cosignatures, when it was signed, the witnesses'
    outcomes)."""
    return sha256(state).digest()


@dataclass(frozen=True)
class KeptCheckpoint:
    """The last checkpoint a verifier's state checked: its number, size and root (the kept
    tree's at that size), origin, and the largest final size among those it checked."""

    number: int
    size: int
    root: bytes
    origin: str | None
    final_size: int | None


def check_checkpoints(
    log: MerkleLog,
    policy: TrustPolicy,
    cps: Iterable[StoredCheckpoint],
    *,
    previous: StoredCheckpoint | KeptCheckpoint | None = None,
    origin: str | None = None,
) -> Iterator[tuple[StoredCheckpoint, list[tuple[str, str]]]]:
    """Each checkpoint of ``cps`` (in number order, after ``previous``) with what is wrong
    with it as (check, message): unreadable, not signed by the pinned operator key, of
    another origin, a witness's cosignature that fails, larger than the log (a rollback), not
    the root of the log's tree at its size, a number that does not follow the previous one's,
    smaller than or inconsistent with the previous one."""
    origin = policy.origin or origin
    number = previous.number if previous is not None else None
    for cp in cps:
        out: list[tuple[str, str]] = []
        if number is not None and cp.number <= number:
            out.append(("consistency", f"its number repeats or goes back after #{number}"))
        elif number is not None and cp.number > number + 1:
            out.append(("rollback", f"checkpoint #{number + 1} before it was deleted"))
        number = cp.number
        if cp.error is not None:
            yield cp, [*out, ("signature", cp.error)]
            continue
        if policy.operator is not None:
            signed = cp.signed_by(policy)
            if signed != "valid":
                why = "a signature fails" if signed == "invalid" else "no signature of it"
                out.append(("signature", f"not signed by the pinned operator key ({why})"))
        if cp.note is not None:
            if origin is None:
                origin = cp.origin
            elif cp.origin != origin:
                out.append(("signature", f"origin {cp.origin!r} is not the log's {origin!r}"))
            for name in policy.bad_cosigners(cp):
                out.append(("witness", f"the cosignature of witness {name} fails"))
        if cp.size > log.size:
            out.append(
                (
                    "rollback",
                    f"it covers {cp.size} leaves; the log holds {log.size}: "
                    "leaves were removed after it was signed",
                )
            )
        elif log.tree.root(cp.size) != cp.root:
            out.append(
                (
                    "consistency",
                    f"its root {cp.root_b64} is not the root of the "
                    f"stored leaves at size {cp.size}: the log was rewritten",
                )
            )
        if previous is not None and cp.size < previous.size:
            out.append(("consistency", f"it is smaller than #{previous.number}"))
        elif previous is not None and cp.size <= log.size:
            proof = log.tree.consistency_proof(previous.size, cp.size)
            if not verify_consistency(previous.size, cp.size, previous.root, cp.root, proof):
                out.append(("consistency", f"not consistent with #{previous.number}"))
        previous = cp
        yield cp, out


# ------------------------------------------------------------------------------ the log
def _located(versions: Sequence[int] | None, version: int) -> int | None:
    """The leaf that commits to ``version`` of a stream whose leaves by version (the log's
    index: -1 where no leaf) are ``versions`` (None: no leaf commits to the stream)."""
    if versions is None or not 0 < version <= len(versions):
        return None
    found = versions[version - 1]
    return None if found < 0 else found


class MerkleLog:
    """The log of one store (see the module docstring)."""

    def __init__(self, app: RoundAudit) -> None:
        self.app = app
        self.table: AggregateRecorder = app.commit_table(PURPOSE)
        #: Seal records read ahead by :meth:`hold_seals`, by round.
        self._held_seals: dict[UUID, list[StoredEvent]] = {}
        self.tree = MerkleTree()
        #: Per leaf: ``commit``, ``backfill``, ``round`` (a legacy round leaf) or ``other``
        #: (a row of an unknown topic or that does not parse: reported by verification).
        self.kinds: list[str] = []
        self._where: dict[UUID, array[int]] = {}
        self._round_leaf: dict[UUID, int] = {}
        self._rounds: dict[UUID, None] = {}
        self._spans: list[tuple[int, int]] = []  # per leaf: first and last notification id
        #: the cache of recent leaves: per leaf index, the parse of the very text whose hash
        #: is the tree's leaf (hashed into it by the read, or checked against it since), no
        #: text; bounded by the count and by the length of those texts (``ParsedLeaf.size``)
        self._cache: OrderedDict[int, ParsedLeaf] = OrderedDict()
        self._cached_bytes = 0
        self._checkpoints: list[StoredCheckpoint] | None = None
        #: What is wrong with the log as a whole, found while reading it against what a
        #: verifier kept of it (``replays.logstate``): (check, position, message). Every
        #: round's evidence carries them, so no round passes on such a log.
        self.findings: list[tuple[str, str, str]] = []
        # One log may serve several threads (the web service keeps one per process): it only
        # grows, under this lock; readers read what is there.
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------ leaves
    def refresh(self) -> MerkleLog:
        """Read the leaves appended since the last read (one query), and add them at once
        (:meth:`_add_many`). No automatic garbage collection meanwhile (``domain.collector``):
        a whole log's read makes a few objects a leaf, none in a cycle, and the collections its
        allocations set off walked all of them again and again (about 15 % of the read of
        20,000 leaves)."""
        with self._lock, paused():
            self._add_many(self._new_leaves(self.size))
            self._checkpoints = None
        return self

    def plain(self) -> MerkleLog:
        """This log as a plain :class:`MerkleLog`, one a pickle takes (a fan-out's driver ships
        it: ``replays.distributed.log_state``): itself when it is one; a log read through a
        verifier's state (``replays.logstate.StatefulLog``: its file's views and locks) read
        again from the store, up to its size, its findings carried. Where the leaves read again
        are not this log's (another size or root: the store changed under the run), that is a
        finding of the copy, so no round passes on it."""
        if type(self) is MerkleLog:
            return self
        copy = MerkleLog(self.app)
        size = self.size
        with copy._lock, paused():
            copy._add_many(copy._new_leaves(0, limit=size))
        copy.findings = list(self.findings)
        if copy.size != size or (size and copy.tree.root() != self.tree.root()):
            copy.findings.append(
                (
                    "fork",
                    f"leaf {min(copy.size, size)}",
                    f"the store's log read again has {copy.size} leaves (root "
                    f"{copy.tree.root().hex() if copy.size else '-'}), the verifier's "
                    f"{size} (root {self.tree.root().hex()}): it changed during the run",
                )
            )
        return copy

    def _new_leaves(self, after: int, limit: int | None = None) -> list[tuple[str, bytes]]:
        """The leaves after the first ``after`` (the first ``limit`` of them), as (topic,
        bytes), up to a gap: a leaf row deleted ends the read there."""
        leaves: list[tuple[str, bytes]] = []
        for version, topic, state in self._leaf_rows(after, limit):
            if version != after + len(leaves) + 1:  # a gap: a row was deleted
                break
            leaves.append((topic, state))
        return leaves

    def _leaf_rows(self, after: int, limit: int | None) -> Iterable[tuple[int, str, bytes]]:
        """The leaf rows after the first ``after`` leaves (the first ``limit`` of them), as
        (version, topic, bytes), in version order: by one query of plain tuples on SQLite and
        PostgreSQL (a range of the table's primary key, read in its order; PostgreSQL's rows
        in its binary format; no ``UUID`` or stored event built a row), else the recorder's
        own read."""
        columns = "originator_version, topic, state"
        rows = StreamRows(self.table).after(LEAVES_ID, columns, after, limit=limit)
        if rows is None:  # the in-memory store
            return (
                (s.originator_version, s.topic, bytes(s.state))
                for s in self.table.select_events(LEAVES_ID, gt=after, limit=limit)
            )
        return ((version, topic, stored_bytes(state)) for version, topic, state in rows)

    def _add(self, topic: str, data: bytes) -> None:
        """Add one leaf (:meth:`_add_many` of it alone)."""
        self._add_many([(topic, data)])

    def _add_many(self, rows: Sequence[tuple[str, bytes]]) -> None:
        """Add the leaves ``rows`` (topic, bytes) after the log's last one: hashed into the
        tree together (``MerkleTree.extend``: each level's new nodes in one pass), the
        transactions' leaves parsed :data:`_PARSE_RUN` at a time (``parse_leaves``: those kept
        parsed by their tree hashes, found under one lock) and each indexed, and each parse put
        in the cache of recent leaves (as :meth:`_remember`: the oldest dropped beyond its
        bounds; no text is kept)."""
        if not rows:
            return
        base = len(self.kinds)
        datas = [data for _, data in rows]
        hashes = leaf_hashes(datas)
        self.tree.extend(hashes)
        kinds, spans, round_leaf, rounds = self.kinds, self._spans, self._round_leaf, self._rounds
        index_all = self._index_all
        cache = self._cache
        parsed_leaves: Iterator[ParsedLeaf | None] = iter(())
        for index, (topic, data) in enumerate(rows, start=base):
            at = index - base
            if at % _PARSE_RUN == 0:  # the next leaves parsed (a bounded number held)
                ahead = range(at, min(at + _PARSE_RUN, len(rows)))
                wanted = [i for i in ahead if rows[i][0] == LEAF_TOPIC]
                parsed_leaves = iter(
                    parse_leaves([datas[i] for i in wanted], [hashes[i] for i in wanted])
                )
            kind, span = "other", _NO_SPAN
            if topic == LEAF_TOPIC:
                parsed = next(parsed_leaves)
                if parsed is not None:
                    # kept in the cache (new: after every leaf it holds), the oldest dropped
                    cache[index] = parsed
                    self._cached_bytes += parsed.size
                    if len(cache) > _CACHE or self._cached_bytes > _CACHE_BYTES:
                        self._trim()
                    kind = parsed.kind
                    first_last = parsed.span()
                    if first_last is not None:
                        index_all(parsed, index, first_last)
                        span = first_last
            elif topic == ROUND_LEAF_TOPIC:
                kind = "round"
                try:
                    rid = UUID(orjson.loads(data)["round_id"])
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    kind = "other"
                else:
                    round_leaf[rid] = index
                    rounds.setdefault(rid)
            kinds.append(kind)
            spans.append(span)

    def _index_all(self, leaf: ParsedLeaf, index: int, span: tuple[int, int]) -> None:
        """Index the entries of leaf ``index``, whose first and last notification ids are
        ``span`` (``ParsedLeaf.span``): per stream, the first leaf committing to each version
        (a version no leaf commits to: -1), and the rounds the leaf starts. A leaf whose span
        is at most :data:`_RUNS_MAX` ids (a transaction's ids are consecutive: its entries) a
        run at a time, here; a larger one an entry at a time (:meth:`_index_entries`), which
        makes no run. The choice from the span the log's read has found anyway, and the runs'
        loop here, not in a method of its own: a classic verification's read of the whole log
        indexes tens of thousands of small leaves, and a leaf's count and a call more cost it
        about 0.5 % of its instructions. Either way the same index (a forged leaf whose ids are
        not consecutive is indexed one way or the other, alike).

        Over the leaf's runs (``ParsedLeaf.runs``: consecutive versions of one stream, made
        once a parsed leaf, about 2 a transaction's leaf of 7 entries): a stream's index is
        looked up once a run, and a run that continues it (the usual case: each version's
        first leaf is read in order) is appended at once; any other run is indexed version by
        version (:meth:`_index_versions`), as each of its entries alone would be."""
        if span[1] - span[0] >= _RUNS_MAX:
            self._index_entries(leaf, index)
            return
        where, get, started = self._where, self._where.get, ROUND_STARTED_TOPICS
        for oid, first, count, topic in leaf.runs():
            versions = get(oid)
            if versions is None:
                versions = where[oid] = array("q")
            have = len(versions)
            if have == first - 1:  # the next versions: appended
                if count == 1:
                    versions.append(index)
                else:
                    versions.extend(repeat(index, count))
            else:
                self._index_versions(versions, first, count, index)
            if first == 1 and topic in started:
                self._rounds.setdefault(oid)

    def _index_entries(self, leaf: ParsedLeaf, index: int) -> None:
        """:meth:`_index_all` over the leaf's entries from its columns
        (``ParsedLeaf.located``), without making its runs: a stream's index is looked up once
        for each run of its entries, an entry that continues it is appended, any other is
        indexed as :meth:`_index_versions` says, an entry whose version is below 1 (no stored
        record has one: only a forged line) is not indexed. For the large leaves (a boundless
        round's transactions list hundreds of participations' records): their runs, made and
        kept with the leaf by the log's read, were held by a verifier from that read to its
        commit check, under the whole verification (about 3.5 MiB at 4,000 players, a tuple
        a run); the commit check makes those of its round's leaves itself. A small leaf's
        runs cost little to keep and less to index by (:meth:`_index_all`)."""
        where, started, rounds = self._where, ROUND_STARTED_TOPICS, self._rounds
        last: UUID | None = None
        versions = _UNSEEN
        for oid, version, topic in leaf.located():
            if version < 1:
                continue
            if oid is not last:
                last = oid
                found = where.get(oid)
                if found is None:
                    found = where[oid] = array("q")
                versions = found
            if len(versions) == version - 1:  # the next version: appended
                versions.append(index)
            else:
                self._index_versions(versions, version, 1, index)
            if version == 1 and topic in started:
                rounds.setdefault(oid)

    @staticmethod
    def _index_versions(versions: array[int], first: int, count: int, index: int) -> None:
        """Index versions ``first`` .. ``first + count - 1`` of a stream in leaf ``index``, one
        by one: a version past the stream's index extends it (the versions skipped -1), one
        no leaf committed to yet gets ``index``, one already committed keeps its first leaf."""
        for version in range(first, first + count):
            have = len(versions)
            if have < version:
                if have < version - 1:
                    versions.extend(_UNSEEN * (version - 1 - have))
                versions.append(index)
            elif versions[version - 1] == -1:
                versions[version - 1] = index

    @property
    def size(self) -> int:
        return len(self.kinds)

    def leaf(self, index: int) -> bytes:
        """The bytes of leaf ``index``, read from the table (no leaf's text is kept)."""
        if not 0 <= index < self.size:
            raise LogError(f"the log holds leaves 0..{self.size - 1}, not {index}")
        rows = self.table.select_events(LEAVES_ID, gt=index, lte=index + 1)
        if not rows:
            raise LogError(_gone(index))
        return bytes(rows[0].state)

    def read_leaves(self, indexes: Iterable[int]) -> dict[int, ParsedLeaf | bytes]:
        """Read again the leaves ``indexes`` the cache does not hold, with one query per run
        of nearby missing leaves (``gt``/``lte`` on the leaf table) instead of one query each
        (a round's evidence names tens of leaves), each hashed and compared with the tree's
        leaf: by index, the parse of one whose text hashes to it (kept in the cache, and kept
        parsed by that hash), the text of any other (rewritten since, or not a leaf). A leaf
        no longer in the table is not in the answer. Those kept parsed by their tree hash are
        read first, then the others (each part in index order: ``kept_first``), so none of
        those kept is parsed again, whatever parsing the others pushes out (a boundless
        round's leaves can pass the bound of those kept: ``PARSED_MAX_BYTES``)."""
        asked = indexes if isinstance(indexes, set) else set(indexes)
        cache = self._cache
        out: dict[int, ParsedLeaf | bytes] = {}
        if cache.keys() >= asked:  # every one cached already (a live shoe's, round after round)
            return out
        size = self.size
        tree = self.tree
        missing = sorted(i for i in asked if 0 <= i < size and i not in cache)
        wanted = [i for i, _ in kept_first((i, tree.leaf(i)) for i in missing)]
        at = 0
        # the leaves' bytes read so far, and how many (at first, those of the cache)
        seen, count = self._cached_bytes, len(cache)
        while at < len(wanted):
            run = _LEAF_RUN if not seen else max(1, min(_LEAF_RUN, _RUN_BYTES * count // seen))
            end = at + 1
            while (  # a run ends where the order goes back (where the others start)
                end < len(wanted)
                and 0 < wanted[end] - wanted[end - 1] <= _LEAF_GAP
                and wanted[end] - wanted[at] < run
            ):
                end += 1
            these = set(wanted[at:end])
            for s in self.table.select_events(LEAVES_ID, gt=wanted[at], lte=wanted[end - 1] + 1):
                index = int(s.originator_version) - 1
                seen += len(s.state)
                count += 1
                if index in these:
                    data = bytes(s.state)
                    key = leaf_hash(data)
                    if key == tree.leaf(index):
                        try:
                            parsed = parse_leaf(data, key)
                        except LeafFormatError:
                            out[index] = data
                        else:
                            out[index] = parsed
                            self._remember(index, parsed)
                    else:
                        out[index] = data
            at = end
        return out

    def _remember(self, index: int, parsed: ParsedLeaf) -> None:
        """Keep ``parsed``, the parse of the text whose hash is the tree's leaf ``index``, in
        the cache of recent leaves."""
        old = self._cache.pop(index, None)
        if old is not None:
            self._cached_bytes -= old.size
        self._cache[index] = parsed
        self._cached_bytes += parsed.size
        self._trim()

    def _trim(self) -> None:
        """Drop the oldest leaves of the cache until it is within its bounds (it keeps one at
        least)."""
        cache = self._cache
        while len(cache) > 1 and (len(cache) > _CACHE or self._cached_bytes > _CACHE_BYTES):
            self._cached_bytes -= cache.popitem(last=False)[1].size

    def _parsed_at(self, index: int) -> ParsedLeaf | None:
        """The parse of the text the tree's leaf ``index`` is the hash of, without reading it:
        the cache's, else the one kept parsed by that hash (None: neither holds it)."""
        found = self._cache.get(index)
        if found is not None:
            self._cache.move_to_end(index)
            return found
        return kept_parsed(self.tree.leaf(index))

    def parsed(self, index: int) -> ParsedLeaf | None:
        """The entries of a leaf of a transaction or backfill (None for other leaves): the
        parse of the text hashed into the tree when it is held, else of the text read now."""
        if self.kinds[index] not in ("commit", "backfill"):
            return None
        found = self._parsed_at(index)
        return self._read_parsed(index) if found is None else found

    def _read_parsed(self, index: int) -> ParsedLeaf:
        """The parse of leaf ``index``'s text read now (kept parsed by that text's hash)."""
        data = self.leaf(index)
        return parse_leaf(data, leaf_hash(data))

    def iter_entries(self) -> Iterator[tuple[int, LeafEntry]]:
        """Every event the leaves commit to, in log order, with its leaf index."""
        for index in range(self.size):
            parsed = self.parsed(index)
            if parsed is not None:
                for e in parsed.entries:
                    yield index, e

    def locate(self, originator_id: UUID, version: int) -> int | None:
        """The leaf that commits to an event (None: no leaf does)."""
        return _located(self._where.get(originator_id), version)

    def _holding(self, records: Iterable[Record]) -> set[int]:
        """The leaves that commit to ``records`` (:meth:`locate` of each; a record no leaf
        holds adds none), each stream's index looked up once for a run of its records (a
        round's cards are its shoe's, its movements a few wallets')."""
        out: set[int] = set()
        last: UUID | None = None
        versions = None
        for r in records:
            if r.originator_id is not last:
                last = r.originator_id
                versions = self._where.get(last)
            found = _located(versions, r.version)
            if found is not None:
                out.add(found)
        return out

    def entry(self, originator_id: UUID, version: int) -> tuple[int, LeafEntry] | None:
        index = self.locate(originator_id, version)
        if index is None:
            return None
        parsed = self.parsed(index)
        assert parsed is not None
        for e in parsed.entries:
            if e.key == (originator_id, version):
                return index, e
        return None

    def versions_logged(self, originator_id: UUID) -> int:
        """The highest version of a stream any leaf commits to (0: none)."""
        versions = self._where.get(originator_id)
        if not versions:
            return 0
        for v in range(len(versions), 0, -1):
            if versions[v - 1] >= 0:
                return v
        return 0

    def leaves_of(self, originator_id: UUID) -> set[int]:
        """The leaves that commit to events of a stream."""
        versions = self._where.get(originator_id)
        return {i for i in versions if i >= 0} if versions else set()

    def participations_of(self, round_id: UUID) -> list[UUID]:
        """The participation streams committed in the transactions of a boundless round's
        shared hand (found even when a stream's ``Joined`` is gone from the store). Only
        transaction leaves count: a backfill leaf (a migrated store) lists the records of many
        rounds at once, other rounds' participations among them."""
        out: dict[UUID, None] = {}
        indexes = sorted(i for i in self.leaves_of(round_id) if self.kinds[i] == COMMIT)
        # those held parsed first (neither read nor parsed again), then the others
        parsed: dict[int, ParsedLeaf] = {}
        for index in indexes:
            found = self._parsed_at(index)
            if found is not None:
                parsed[index] = found
        for index in indexes:
            if index not in parsed:
                parsed[index] = self._read_parsed(index)
        for index in indexes:
            # the ids and topics alone (``located``: from the leaf's columns, its entries
            # not made for this)
            for oid, _version, topic in parsed[index].located():
                if topic.startswith(PARTICIPATION_TOPIC_PREFIX):
                    out.setdefault(oid)
        return list(out)

    def evidence(
        self, b: RoundBundle, reader: Any = None, policy: TrustPolicy | None = None
    ) -> CommitEvidence:
        """The leaves committing to a round's records, and one checkpoint proving them: the
        latest final one (under ``policy``) covering the round's own leaves (its streams, its
        cards, its wallet movements), else the latest covering them; the shoe's later leaves
        (a live shoe outlives the round) are proven when that checkpoint covers them too."""
        streams = {b.round_id}
        last = b.round_id  # a round's records share their stream's id object: hashed once
        for d in b.round:
            oid = d.record.originator_id
            if oid is not last:
                streams.add(oid)
                last = oid
        own: set[int] = set()
        for oid in streams:
            own |= self.leaves_of(oid)
        mine = own | self._holding((*(d.record for d in b.money), *b.card_records()))
        shoe = self.leaves_of(b.shoe_id) if b.shoe_id is not None else set()
        ev = CommitEvidence(log_size=self.size)
        cp = self.covering(max(mine), policy) if mine else None  # may add a finding
        ev.problems += [f"the log as a whole: {m} ({check})" for check, _, m in self.findings]
        if not mine:
            return ev
        # the checkpoints a verifier's state already checked matched its tree (every one, on
        # a log read whole): only the others can contradict the round's leaves
        for c in self.unchecked_checkpoints():
            if c.error is None and min(mine) < c.size <= self.size and not self._matches(c):
                ev.problems.append(
                    f"checkpoint #{c.number}, signed when the log held {c.size} leaves, is not "
                    f"the log's tree at that size: leaves up to {c.size - 1} (this round's leaf "
                    f"{min(mine)} among them) were rewritten after it was signed"
                )
        ev.checkpoint = cp
        asked = mine | shoe
        cache, tree_leaf = self._cache, self.tree.leaf
        # the cache's parses taken first: reading the others again may push them out of it
        held = {i: cache[i] for i in asked if i in cache}
        read = self.read_leaves(asked - held.keys()) if len(held) < len(asked) else {}
        ev.read = self.leaf
        for i in sorted(asked):
            parsed = held.get(i)
            if parsed is not None:
                # the parse of the very text hashed into the tree (a live shoe's leaves, in
                # each of its rounds' evidence): given with the tree's hash, nothing read
                if i in cache:
                    cache.move_to_end(i)
                ev.parsed[i] = (tree_leaf(i), parsed)
            else:
                found = read.get(i)
                if found is None:
                    ev.problems.append(f"leaf {i} of this round's records: {_gone(i)} (deleted)")
                    continue
                if isinstance(found, ParsedLeaf):  # read again, hashed to the tree's leaf
                    ev.parsed[i] = (tree_leaf(i), found)
                else:
                    ev.leaves[i] = found
                    problem = self.kept_leaf_problem(i, found)
                    if problem is not None:
                        ev.problems.append(problem)
            if cp is not None and i < cp.size:
                ev.inclusion[i] = self.tree.inclusion_proof(i, cp.size)
        return ev

    def knows_round(self, round_id: UUID) -> bool:
        """Whether a leaf holds a round's first record, or a legacy seal its leaf."""
        return round_id in self._rounds or bool(self.table.select_events(seal_id(round_id)))

    def round_ids(self) -> list[UUID]:
        """Rounds the log knows of (a first record of a round in a leaf, or a legacy leaf)."""
        return list(self._rounds)

    def round_leaf(self, round_id: UUID) -> int | None:
        """The legacy round leaf of a round sealed by the per-round seal."""
        return self._round_leaf.get(round_id)

    def stored_leaf_versions(self) -> list[int]:
        return [s.originator_version for s in self.table.select_events(LEAVES_ID)]

    def missing_leaf_row(self) -> int | None:
        """The first leaf whose row is missing from the table (its rows are not 1..N)."""
        versions = self.stored_leaf_versions()
        if versions == list(range(1, len(versions) + 1)):
            return None
        return next(i for i, v in enumerate(versions, start=1) if v != i) - 1

    def other_leaves(self) -> list[int]:
        """The leaves that are neither a transaction's, a backfill's nor a legacy round leaf."""
        return [i for i, kind in enumerate(self.kinds) if kind == "other"]

    def kept_leaf_problem(self, index: int, data: bytes) -> str | None:
        """Why ``data``, read now as leaf ``index``, is not the leaf this log hashed into its
        tree when it read it (or a verifier kept in its state); None when it is."""
        if leaf_hash(data) == self.tree.leaf(index):
            return None
        return (
            f"leaf {index} read now is not the leaf hashed into the verifier's tree when it "
            "read the log (or kept in its state): rewritten since"
        )

    # ------------------------------------------------------------------------ checkpoints
    def checkpoints(self) -> list[StoredCheckpoint]:
        if self._checkpoints is None:
            self._checkpoints = [
                checkpoint_row(s) for s in self.table.select_events(CHECKPOINTS_ID)
            ]
        return self._checkpoints

    def latest_checkpoint(self) -> StoredCheckpoint | None:
        """The latest readable checkpoint: the last row alone when it reads (the signer asks
        every second; the checkpoints grow with time), else the last readable of all."""
        if self._checkpoints is None:
            last = self.last_checkpoint_row()
            if last is None:
                return None
            cp = checkpoint_row(last)
            if cp.error is None:
                return cp
        cps = [c for c in self.checkpoints() if c.error is None]
        return cps[-1] if cps else None

    def checkpoint(self, number: int) -> StoredCheckpoint:
        """Checkpoint #``number`` (its row's version): the one row alone when the checkpoints
        are not read yet (the proofs and the web service ask for one or two; the checkpoints
        grow with time)."""
        if self._checkpoints is None:
            row = self.checkpoint_row_at(number)
            if row is not None:
                return checkpoint_row(row)
        else:
            for cp in self._checkpoints:
                if cp.number == number:
                    return cp
        raise LogError(f"the log has no checkpoint #{number}")

    def last_checkpoint_number(self) -> int:
        """The highest checkpoint number stored (0 when none): the last row alone."""
        last = self.last_checkpoint_row()
        return 0 if last is None else int(last.originator_version)

    def checkpoint_row_at(self, number: int) -> StoredEvent | None:
        """The stored row of checkpoint #``number`` alone (None when there is none)."""
        rows = self.table.select_events(CHECKPOINTS_ID, gt=number - 1, lte=number)
        return rows[0] if rows else None

    def last_checkpoint_row(self) -> StoredEvent | None:
        """The stored row of the highest checkpoint number alone (None when there is none)."""
        rows = self.table.select_events(CHECKPOINTS_ID, desc=True, limit=1)
        return rows[0] if rows else None

    def covering(
        self, last_leaf: int, policy: TrustPolicy | None = None
    ) -> StoredCheckpoint | None:
        """The checkpoint that proves leaves ``0..last_leaf``: the latest final one (under
        ``policy``) whose tree holds them and matches the log, else the latest such. Of the
        checkpoints a verifier's state already checked (all older than the others), the one
        it needs is looked up in the state and read alone (:meth:`kept_covering`)."""
        fits = [
            c
            for c in self.unchecked_checkpoints()
            if c.error is None and last_leaf < c.size <= self.size and self._matches(c)
        ]
        if policy is not None:
            final = [c for c in fits if policy.final(c)]
            if final:
                return final[-1]
            kept = self.kept_covering(last_leaf, policy) if policy.witnesses else None
            if kept is not None:
                return kept
        return fits[-1] if fits else self.kept_covering(last_leaf, None)

    def unchecked_checkpoints(self) -> list[StoredCheckpoint]:
        """The stored checkpoints a verifier has not already checked: every one, for a log
        read whole (a verifier's state keeps what it checked: ``replays.logstate``)."""
        return self.checkpoints()

    def kept_checkpoint(self) -> KeptCheckpoint | None:
        """The last checkpoint a verifier's state checked (None: no state, or none)."""
        return None

    def kept_covering(self, last_leaf: int, final: TrustPolicy | None) -> StoredCheckpoint | None:
        """The latest checkpoint a verifier's state checked (with ``final``, the latest final
        one under that policy) whose tree holds leaf ``last_leaf``, read again from the store
        (None without a state)."""
        return None

    def latest_origin(self) -> str | None:
        """The origin of the log's latest C2SP checkpoint (None: none)."""
        for cp in reversed(self.unchecked_checkpoints()):
            if cp.error is None and cp.note is not None:
                return cp.origin
        kept = self.kept_checkpoint()
        return kept.origin if kept is not None else None

    def _matches(self, cp: StoredCheckpoint) -> bool:
        return self.tree.root(cp.size) == cp.root

    def add_checkpoint(
        self,
        note: Note,
        *,
        signed_at: str | None = None,
        witnesses: dict[str, str] | None = None,
        with_rows: Sequence[StoredEvent] = (),
    ) -> StoredCheckpoint:
        """Store a signed checkpoint under the next number, and ``with_rows`` (the interior
        nodes it covers: ``replays.nodes``) in the same transaction."""
        for _ in range(5):
            self._checkpoints = None
            number = self.last_checkpoint_number() + 1
            stamp = signed_at or datetime.now(UTC).isoformat()
            try:
                self.table.insert_events(
                    [checkpoint_event(number, note, stamp, witnesses), *with_rows]
                )
            except IntegrityError:
                continue
            self._checkpoints = None
            return StoredCheckpoint.from_note(number, note, stamp)
        raise LogError("another writer kept adding checkpoints; none was written")

    # ------------------------------------------------------------------------ legacy seals
    def hold_seals(
        self,
        round_ids: Sequence[UUID],
        select_many: Callable[..., dict[UUID, list[StoredEvent]] | None],
    ) -> None:
        """Read the seal records of ``round_ids`` at once (``select_many(ids,
        recorder=...)``: ``StoreReader``'s query of many streams) for :meth:`seal_of` of each
        of them to use once instead of a query each; with no rounds, forget those held."""
        self._held_seals = {}
        if not round_ids:
            return
        of = {seal_id(r): r for r in round_ids}
        found = select_many(list(of), recorder=self.table)
        if found is not None:
            self._held_seals = {of[s]: rows for s, rows in found.items()}

    def seal_of(self, round_id: UUID) -> Seal | None:
        """The seal of a round sealed by the per-round seal (before seal-at-commit), with the
        inclusion path in the latest legacy checkpoint covering its leaf."""
        held = self._held_seals.pop(round_id, None)
        found = held if held is not None else self.table.select_events(seal_id(round_id))
        if not found:
            return None
        try:
            state = orjson.loads(found[0].state)
            index = int(state["leaf_index"])
            chain = [str(v) for v in state["chain"]]
            streams = [UUID(str(v)) for v in state.get("streams", ())]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return Seal(-1, b"", [], problems=[f"the seal record is unreadable ({exc})"])
        if len(self.kinds) <= index:
            self.refresh()
        if index >= self.size:
            return Seal(
                index,
                b"",
                chain,
                streams=streams,
                problems=[f"leaf {index} is missing from the log"],
            )
        seal = Seal(index, self.leaf(index), chain, streams=streams)
        legacy = [c for c in self.checkpoints() if c.legacy is not None]
        covering = [c for c in legacy if index < c.size <= self.size]
        if covering:
            cp = covering[-1]
            assert cp.legacy is not None
            seal.checkpoint = cp.legacy
            seal.inclusion = hexes(self.tree.inclusion_proof(index, cp.size))
        elif any(index < c.size for c in legacy):
            cp = max(legacy, key=lambda c: c.size)
            seal.checkpoint = cp.legacy
            seal.problems.append(
                f"checkpoint #{cp.number} covers {cp.size} leaves but the log holds only "
                f"{self.size}: leaves were removed"
            )
        return seal


#: What a :class:`TreeLog` holds of the leaves at once: about this many bytes a query (their
#: first query reads :data:`_TREE_FIRST` rows; each next one as many rows as the last ones'
#: mean size fits in these bytes, at most :data:`_TREE_MOST`). A leaf's size is its
#: transaction's: a kilobyte for a classic round's command, a quarter of a megabyte for a
#: boundless settlement's batch of a thousand players.
_TREE_BYTES = 4 << 20
_TREE_FIRST = 16
_TREE_MOST = 4096


class _EntriesNotRead:
    """What a :class:`TreeLog` stands in for the entries' index it never builds (the leaves'
    kinds, the streams' versions, the rounds): any use of it is refused, so a caller that
    needs the entries learns it at once instead of reading an empty index."""

    def _refused(self, *args: object) -> Any:
        raise LogError(
            "this log holds the tree alone (the signer's TreeLog): its leaves' entries are "
            "not read; a verifier reads them with a MerkleLog"
        )

    __getattr__ = __len__ = __iter__ = __contains__ = __getitem__ = _refused


class TreeLog(MerkleLog):
    """The log's tree and its checkpoints alone: what the signer (``replays.signer``) reads.

    Its leaves are read a page at a time (about :data:`_TREE_BYTES` of them a query:
    :meth:`MerkleLog._new_leaves` with a limit), hashed
    into the tree and let go: never parsed, indexed or kept, so a signer holds the tree (two
    hashes a leaf) and one page, whatever the number of events each leaf commits to (a
    boundless round's batches of a thousand players each), and a log read costs its
    hashing. A tree of the same leaves as a
    :class:`MerkleLog`'s, so the same roots. What needs the entries (locating an event, a
    round's evidence, the kinds of leaves) is a verifier's, with a :class:`MerkleLog`; it is
    refused here (:class:`LogError`)."""

    def __init__(self, app: RoundAudit) -> None:
        super().__init__(app)
        unread = _EntriesNotRead()
        self.kinds = self._spans = unread  # type: ignore[assignment]
        self._where = self._round_leaf = self._rounds = unread  # type: ignore[assignment]

    @property
    def size(self) -> int:
        return len(self.tree)

    def refresh(self) -> TreeLog:
        """Hash the leaves appended since the last read into the tree, a page at a time (up
        to a gap: a row was deleted, as :meth:`MerkleLog.refresh`)."""
        with self._lock, paused():
            limit = _TREE_FIRST
            while True:
                datas = [data for _topic, data in self._new_leaves(len(self.tree), limit)]
                self.tree.extend(leaf_hashes(datas))
                if len(datas) < limit:
                    break
                read = sum(map(len, datas)) or 1
                limit = max(1, min(_TREE_MOST, limit * _TREE_BYTES // read))
            self._checkpoints = None
        return self


def observed_leaf(bundle: RoundBundle) -> dict[str, Any]:
    """The legacy round-leaf fields the round's records give now (``outcome`` is
    ``"unfinished"`` for an unfinished or damaged round): what a round sealed by the per-round
    seal is compared with."""
    started, finishing = bundle.started, bundle.finishing
    if finishing is None:
        outcome = "unfinished"
    else:
        outcome = "cancelled" if type(finishing).__name__ == "RoundCancelled" else "settled"
    return leaf_data(
        round_id=bundle.round_id,
        table_id=started.table_id if started is not None else "",
        round_number=started.round_number if started is not None else 0,
        outcome=outcome,
        finished_at=finishing.timestamp.isoformat() if finishing is not None else "",
        events=[d.record for d in bundle.round],
        cards=bundle.card_records(),
        money=bundle.money_records(),
    )


# ------------------------------------------------------------------------------ proofs
def tlog_proof(index: int, path: Sequence[bytes], cp: StoredCheckpoint) -> str:
    """A C2SP tlog-proof (``c2sp.org/tlog-proof@v1``) of leaf ``index`` in checkpoint ``cp``."""
    if cp.note is None:
        raise LogError(f"checkpoint #{cp.number} is not a C2SP checkpoint")
    lines = ["c2sp.org/tlog-proof@v1", f"index {index}"]
    lines += [base64.b64encode(h).decode() for h in path]
    return "\n".join(lines) + "\n\n" + cp.text


def proof_document(
    log: MerkleLog, leaves: Iterable[int], *, checkpoint: int | None = None, **extra: Any
) -> dict[str, Any]:
    """The inclusion proofs of ``leaves`` in one checkpoint (default: the latest covering them
    all), each also as a C2SP tlog-proof, for a third party to check with RFC 6962 and the
    published keys alone (see docs/spec)."""
    wanted = sorted(set(leaves))
    if not wanted:
        raise LogError("nothing to prove: no leaf given")
    if checkpoint is not None:
        cp = log.checkpoint(checkpoint)
        if cp.size <= wanted[-1]:
            raise LogError(
                f"checkpoint #{checkpoint} (size {cp.size}) does not cover leaf {wanted[-1]}"
            )
    else:
        found = log.covering(wanted[-1])
        if found is None:
            raise LogError(f"no checkpoint covers leaf {wanted[-1]} (yet)")
        cp = found
    if cp.size > log.size:
        raise LogError(f"checkpoint #{cp.number} covers {cp.size} leaves; the log holds {log.size}")
    out = []
    for index in wanted:
        path = log.tree.inclusion_proof(index, cp.size)
        item = {
            "index": index,
            "leaf": log.leaf(index).decode("utf-8"),
            "leaf_hash": log.tree.leaf(index).hex(),
            "inclusion": [base64.b64encode(h).decode() for h in path],
        }
        if cp.note is not None:
            item["tlog_proof"] = tlog_proof(index, path, cp)
        out.append(item)
    return {"type": PROOF_TYPE, **extra, "checkpoint": cp.as_json(), "leaves": out}


def round_proof_document(
    app: RoundAudit, log: MerkleLog, round_id: UUID, *, checkpoint: int | None = None
) -> dict[str, Any]:
    """The inclusion proofs, in one checkpoint, of every leaf committing to a round's records
    (its streams, its shoe as of that checkpoint, its wallet movements)."""
    from replays.bundle import StoreReader

    ev = StoreReader(app, log=log).round_bundle(round_id).evidence
    if ev is None or not ev.indexes():
        raise LogError(f"the log holds no leaf of round {round_id}")
    if checkpoint is not None:
        cp = log.checkpoint(checkpoint)
    elif ev.checkpoint is not None:
        cp = ev.checkpoint
    else:
        raise LogError(f"no checkpoint covers round {round_id} (yet)")
    leaves = [i for i in ev.indexes() if i < cp.size] or ev.indexes()
    return proof_document(log, leaves, checkpoint=cp.number, round_id=str(round_id))


def consistency_document(log: MerkleLog, first: int, second: int) -> dict[str, Any]:
    """The RFC 6962 consistency proof between checkpoints number ``first`` and ``second``."""
    a, b = log.checkpoint(first), log.checkpoint(second)
    if a.size > b.size:
        raise LogError(f"checkpoint #{first} is larger than #{second}")
    if b.size > log.size:
        raise LogError(f"checkpoint #{second} covers {b.size} leaves; the log holds {log.size}")
    proof = log.tree.consistency_proof(a.size, b.size)
    return {
        "type": CONSISTENCY_TYPE,
        "first": a.as_json(),
        "second": b.as_json(),
        "proof": [base64.b64encode(h).decode() for h in proof],
    }

"""The global append-only log of round heads, kept in the event store's own database.

This module owns where the Merkle log lives and how rounds get into it (*sealing*). The pure
tree, proof and checkpoint code is in ``replays.merkle``; the leaf of a round in
``replays.chain``.

**Where it lives.** In one extra table of the same database, created through the library:
``app.factory.aggregate_recorder(purpose="merkle_log")`` (``stored_merkle_log`` on SQLite,
``roundaudit_merkle_log`` on PostgreSQL; in memory for the in-memory store). An aggregate recorder
is exactly an append-only table keyed by (originator id, version) with a topic and a byte state,
which is what the log needs, and it comes with the store's connection settings, schema and
``CREATE_TABLE`` handling for free. The table is *not* the application's notification log, so
sealing adds nothing to the event feed that projections follow. Three kinds of rows:

* leaves: originator ``LEAVES_ID``, version ``i + 1`` for leaf ``i``, topic
  ``roundaudit:merkle-leaf``, state = the leaf bytes (canonical JSON, see ``replays.chain``);
* seals: originator ``seal_id(round id)``, version 1, topic ``roundaudit:merkle-seal``, state =
  ``{"leaf_index", "notification_id", "chain"}`` (the per-event chain values that locate a change
  later, and the notification id of the finishing event, where the next sealing run resumes),
  plus ``"streams"`` for a boundless round: its participation stream ids, so that a stream whose
  first record disappeared is still read (and its loss named);
* checkpoints: originator ``CHECKPOINTS_ID``, version = checkpoint number, topic
  ``roundaudit:checkpoint``, state = the signed tree head (``replays.merkle.Checkpoint``).

A leaf and its seal row are inserted in **one** ``insert_events`` call, i.e. one transaction; the
primary key makes both append-only: a second writer of leaf ``i`` or a second seal of the same
round fails with an integrity error, and the sealer then re-reads and carries on.

**Sealing** (:func:`seal`) follows the notification log from where the last run stopped, takes
each round that has finished (``RoundSettled``/``RoundCancelled`` of a ``Round`` or of a
boundless ``SharedHand``), reads its records (round, shoe cards, wallet movements; for a
boundless round, the shared hand and every participation merged in commit order), and appends
its leaf; then it signs a checkpoint of the new tree
(every ``checkpoint_every`` leaves and at the end of the run). Run it periodically
(``roundaudit seal`` from a timer): a round is tamper-evident from the moment it is sealed, and
its re-execution check does not depend on the seal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

import orjson
from eventsourcing.persistence import AggregateRecorder, IntegrityError, StoredEvent
from eventsourcing.utils import get_topic

from domain.ids import stable_id
from replays.bundle import FINISHING, RoundBundle, Seal, StoreReader, originator_uuid
from replays.chain import ROUND, canonical, chain_values, leaf_data
from replays.merkle import (
    CONSISTENCY_TYPE,
    INCLUSION_TYPE,
    Checkpoint,
    MerkleTree,
    hexes,
    leaf_hash,
    sign_checkpoint,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from domain.application import RoundAudit

PURPOSE: Final = "merkle_log"
LEAVES_ID: Final = stable_id("merkle-log", "leaves")
CHECKPOINTS_ID: Final = stable_id("merkle-log", "checkpoints")
LEAF_TOPIC: Final = "roundaudit:merkle-leaf"
SEAL_TOPIC: Final = "roundaudit:merkle-seal"
CHECKPOINT_TOPIC: Final = "roundaudit:checkpoint"
FINISHING_TOPICS: Final = tuple(get_topic(cls) for cls in FINISHING)
PAGE: Final = 500


def seal_id(round_id: UUID) -> UUID:
    return stable_id("merkle-seal", round_id.hex)


class LogError(RuntimeError):
    """The log could not be written (e.g. it changed under a concurrent sealer too often)."""


@dataclass
class Leaf:
    index: int
    data: bytes

    @property
    def round_id(self) -> UUID | None:
        try:
            return UUID(orjson.loads(self.data)["round_id"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


class MerkleLog:
    """The log of one store (see the module docstring)."""

    def __init__(self, app: RoundAudit) -> None:
        self.recorder: AggregateRecorder = app.factory.aggregate_recorder(purpose=PURPOSE)
        self.leaves: list[Leaf] = []
        self.tree = MerkleTree()
        self._checkpoints: list[Checkpoint] | None = None
        # One log may serve several threads (the web service keeps one per process): its
        # leaves and tree only grow, under this lock; readers read what is there.
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------ reading
    def refresh(self) -> MerkleLog:
        """Read the leaves appended since the last read (one query: a long-lived log stays
        current at the cost of what is new)."""
        with self._lock:
            for s in self.recorder.select_events(LEAVES_ID, gt=len(self.leaves)):
                if s.originator_version != len(self.leaves) + 1:  # a gap: a row was deleted
                    break
                self.tree.append(leaf_hash(bytes(s.state)))
                self.leaves.append(Leaf(len(self.leaves), bytes(s.state)))
            self._checkpoints = None
        return self

    @property
    def size(self) -> int:
        return len(self.leaves)

    def stored_leaf_versions(self) -> list[int]:
        return [s.originator_version for s in self.recorder.select_events(LEAVES_ID)]

    def checkpoints(self) -> list[Checkpoint]:
        if self._checkpoints is None:
            out = []
            for s in self.recorder.select_events(CHECKPOINTS_ID):
                try:
                    data = orjson.loads(s.state)
                    data["number"] = s.originator_version
                    out.append(Checkpoint.from_json(data))
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    out.append(Checkpoint(s.originator_version, -1, "", "", "", "", "(unreadable)"))
            self._checkpoints = out
        return self._checkpoints

    def latest_checkpoint(self) -> Checkpoint | None:
        cps = self.checkpoints()
        return cps[-1] if cps else None

    def seal_of(self, round_id: UUID) -> Seal | None:
        """The round's seal, with the inclusion path in the latest checkpoint covering it."""
        found = self.recorder.select_events(seal_id(round_id))
        if not found:
            return None
        try:
            state = orjson.loads(found[0].state)
            index = int(state["leaf_index"])
            chain = [str(v) for v in state["chain"]]
            streams = [UUID(str(v)) for v in state.get("streams", ())]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return Seal(-1, b"", [], problems=[f"the seal record is unreadable ({exc})"])
        if len(self.leaves) <= index:
            self.refresh()
        if index >= len(self.leaves):
            return Seal(
                index,
                b"",
                chain,
                streams=streams,
                problems=[f"leaf {index} is missing from the log"],
            )
        seal = Seal(index, self.leaves[index].data, chain, streams=streams)
        covering = [c for c in self.checkpoints() if index < c.size <= len(self.leaves)]
        if covering:
            cp = covering[-1]
            seal.checkpoint = cp
            seal.inclusion = hexes(self.tree.inclusion_proof(index, cp.size))
        elif any(index < c.size for c in self.checkpoints()):
            cp = max(self.checkpoints(), key=lambda c: c.size)
            seal.checkpoint = cp
            seal.problems.append(
                f"checkpoint #{cp.number} covers {cp.size} leaves but the log holds only "
                f"{len(self.leaves)}: leaves were removed"
            )
        return seal

    def last_notification_id(self) -> int:
        """Where the last sealing run stopped (the notification id of its last round)."""
        if not self.leaves:
            return 0
        rid = self.leaves[-1].round_id
        if rid is None:
            return 0
        found = self.recorder.select_events(seal_id(rid))
        if not found:
            return 0
        try:
            return int(orjson.loads(found[0].state)["notification_id"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return 0

    # ------------------------------------------------------------------------ writing
    def append(
        self,
        leaf: bytes,
        round_id: UUID,
        chain: list[str],
        notification_id: int,
        streams: list[UUID] | None = None,
    ) -> int:
        """Append a round's leaf and its seal row in one transaction; return the leaf index.
        ``streams``: a boundless round's participation stream ids (kept in the seal row)."""
        with self._lock:
            index = len(self.leaves)
            row: dict[str, Any] = {
                "leaf_index": index,
                "notification_id": notification_id,
                "chain": chain,
            }
            if streams:
                row["streams"] = [str(s) for s in streams]
            seal_state = canonical(row)
            self.recorder.insert_events(
                [
                    StoredEvent(LEAVES_ID, index + 1, LEAF_TOPIC, leaf),
                    StoredEvent(seal_id(round_id), 1, SEAL_TOPIC, seal_state),
                ]
            )
            self.tree.append(leaf_hash(leaf))
            self.leaves.append(Leaf(index, leaf))
        return index

    def checkpoint(self, key: Ed25519PrivateKey, *, now: datetime | None = None) -> Checkpoint:
        """Sign and store a checkpoint of the tree as it is now."""
        for _ in range(5):
            self.refresh()
            number = len(self.checkpoints()) + 1
            stamp = (now or datetime.now(UTC)).isoformat()
            cp = sign_checkpoint(
                key, number=number, size=self.size, root=self.tree.root(), timestamp=stamp
            )
            data = cp.as_json()
            del data["number"]
            try:
                self.recorder.insert_events(
                    [StoredEvent(CHECKPOINTS_ID, number, CHECKPOINT_TOPIC, canonical(data))]
                )
            except IntegrityError:
                continue
            self._checkpoints = None
            return cp
        raise LogError("another writer kept adding checkpoints; none was written")


# ------------------------------------------------------------------------------ proofs
def inclusion_document(log: MerkleLog, round_id: UUID, *, checkpoint: int | None = None) -> Any:
    """The inclusion proof of a sealed round in a checkpoint (default: the latest covering it),
    as a JSON document a third party checks with RFC 9162 alone (see docs/verification.md)."""
    found = log.recorder.select_events(seal_id(round_id))
    if not found:
        raise LogError(f"round {round_id} is not sealed")
    index = int(orjson.loads(found[0].state)["leaf_index"])
    log.refresh()
    cps = [c for c in log.checkpoints() if index < c.size <= log.size]
    if checkpoint is not None:
        cps = [c for c in cps if c.number == checkpoint]
    if not cps:
        raise LogError(f"no checkpoint covers leaf {index} of round {round_id} (yet)")
    cp = cps[-1]
    leaf = log.leaves[index].data
    return {
        "type": INCLUSION_TYPE,
        "round_id": str(round_id),
        "leaf_index": index,
        "tree_size": cp.size,
        "leaf": leaf.decode("utf-8"),
        "leaf_hash": leaf_hash(leaf).hex(),
        "audit_path": hexes(log.tree.inclusion_proof(index, cp.size)),
        "checkpoint": cp.as_json(),
    }


def consistency_document(log: MerkleLog, first: int, second: int) -> Any:
    """The consistency proof between checkpoints number ``first`` and ``second``."""
    log.refresh()
    by_number = {c.number: c for c in log.checkpoints()}
    if first not in by_number or second not in by_number:
        raise LogError(f"the log has checkpoints 1..{len(by_number)}")
    a, b = by_number[first], by_number[second]
    if a.size > b.size:
        raise LogError(f"checkpoint #{first} is larger than #{second}")
    return {
        "type": CONSISTENCY_TYPE,
        "first": a.as_json(),
        "second": b.as_json(),
        "proof": hexes(log.tree.consistency_proof(a.size, b.size)),
    }


# ------------------------------------------------------------------------------ sealing
def observed_leaf(bundle: RoundBundle) -> dict[str, Any]:
    """The leaf fields the round's records give now (for an unfinished or damaged round too:
    ``outcome`` is then ``"unfinished"``)."""
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


def leaf_for(bundle: RoundBundle) -> tuple[bytes, list[str]] | None:
    """The leaf bytes and per-event chain of a finished round (None if it is not finished)."""
    if bundle.started is None or bundle.finishing is None:
        return None
    events = [d.record for d in bundle.round]
    return canonical(observed_leaf(bundle)), chain_values(ROUND, bundle.round_id, events)


@dataclass
class SealReport:
    sealed: int = 0
    skipped: int = 0  # already sealed, or no longer a finished round
    size: int = 0
    checkpoints: list[Checkpoint] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"sealed {self.sealed} round(s); the log holds {self.size} leaves"]
        out += [
            f"checkpoint #{cp.number}: size {cp.size} root {cp.root} at {cp.timestamp} "
            f"(key {cp.key_id[:16]})"
            for cp in self.checkpoints
        ]
        return out


def seal(
    app: RoundAudit,
    *,
    key: Ed25519PrivateKey | None,
    checkpoint_every: int = 1000,
    on_round: Callable[[], object] | None = None,
    log: MerkleLog | None = None,
) -> SealReport:
    """Seal every round finished since the last run; sign checkpoints (``key`` None: none)."""
    log = (log or MerkleLog(app)).refresh()
    reader = StoreReader(app)
    report = SealReport()
    start = log.last_notification_id()
    stop = int(app.recorder.max_notification_id() or 0)
    since_checkpoint = 0
    position = start
    while position < stop:
        page = app.recorder.select_notifications(
            start=position,
            limit=PAGE,
            stop=stop,
            topics=FINISHING_TOPICS,
            inclusive_of_start=False,
        )
        if not page:
            break
        for n in page:
            position = n.id
            rid = originator_uuid(n)
            if _seal_one(app, log, reader, rid, n.id):
                report.sealed += 1
                since_checkpoint += 1
            else:
                report.skipped += 1
            if on_round is not None:
                on_round()
            if key is not None and since_checkpoint >= checkpoint_every:
                report.checkpoints.append(log.checkpoint(key))
                since_checkpoint = 0
    latest = log.latest_checkpoint()
    if key is not None and log.size and (latest is None or latest.size < log.size):
        report.checkpoints.append(log.checkpoint(key))
    report.size = log.size
    return report


def _seal_one(app: Any, log: MerkleLog, reader: StoreReader, rid: UUID, notification: int) -> bool:
    for _ in range(5):
        if log.recorder.select_events(seal_id(rid)):
            return False
        bundle = reader.round_bundle(rid)
        made = leaf_for(bundle)
        if made is None:  # not finished after all (a tampered store): nothing to seal
            return False
        leaf, chain = made
        try:
            log.append(leaf, rid, chain, notification, list(bundle.participations()))
        except IntegrityError:
            log.refresh()  # a concurrent sealer moved the log on: re-read and try again
            continue
        return True
    raise LogError(f"could not seal round {rid}: the log kept changing")


__all__ = [
    "CHECKPOINTS_ID",
    "LEAVES_ID",
    "PURPOSE",
    "Leaf",
    "LogError",
    "MerkleLog",
    "SealReport",
    "consistency_document",
    "inclusion_document",
    "leaf_for",
    "observed_leaf",
    "seal",
    "seal_id",
]

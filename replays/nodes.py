"""The log's interior nodes, stored by the signer beside each checkpoint, and proofs from them.

This module owns the **stored nodes** of the store's Merkle log (format in docs/spec/nodes.md):
what the signer writes with each checkpoint (:func:`node_rows`), how they are read
(:class:`StoredNodes`, :class:`NodeTree`) and how a leaf is proven from them against a
checkpoint (:func:`prove_leaves`) or two checkpoints shown consistent
(:func:`consistent_by_nodes`), without reading and hashing the whole log.

**What is stored.** Every complete aligned subtree hash of the tree, level 0 (each leaf's
hash) included: the node at ``level`` and index ``i`` is ``MTH`` of leaves ``[i * 2**level,
(i + 1) * 2**level)`` (RFC 9162 2.1.1), the same subtrees ``replays.merkle.MerkleTree`` and a
verifier's state (``replays.logstate``) keep. Any root, inclusion or consistency proof up to
the size the nodes cover needs only such subtrees (every subtree the RFC's recursion visits is
complete and aligned, or is split into such subtrees at the tree's right edge), so it costs
O(log n) look-ups. The nodes of one level are grouped in blocks of :data:`WIDTH` (a block is a
stream of the log's table, ``node_stream(level, block)``); each checkpoint appends to each
block the nodes completed since the previous checkpoint, as one row whose version is the
position in the block of its first node plus one: rows are append-only and never rewritten,
like C2SP tlog-tiles' partial tiles (tiles of height 1 and width 256 at every level). A head
row (originator :data:`NODES_ID`, versions 1, 2, ...) says up to which size nodes are stored.
The signer writes the nodes and the head row **in the same transaction as the checkpoint**
(``MerkleLog.add_checkpoint``), so a checkpoint and the nodes covering it are there together.

**Untrusted data.** A node is the operator's word: nothing here believes one. A path built
from stored nodes is checked by RFC 9162 2.1.3.2 against the root of a checkpoint whose
signature the caller checked, with the leaf's hash computed from the leaf bytes read now. A
node changed, removed, copied from another log, or a leaf that is not in the tree makes the
check fail (a problem named by :func:`prove_leaves`), never pass: with SHA-256 a wrong node
cannot lead to the signed root.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final
from uuid import UUID

import orjson
from eventsourcing.persistence import AggregateRecorder, StoredEvent

from domain.commit_leaf import LEAVES_ID
from domain.ids import stable_id
from replays.chain import canonical
from replays.log import StoredCheckpoint, TrustPolicy
from replays.merkle import MerkleTree, leaf_hash, verify_consistency, verify_inclusion

#: The head rows: version k = the k-th extension of the stored nodes.
NODES_ID: Final = stable_id("merkle-log", "nodes")
NODE_TOPIC: Final = "roundaudit:merkle-nodes/v1"
NODES_HEAD_TOPIC: Final = "roundaudit:merkle-nodes-head/v1"
#: Nodes of one level per block (one stream of the log's table).
WIDTH: Final = 256
_HASH = 32

__all__ = [
    "NODES_HEAD_TOPIC",
    "NODES_ID",
    "NODE_TOPIC",
    "WIDTH",
    "NodeError",
    "NodeProofs",
    "NodeTree",
    "StoredNodes",
    "consistent_by_nodes",
    "node_rows",
    "node_stream",
    "nodes_head",
    "prove_in_checkpoint",
    "prove_leaves",
]


class NodeError(LookupError):
    """A node the proof needs is not stored, or its row does not read (the message says)."""


def node_stream(level: int, block: int) -> UUID:
    """The stream of the table holding the nodes ``[block * WIDTH, (block + 1) * WIDTH)`` of
    ``level``."""
    return stable_id("merkle-log", "nodes", level, block)


def nodes_head(table: AggregateRecorder) -> tuple[int, int]:
    """(version of the last head row, size up to which nodes are stored): (0, 0) when none;
    the last row alone."""
    rows = table.select_events(NODES_ID, desc=True, limit=1)
    if not rows:
        return 0, 0
    try:
        size = int(orjson.loads(rows[0].state)["size"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        size = 0  # unreadable: the next checkpoint stores every node again, from 0
    return int(rows[0].originator_version), size


def node_rows(tree: MerkleTree, start: int, size: int, head: int) -> list[StoredEvent]:
    """The rows storing every node of ``tree`` completed by leaves ``start..size - 1`` (whose
    right end is in ``(start, size]``), and head row ``head + 1`` saying nodes are stored up to
    ``size``. Nodes are never written twice: a row's version is its first node's place in
    the block (plus one), so writing one again fails the insert."""
    rows: list[StoredEvent] = []
    level = 0
    while size >> level:
        first, end = start >> level, size >> level  # nodes first..end - 1 of this level
        i = first
        while i < end:
            block = i // WIDTH
            stop = min(end, (block + 1) * WIDTH)
            hashes = b"".join(tree._node(level, j) for j in range(i, stop))
            state = {"level": level, "start": i, "hashes": base64.b64encode(hashes).decode()}
            rows.append(
                StoredEvent(node_stream(level, block), i - block * WIDTH + 1, NODE_TOPIC,
                            canonical(state))
            )  # fmt: skip
            i = stop
        level += 1
    head_row = canonical({"from": start, "size": size})
    rows.append(StoredEvent(NODES_ID, head + 1, NODES_HEAD_TOPIC, head_row))
    return rows


class StoredNodes:
    """The stored nodes of one log's table, read a block at a time (one query) and kept."""

    def __init__(self, table: AggregateRecorder) -> None:
        self.table = table
        self._blocks: dict[tuple[int, int], list[bytes]] = {}
        self.queries = 0

    def node(self, level: int, idx: int) -> bytes:
        """The stored hash of node ``idx`` of ``level`` (raises :class:`NodeError`)."""
        block = idx // WIDTH
        hashes = self._blocks.get((level, block))
        if hashes is None or idx - block * WIDTH >= len(hashes):
            hashes = self._blocks[level, block] = self._read(level, block)
        if idx - block * WIDTH >= len(hashes):
            raise NodeError(f"node {idx} of level {level} is not stored")
        return hashes[idx - block * WIDTH]

    def _read(self, level: int, block: int) -> list[bytes]:
        """The block's nodes, its rows joined in order up to the first that does not follow
        the one before (a row removed, or one of another place or level)."""
        self.queries += 1
        out: list[bytes] = []
        for s in self.table.select_events(node_stream(level, block)):
            try:
                data = orjson.loads(s.state)
                raw = base64.b64decode(str(data["hashes"]), validate=True)
                ok = (
                    s.topic == NODE_TOPIC
                    and int(data["level"]) == level
                    and int(data["start"]) == block * WIDTH + len(out)
                    and int(s.originator_version) == len(out) + 1
                    and len(raw) % _HASH == 0
                    and len(out) + len(raw) // _HASH <= WIDTH
                )
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, binascii.Error):
                ok = False
            if not ok:
                break
            out += [raw[k : k + _HASH] for k in range(0, len(raw), _HASH)]
        return out


class NodeTree(MerkleTree):
    """The tree of ``size`` leaves as the stored nodes give it (read-only): its roots and
    proofs are ``MerkleTree``'s, each complete subtree looked up in the store."""

    def __init__(self, nodes: StoredNodes, size: int) -> None:
        super().__init__()
        self.nodes = nodes
        self._size = size

    def __len__(self) -> int:
        return self._size

    def _node(self, level: int, idx: int) -> bytes:
        return self.nodes.node(level, idx)

    def leaf(self, index: int) -> bytes:
        return self.nodes.node(0, index)

    def append(self, h: bytes) -> int:
        raise TypeError("the stored nodes are read-only")


@dataclass
class NodeProofs:
    """What :func:`prove_leaves` found: each leaf's bytes and inclusion path when proven, and
    what is wrong with each leaf that is not."""

    leaves: dict[int, bytes] = field(default_factory=dict)
    inclusion: dict[int, list[bytes]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def prove_leaves(
    table: AggregateRecorder,
    nodes: StoredNodes,
    size: int,
    root: bytes,
    indexes: Iterable[int],
    leaves: Mapping[int, bytes] | None = None,
) -> NodeProofs:
    """Prove leaves ``indexes`` in the tree of ``size`` leaves with ``root`` (a checkpoint's,
    whose signature the caller checked): each leaf read now from ``table`` (or taken from
    ``leaves``), its hash computed, its path built from the stored ``nodes`` and checked by
    RFC 9162 2.1.3.2. Each leaf that is not in the tree, missing, or whose path is missing
    or does not lead to ``root`` is a problem."""
    out = NodeProofs()
    tree = NodeTree(nodes, size)
    for index in sorted(set(indexes)):
        if not 0 <= index < size:
            out.problems.append(f"leaf {index} is not in the checkpoint's tree of {size} leaves")
            continue
        data = (leaves or {}).get(index)
        if data is None:
            rows = table.select_events(LEAVES_ID, gt=index, lte=index + 1)
            if not rows:
                out.problems.append(f"leaf {index} is no longer in the table (deleted)")
                continue
            data = bytes(rows[0].state)
        out.leaves[index] = data
        try:
            path = tree.inclusion_proof(index, size)
        except NodeError as exc:
            out.problems.append(f"leaf {index}: no inclusion proof from the stored nodes ({exc})")
            continue
        if not verify_inclusion(index, size, leaf_hash(data), path, root):
            out.problems.append(
                f"leaf {index} is not proven in the checkpoint's tree of {size} leaves: the "
                "leaf or a stored node on its path was changed"
            )
            continue
        out.inclusion[index] = path
    return out


def consistent_by_nodes(
    nodes: StoredNodes, first: tuple[int, bytes], second: tuple[int, bytes]
) -> bool:
    """Whether the tree (size, root) ``second`` extends ``first`` by an RFC 9162 consistency
    proof built from the stored nodes (False when a node it needs is missing)."""
    (m, m_root), (n, n_root) = first, second
    if m > n:
        return False
    try:
        proof = NodeTree(nodes, n).consistency_proof(m, n)
    except NodeError:
        return False
    return verify_consistency(m, n, m_root, n_root, proof)


def prove_in_checkpoint(
    table: AggregateRecorder,
    nodes: StoredNodes,
    cp: StoredCheckpoint,
    policy: TrustPolicy,
    indexes: Iterable[int],
    leaves: Mapping[int, bytes] | None = None,
) -> NodeProofs:
    """:func:`prove_leaves` in checkpoint ``cp``, whose row, operator signature (the pinned
    key of ``policy``) and witnesses' cosignatures are checked first: a checkpoint that fails
    them proves nothing (every leaf is then a problem)."""
    why: list[str] = []
    if cp.error is not None:
        why.append(cp.error)
    else:
        signed = cp.signed_by(policy)
        if signed in ("invalid", "absent"):
            why.append(f"not signed by the pinned operator key ({signed})")
        why += [f"the cosignature of witness {n} fails" for n in policy.bad_cosigners(cp)]
    if why:
        out = NodeProofs()
        out.problems += [f"checkpoint #{cp.number}: {m}" for m in why]
        out.problems += [f"leaf {i} is not proven" for i in sorted(set(indexes))]
        return out
    out = prove_leaves(table, nodes, cp.size, cp.root, indexes, leaves)
    if policy.operator is None:
        out.notes.append("checkpoint signatures not checked: no operator key pinned")
    return out

"""The interior nodes the signer stores beside each checkpoint (``replays.nodes``): they give
the same roots and proofs as the tree built from every leaf, and a verifier that proves leaves
from them finds every node changed, removed or taken from another log, every leaf not in the
tree or changed, and every checkpoint not signed by the pinned key; on the in-memory store,
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from cli.simulate import simulate
from domain.application import RoundAudit
from replays.chain import canonical
from replays.log import MerkleLog, StoredCheckpoint, make_policy
from replays.merkle import generate_key
from replays.nodes import (
    NODES_ID,
    WIDTH,
    NodeTree,
    StoredNodes,
    consistent_by_nodes,
    node_stream,
    nodes_head,
    prove_in_checkpoint,
    prove_leaves,
)
from replays.note import Note as SignedNote
from replays.note import checkpoint_text, operator_key, sign
from replays.signer import Signer

ORIGIN = "example.test/log"


class Edited:
    """A view of a log's table whose rows of one stream are edited by ``edit`` (what an
    insider with write access to the table makes the verifier read)."""

    def __init__(
        self,
        table: Any,
        stream: UUID,
        edit: Callable[[list[StoredEvent]], list[StoredEvent]],
    ) -> None:
        self.table, self.stream, self.edit = table, stream, edit

    def select_events(self, originator_id: UUID, **kw: Any) -> Sequence[StoredEvent]:
        rows = list(self.table.select_events(originator_id, **kw))
        return self.edit(rows) if originator_id == self.stream else rows


def replaced_hash(row: StoredEvent, at: int) -> StoredEvent:
    """``row`` with the ``at``-th hash it holds changed."""
    import base64

    data = orjson.loads(row.state)
    raw = bytearray(base64.b64decode(data["hashes"]))
    raw[at * 32] ^= 0xFF
    data["hashes"] = base64.b64encode(bytes(raw)).decode()
    return StoredEvent(row.originator_id, row.originator_version, row.topic, canonical(data))


def signed(app: RoundAudit, key: Any, rounds: int, variant: str = "european") -> MerkleLog:
    simulate(app, variant=variant, rounds=rounds)
    report = Signer(app, key=key, origin=ORIGIN).run_once()
    assert report.checkpoint is not None, report.problems
    return MerkleLog(app).refresh()


def test_stored_nodes_give_the_whole_trees_roots_and_proofs(
    app_on_every_store: RoundAudit,
) -> None:
    """Two checkpoints: the second stores only the nodes completed since the first; every
    stored node is the tree's, the roots are the checkpoints', every leaf's path is the one
    the tree built from every leaf gives, and the checkpoints are consistent by the nodes."""
    app, key = app_on_every_store, generate_key()
    first = signed(app, key, 3)
    log = signed(app, key, 4)
    cps = log.checkpoints()
    assert [c.number for c in cps] == [1, 2]
    assert cps[0].size == first.size < cps[1].size
    assert nodes_head(log.table) == (2, log.size)
    nodes = StoredNodes(log.table)
    level = 0
    while log.size >> level:
        for i in range(log.size >> level):
            assert nodes.node(level, i) == log.tree._node(level, i)
        level += 1
    for cp in cps:
        assert NodeTree(nodes, cp.size).root(cp.size) == cp.root
        proofs = prove_leaves(log.table, nodes, cp.size, cp.root, range(cp.size))
        assert proofs.problems == []
        for i in range(cp.size):
            assert proofs.inclusion[i] == log.tree.inclusion_proof(i, cp.size)
            assert proofs.leaves[i] == log.leaf(i)
    assert consistent_by_nodes(nodes, (cps[0].size, cps[0].root), (cps[1].size, cps[1].root))
    assert not consistent_by_nodes(nodes, (cps[0].size, cps[1].root), (cps[1].size, cps[1].root))


def test_a_store_checkpointed_before_nodes_gets_every_node_at_its_next_checkpoint(
    app_on_every_store: RoundAudit,
) -> None:
    app, key = app_on_every_store, generate_key()
    simulate(app, variant="european", rounds=2)
    log = MerkleLog(app).refresh()
    text = checkpoint_text(ORIGIN, log.size, log.tree.root(log.size))
    log.add_checkpoint(SignedNote(text, (sign(text, ORIGIN, key),)))  # as before nodes
    assert nodes_head(log.table) == (0, 0)
    log = signed(app, key, 1)
    assert nodes_head(log.table) == (1, log.size)
    cp = log.checkpoints()[-1]
    proofs = prove_leaves(log.table, StoredNodes(log.table), cp.size, cp.root, range(cp.size))
    assert proofs.problems == []
    assert len(proofs.inclusion) == cp.size


def checked(app: RoundAudit) -> tuple[MerkleLog, StoredCheckpoint, Any]:
    key = generate_key()
    log = signed(app, key, 6)
    cp = log.latest_checkpoint()
    assert cp is not None
    assert cp.size > 2 * 8
    return log, cp, key


def test_a_changed_node_is_found(app_on_every_store: RoundAudit) -> None:
    """Leaf 5's hash changed in its row: leaf 4's path (whose sibling it is) no longer leads
    to the root; a node of level 3 changed: every leaf of the sibling subtree fails."""
    log, cp, _ = checked(app_on_every_store)

    def leaf5(rows: list[StoredEvent]) -> list[StoredEvent]:
        return [replaced_hash(rows[0], 5), *rows[1:]]

    table = Edited(log.table, node_stream(0, 0), leaf5)
    proofs = prove_leaves(table, StoredNodes(table), cp.size, cp.root, range(cp.size))
    assert 4 in {int(p.split()[1]) for p in proofs.problems}
    assert 4 not in proofs.inclusion
    assert all("changed" in p for p in proofs.problems)

    def level3(rows: list[StoredEvent]) -> list[StoredEvent]:
        return [replaced_hash(rows[0], 0), *rows[1:]]  # leaves 0..7

    table = Edited(log.table, node_stream(3, 0), level3)
    proofs = prove_leaves(table, StoredNodes(table), cp.size, cp.root, range(cp.size))
    assert set(range(8, 16)) <= {int(p.split()[1]) for p in proofs.problems}
    assert not set(range(8, 16)) & set(proofs.inclusion)
    # the whole-log tree proves every leaf: the change is in the nodes alone
    assert log.tree.root(cp.size) == cp.root


def test_a_removed_node_row_is_found(app_on_every_store: RoundAudit) -> None:
    log, cp, _ = checked(app_on_every_store)
    table = Edited(log.table, node_stream(1, 0), lambda rows: [])
    proofs = prove_leaves(table, StoredNodes(table), cp.size, cp.root, range(cp.size))
    assert proofs.problems
    assert len(proofs.inclusion) < cp.size
    assert any("no inclusion proof from the stored nodes" in p for p in proofs.problems)
    # no leaf passes that needs a node of level 1 of the first block
    assert not {0, 1, 2, 3} & set(proofs.inclusion)


def test_nodes_of_another_log_prove_nothing(app_on_every_store: RoundAudit) -> None:
    """The node rows of another store (other rounds) in place of this log's: every leaf whose
    path differs fails; none passes on the other log's nodes."""
    log, cp, _ = checked(app_on_every_store)
    other = RoundAudit()
    try:
        # a round's leaves vary with its cards: play until the other log is at least as long
        while MerkleLog(other).refresh().size < cp.size:
            simulate(other, variant="european", rounds=1)
        olog = signed(other, generate_key(), 0)
        assert olog.size >= cp.size
        theirs = StoredNodes(olog.table)
        proofs = prove_leaves(log.table, theirs, cp.size, cp.root, range(cp.size))
        assert len(proofs.problems) == cp.size
        assert proofs.inclusion == {}
    finally:
        other.close()


def test_a_leaf_not_in_the_tree_or_changed_is_found(app_on_every_store: RoundAudit) -> None:
    log, cp, _ = checked(app_on_every_store)
    nodes = StoredNodes(log.table)
    proofs = prove_leaves(log.table, nodes, cp.size, cp.root, [cp.size, cp.size + 5, -1])
    assert len(proofs.problems) == 3
    assert proofs.inclusion == {}
    assert all("not in the checkpoint's tree" in p for p in proofs.problems)
    changed = log.leaf(3) + b" "
    proofs = prove_leaves(log.table, nodes, cp.size, cp.root, [3, 4], leaves={3: changed})
    assert list(proofs.inclusion) == [4]
    assert proofs.problems == [
        f"leaf 3 is not proven in the checkpoint's tree of {cp.size} leaves: the leaf or a "
        "stored node on its path was changed"
    ]

    def deleted(rows: list[StoredEvent]) -> list[StoredEvent]:
        return [r for r in rows if r.originator_version != 5]

    from domain.commit_leaf import LEAVES_ID

    table = Edited(log.table, LEAVES_ID, deleted)
    proofs = prove_leaves(table, nodes, cp.size, cp.root, [4, 5])
    assert list(proofs.inclusion) == [5]
    assert proofs.problems == ["leaf 4 is no longer in the table (deleted)"]


def test_a_forged_checkpoint_proves_nothing(app_on_every_store: RoundAudit) -> None:
    """An insider rewrites leaf 3, stores the nodes of the rewritten tree and signs its root
    with a key of their own: the nodes lead to that root, but the checkpoint is not signed by
    the pinned key, so no leaf is proven; the genuine checkpoint, under the same policy,
    proves the genuine leaves and not the rewritten one."""
    log, cp, key = checked(app_on_every_store)
    policy = make_policy(operator_key(ORIGIN, key.public_key()))
    genuine = prove_in_checkpoint(log.table, StoredNodes(log.table), cp, policy, range(cp.size))
    assert genuine.problems == []
    assert len(genuine.inclusion) == cp.size
    from replays.merkle import MerkleTree, leaf_hash
    from replays.nodes import node_rows

    forged_leaf = log.leaf(3) + b" "
    tree = MerkleTree(
        leaf_hash(forged_leaf) if i == 3 else log.tree.leaf(i) for i in range(cp.size)
    )
    rows = {
        r.originator_id: r for r in node_rows(tree, 0, cp.size, 0) if r.originator_id != NODES_ID
    }

    class Forged:
        def select_events(self, oid: UUID, **kw: Any) -> Sequence[StoredEvent]:
            return [rows[oid]] if oid in rows else list(log.table.select_events(oid, **kw))

    mine = generate_key()
    text = checkpoint_text(ORIGIN, cp.size, tree.root(cp.size))
    forged = StoredCheckpoint.from_note(
        cp.number + 1, SignedNote(text, (sign(text, ORIGIN, mine),))
    )
    table = Forged()
    nodes = StoredNodes(table)
    unchecked = prove_leaves(table, nodes, cp.size, forged.root, [3], leaves={3: forged_leaf})
    assert unchecked.problems == []  # the nodes alone would "prove" it: hence the signature
    proofs = prove_in_checkpoint(table, nodes, forged, policy, [3], leaves={3: forged_leaf})
    assert proofs.inclusion == {}
    assert proofs.problems[0].startswith(f"checkpoint #{forged.number}: not signed by the pinned")
    proofs = prove_in_checkpoint(table, nodes, cp, policy, [3, 4], leaves={3: forged_leaf})
    assert 3 not in proofs.inclusion
    assert proofs.problems


def test_nodes_are_written_once_a_block_row_a_checkpoint(app_on_every_store: RoundAudit) -> None:
    """Each checkpoint appends each block's new nodes as one row, versioned by its place in
    the block; a block's rows join without gap."""
    app, key = app_on_every_store, generate_key()
    sizes = [signed(app, key, n).size for n in (1, 1, 2)]
    table = MerkleLog(app).table
    rows = table.select_events(node_stream(0, 0))
    starts = [orjson.loads(r.state)["start"] for r in rows]
    assert [r.originator_version for r in rows] == [s + 1 for s in starts]
    if sizes[-1] <= WIDTH:
        assert starts == [0, *sizes[:-1]]
    heads = [orjson.loads(r.state) for r in table.select_events(NODES_ID)]
    assert heads == [{"from": a, "size": b} for a, b in zip([0, *sizes[:-1]], sizes, strict=True)]

"""A round's evidence (``MerkleLog.evidence``) takes a leaf from the log's cache without asking
``leaf`` and ``kept_leaf_problem`` only when the cached bytes are the very object the log
hashed into its tree (a live shoe's leaves are in each of its rounds' evidence): a cached leaf
of other bytes, or of equal bytes in another object, goes the long way, and the first is
reported as rewritten; the evidence is otherwise the long way's (the same leaves, the same
objects, no problem), and the leaves the cache holds are touched in the same order.
"""

from __future__ import annotations

from uuid import UUID

from cli.simulate import simulate
from domain.application import RoundAudit
from replays.bundle import StoreReader
from replays.log import MerkleLog


def test_a_cached_leaf_is_taken_only_when_it_is_the_very_object_hashed(app: RoundAudit) -> None:
    ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=3, players=2).round_ids]
    log = MerkleLog(app).refresh()
    b = StoreReader(app, log=log).round_bundle(ids[1])
    ev = b.evidence
    assert ev is not None
    assert ev.leaves
    assert not ev.problems
    for i, data in ev.leaves.items():  # every leaf the very object the log hashed and keeps
        assert log._hashed.get(i) is data
        assert log._cache[i] is data
    assert list(log._cache)[-len(ev.leaves) :] == sorted(ev.leaves)  # touched in order

    index = sorted(ev.leaves)[len(ev.leaves) // 2]
    same = bytes(bytearray(ev.leaves[index]))  # equal bytes, another object
    log._remember(index, same)
    again = StoreReader(app, log=log).round_bundle(ids[1]).evidence
    assert again is not None
    assert not again.problems
    assert again.leaves == ev.leaves
    assert again.leaves[index] is same

    log._remember(index, same[:-1] + b"x")  # other bytes than the tree's leaf
    changed = StoreReader(app, log=log).round_bundle(ids[1]).evidence
    assert changed is not None
    assert [p for p in changed.problems if f"leaf {index} read now" in p], changed.problems
    assert set(changed.leaves) == set(ev.leaves)

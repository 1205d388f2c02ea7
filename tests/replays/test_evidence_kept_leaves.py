"""A round's evidence (``MerkleLog.evidence``) gives the leaves the log's cache holds parsed,
with the tree's hash, nothing read or hashed again (branch ``bmem6``: the cache holds the parse
of the very text hashed into the tree, no text); a leaf the cache no longer holds is read again,
hashed and compared with the tree: given parsed (and cached again) when its text hashes to the
tree's leaf, given as text and reported as rewritten when it does not. The leaves the cache
holds are touched in the evidence's order, and the commit check proves each leaf in the
checkpoint from the hash given with it: a parse given with another hash than the tree's is
found (the inclusion fails), so the hash given is the one the check relies on.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from test_released_records import _rewrite_leaf

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import parse_leaf
from replays.bundle import StoreReader
from replays.log import MerkleLog, StoredCheckpoint, TrustPolicy
from replays.merkle import leaf_hash
from replays.reexecute import Verdict
from replays.verify import CommitCache, _check_commit


@pytest.fixture
def rounds(app: RoundAudit) -> list[UUID]:
    return [UUID(r) for r in simulate(app, variant="deluxe", rounds=3, players=2).round_ids]


def test_a_cached_leaf_is_given_parsed_with_the_trees_hash(
    app: RoundAudit, rounds: list[UUID]
) -> None:
    log = MerkleLog(app).refresh()
    ev = StoreReader(app, log=log).round_bundle(rounds[1]).evidence
    assert ev is not None
    assert ev.parsed
    assert not ev.leaves
    assert not ev.problems
    for i, (key, parsed) in ev.parsed.items():  # the cache's parse, the tree's hash
        assert parsed is log._cache[i]
        assert key == log.tree.leaf(i) == leaf_hash(log.leaf(i))
        assert ev.text(i) == log.leaf(i)  # the text read again when asked
    assert list(log._cache)[-len(ev.parsed) :] == sorted(ev.parsed)  # touched in order


def test_a_leaf_read_again_is_given_parsed_when_it_hashes_to_the_tree(
    app: RoundAudit, rounds: list[UUID]
) -> None:
    log = MerkleLog(app).refresh()
    ev = StoreReader(app, log=log).round_bundle(rounds[1]).evidence
    assert ev is not None
    index = sorted(ev.parsed)[len(ev.parsed) // 2]
    del log._cache[index]  # no longer held: read again
    again = StoreReader(app, log=log).round_bundle(rounds[1]).evidence
    assert again is not None
    assert not again.problems
    assert not again.leaves
    assert again.parsed.keys() == ev.parsed.keys()
    assert again.parsed[index][0] == log.tree.leaf(index)
    assert again.parsed[index][1] is log._cache[index]  # cached again

    if not hasattr(app.recorder, "datastore"):
        return  # the in-memory store has no leaf table to rewrite
    del log._cache[index]
    data = log.leaf(index)
    digest = parse_leaf(data).entries[0].sha256  # a leaf still, committing to other bytes
    other = ("0" if digest[0] != "0" else "1") + digest[1:]
    _rewrite_leaf(app, index, data.replace(digest.encode(), other.encode()))
    changed = StoreReader(app, log=log).round_bundle(rounds[1]).evidence
    assert changed is not None
    assert [p for p in changed.problems if f"leaf {index} read now" in p], changed.problems
    assert set(changed.leaves) == {index}  # given as text, as read
    assert changed.indexes() == sorted(ev.parsed)
    assert index not in log._cache


def test_the_checkpoint_is_checked_with_the_hash_given(app: RoundAudit, rounds: list[UUID]) -> None:
    """A checkpoint of the log's tree proves every leaf given parsed from its hash; a parse
    given with another hash than the tree's is found (the inclusion fails for that leaf)."""
    log = MerkleLog(app).refresh()
    b = StoreReader(app, log=log).round_bundle(rounds[1])
    ev = b.evidence
    assert ev is not None
    ev.checkpoint = StoredCheckpoint(1, "test", log.size, log.tree.root(log.size))
    ev.inclusion = {i: log.tree.inclusion_proof(i, log.size) for i in ev.indexes()}

    def found() -> list[str]:
        v = Verdict(str(b.round_id), 0)
        _check_commit(b, v, TrustPolicy(), "", CommitCache())
        assert "checkpoint" in v.checks
        return [d.message for d in v.discrepancies]

    assert found() == []
    index, other = sorted(ev.parsed)[:2]
    ev.parsed[index] = (log.tree.leaf(other), ev.parsed[index][1])  # another leaf's hash
    assert found() == [
        f"leaf {index} is not included in checkpoint #1 (size {log.size}): "
        "the log's leaves changed after it was signed"
    ]

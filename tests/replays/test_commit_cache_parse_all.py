"""The commit check's leaves of a round parsed in one walk (``CommitCache.parse_all``, branches
``vcpu6`` and ``bmem6``): the leaves the round's evidence gives parsed (the store's log's, with
their tree hash) are held and indexed as given, never parsed; those it gives as text (an
export's, a leaf read again that is not the tree's) are hashed once and parsed; a leaf the
cache holds is answered as it was parsed when its hash is the one held (equal bytes, without
parsing it again); a leaf given with another hash than the one held (other bytes) makes the
cache forget everything and take every leaf as now given (what the commit check then compares
the records with); bytes that are no leaf are reported, never held. Each leaf's hash is
answered for the checkpoint's check: the one given, or the text's."""

from __future__ import annotations

from uuid import UUID

import pytest

import replays.verify as verify
from domain.commit_leaf import COMMIT, LeafFormatError, ParsedLeaf, leaf_bytes, parse_leaf
from domain.commits import CommittedEvent
from replays.bundle import CommitEvidence
from replays.merkle import leaf_hash
from replays.verify import CommitCache, _key

A, B = UUID(int=1), UUID(int=2)


def _leaf(n: int, oid: UUID, version: int, state: bytes = b"{}") -> bytes:
    return leaf_bytes(COMMIT, [CommittedEvent(n, oid, version, "domain.test:T.Happened", state)])


def _given(leaves: dict[int, bytes]) -> dict[int, tuple[bytes, ParsedLeaf]]:
    """``leaves`` as the store's log gives them: parsed, with their tree hash."""
    return {i: (leaf_hash(d), parse_leaf(d)) for i, d in leaves.items()}


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes given to the parser, in order."""
    seen: list[bytes] = []
    parse = verify.parse_leaf

    def counted(data: bytes, key: bytes | None = None) -> object:
        seen.append(data)
        return parse(data, key)

    monkeypatch.setattr(verify, "parse_leaf", counted)
    return seen


def test_held_leaves_are_answered_without_a_parse(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1)}
    cache = CommitCache()
    first, bad, keys = cache.parse_all(CommitEvidence(leaves=leaves))
    assert not bad
    assert parses == [leaves[0], leaves[1]]
    assert keys == {i: leaf_hash(d) for i, d in leaves.items()}
    assert {i: cache.leaves[i][0] for i in leaves} == keys  # held by hash, no text
    # equal bytes in other objects (the leaf read again from the table): the same answer
    again = {i: bytes(bytearray(data)) for i, data in leaves.items()}
    assert all(again[i] is not leaves[i] for i in leaves)
    second, bad, _ = cache.parse_all(CommitEvidence(leaves=again))
    assert not bad
    assert len(parses) == 2  # nothing parsed again
    assert all(second[i] is first[i] for i in leaves)
    # given parsed with the same hash: the parse held
    third, bad, keys = cache.parse_all(CommitEvidence(parsed=_given(leaves)))
    assert not bad
    assert len(parses) == 2
    assert all(third[i] is first[i] for i in leaves)
    assert keys == {i: leaf_hash(d) for i, d in leaves.items()}


def test_leaves_given_parsed_are_held_as_given_and_never_parsed(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1)}
    given = _given(leaves)
    cache = CommitCache()
    readable, bad, keys = cache.parse_all(CommitEvidence(parsed=given))
    assert not bad
    assert not parses
    assert all(readable[i] is given[i][1] for i in leaves)
    assert all(cache.leaves[i] == given[i] for i in leaves)
    assert cache.held == sum(map(len, leaves.values()))  # the texts' length, none held
    assert keys == {i: key for i, (key, _) in given.items()}
    found = cache.locate(_key(B, 1), {0, 1})
    assert found is not None
    assert found[1] == given[1][1].entries[0]


def test_a_leaf_with_other_bytes_forgets_everything(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1, b'{"x":1}')}
    cache = CommitCache()
    cache.parse_all(CommitEvidence(leaves=leaves))
    changed = {0: leaves[0], 1: _leaf(2, B, 1, b'{"x":2}')}  # leaf 1 rewritten
    readable, bad, _ = cache.parse_all(CommitEvidence(leaves=changed))
    assert not bad
    # everything forgotten: both parsed again, from the bytes given now
    assert parses[2:] == [changed[0], changed[1]]
    assert cache.leaves[1][0] == leaf_hash(changed[1])
    found = cache.locate(_key(B, 1), {0, 1})
    assert found is not None
    assert found[1] == readable[1].entries[0]
    assert found[1].sha256 != verify.parse_leaf(leaves[1]).entries[0].sha256


def test_a_leaf_given_parsed_with_another_hash_forgets_everything(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1, b'{"x":1}')}
    cache = CommitCache()
    cache.parse_all(CommitEvidence(parsed=_given(leaves)))
    changed = _given({0: leaves[0], 1: _leaf(2, B, 1, b'{"x":2}')})
    _, bad, _ = cache.parse_all(CommitEvidence(parsed=changed))
    assert not bad
    assert not parses
    assert all(cache.leaves[i] == changed[i] for i in leaves)  # every leaf as now given
    found = cache.locate(_key(B, 1), {0, 1})
    assert found is not None
    assert found[1] == changed[1][1].entries[0]
    assert found[1].sha256 != parse_leaf(leaves[1]).entries[0].sha256


def test_bytes_that_are_no_leaf_are_reported_and_not_held(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 3: b"not a leaf"}
    cache = CommitCache()
    for _ in range(2):
        readable, bad, keys = cache.parse_all(CommitEvidence(leaves=leaves))
        assert list(readable) == [0]
        assert list(bad) == [3]
        assert isinstance(bad[3], LeafFormatError)
        assert 3 not in cache.leaves
        assert keys[3] == leaf_hash(leaves[3])  # still proven in the checkpoint by its hash
    assert parses == [leaves[0], leaves[3], leaves[3]]  # the bad one tried each time

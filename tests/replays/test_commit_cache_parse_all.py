"""The commit check's leaves of a round parsed in one walk (``CommitCache.parse_all``, branch
``vcpu6``): a leaf the cache holds is answered as it was parsed, whether the round names the
very bytes object parsed or an equal one (a live shoe's rounds name every leaf of their shoe),
without parsing it again; a leaf held with other bytes than those parsed makes the cache forget
everything and parse every leaf from the bytes now given (what the commit check then compares
the records with); bytes that are no leaf are reported, never held."""

from __future__ import annotations

from uuid import UUID

import pytest

import replays.verify as verify
from domain.commit_leaf import COMMIT, LeafFormatError, leaf_bytes
from domain.commits import CommittedEvent
from replays.verify import CommitCache, _key

A, B = UUID(int=1), UUID(int=2)


def _leaf(n: int, oid: UUID, version: int, state: bytes = b"{}") -> bytes:
    return leaf_bytes(COMMIT, [CommittedEvent(n, oid, version, "domain.test:T.Happened", state)])


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes given to the parser, in order."""
    seen: list[bytes] = []
    parse = verify.parse_leaf

    def counted(data: bytes) -> object:
        seen.append(data)
        return parse(data)

    monkeypatch.setattr(verify, "parse_leaf", counted)
    return seen


def test_held_leaves_are_answered_without_a_parse(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1)}
    cache = CommitCache()
    first, bad = cache.parse_all(leaves)
    assert not bad
    assert parses == [leaves[0], leaves[1]]
    # equal bytes in other objects (the leaf read again from the table): the same answer
    again = {i: bytes(bytearray(data)) for i, data in leaves.items()}
    assert all(again[i] is not leaves[i] for i in leaves)
    second, bad = cache.parse_all(again)
    assert not bad
    assert len(parses) == 2  # nothing parsed again
    assert all(second[i] is first[i] for i in leaves)


def test_a_leaf_with_other_bytes_forgets_everything(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 1: _leaf(2, B, 1, b'{"x":1}')}
    cache = CommitCache()
    cache.parse_all(leaves)
    changed = {0: leaves[0], 1: _leaf(2, B, 1, b'{"x":2}')}  # leaf 1 rewritten
    readable, bad = cache.parse_all(changed)
    assert not bad
    # everything forgotten: both parsed again, from the bytes given now
    assert parses[2:] == [changed[0], changed[1]]
    assert cache.leaves[1][0] is changed[1]
    found = cache.locate(_key(B, 1), {0, 1})
    assert found is not None
    assert found[1] == readable[1].entries[0]
    assert found[1].sha256 != verify.parse_leaf(leaves[1]).entries[0].sha256


def test_bytes_that_are_no_leaf_are_reported_and_not_held(parses: list[bytes]) -> None:
    leaves = {0: _leaf(1, A, 1), 3: b"not a leaf"}
    cache = CommitCache()
    for _ in range(2):
        readable, bad = cache.parse_all(leaves)
        assert list(readable) == [0]
        assert list(bad) == [3]
        assert isinstance(bad[3], LeafFormatError)
        assert 3 not in cache.leaves
    assert parses == [leaves[0], leaves[3], leaves[3]]  # the bad one tried each time

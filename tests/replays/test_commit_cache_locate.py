"""The commit check's index of leaf entries (``replays.verify.CommitCache``): each event keyed
by one integer (its stream and version), an event that one leaf names kept as one integer (the
leaf's index and the entry's position), not a list of tuples, and :meth:`CommitCache.locate`
answers as the list of ``(index, entry)`` it replaced did: the first of the given leaves, by
index, that commits to the event, with that leaf's entry.
"""

from __future__ import annotations

import random
from uuid import UUID

from domain.commit_leaf import COMMIT, LeafEntry, leaf_bytes
from domain.commits import CommittedEvent
from replays.verify import CommitCache, _key


def _event(n: int, oid: UUID, version: int, state: bytes = b"{}") -> CommittedEvent:
    return CommittedEvent(n, oid, version, "domain.test:Thing.Happened", state)


def _reference(
    leaves: dict[int, list[CommittedEvent]], key: tuple[int, int], among: set[int]
) -> int | None:
    """The index the list-based index gave: every leaf naming the event, sorted by index,
    the first among ``among``."""
    holding = sorted(
        i
        for i, events in leaves.items()
        if any(_key(e.originator_id, e.originator_version) == key for e in events)
    )
    return next((i for i in holding if i in among), None)


def test_one_leaf_an_event_is_kept_without_a_list() -> None:
    a, b = UUID(int=1), UUID(int=2)
    cache = CommitCache()
    cache.parsed(0, leaf_bytes(COMMIT, [_event(1, a, 1), _event(2, b, 1)]))
    cache.parsed(1, leaf_bytes(COMMIT, [_event(3, a, 2)]))
    assert all(type(k) is int and type(v) is int for k, v in cache.located.items())
    found = cache.locate(_key(a, 2), {0, 1})
    assert found is not None
    index, entry = found
    assert index == 1
    assert isinstance(entry, LeafEntry)
    assert (entry.originator_id, entry.version, entry.notification_id) == (a, 2, 3)
    assert cache.locate(_key(a, 2), {0}) is None  # its leaf is not among those given
    assert cache.locate(_key(b, 7), {0, 1}) is None  # no leaf names it


def test_several_leaves_naming_an_event_first_by_index() -> None:
    a = UUID(int=5)
    cache = CommitCache()
    # parsed out of index order: the entries are still kept by index
    cache.parsed(4, leaf_bytes(COMMIT, [_event(9, a, 1, b'{"x":2}')]))
    cache.parsed(2, leaf_bytes(COMMIT, [_event(5, a, 1, b'{"x":1}')]))
    cache.parsed(7, leaf_bytes(COMMIT, [_event(12, a, 1, b'{"x":3}')]))
    many = cache.located[_key(a, 1)]
    assert isinstance(many, list)
    assert [at >> 32 for at in many] == [2, 4, 7]
    for among, want in (({2, 4, 7}, 2), ({4, 7}, 4), ({7}, 7), ({3}, None), (set(), None)):
        found = cache.locate(_key(a, 1), among)
        assert (found[0] if found else None) == want
    found = cache.locate(_key(a, 1), {4, 7})
    assert found is not None
    assert found[1].notification_id == 9


def test_locate_equals_the_list_based_index() -> None:
    rng = random.Random(15)
    ids = [UUID(int=i) for i in range(1, 6)]
    leaves: dict[int, list[CommittedEvent]] = {}
    n = 0
    for index in rng.sample(range(40), 25):
        events = []
        for _ in range(rng.randint(1, 6)):
            n += 1
            events.append(_event(n, rng.choice(ids), rng.randint(1, 4)))
        leaves[index] = events
    cache = CommitCache()
    for index, events in leaves.items():
        cache.parsed(index, leaf_bytes(COMMIT, events))
    keys = {_key(oid, v) for oid in ids for v in range(1, 6)}
    assert any(type(v) is list for v in cache.located.values())
    assert any(type(v) is int for v in cache.located.values())
    for _ in range(200):
        among = set(rng.sample(range(40), rng.randint(0, 40)))
        for key in keys:
            found = cache.locate(key, among)
            assert (found[0] if found else None) == _reference(leaves, key, among)
            if found is not None:
                index, entry = found
                assert _key(entry.originator_id, entry.version) == key
                assert entry in cache.leaves[index][1].entries


def test_keys_are_one_per_stream_and_version() -> None:
    a, b = UUID(int=2**128 - 1), UUID(int=0)
    keys = [_key(oid, v) for oid in (a, b) for v in (0, 1, 2**64 - 1, 2**64, 2**70)]
    assert len(set(keys)) == len(keys)
    assert _key(a, 2**64 - 1) == a.int << 64 | 2**64 - 1
    assert _key(a, 2**64) == (a.int, 2**64)  # a forged leaf's version: never an int's key


def test_an_entry_beyond_64_bit_versions_is_located() -> None:
    a = UUID(int=9)
    cache = CommitCache()
    cache.parsed(3, leaf_bytes(COMMIT, [_event(1, a, 2**64 + 1), _event(2, a, 1)]))
    found = cache.locate(_key(a, 2**64 + 1), {3})
    assert found is not None
    assert (found[0], found[1].version) == (3, 2**64 + 1)
    assert cache.locate(_key(a, 1), {3}) is not None


def test_by_stream_holds_every_leaf_of_a_stream_whose_entries_are_interleaved() -> None:
    """``CommitCache.by_stream`` (a stream's leaves: the round's own transactions in the
    commit check) is looked up once per run of a stream's entries: a leaf listing streams
    A, B, A (a forged or reordered leaf) still names its leaf for both, and each leaf of a
    stream is there, however its entries are ordered."""
    a, b, c = UUID(int=1), UUID(int=2), UUID(int=3)
    cache = CommitCache()
    cache.parsed(0, leaf_bytes(COMMIT, [_event(1, a, 1), _event(2, b, 1), _event(3, a, 2)]))
    cache.parsed(1, leaf_bytes(COMMIT, [_event(4, b, 2), _event(5, b, 3)]))
    cache.parsed(2, leaf_bytes(COMMIT, [_event(6, c, 1), _event(7, a, 3)]))
    assert cache.by_stream == {a.int: {0, 2}, b.int: {0, 1}, c.int: {2}}
    for key, index in [((a, 2), 0), ((b, 3), 1), ((a, 3), 2), ((c, 1), 2)]:
        found = cache.locate(_key(*key), {0, 1, 2})
        assert found is not None
        assert found[0] == index


def test_a_record_is_committed_exactly_when_no_finding_is_made_of_it() -> None:
    """``_committed`` (the commit check's test of each record against its leaf entry, a
    finding made only when it fails) says a record is the one its entry committed to exactly
    when ``_record_finding`` finds nothing wrong with it: the same topic and the SHA-256 of the
    same stored bytes, for a record as stored, one whose store compresses it (the leaf commits
    to the bytes as stored) and one kept by its digest (``Digested``)."""
    from replays.bundle import Decoded, digested
    from replays.chain import Record
    from replays.verify import _committed, _record_finding

    oid = UUID(int=9)
    topic = "domain.test:Thing.Happened"
    plain = Record(oid, 1, topic, b'{"a":1}')
    compressed = Record(oid, 1, topic, b'{"a":1}', stored=b"zipped")
    cache = CommitCache()
    entries = {
        "same": [_event(1, oid, 1, b'{"a":1}')],
        "as stored": [_event(1, oid, 1, b"zipped")],
        "other bytes": [_event(1, oid, 1, b'{"a":2}')],
        "other topic": [CommittedEvent(1, oid, 1, "domain.test:Other", b'{"a":1}')],
    }
    for index, events in enumerate(entries.values()):
        cache.parsed(index, leaf_bytes(COMMIT, events))
    for record in (plain, compressed, digested(plain), digested(compressed)):
        for index in range(len(entries)):
            found = cache.locate(_key(oid, 1), {index})
            assert found is not None
            committed = _committed(record, found[1])
            assert committed == (_record_finding(Decoded(record, None), "round", found) is None)
    assert _committed(plain, cache.locate(_key(oid, 1), {0})[1])  # type: ignore[index]
    assert _committed(compressed, cache.locate(_key(oid, 1), {1})[1])  # type: ignore[index]
    assert not _committed(compressed, cache.locate(_key(oid, 1), {0})[1])  # type: ignore[index]
    assert not _committed(plain, cache.locate(_key(oid, 1), {3})[1])  # type: ignore[index]

"""The commit check's index of leaf entries made a run of entries at a time
(``CommitCache.parsed``, branch ``vcore2``): a run of consecutive versions of one stream that
no leaf named yet goes into ``located`` in one update; an entry named before, an entry in no
run (version 0) or a version beyond the integer keys is indexed an entry at a time. Whatever the
leaves, the index (``located``, ``by_stream``) and the shoes' results forgotten are exactly
those of indexing every entry one by one (``CommitCache._index_entries``, the way every leaf
was indexed before), and a tampered record of a second round of one shoe is still found.
"""

from __future__ import annotations

import random
from uuid import UUID

from domain.commit_leaf import COMMIT, forget_parsed, leaf_bytes, parse_leaf
from domain.commits import CommittedEvent
from replays.bundle import Decoded
from replays.chain import Record
from replays.verify import CommitCache, _key, _ShoeChecked

STREAMS = [UUID(int=n) for n in (1, 2, 3, 2**100 + 7)]
TOPIC = "domain.test:Thing.Happened"


def _leaf(events: list[tuple[UUID, int]], start: int) -> bytes:
    return leaf_bytes(
        COMMIT,
        [
            CommittedEvent(start + i, oid, v, TOPIC, f'{{"n":{start + i}}}'.encode())
            for i, (oid, v) in enumerate(events)
        ],
    )


def _random_leaf(rng: random.Random, named: list[tuple[UUID, int]]) -> list[tuple[UUID, int]]:
    """A leaf's entries: runs of consecutive versions of a stream, with now and then a
    version 0, a version beyond the integer keys, a gap, or an event a leaf named before."""
    out: list[tuple[UUID, int]] = []
    for _ in range(rng.randint(1, 5)):
        oid = rng.choice(STREAMS)
        pick = rng.random()
        if pick < 0.1:
            out.append((oid, 0))
            continue
        if pick < 0.15:
            out.append((oid, 2**64 - 1 + rng.randint(0, 2)))
            continue
        if pick < 0.3 and named:
            out.append(rng.choice(named))
            continue
        first = rng.randint(1, 40)
        out += [(oid, first + i) for i in range(rng.randint(1, 6))]
        if rng.random() < 0.2:  # a gap in the run
            out.append((oid, first + 10))
    named += out
    return out


def _reference(datas: list[bytes], shoes: dict[int, _ShoeChecked]) -> CommitCache:
    cache = CommitCache()
    cache.shoes = shoes
    for index, data in enumerate(datas):
        parsed = parse_leaf(data)
        cache.leaves[index] = (data, parsed)
        cache._index_entries(index, parsed)
    return cache


def _shoes(rng: random.Random) -> dict[int, _ShoeChecked]:
    out = {}
    for oid in STREAMS:
        if rng.random() < 0.7:
            checked = _ShoeChecked()
            checked.keys = {_key(oid, rng.randint(1, 45)) for _ in range(rng.randint(1, 3))}
            out[oid.int] = checked
    return out


def test_the_index_by_runs_is_the_index_entry_by_entry() -> None:
    rng = random.Random(15)
    for _ in range(400):
        named: list[tuple[UUID, int]] = []
        leaves = [_random_leaf(rng, named) for _ in range(rng.randint(1, 6))]
        datas = [_leaf(events, 100 * i) for i, events in enumerate(leaves)]
        seed = rng.random()
        forget_parsed()  # runs made by the cache itself
        cache = CommitCache()
        cache.shoes = _shoes(random.Random(seed))
        for index in rng.sample(range(len(datas)), len(datas)):  # in any order
            cache.parsed(index, datas[index])
        order = sorted(cache.leaves)
        ref = _reference([datas[i] for i in order], _shoes(random.Random(seed)))
        assert order == list(range(len(datas)))
        assert cache.located == ref.located, leaves
        assert cache.by_stream == ref.by_stream, leaves
        assert set(cache.shoes) == set(ref.shoes), leaves


def test_a_shoe_record_tampered_after_its_first_round_is_found() -> None:
    """A shoe's records checked for one round, then a record of the next round's draws
    changed: the run it is in is indexed by the run, and the changed bytes are found."""
    shoe = UUID(int=9)
    leaf0 = _leaf([(shoe, 1), (shoe, 2), (shoe, 3)], 1)
    leaf1 = _leaf([(shoe, 4), (shoe, 5), (shoe, 6)], 4)
    cache = CommitCache()
    cache.parsed(0, leaf0)

    def decoded(version: int, state: bytes) -> Decoded:
        record = Record(shoe, version, TOPIC, state)
        return Decoded(record, None)

    first = [decoded(v, f'{{"n":{v}}}'.encode()) for v in (1, 2, 3)]
    assert cache.check_records(first, "shoe", {0}, set()) == []
    cache.parsed(1, leaf1)
    later = [decoded(4, b'{"n":4}'), decoded(5, b'{"n":55}'), decoded(6, b'{"n":6}')]
    found = cache.check_records(later, "shoe", {0, 1}, set())
    assert [(f.field, f.expected is not None) for f in found] == [("(bytes)", True)]
    assert "version 5" in found[0].message
    assert "leaf 1" in found[0].message

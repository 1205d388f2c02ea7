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
from replays.merkle import leaf_hash
from replays.verify import CommitCache, _deleted, _deleted_from, _key, _ShoeChecked

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
        if pick < 0.2:  # about the last integer key (2**64 - 1), or beyond it
            first = 2**64 - rng.randint(1, 3)
            out += [(oid, first + i) for i in range(rng.randint(1, 3))]
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
        cache.leaves[index] = (leaf_hash(data), parsed)
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


def test_the_deleted_check_by_runs_finds_what_the_check_entry_by_entry_finds() -> None:
    """The round's own leaves' check that the records still hold every event committed with
    the round (``_deleted_from``, a run at a time) gives the findings, in order, of checking
    every entry (``_deleted``), whatever the records hold (all, some, none, some by the
    shoe's keys only)."""
    rng = random.Random(19)
    seen = 0
    for _ in range(400):
        named: list[tuple[UUID, int]] = []
        events = _random_leaf(rng, named)
        parsed = parse_leaf(_leaf(events, 1))
        mine = {oid.int for oid in STREAMS if rng.random() < 0.7}
        keys = [_key(oid, v) for oid, v in events]
        held = {k for k in keys if rng.random() < 0.8}
        shoe = {k for k in keys if k not in held and rng.random() < 0.5}
        if rng.random() < 0.4:  # every event held: the usual case, no entry walked
            held = set(keys)
        expected = _deleted(parsed.entries, 3, mine, held, shoe)
        assert _deleted_from(parsed, 3, mine, held, shoe) == expected, events
        seen += bool(expected)
    assert seen > 50  # findings were made, and found the same

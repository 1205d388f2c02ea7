"""The commit check's test of each record against its leaf entry (``replays.verify``:
``CommitCache.check_records``, which locates, hashes and compares every record of a round, its
shoe and its wallets, the usual case of one leaf naming the event done in its own loop): its
findings are exactly those of ``_record_finding`` given ``CommitCache.locate``'s entry, record
by record and in order, and it adds every record's key, for records as stored, compressed or
kept by their digest, tampered by a byte or a topic, named by no leaf, by a leaf not among the
round's, or by several leaves.
"""

from __future__ import annotations

import random
from uuid import UUID

from domain.commit_leaf import COMMIT, leaf_bytes
from domain.commits import CommittedEvent
from replays.bundle import Decoded, digested
from replays.chain import Record
from replays.verify import CommitCache, _key, _record_finding

TOPIC = "domain.test:Thing.Happened"
A, B, C, D = (UUID(int=n) for n in (11, 12, 13, 14))


def _leaves() -> dict[int, list[CommittedEvent]]:
    def e(n: int, oid: UUID, version: int, state: bytes, topic: str = TOPIC) -> CommittedEvent:
        return CommittedEvent(n, oid, version, topic, state)

    return {
        0: [e(1, A, 1, b'{"a":1}'), e(2, A, 2, b'{"a":2}'), e(3, B, 1, b'{"b":1}')],
        1: [e(4, A, 3, b'{"a":3}'), e(5, C, 1, b"zipped")],
        # two leaves name B 2: the first among the round's leaves is the one compared
        2: [e(6, B, 2, b'{"b":2}')],
        3: [e(7, B, 2, b'{"b":"other"}')],
        4: [e(8, C, 2, b'{"c":2}', "domain.test:Other.Topic")],
        5: [e(9, A, 4, b'{"a":4}')],
    }


def _records() -> list[Record]:
    return [
        Record(A, 1, TOPIC, b'{"a":1}'),
        Record(A, 2, TOPIC, b'{"a":2}'),
        Record(A, 2, TOPIC, b'{"a":3}'),  # one byte changed after commit
        Record(A, 3, TOPIC, b'{"a":3}'),
        Record(A, 4, TOPIC, b'{"a":4}'),  # its leaf (5) is not among the round's below
        Record(B, 1, TOPIC, b'{"b":1}'),
        Record(B, 2, TOPIC, b'{"b":2}'),
        Record(B, 2, TOPIC, b'{"b":"other"}'),
        Record(C, 1, TOPIC, b'{"c":1}', stored=b"zipped"),  # the leaf commits to the stored
        Record(C, 1, TOPIC, b'{"c":1}', stored=b"zipper"),
        Record(C, 2, TOPIC, b'{"c":2}'),  # its entry names another topic
        Record(D, 1, TOPIC, b'{"d":1}'),  # in no leaf
        Record(D, 2**64 + 1, TOPIC, b'{"d":2}'),  # a version beyond the integer keys
    ]


def _reference(
    cache: CommitCache, records: list[Decoded], stream: str, leaves: set[int]
) -> tuple[list[object], set[object]]:
    """The findings and keys of each record checked on its own: ``locate``, then
    ``_record_finding`` (which makes none for a record its entry committed to)."""
    found: list[object] = []
    keys: set[object] = set()
    for d in records:
        key = _key(d.record.originator_id, d.record.version)
        keys.add(key)
        finding = _record_finding(d, stream, cache.locate(key, leaves))
        if finding is not None:
            found.append(finding)
    return found, keys


def test_the_findings_are_each_records_own() -> None:
    cache = CommitCache()
    for index, events in _leaves().items():
        cache.parsed(index, leaf_bytes(COMMIT, events))
    pool = _records()
    pool += [digested(r) for r in pool]
    rng = random.Random(15)
    for _ in range(300):
        records = [Decoded(r, None) for r in rng.sample(pool, rng.randint(0, len(pool)))]
        for d in records:
            d.at = rng.choice([None, rng.randint(1, 40)])
        leaves = set(rng.sample(range(7), rng.randint(0, 7)))
        stream = rng.choice(["round", "shoe", "wallet"])
        keys: set[object] = {"before"}
        found = cache.check_records(records, stream, leaves, keys)  # type: ignore[arg-type]
        expected, expected_keys = _reference(cache, records, stream, leaves)
        assert found == expected
        assert keys == expected_keys | {"before"}


def test_every_tampered_or_missing_record_is_found() -> None:
    cache = CommitCache()
    for index, events in _leaves().items():
        cache.parsed(index, leaf_bytes(COMMIT, events))
    records = [Decoded(r, None, at=n) for n, r in enumerate(_records(), start=1)]
    keys: set[object] = set()
    found = cache.check_records(records, "round", {0, 1, 2, 3, 4}, keys)  # type: ignore[arg-type]
    fields = [(f.position, f.field) for f in found]
    assert fields == [
        (3, "(bytes)"),  # A 2: one byte changed
        (5, "(commit)"),  # A 4: its leaf is not the round's
        (8, "(bytes)"),  # B 2 as leaf 3 has it: leaf 2, the first, is compared
        (10, "(bytes)"),  # C 1: other stored bytes than committed
        (11, "(bytes)"),  # C 2: another topic than its entry's
        (12, "(commit)"),  # D 1: in no leaf
        (13, "(commit)"),  # D 2**64 + 1: in no leaf
    ]
    assert all(f.check == "commit" for f in found)
    assert len(keys) == 10  # every record's key (three share theirs with the record before)

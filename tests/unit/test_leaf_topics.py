"""``domain.commit_leaf.leaf_bytes`` remembers the topics it found sealable (``_SEALABLE``) and
``domain.commits._committed`` makes a transaction's events without their constructors' Python
steps: the leaves and the events are the same as written out the long way, a topic that
cannot be sealed is refused every time, and the memory of topics is bounded."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import ProgrammingError, StoredEvent
from leafkit import expected_leaf

import domain.commit_leaf as commit_leaf
from domain.commit_leaf import COMMIT, LeafFormatError, forget_parsed, leaf_bytes
from domain.commits import CommittedEvent, _committed


@pytest.mark.parametrize("bad", ["", "a\nb", "a\rb", "\n", "x\r"])
def test_a_topic_that_cannot_be_sealed_is_refused_every_time(bad: str) -> None:
    good = CommittedEvent(1, uuid4(), 1, "domain.shoe:Shoe.Drawn", b"{}")
    assert leaf_bytes(COMMIT, [good]) == expected_leaf([good])
    for _ in range(3):
        with pytest.raises(LeafFormatError, match="cannot be sealed"):
            leaf_bytes(COMMIT, [good, CommittedEvent(2, uuid4(), 1, bad, b"{}")])
    assert bad not in commit_leaf._SEALABLE
    assert leaf_bytes(COMMIT, [good]) == expected_leaf([good])


def test_the_topics_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit_leaf, "_IDS_MAX", 4)
    commit_leaf._SEALABLE.clear()
    oid = uuid4()
    for n in range(20):
        events = [CommittedEvent(n, oid, n + 1, f"t.{n}", bytes([n]))]
        assert leaf_bytes(COMMIT, events) == expected_leaf(events)
        assert len(commit_leaf._SEALABLE) <= 4
    forget_parsed()


def test_committed_events_are_the_named_tuples_of_the_stored_rows() -> None:
    oid = uuid4()
    stored = [
        StoredEvent(oid, 1, "a.b:C", b'{"x":1}'),
        StoredEvent(str(oid), 2, "a.b:D", bytearray(b'{"x":2}')),  # a store's text and buffer
        StoredEvent(UUID(int=5), 3, "a.b:E", memoryview(b"{}")),
    ]
    made = _committed(stored, [7, 8, 9])
    assert made == [
        CommittedEvent(7, oid, 1, "a.b:C", b'{"x":1}'),
        CommittedEvent(8, oid, 2, "a.b:D", b'{"x":2}'),
        CommittedEvent(9, UUID(int=5), 3, "a.b:E", b"{}"),
    ]
    for e in made:
        assert type(e) is CommittedEvent
        assert type(e.originator_id) is UUID
        assert type(e.state) is bytes
    assert _committed([], None) == []
    with pytest.raises(ProgrammingError, match="cannot seal"):
        _committed(stored, [7, 8])

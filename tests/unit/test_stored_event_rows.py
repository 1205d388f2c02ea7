"""``domain.boundless.streams.stored_event``: the library's ``StoredEvent`` built without its
frozen dataclass's ``__init__`` is the very object the constructor makes (class, fields,
equality, hash, repr, frozen)."""

from __future__ import annotations

import dataclasses
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from domain.boundless.streams import stored_event


@pytest.mark.parametrize(
    ("oid", "version", "topic", "state"),
    [
        (UUID(int=1), 1, "domain.boundless.participation:Participation.Joined", b"{}"),
        (UUID(int=2**128 - 1), 2**62, "t", b""),
        (UUID("12345678-1234-5678-1234-567812345678"), 7, "x:y", bytes(range(256))),
    ],
)
def test_the_same_object_as_the_constructor_makes(
    oid: UUID, version: int, topic: str, state: bytes
) -> None:
    made = stored_event(oid, version, topic, state)
    want = StoredEvent(oid, version, topic, state)
    assert type(made) is StoredEvent
    assert made == want
    assert vars(made) == vars(want)
    assert list(vars(made)) == [f.name for f in dataclasses.fields(StoredEvent)]
    assert dataclasses.astuple(made) == dataclasses.astuple(want)
    assert repr(made) == repr(want)
    assert made.originator_id is oid
    assert made.state is state
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.topic = "other"  # type: ignore[misc]
    assert made != StoredEvent(oid, version + 1, topic, state)

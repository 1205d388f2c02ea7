"""``domain.event_store.LeanEventStore`` stores and returns what the library's ``put`` does.

* Rounds of every variant, seeds and clock fixed, store the very same bytes (id, version,
  topic, state) with the application's event store and with the library's.
* On every store, each ``put`` of real rounds hands the recorder stored events equal to the
  library mapper's (same class, same ``__dict__``, a consequence's ``class_version`` 2
  among them) and returns recordings equal to the ones the library's ``put`` builds from
  the same notification ids.
* A mapper with a compressor goes the library's way (the bytes compressed as it does).
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path
from typing import Any
from uuid import uuid4

import eventsourcing.domain as domain_module
import pytest
from eventsourcing.application import Application
from eventsourcing.compressor import ZlibCompressor
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    EventStore,
    Mapper,
    Notification,
    Recording,
    StoredEvent,
)
from eventsourcing.popo import POPOApplicationRecorder

import domain.services.shoes as shoes
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.event_store import LeanEventStore
from domain.persistence import OrjsonTranscoder, environment_for
from domain.rules import VARIANTS
from domain.services.base import AuditBase
from tests.integration.test_record_paths import FIXED_TIME, _stored_rounds


@pytest.mark.parametrize("variant", VARIANTS)
def test_rounds_store_the_same_bytes_as_with_the_library_event_store(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = itertools.count()
    monkeypatch.setattr(shoes, "new_seed", lambda: bytes([next(counter) % 256]) * 32)
    monkeypatch.setattr(domain_module, "datetime_now_with_tzinfo", lambda: FIXED_TIME)
    ours = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/ours.db"), variant, raw=True)
    counter = itertools.count()
    monkeypatch.setattr(AuditBase, "construct_event_store", Application.construct_event_store)
    assert type(RoundAudit().events) is EventStore  # the library's
    theirs = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/theirs.db"), variant, raw=True)
    assert len(ours) > 40
    assert ours == theirs


def _same(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    assert ours == theirs
    assert vars(ours) == vars(theirs)
    assert list(vars(ours)) == list(vars(theirs))  # the fields in the library's order


def test_each_put_gives_the_recorder_and_the_caller_what_the_library_does(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_on_every_store
    assert type(app.events) is LeanEventStore
    mapper, recorder = app.events.mapper, app.events.recorder
    seen: list[tuple[list[Any], list[StoredEvent], list[Recording[Any]]]] = []
    inserted: list[tuple[list[StoredEvent], Any]] = []
    insert = recorder.insert_events
    put = LeanEventStore.put

    def recording_insert(stored: list[StoredEvent], **kwargs: Any) -> Any:
        ids = insert(stored, **kwargs)
        inserted.append((list(stored), ids))
        return ids

    def recording_put(self: LeanEventStore, events: Any, **kwargs: Any) -> Any:
        recordings = put(self, events, **kwargs)
        stored, ids = inserted.pop()
        seen.append((list(events), stored, recordings))
        # what the library's put would have returned for the same ids
        library = [
            Recording(e, Notification(s.originator_id, s.originator_version, s.topic, s.state, n))
            for e, s, n in zip(events, stored, ids or [], strict=False)
        ]
        assert len(recordings) == len(library)
        for ours, theirs in zip(recordings, library, strict=True):
            _same(ours, theirs)
            _same(ours.notification, theirs.notification)
            assert ours.domain_event is theirs.domain_event
        return recordings

    monkeypatch.setattr(recorder, "insert_events", recording_insert)
    monkeypatch.setattr(LeanEventStore, "put", recording_put)
    simulate(app, variant="european", rounds=2, players=3, table="t-eu")
    simulate(app, variant="deluxe", rounds=2, players=3, table="t-dx")
    assert len(seen) > 20
    versions = set()
    for events, stored, recordings in seen:
        assert len(stored) == len(events)
        for event, s in zip(events, stored, strict=True):
            _same(s, mapper.to_stored_event(event))
            versions.add(getattr(type(event), "class_version", 1))
        assert [r.notification.id for r in recordings] == sorted(
            r.notification.id for r in recordings
        )
    assert versions == {1, 2}  # a consequence's class_version is stored as the library does


class _Thing(Aggregate):
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_mapper_with_a_compressor_goes_the_library_way() -> None:
    transcoder = OrjsonTranscoder()
    for compressor in (None, ZlibCompressor()):
        mapper: Mapper[Any] = Mapper(transcoder=transcoder, compressor=compressor)
        ours = LeanEventStore(mapper=mapper, recorder=POPOApplicationRecorder())
        theirs = LeanEventStore(mapper=mapper, recorder=POPOApplicationRecorder())
        thing = _Thing(name=f"n-{uuid4()}")
        events = thing.collect_events()
        mine = ours.put(events)
        library = super(LeanEventStore, theirs).put(events)
        assert mine == library
        state = mine[0].notification.state
        if compressor is not None:
            assert zlib.decompress(state) == transcoder.encode(dict(_payload(events[0])))
        stored = ours.recorder.select_events(thing.id)
        assert stored == theirs.recorder.select_events(thing.id)


def _payload(event: Any) -> dict[str, Any]:
    state = dict(vars(event))
    del state["originator_id"], state["originator_version"]
    return state

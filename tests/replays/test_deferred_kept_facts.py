"""``replays.bundle.Deferred.same_as`` given a kept fact (what a boundless round's
re-execution derives: an instance of its event class holding its payload alone,
``Recorder.derived``) compares it with the stored state as re-execution compares a fact with a
decoded event (``replays.reexecute.same_state``: the items compared in C), not field by field:
it gives the answer the field-by-field comparison gives for the same payload in an event of the
library (with its id, version and timestamp, which that comparison skips), on a record's bytes
changed at random (values, keys removed or added, the library's own keys, tags, bytes that are
not an object) and on a payload changed at random; and says equal only where the library's
decoding and ``same_payload`` do."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statekit import change_state

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from replays.bundle import Deferred, StoreReader, _decode
from replays.chain import Record
from replays.reexecute import _SKIP, same_payload


@pytest.fixture(scope="module")
def deferred_records() -> list[Any]:
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    try:
        simulate(app, variant="boundless", rounds=1, players=4)
        b = StoreReader(app, defer=True).round_bundle(SharedHand.create_id("sim-boundless", 1))
    finally:
        app.close()
    out = [d for d in b.round if d.deferred]
    assert len({d.cls for d in out}) >= 4  # hands opened, cards taken, stands, ...
    return out


def _kept(cls: type, payload: dict[str, Any]) -> Any:
    """``payload`` as ``Recorder.derived`` keeps a fact: an instance of ``cls`` holding it."""
    e: Any = object.__new__(cls)
    object.__setattr__(e, "__dict__", payload)
    return e


@given(data=st.data())
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_kept_fact_is_compared_as_its_event_is(deferred_records: list[Any], data: Any) -> None:
    d = data.draw(st.sampled_from(deferred_records))
    plain = d._plain
    event = _decode(plain, d.record, None).event
    payload = {k: v for k, v in event.__dict__.items() if k not in _SKIP}
    if data.draw(st.booleans()):  # the re-derived payload differs (or not) from the stored one
        change_state(data, payload, st.sampled_from(["zz", "hand", "total"]))
    # the same payload in an event of the library (what ``same_as`` compared before)
    library = _kept(type(event), {**event.__dict__, **payload})
    for k in set(event.__dict__) - _SKIP - set(payload):
        del library.__dict__[k]
    state: Any = orjson.loads(d.record.state)
    change_state(data, state)
    raw = data.draw(
        st.sampled_from([orjson.dumps(state, option=orjson.OPT_SORT_KEYS), b"{bad", b"[]", b"null"])
    )
    record = Record(d.record.originator_id, d.record.version, d.record.topic, raw)
    decoded = _decode(plain, record, None)
    kept = _kept(type(event), payload)
    said = Deferred(plain, record, d.cls, None).same_as(kept)
    assert said == Deferred(plain, record, d.cls, None).same_as(library)
    if said:
        assert decoded.event is not None
        assert same_payload(kept, decoded.event)


def test_an_untouched_record_is_its_kept_fact_and_a_changed_one_is_not(
    deferred_records: list[Any],
) -> None:
    for d in deferred_records:
        event = _decode(d._plain, d.record, None).event
        payload = {k: v for k, v in event.__dict__.items() if k not in _SKIP}
        assert Deferred(d._plain, d.record, d.cls, None).same_as(_kept(type(event), payload))
        for key in payload:
            other = {**payload, key: "changed"}
            deferred = Deferred(d._plain, d.record, d.cls, None)
            assert not deferred.same_as(_kept(type(event), other))
            assert deferred.deferred  # not compared equal: left as it was
        # one field more in the re-derived fact, or one fewer
        assert not Deferred(d._plain, d.record, d.cls, None).same_as(
            _kept(type(event), {**payload, "zz": 1})
        )
        fewer = dict(payload)
        fewer.popitem()
        assert not Deferred(d._plain, d.record, d.cls, None).same_as(_kept(type(event), fewer))

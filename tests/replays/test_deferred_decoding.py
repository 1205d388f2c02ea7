"""Deferred decoding (``replays.bundle.Deferred``): a boundless round verified with the
consequences that neither move money nor name a player left undecoded until re-execution
compares them (``StoreReader(defer=True)``, what ``StoreVerifier`` reads) gets the very verdict
of the same records all decoded first (as before): the same findings, in the same order, at the
same positions, with the same values, on the in-memory store, SQLite (plain and compressed) and
PostgreSQL. Checked on an untouched round and on a consequence changed in each way its bytes can
change (a field's value, a field added or removed, bytes that are not JSON, a timestamp that does
not decode, a tagged value, its stored class version gone, another class's topic, deleted,
swapped with the next one), a record appended after the round's end, and an input changed; and
with real SQL changes through ``StoreVerifier`` on SQLite and PostgreSQL. Deferred records
compared equal are never decoded, and every record that does not decode is still reported. And
at random (hypothesis): ``Deferred.same_as`` on a record's bytes changed (values, keys removed or
added, the library's own keys, tags, bytes that are not an object) says equal only where the
library's decoding and ``same_payload`` do."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statekit import change_state
from storekit import Store, sign

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from replays.bundle import Deferred, RoundBundle, StoreReader, _decode, decode_stored, deferrable
from replays.chain import Record
from replays.record import SCRIPTS, play
from replays.reexecute import same_payload
from replays.verify import CommitCache, StoreVerifier, verify_bundle

PAID = next(s for s in SCRIPTS if s.name == "boundless-side-bets-dealer-busts")
ROUNDS = 2


def _record(app: RoundAudit) -> list[UUID]:
    simulate(app, variant="boundless", rounds=ROUNDS, players=4)
    play(app, PAID)
    return [SharedHand.create_id("sim-boundless", n) for n in range(1, ROUNDS + 1)]


# ------------------------------------------------------------------ changes to the records
Records = list[StoredEvent]


def _state(e: StoredEvent) -> dict[str, Any]:
    data = orjson.loads(e.state)
    assert isinstance(data, dict)
    return data


def _with(e: StoredEvent, *, state: bytes | None = None, topic: str | None = None) -> StoredEvent:
    return StoredEvent(
        e.originator_id,
        e.originator_version,
        e.topic if topic is None else topic,
        e.state if state is None else state,
    )


def _dumps(data: dict[str, Any]) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def _target(records: Records, name: str = "CardToHand") -> int:
    """The first deferred record of a participation of class ``name`` (of any deferred class
    when the round has none of that one)."""
    deferred = [
        i
        for i, e in enumerate(records)
        if deferrable(e.topic) and e.topic.startswith(get_topic(Participation) + ".")
    ]
    wanted = get_topic(getattr(Participation, name))
    return next((i for i in deferred if records[i].topic == wanted), deferred[0])


def _edit(fn: Callable[[dict[str, Any]], None], name: str = "CardToHand") -> Any:
    def change(records: Records) -> Records:
        i = _target(records, name)
        data = _state(records[i])
        fn(data)
        return [*records[:i], _with(records[i], state=_dumps(data)), *records[i + 1 :]]

    return change


def _bytes(state: bytes) -> Any:
    def change(records: Records) -> Records:
        i = _target(records)
        return [*records[:i], _with(records[i], state=state), *records[i + 1 :]]

    return change


def _topic(records: Records) -> Records:
    i = _target(records, "HandStood")
    return [
        *records[:i],
        _with(records[i], topic=get_topic(Participation.HandHit)),
        *records[i + 1 :],
    ]


def _deleted(records: Records) -> Records:
    i = _target(records, "HandStood")
    return records[:i] + records[i + 1 :]


def _swapped(records: Records) -> Records:
    i = _target(records, "HandOpened")
    oid = records[i].originator_id
    j = next(j for j in range(i + 1, len(records)) if records[j].originator_id == oid)
    out = list(records)
    out[i] = StoredEvent(oid, records[i].originator_version, records[j].topic, records[j].state)
    out[j] = StoredEvent(oid, records[j].originator_version, records[i].topic, records[i].state)
    return out


def _appended(records: Records) -> Records:
    i = _target(records, "HandStood")
    e = records[i]
    last = max(r.originator_version for r in records if r.originator_id == e.originator_id)
    return [*records, StoredEvent(e.originator_id, last + 1, e.topic, e.state)]


def _input(records: Records) -> Records:
    i = next(i for i, e in enumerate(records) if e.topic == get_topic(Participation.BetPlaced))
    data = _state(records[i])
    data["stake"] = "7.00" if data["stake"] != "7.00" else "8.00"
    return [*records[:i], _with(records[i], state=_dumps(data)), *records[i + 1 :]]


def _two_undecodable(records: Records) -> Records:
    out = _bytes(b"{")(records)
    i = _target(out, "HandStood")
    return [*out[:i], _with(out[i], state=b"[1]"), *out[i + 1 :]]


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(key, value)


CHANGES: dict[str, Callable[[Records], Records]] = {
    "untouched": lambda records: records,
    "a field's value": _edit(lambda d: d.__setitem__("total", d["total"] + 1)),
    "a field added": _edit(_set("zz", 1)),
    "a field removed": _edit(lambda d: d.pop("rule")),
    "not JSON": _bytes(b"{not json"),
    "a JSON list": _bytes(b"[]"),
    "a timestamp that does not decode": _edit(
        lambda d: d.__setitem__("timestamp", {"_data_": "yesterday", "_type_": "datetime_iso"})
    ),
    "a tagged value": _edit(_set("rule", {"_data_": "1", "_type_": "decimal_str"})),
    "an unknown tag": _edit(_set("rule", {"_data_": "1", "_type_": "nothing"})),
    "its class version gone": _edit(lambda d: d.pop("class_version", None), "HandStood"),
    "its class version a string": _edit(_set("class_version", "2"), "HandStood"),
    "another class's topic": _topic,
    "deleted": _deleted,
    "swapped with the next one": _swapped,
    "appended after the end": _appended,
    "an input changed": _input,
    "two records that do not decode": _two_undecodable,
}


def _verdicts(app: RoundAudit, rid: UUID, change: Callable[[Records], Records]) -> list[Any]:
    """The verdict of the changed records read deferred, then all decoded first."""
    verifier = StoreVerifier(app)
    b = verifier.reader.round_bundle(rid)
    assert b.deferring
    records = change(
        [
            StoredEvent(d.record.originator_id, d.record.version, d.record.topic, d.record.state)
            for d in b.round
        ]
    )
    compressor = app.mapper.compressor
    if compressor is not None:  # stored as the store stores them
        records = [_with(e, state=compressor.compress(e.state)) for e in records]
    out = []
    for defer in (True, False):
        decoded = decode_stored(app.mapper, records, defer=deferrable if defer else None)
        for i, d in enumerate(decoded, start=1):
            d.at = i
        changed = dataclasses.replace(b, round=decoded, deferring=defer)
        verdict = verify_bundle(changed, policy=verifier.policy, commits=CommitCache())
        out.append((verdict.as_json(), changed))
    return out


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_deferred_records_give_the_same_verdict(app: RoundAudit, change: str) -> None:
    rid = _record(app)[0]
    same_verdict(app, rid, CHANGES[change], ok=change == "untouched")


def same_verdict(
    app: RoundAudit, rid: UUID, change: Callable[[Records], Records], *, ok: bool
) -> None:
    """The round's records changed by ``change`` get the same verdict read deferred as all
    decoded first (``ok``: a passing one), and nothing is left deferred after it."""
    (deferred, b), (decoded, _) = _verdicts(app, rid, change)
    assert deferred == decoded
    assert deferred["ok"] is ok, deferred
    _every_record_read_once(b)


def _every_record_read_once(b: RoundBundle) -> None:
    # after the verdict nothing is left deferred: each record compared equal or decoded
    assert not any(d.deferred for d in b.round)


def test_records_compared_equal_are_never_decoded(app: RoundAudit) -> None:
    for rid in _record(app):
        verifier = StoreVerifier(app)
        b = verifier.reader.round_bundle(rid)
        deferred = [d for d in b.round if d.deferred]
        assert deferred  # hands opened, cards to hands, stands, the dealer's steps...
        assert all(d.cls is deferrable(d.record.topic) for d in deferred)
        verdict = verify_bundle(b, policy=verifier.policy, commits=CommitCache())
        assert verdict.ok, verdict.as_json()
        assert all(getattr(d, "matched", False) for d in deferred)
        assert not any(d.held for d in deferred)  # not held decoded


# --------------------------------------------------------- real changes, whole verifier
@pytest.fixture
def store(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Store:
    app = RoundAudit(env=environment_for(store_url))
    try:
        _record(app)
    finally:
        app.close()
    assert sign(store_url, tmp_path / "key.pem").checkpoint is not None
    return Store(store_url, tmp_path / "key.pem", capsys)


def _both(store: Store, rid: UUID) -> tuple[dict[str, Any], dict[str, Any]]:
    app = RoundAudit(env=environment_for(store.url))
    try:
        deferred = StoreVerifier(app)
        assert deferred.reader.defer
        plain = StoreVerifier(app)
        plain.reader.defer = False
        return deferred.verify(rid).as_json(), plain.verify(rid).as_json()
    finally:
        app.close()


@pytest.mark.parametrize("how", ["untouched", "not JSON", "a field's value", "deleted"])
def test_the_verifier_reports_the_same_on_the_store(store: Store, how: str) -> None:
    rid = SharedHand.create_id("sim-boundless", 1)
    app = RoundAudit(env=environment_for(store.url))
    try:  # a participation's first deferred record
        b = StoreReader(app, defer=True).round_bundle(rid)
        oid, version = next(
            d.record.key for d in b.round if d.deferred and d.record.originator_id != rid
        )
    finally:
        app.close()
    state = store.rows(oid)[version - 1][2]
    if how == "not JSON":
        store.set_state(oid, version, b"{not json")
    elif how == "a field's value":
        data = orjson.loads(state)
        data["rule"] += "x"
        store.set_state(oid, version, _dumps(data))
    elif how == "deleted":
        store.delete(oid, version=version)
    deferred, decoded = _both(store, rid)
    assert deferred == decoded
    assert deferred["ok"] == (how == "untouched"), deferred


# ------------------------------------------------------- same_as against decoding, at random
@pytest.fixture(scope="module")
def deferred_records() -> list[Any]:
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    try:
        rid = _record(app)[0]
        b = StoreReader(app, defer=True).round_bundle(rid)
    finally:
        app.close()
    return [d for d in b.round if d.deferred]


@given(data=st.data())
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
def test_same_as_says_equal_only_where_decoding_does(
    deferred_records: list[Any], data: Any
) -> None:
    """``Deferred.same_as`` on a record's bytes changed at random says equal only where the
    library's decoding gives an event (every field there) whose payload ``same_payload`` finds
    equal to the re-derived one."""
    d = data.draw(st.sampled_from(deferred_records))
    plain = d._plain
    expected = _decode(plain, d.record, None).event
    state: Any = orjson.loads(d.record.state)
    change_state(data, state)
    raw = data.draw(st.sampled_from([_dumps(state), b"{bad", b"[]", b"null"]))
    record = Record(d.record.originator_id, d.record.version, d.record.topic, raw)
    decoded = _decode(plain, record, None)
    truth = decoded.event is not None and same_payload(expected, decoded.event)
    if Deferred(plain, record, d.cls, None).same_as(expected):
        assert truth

"""The verifier keeps a boundless round's decoded records by the SHA-256 of their stored bytes
(``replays.bundle.Digested``), not the bytes, and its verdict is the one it gives holding the
bytes (the reference: the same reader with ``digest`` off), finding for finding, at the same
positions: untouched, and after a record's bytes changed early, in the middle and last of the
merged log, a record deleted, and a record appended after the round's end; on the in-memory
store, SQLite (plain and compressed) and PostgreSQL. A round with a legacy per-round seal keeps
the bytes (its chain hashes them)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from storekit import timestamp_changed

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from replays.bundle import (
    Decoded,
    Deferred,
    Digested,
    DroppedState,
    RoundBundle,
    Seal,
    StoreReader,
    stored_digest,
)
from replays.verify import StoreVerifier, Verdict

PLAYERS = 12


@pytest.fixture
def recorded(app: RoundAudit) -> tuple[RoundAudit, UUID]:
    simulate(app, variant="boundless", rounds=1, players=PLAYERS)
    return app, SharedHand.create_id("sim-boundless", 1)


def _verified(app: RoundAudit, rid: UUID, *, digest: bool) -> tuple[Verdict, RoundBundle]:
    """The verifier's verdict and the bundle it checked; ``digest=False``: the reference, the
    same reader keeping every record's bytes."""
    verifier = StoreVerifier(app)
    with pytest.MonkeyPatch.context() as m:
        if not digest:
            shared_log = StoreReader.shared_log

            def whole(self: StoreReader, *args: Any, **kwargs: Any) -> list[Decoded]:
                kwargs["digest"] = False
                return shared_log(self, *args, **kwargs)

            m.setattr(StoreReader, "shared_log", whole)
        seen = bundles_read(m, verifier)
        verdict = verifier.verify(rid)
    return verdict, seen[0]


def bundles_read(m: pytest.MonkeyPatch, verifier: StoreVerifier) -> list[RoundBundle]:
    """Every bundle ``verifier``'s reader makes from now on (until ``m`` is undone), in
    order: the bundles its checks were given."""
    read = verifier.reader.round_bundle
    seen: list[RoundBundle] = []

    def round_bundle(round_id: UUID, **kwargs: Any) -> RoundBundle:
        b = read(round_id, **kwargs)
        seen.append(b)
        return b

    m.setattr(verifier.reader, "round_bundle", round_bundle)
    return seen


def _findings(v: Verdict) -> list[tuple[Any, ...]]:
    return [
        (d.position, d.event, d.field, d.expected, d.recorded, d.rule, d.message, d.check)
        for d in v.discrepancies
    ]


def _same_verdict(app: RoundAudit, rid: UUID) -> Verdict:
    """The verdict with digests, after checking it is the reference's, finding for finding."""
    digested, b = _verified(app, rid, digest=True)
    reference, whole = _verified(app, rid, digest=False)
    assert any(type(d.record) is Digested for d in b.round)
    assert not any(type(d.record) is Digested for d in whole.round)
    assert _findings(digested) == _findings(reference)
    assert digested.checks == reference.checks
    return digested


# ------------------------------------------------------------------------- the store, edited
def _rows(app: RoundAudit) -> list[tuple[UUID, int, str, bytes]]:
    """Every stored event of the store, as (stream, version, topic, stored bytes)."""
    return [
        (UUID(str(n.originator_id)), n.originator_version, n.topic, bytes(n.state))
        for n in app.recorder.select_notifications(1, 10**6)
    ]


def _sql(app: RoundAudit) -> Callable[[str, tuple[Any, ...]], None]:
    recorder: Any = app.recorder
    table = recorder.events_table_name
    postgres = "postgres" in type(recorder.datastore).__module__

    def run(statement: str, params: tuple[Any, ...]) -> None:
        text = statement.format(table=table)
        if postgres:
            text = text.replace("?", "%s")
        else:
            params = tuple(p.hex if isinstance(p, UUID) else p for p in params)
        with recorder.datastore.transaction(commit=True) as curs:
            curs.execute(text, params)

    return run


def _set_state(app: RoundAudit, oid: UUID, version: int, state: bytes) -> None:
    recorder: Any = app.recorder
    if hasattr(recorder, "_stored_events"):  # the in-memory store
        i = recorder._stored_events_index[str(oid)][version]
        s = recorder._stored_events[i]
        recorder._stored_events[i] = type(s)(s.originator_id, s.originator_version, s.topic, state)
        return
    _sql(app)(
        "UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
        (state, oid, version),
    )


def _delete(app: RoundAudit, oid: UUID, version: int) -> None:
    recorder: Any = app.recorder
    if hasattr(recorder, "_stored_events"):
        index = recorder._stored_events_index[str(oid)]
        i = index.pop(version)
        s = recorder._stored_events[i]
        # kept in the log's list (the notification ids stay 1..N), gone from the stream
        recorder._stored_events[i] = type(s)(UUID(int=0), s.originator_version, s.topic, s.state)
        return
    _sql(app)(
        "DELETE FROM {table} WHERE originator_id = ? AND originator_version = ?",
        (oid, version),
    )


def _append(app: RoundAudit, oid: UUID, version: int, topic: str, state: bytes) -> None:
    from eventsourcing.persistence import StoredEvent

    app.recorder.insert_events([StoredEvent(oid, version, topic, state)])


def _changed(app: RoundAudit, state: bytes) -> bytes:
    """``state`` (as stored) with its server timestamp moved by a second: it still decodes, to
    the same payload (re-execution sets the timestamp aside), but its bytes are not those its
    leaf committed to."""
    mapper = app.mapper
    plain = mapper.compressor.decompress(state) if mapper.compressor else state
    out = timestamp_changed(plain)
    return mapper.compressor.compress(out) if mapper.compressor else out


def _round_rows(app: RoundAudit, rid: UUID) -> list[tuple[UUID, int, str, bytes]]:
    """The round's records in the merged log's order (its shared hand and participations)."""
    b = StoreReader(app).round_bundle(rid)
    keys = [d.record.key for d in b.round]
    by_key = {(oid, v): (oid, v, t, s) for oid, v, t, s in _rows(app)}
    return [by_key[k] for k in keys]


# --------------------------------------------------------------------------------- the tests
def test_the_verifier_keeps_decoded_records_by_their_digest(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    """Every record decoded on reading is a ``Digested`` holding the SHA-256 of the bytes as
    stored, and so is every deferred record once compared equal to its re-derived event
    (reading its event again raises ``DroppedState``); the verdict is the reference's."""
    app, rid = recorded
    stored = {(oid, v): s for oid, v, _t, s in _rows(app)}
    v, b = _verified(app, rid, digest=True)
    assert v.ok, v.discrepancies
    kinds = {type(d.record) for d in b.round}
    assert Digested in kinds
    deferred = [d for d in b.round if type(d) is Deferred]
    assert deferred
    assert all(d.matched for d in deferred)  # a passing round: every one compared equal
    for d in b.round:
        r = d.record
        if type(d) is Deferred:
            with pytest.raises(DroppedState):
                d.event  # noqa: B018
        assert type(r) is Digested
        assert r.sha256 == hashlib.sha256(stored[r.key]).digest()
        assert stored_digest(r) == hashlib.sha256(stored[r.key]).hexdigest()
        with pytest.raises(DroppedState):
            r.state  # noqa: B018
        with pytest.raises(DroppedState):
            r.as_stored  # noqa: B018
    assert _same_verdict(app, rid).ok


@pytest.mark.parametrize("where", ["early", "middle", "last"])
def test_changed_bytes_are_found_as_with_the_bytes_held(
    recorded: tuple[RoundAudit, UUID], where: str
) -> None:
    app, rid = recorded
    b = _verified(app, rid, digest=True)[1]
    rows = _round_rows(app, rid)
    # records read decoded (Digested): the first, the first from the middle on, the last
    digested = [i for i, d in enumerate(b.round) if type(d.record) is Digested]
    if where == "early":
        at = digested[0]
    elif where == "last":
        at = digested[-1]
    else:  # the first from the middle of the merged log on
        at = next(i for i in digested if i >= len(rows) // 2)
    oid, version, _topic, state = rows[at]
    _set_state(app, oid, version, _changed(app, state))
    v = _same_verdict(app, rid)
    assert not v.ok
    assert any(d.check == "commit" and d.position == at + 1 for d in v.discrepancies), (
        v.discrepancies
    )


def test_a_deleted_record_is_found_as_with_the_bytes_held(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    oid, version = next((o, v) for o, v, t, _s in rows if t.endswith("Participation.BetPlaced"))
    _delete(app, oid, version)
    v = _same_verdict(app, rid)
    assert not v.ok
    assert any(d.check == "commit" and "deleted" in d.message for d in v.discrepancies)


def test_a_record_after_the_round_is_found_as_with_the_bytes_held(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    oid, _version, topic, state = next(r for r in reversed(rows) if r[0] != rid)
    last = max(v for o, v, _t, _s in rows if o == oid)
    _append(app, oid, last + 1, topic, state)
    v = _same_verdict(app, rid)
    assert not v.ok
    assert any(
        d.message.startswith("this recorded event is not derived by re-execution")
        for d in v.discrepancies
    ), v.discrepancies


def test_a_round_with_a_legacy_seal_keeps_its_bytes(recorded: tuple[RoundAudit, UUID]) -> None:
    """The legacy per-round seal's chain hashes each record's bytes: those are kept. (And a
    bundle asked for without ``digest`` keeps them too.)"""
    app, rid = recorded
    verifier = StoreVerifier(app)
    reader = verifier.reader
    assert reader.log is not None
    legacy = Seal(leaf_index=0, leaf_bytes=b"{}", chain=[])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reader.log, "seal_of", lambda round_id: legacy)
        b = reader.round_bundle(rid, digest=True)
    assert not any(type(d.record) is Digested for d in b.round)
    assert [d.record.state for d in b.round]  # every record's bytes readable
    plain = StoreVerifier(app).reader.round_bundle(rid)
    assert not any(type(d.record) is Digested for d in plain.round)

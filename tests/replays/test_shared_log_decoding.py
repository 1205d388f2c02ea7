"""``StoreReader.shared_log`` (a boundless round's records merged in commit order) decodes its
records as :func:`replays.bundle.decode_stored` does, and gives the very ``Decoded`` that
decoding each record on its own (``decode(mapper, to_record(mapper, n))``, as it did before)
gives: the same records, events, errors and merged positions, on the in-memory store, SQLite
(plain and compressed) and PostgreSQL, with a record made unreadable and a record appended to
a participation after the round's end."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from storekit import same_decoded

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from replays.bundle import Decoded, StoreReader, decode, originator_uuid, to_record


def _one_by_one(reader: StoreReader, rid: UUID) -> list[Decoded]:
    """The round's records decoded one record at a time (how ``shared_log`` decoded them)."""
    app = reader.app
    mine: set[UUID] = {rid}
    last: dict[UUID, int] = {}
    records = []
    for n in app.boundless.round_notifications(rid, mine):
        oid = originator_uuid(n)
        mine.add(oid)
        last[oid] = max(last.get(oid, 0), int(n.originator_version))
        records.append(to_record(app.mapper, n))
    for oid in sorted(mine, key=lambda u: (u != rid, u.hex)):
        records += reader.records(oid, gt=last.get(oid, 0))
    out = []
    for i, r in enumerate(records, start=1):
        d = decode(app.mapper, r)
        d.at = i
        out.append(d)
    return out


def _append_after_the_end(app: RoundAudit, rid: UUID) -> UUID:
    """A record added to the first participation after the round settled (a copy of its last
    record at the next version), and a participation record made unreadable when the store's
    bytes are plain."""
    notes = list(app.boundless.round_notifications(rid))
    part = next(n for n in notes if n.originator_id != rid)
    pid = originator_uuid(part)
    tail = app.recorder.select_events(pid, desc=True, limit=1)[0]
    app.recorder.insert_events(
        [StoredEvent(pid, tail.originator_version + 1, tail.topic, tail.state)]
    )
    return pid


def test_shared_log_decodes_as_each_record_alone(app: RoundAudit) -> None:
    simulate(app, variant="boundless", rounds=2, players=4)
    rid = SharedHand.create_id("sim-boundless", 2)
    pid = _append_after_the_end(app, rid)
    reader = StoreReader(app)
    fast = reader.shared_log(rid)
    slow = _one_by_one(StoreReader(app), rid)
    assert len(fast) == len(slow) > 20
    assert [all(same_decoded(a, b)) for a, b in zip(fast, slow, strict=True)] == [True] * len(fast)
    assert [d.at for d in fast] == list(range(1, len(fast) + 1))
    assert fast[0].name == "SharedHand.Started"
    assert fast[-1].record.originator_id == pid  # the record after the end, read and last
    assert all(d.error is None for d in fast)
    assert isinstance(fast[-1].event, Participation.Event)


def test_an_unreadable_record_decodes_to_the_same_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="boundless", rounds=1, players=3)
        rid = SharedHand.create_id("sim-boundless", 1)
        notes = list(app.boundless.round_notifications(rid))
        victim = next(n for n in notes if n.topic.endswith("Participation.WagerSettled"))
        rec = app.recorder
        with rec.datastore.transaction(commit=True) as c:  # type: ignore[attr-defined]
            c.execute(
                f"UPDATE {rec.events_table_name} SET state = ? "  # type: ignore[attr-defined]
                "WHERE originator_id = ? AND originator_version = ?",
                (b"{not json", originator_uuid(victim).hex, victim.originator_version),
            )
        fast = StoreReader(app).shared_log(rid)
        slow = _one_by_one(StoreReader(app), rid)
    finally:
        app.close()
    assert [all(same_decoded(a, b)) for a, b in zip(fast, slow, strict=True)] == [True] * len(fast)
    broken = [d for d in fast if d.error is not None]
    assert len(broken) == 1
    assert broken[0].record.key == (originator_uuid(victim), victim.originator_version)

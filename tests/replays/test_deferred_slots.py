"""``replays.bundle.Deferred`` keeps its stored event and its flags (``_digest``, ``matched``)
in the storage of ``Decoded``'s ``event`` and ``error`` slots, which its properties hide: an
instance is no larger than eight slots (96 bytes with the collector's header on CPython), and
each of those values reads back as it was set, through every change of state (made, made
holding a decoded record, made gone, compared equal, decoded)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
from eventsourcing.persistence import StoredEvent

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.bundle import (
    Decoded,
    Deferred,
    Digested,
    DroppedState,
    decode,
    decode_stored,
    deferrable,
    to_record,
)


def _rows(tmp_path: Path) -> tuple[RoundAudit, list[StoredEvent]]:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    simulate(app, variant="boundless", rounds=1, players=5)
    rows: list[StoredEvent] = list(app.recorder.select_notifications(0, 10_000))
    return app, rows


def test_a_deferred_record_is_no_larger_than_eight_slots() -> None:
    pointer = struct.calcsize("P")
    assert Deferred.__basicsize__ == Decoded.__basicsize__ + 4 * pointer
    made = Deferred.__new__(Deferred)
    if sys.implementation.name == "cpython" and pointer == 8:
        assert sys.getsizeof(made) <= 96


@pytest.mark.parametrize("digest", [False, True])
def test_a_deferred_records_flags_and_stored_event_read_back_through_its_changes(
    tmp_path: Path, digest: bool
) -> None:
    app, rows = _rows(tmp_path)
    try:
        fast = decode_stored(app.mapper, list(rows), defer=deferrable, digest=digest)
        by_key = {(r.originator_id, r.originator_version): r for r in rows}
        waiting = [d for d in fast if type(d) is Deferred and d.deferred]
        assert len(waiting) > 10
        for d in waiting:
            assert d._digest is digest
            assert d._stored is None
            assert not d.matched
            record = d.record
            expected = decode(app.mapper, record).event
            assert d.same_as(expected)
            assert d.matched
            assert d._digest is digest
            assert not d.deferred
            assert not d.held
            assert d._stored is None
            if digest:  # kept by its bytes' digest: its event is let go
                assert type(d.record) is Digested
                with pytest.raises(DroppedState):
                    d.event  # noqa: B018
            else:  # its record as it was: decoded again when read
                assert d.record is record
                assert d.event == expected
                assert d.error is None
                assert d.matched

        # made with a stored event: decoded from it, kept until compared equal with
        # ``digest`` (then its record is kept by digest and the stored event let go)
        d = waiting[0]
        row = by_key[(d.record.originator_id, d.record.version)]
        record = to_record(app.mapper, row)
        made = Deferred(d._plain, record, d.cls or object, row, digest=digest)
        assert made._stored is row
        assert made._digest is digest
        assert not made.matched
        event = decode(app.mapper, record).event
        assert made.event == event  # decoded (from the stored event): held
        assert made._stored is row
        assert made.held
        assert not made.matched
        assert made.same_as(event)
        assert made.matched
        assert made._digest is digest
        assert (made._stored is None) is digest
        assert (type(made.record) is Digested) is digest

        # held decoded (the digesting read's participations), and gone (money let go)
        held = [d for d in fast if type(d) is Deferred and d.held and not d.matched]
        if digest:
            assert held
        for d in held:
            assert d._digest
            assert not d.matched
            assert d._stored is None
            assert d.same_as(d.event)
            assert d.matched
            assert d._digest
            assert not d.held
        for d in fast:
            if type(d) is Decoded and d.event is not None:
                gone = Deferred.gone(d)
                assert gone._digest
                assert not gone.matched
                assert gone._stored is None
                assert gone.cls is type(d.event)
                assert gone.at == d.at
    finally:
        app.close()

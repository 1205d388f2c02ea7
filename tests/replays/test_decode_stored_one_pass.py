"""``replays.bundle.decode_stored``'s two paths of a decoded state (``_decode``): a state the
transcoder gave in a larger table than one filled item by item is made anew with its text
fields shared in the same pass, any other is shared in place (``_decoded``). Either way every
text field of the events decoded together is one string with those equal to it, the state is
no larger than a table filled item by item, and the event is what ``decode`` of the record
gives; and each deferred record ``decode_stored`` makes holds what ``Deferred(...)`` holds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventsourcing.persistence import StoredEvent
from storekit import same_decoded

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.bundle import (
    _FRESH,
    _FRESH_MAX,
    Deferred,
    decode,
    decode_stored,
    deferrable,
    to_record,
)


def _rows(tmp_path: Path) -> tuple[RoundAudit, list[StoredEvent]]:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    simulate(app, variant="boundless", rounds=2, players=6)
    rows: list[StoredEvent] = list(app.recorder.select_notifications(0, 10_000))
    return app, rows


def _made_anew(state: bytes) -> bool:
    """Whether ``_decode`` makes this stored state anew (the transcoder's table larger than
    one filled item by item, after ``class_version`` out and the id and version in)."""
    parsed: dict[str, Any] = orjson.loads(state)
    parsed.pop("class_version", None)
    parsed["originator_id"] = parsed["originator_version"] = 0
    return sys.getsizeof(parsed) > _FRESH[min(len(parsed), _FRESH_MAX)]


@pytest.mark.parametrize("digest", [False, True])
def test_every_text_field_is_shared_on_either_path(tmp_path: Path, digest: bool) -> None:
    app, rows = _rows(tmp_path)
    try:
        slow = [decode(app.mapper, to_record(app.mapper, r)) for r in rows]
        fast = decode_stored(app.mapper, list(rows), defer=deferrable, digest=digest)
    finally:
        app.close()
    # (before reading the deferred records' events, which decodes each on its own)
    decoded = [(d, r) for d, r in zip(fast, rows, strict=True) if not d.deferred]
    assert all(all(same_decoded(a, b)[1:]) for a, b in zip(fast, slow, strict=True))
    anew = [d for d, r in decoded if _made_anew(r.state)]
    in_place = [d for d, r in decoded if not _made_anew(r.state)]
    assert len(anew) > 20  # both paths taken
    assert len(in_place) > 20
    texts: dict[str, set[int]] = {}
    for d, _ in decoded:
        state = d.event.__dict__
        assert sys.getsizeof(state) <= _FRESH[min(len(state), _FRESH_MAX)]
        for value in state.values():
            if type(value) is str:
                texts.setdefault(value, set()).add(id(value))
    assert len(texts) > 20
    assert all(len(ids) == 1 for ids in texts.values())  # one string for equal text fields
    # fields equal between a state made anew and one shared in place are the same string
    players = {id(d.event.player) for d in anew + in_place if hasattr(d.event, "player")}
    names = {d.event.player for d in anew + in_place if hasattr(d.event, "player")}
    assert len(players) == len(names) == 6


@pytest.mark.parametrize("digest", [False, True])
def test_a_deferred_record_holds_what_its_class_makes(tmp_path: Path, digest: bool) -> None:
    app, rows = _rows(tmp_path)
    try:
        fast = decode_stored(app.mapper, list(rows), defer=deferrable, digest=digest)
    finally:
        app.close()
    waiting = [d for d in fast if type(d) is Deferred and d.deferred]
    assert len(waiting) > 20
    for d in waiting:
        made = Deferred(d._plain, d.record, d.cls or object, None, digest=digest)
        made.at = d.at
        assert [getattr(d, s) for s in Deferred.__slots__ if s != "cls"] == [
            getattr(made, s) for s in Deferred.__slots__ if s != "cls"
        ]
        assert d._digest is digest
        assert d._stored is None
        assert not d.matched
        assert not d.held

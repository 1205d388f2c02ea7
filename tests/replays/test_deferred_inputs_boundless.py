"""A boundless round's decisions are read undecoded by the verifier (``replays.bundle.Deferred``:
a participation's input that neither moves money nor names the round's players), decoded when
re-execution feeds them, and let go once compared equal to their re-derived events: the verdict
is the one of the same records all decoded first (the reference), finding for finding, on the
in-memory store, SQLite (plain and compressed) and PostgreSQL, untouched and with a decision
changed (its action, its options, a field removed, bytes that are not JSON, another input's
topic), deleted, or appended after the round's end; and after the verdict no decision is held
decoded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic
from test_deferred_decoding import _dumps, _record, _state, _with, same_verdict

from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.events import Input
from replays.bundle import (
    SHARED_STARTED_TOPIC,
    Deferred,
    Digested,
    DroppedState,
    StoreReader,
    deferrable,
)
from replays.verify import CommitCache, StoreVerifier, verify_bundle

Records = list[StoredEvent]
DECIDED = get_topic(Participation.DecisionMade)


def _decision(records: Records) -> int:
    """The first decision among ``records``."""
    return next(i for i, e in enumerate(records) if e.topic == DECIDED)


def _first_decision(fn: Callable[[StoredEvent], StoredEvent | None]) -> Any:
    """The change that puts ``fn(decision)`` in place of the first decision (None: deletes
    it)."""

    def change(records: Records) -> Records:
        i = _decision(records)
        new = fn(records[i])
        return records[:i] + ([] if new is None else [new]) + records[i + 1 :]

    return change


def _edit(fn: Callable[[dict[str, Any]], None]) -> Any:
    def edited(e: StoredEvent) -> StoredEvent:
        data = _state(e)
        fn(data)
        return _with(e, state=_dumps(data))

    return _first_decision(edited)


def _other_action(data: dict[str, Any]) -> None:
    data["action"] = "hit" if data["action"] == "stand" else "stand"


def _appended(records: Records) -> Records:
    e = records[_decision(records)]
    last = max(r.originator_version for r in records if r.originator_id == e.originator_id)
    return [*records, StoredEvent(e.originator_id, last + 1, e.topic, e.state)]


CHANGES: dict[str, Callable[[Records], Records]] = {
    "untouched": lambda records: records,
    "its action": _edit(_other_action),
    "its options": _edit(lambda d: d.__setitem__("options", [])),
    "a field removed": _edit(lambda d: d.pop("balance_seen")),
    "not JSON": _first_decision(lambda e: _with(e, state=b"{not json")),
    "another input's topic": _first_decision(
        lambda e: _with(e, topic=get_topic(Participation.DecisionTimedOut))
    ),
    "deleted": _first_decision(lambda e: None),
    "appended after the end": _appended,
}


def test_decisions_are_deferred_inputs() -> None:
    assert deferrable(DECIDED) is Participation.DecisionMade
    assert deferrable(get_topic(Participation.DecisionTimedOut)) is Participation.DecisionTimedOut
    for cls in (Participation.BetPlaced, Participation.Joined):  # they name the players
        assert deferrable(get_topic(cls)) is None


def _rounds(app: RoundAudit) -> list[UUID]:
    """The boundless rounds recorded (simulated at random, and one scripted), those with the
    most decisions first."""
    ids = [
        UUID(str(n.originator_id))
        for n in app.recorder.select_notifications(1, 10**6, topics=[SHARED_STARTED_TOPIC])
    ]
    reader = StoreReader(app)
    decisions = {rid: sum(d.record.topic == DECIDED for d in reader.round_bundle(rid).round)
                 for rid in ids}  # fmt: skip
    return sorted(ids, key=lambda rid: -decisions[rid])


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_deferred_decisions_give_the_same_verdict(app: RoundAudit, change: str) -> None:
    _record(app)
    same_verdict(app, _rounds(app)[0], CHANGES[change], ok=change == "untouched")


def test_decisions_are_not_held_decoded_after_the_verdict(app: RoundAudit) -> None:
    _record(app)
    rounds = _rounds(app)
    for rid in rounds:
        for digest in (True, False):
            verifier = StoreVerifier(app)
            b = verifier.reader.round_bundle(rid, digest=digest)
            inputs = [d for d in b.round if type(d) is Deferred and issubclass(d.cls or str, Input)]
            if rid == rounds[0]:
                assert any(d.record.topic == DECIDED for d in inputs)
            assert verify_bundle(b, policy=verifier.policy, commits=CommitCache()).ok
            assert all(d.matched and not d.held for d in inputs)
            if digest:
                # the verifier's read: let go once compared equal, kept by their bytes'
                # digest (reading one again raises DroppedState: the round is read again)
                assert all(type(d.record) is Digested for d in inputs)
                for d in inputs:
                    with pytest.raises(DroppedState):
                        d.event  # noqa: B018
            else:  # decoded again when read: the event its bytes hold
                assert all(d.event.originator_version == d.record.version for d in inputs)

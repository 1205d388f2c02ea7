"""Verification re-executes a boundless round on aggregates that keep their facts instead of
building the library's events (``Recorder.keep_facts``, ``replays.boundless.verify_log``): the
verdict is the very one re-executing with events gives (``verify_log(..., facts=False)``), on
untouched rounds and on logs tampered with (a consequence's field altered, a consequence
deleted, one added, two swapped, an input altered so that it is refused, an input added after
betting closed), and the kept facts are the events, field for field."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.events import Consequence, Input
from replays.boundless import Discrepancy, _reexecuted, verify_log
from replays.reexecute import payload


@pytest.fixture(scope="module")
def logs() -> list[list[Any]]:
    app = RoundAudit()
    try:
        simulate(app, variant="boundless", rounds=4, players=5)
        return [
            app.boundless.round_log(SharedHand.create_id("sim-boundless", n)) for n in range(1, 5)
        ]
    finally:
        app.close()


def _copy(e: Any, **changes: Any) -> Any:
    """A stored event with some fields changed (the stored events are frozen dataclasses)."""
    out = object.__new__(type(e))
    out.__dict__.update(e.__dict__, **changes)
    return out


def _changed(cls: type, **changes: Any) -> Callable[[list[Any]], list[Any]]:
    """The log with the first event of ``cls`` changed."""

    def change(log: list[Any]) -> list[Any]:
        i = next(i for i, e in enumerate(log) if isinstance(e, cls))
        return [*log[:i], _copy(log[i], **changes), *log[i + 1 :]]

    return change


def _delete_consequence(log: list[Any]) -> list[Any]:
    i = next(i for i, e in enumerate(log) if isinstance(e, Participation.HandOpened))
    return log[:i] + log[i + 1 :]


def _add_consequence(log: list[Any]) -> list[Any]:
    i = next(i for i, e in enumerate(log) if isinstance(e, Participation.WagerSettled))
    extra = _copy(log[i], originator_version=log[i].originator_version + 100)
    return [*log, extra]


def _swap(log: list[Any]) -> list[Any]:
    oid = next(e.originator_id for e in log if isinstance(e, Participation.Joined))
    mine = [i for i, e in enumerate(log) if e.originator_id == oid]
    a, b = mine[-2], mine[-1]
    out = list(log)
    out[a] = _copy(log[b], originator_version=log[a].originator_version)
    out[b] = _copy(log[a], originator_version=log[b].originator_version)
    return out


def _late_bet(log: list[Any]) -> list[Any]:
    """A bet recorded after betting closed (a race): the engine refunds it (PHASE-1)."""
    closed = next(i for i, e in enumerate(log) if isinstance(e, SharedHand.BettingClosed))
    bet = next(e for e in log if isinstance(e, Participation.BetPlaced))
    oid = bet.originator_id
    before = sum(1 for e in log[:closed] if e.originator_id == oid)
    late = _copy(bet, originator_version=before + 1, wager_id=f"{bet.player}:late", kind="pair")
    after = [
        _copy(e, originator_version=e.originator_version + 1) if e.originator_id == oid else e
        for e in log[closed + 1 :]
    ]
    return [*log[: closed + 1], late, *after]


CHANGES: dict[str, Callable[[list[Any]], list[Any]]] = {
    "untouched": list,
    "consequence altered": _changed(Participation.WagerSettled, payout="999.00"),
    "consequence deleted": _delete_consequence,
    "consequence added": _add_consequence,
    "two swapped": _swap,
    "input refused": _changed(Participation.BetPlaced, stake="-5.00"),
    "bet after betting closed": _late_bet,
}


def _found(ds: list[Any]) -> list[tuple[Any, ...]]:
    assert all(isinstance(d, Discrepancy) for d in ds)
    return [dataclasses.astuple(d) for d in ds]


@pytest.mark.parametrize("change", list(CHANGES))
def test_keeping_facts_gives_the_verdict_events_give(logs: list[list[Any]], change: str) -> None:
    for log in logs:
        tampered = CHANGES[change](list(log))
        fast, slow = verify_log(tampered), verify_log(tampered, facts=False)
        assert _found(fast.discrepancies) == _found(slow.discrepancies)
        assert (fast.ok, fast.players, fast.events) == (slow.ok, slow.players, slow.events)
        # a late bet is refunded by re-execution (a WagerSettled the tampered log lacks)
        assert fast.ok is (change == "untouched"), _found(fast.discrepancies)


def test_the_kept_facts_are_the_events_field_for_field(logs: list[list[Any]]) -> None:
    for log in logs:
        with_facts, refused = _reexecuted(log, facts=True)
        with_events, refused_too = _reexecuted(log)
        assert refused == refused_too == []
        assert list(with_facts) == list(with_events)
        for oid, agg in with_facts.items():
            other = with_events[oid]
            assert agg.state == other.state
            kept, built = agg.derived(), other.derived()
            assert [type(e) for e in kept] == [type(e) for e in built]
            assert [payload(e) for e in kept] == [payload(e) for e in built]
            assert any(isinstance(e, Consequence) for e in kept)
            assert any(isinstance(e, Input) for e in kept)
            assert agg.derived() == []  # collected once


def test_the_events_made_sharing_the_facts_payloads_are_those_made_copying_them(
    logs: list[list[Any]],
) -> None:
    """``derived`` makes each event with its fact's payload dict as its own (the facts are
    let go): the same classes and payloads as the events made with a copy of each payload,
    and the comparison finds the same (``test_keeping_facts_gives_the_verdict_events_give``)."""
    for log in logs:
        with_facts, _ = _reexecuted(log, facts=True)
        for agg in with_facts.values():
            facts = list(agg._facts or ())
            copied: list[Any] = []
            type(agg).as_events(facts, copied)
            kept = agg.derived()[-len(facts) :] if facts else []  # after any pending event
            assert facts or not isinstance(agg, Participation)
            assert [type(e) for e in kept] == [type(e) for e in copied]
            assert [payload(e) for e in kept] == [payload(e) for e in copied]
            assert all(e.__dict__ is f.fields for e, f in zip(kept, facts, strict=True))
            assert all(e.__dict__ is not f.fields for e, f in zip(copied, facts, strict=True))

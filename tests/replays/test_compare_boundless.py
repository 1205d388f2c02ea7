"""``replays.boundless._compare`` (one aggregate's re-derived events against its stored ones)
reports exactly what the position-by-position comparison it replaced reported (kept here as
the reference): the same findings in the same order, and the same answer, for streams equal,
with a field changed, an event deleted, added, replaced by another class, or several of these
at once, at every place in the stream."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reexecution_facts import _copy

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from replays.boundless import Verdict, _compare, _found, _name, _player_of
from replays.reexecute import differences


def _reference(verdict: Verdict, who: str, redone: list[Any], recorded: list[Any]) -> bool:
    """The comparison before: every position up to the longer stream's end."""
    found = len(verdict.discrepancies)
    for i in range(max(len(redone), len(recorded))):
        exp = redone[i] if i < len(redone) else None
        got = recorded[i] if i < len(recorded) else None
        if exp is None or got is None:
            e = exp or got
            verdict.discrepancies.append(
                _found(who, i + 1, _name(e), "event",
                       _name(exp) if exp is not None else None,
                       _name(got) if got is not None else None,
                       getattr(e, "rule", None),
                       "re-execution derives this event but it is not recorded"
                       if got is None
                       else "this recorded event is not derived by re-execution")
            )  # fmt: skip
            return False
        if type(exp) is not type(got):
            verdict.discrepancies.append(
                _found(who, i + 1, _name(got), "type", _name(exp), _name(got),
                       getattr(got, "rule", None), "a different event at this position")
            )  # fmt: skip
            return False
        for key, want, have in differences(exp, got):
            verdict.discrepancies.append(
                _found(who, i + 1, _name(got), key, want, have, getattr(got, "rule", None),
                       "the recorded value differs from the rules'")
            )  # fmt: skip
    return len(verdict.discrepancies) == found


@pytest.fixture(scope="module")
def streams() -> list[list[Any]]:
    """Every stream (shared hand, participations) of two simulated boundless rounds."""
    app = RoundAudit()
    try:
        simulate(app, variant="boundless", rounds=2, players=4)
        out: dict[Any, list[Any]] = {}
        for n in (1, 2):
            for e in app.boundless.round_log(SharedHand.create_id("sim-boundless", n)):
                out.setdefault(e.originator_id, []).append(e)
        return list(out.values())
    finally:
        app.close()


def _tamper(events: list[Any], others: list[Any], ops: list[tuple[str, int, int]]) -> list[Any]:
    out = list(events)
    for op, at, pick in ops:
        if not out:
            break
        i = at % len(out)
        if op == "change":
            e = out[i]
            key = sorted(k for k in e.__dict__ if not k.startswith("originator"))[pick % 3]
            out[i] = _copy(e, **{key: ("changed", pick)})
        elif op == "delete":
            del out[i]
        elif op == "add":
            out.insert(i, others[pick % len(others)])
        else:  # another event's class at this place
            out[i] = others[pick % len(others)]
    return out


def _both(who: str, redone: list[Any], recorded: list[Any]) -> None:
    mine, theirs = Verdict("r", 0), Verdict("r", 0)
    assert _compare(mine, who, redone, recorded) == _reference(theirs, who, redone, recorded)
    assert mine.discrepancies == theirs.discrepancies


def test_untouched_and_each_stream_against_every_other(streams: list[list[Any]]) -> None:
    for events in streams:
        _both(_player_of(events), events, events)
        _both(_player_of(events), events, [])
        _both(_player_of(events), [], events)
    for a in streams[:6]:
        for b in streams[:6]:
            _both("x", a, b)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["change", "delete", "add", "replace"]),
        st.integers(0, 10_000),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(which=st.integers(0, 10_000), ops=OPS, side=st.booleans())
def test_tampered_streams_give_the_same_findings(
    streams: list[list[Any]], which: int, ops: list[tuple[str, int, int]], side: bool
) -> None:
    events = streams[which % len(streams)]
    others = [e for s in streams for e in s]
    tampered = _tamper(events, others, ops)
    redone, recorded = (tampered, events) if side else (events, tampered)
    _both(_player_of(events), redone, recorded)

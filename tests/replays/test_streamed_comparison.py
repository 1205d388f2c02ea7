"""Boundless verification compares each re-derived event with the stored one as soon as
both exist (``replays.boundless._Comparison``, fed after each input and each step of the
automatic work, the re-derived events then dropped; a step of the automatic work that took
``_STEP`` participations compared at once) and reports exactly what comparing each
aggregate's whole streams after the re-execution reported: the same findings, in the same
order, at the same positions of the merged log.

The reference is the verification as before the change (:func:`_whole`): every input
re-executed first, then each aggregate's derived events compared at once. A record changed
early, in the middle and last in a round read from the in-memory store, SQLite (plain and
compressed) and PostgreSQL is found at the same position by both; and a comparison fed in
chunks reports what one fed the whole stream reports (random chunkings, random tamperings)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare_boundless import OPS, _reference, _tamper, streams  # noqa: F401

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.events import Consequence, Input
from domain.recorder import Recorder
from replays import boundless
from replays.boundless import Discrepancy, Verdict, _Comparison, _player_of
from replays.bundle import Decoded, Deferred, RoundBundle, StoreReader, _plain_mapper, decode
from replays.chain import Record
from replays.verify import verify_bundle

PLAYERS = 12


_REEXECUTED = boundless._reexecuted


def _at_the_end(
    log: Any, *, facts: bool = False, compare: Callable[[Recorder], None] | None = None
) -> tuple[dict[UUID, Recorder], list[Discrepancy]]:
    """``_reexecuted`` as before the streamed comparison: every input re-executed first (the
    automatic work in one step each), nothing compared meanwhile (``verify_log`` then compares
    each aggregate's whole stream)."""
    return _REEXECUTED(log, facts=facts)


def _whole(log: Any) -> Verdict:
    """``verify_log`` comparing each aggregate's whole streams after re-execution (the
    reference)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(boundless, "_reexecuted", _at_the_end)
        return boundless.verify_log(log)


@pytest.fixture
def recorded(app: RoundAudit) -> tuple[RoundAudit, UUID]:
    simulate(app, variant="boundless", rounds=1, players=PLAYERS)
    return app, SharedHand.create_id("sim-boundless", 1)


def _bundle(app: RoundAudit, rid: UUID) -> RoundBundle:
    """The round as the verifier reads it (deferred consequences included)."""
    return StoreReader(app, defer=True).round_bundle(rid)


def _ruled(b: RoundBundle) -> list[int]:
    """The indexes of ``b``'s consequences that cite a rule (a field re-execution derives)."""
    out = []
    for i, d in enumerate(b.round):
        cls = d.cls
        if cls is None or not issubclass(cls, Consequence) or issubclass(cls, Input):
            continue
        if isinstance(orjson.loads(d.record.state).get("rule"), str):
            out.append(i)
    return out


def _changed(b: RoundBundle, at: int, mapper: Any) -> int:
    """Change the rule the consequence at index ``at`` of ``b`` cites; its position in the
    merged log."""
    d = b.round[at]
    state = orjson.loads(d.record.state)
    state["rule"] += "-changed"
    r = d.record
    record = Record(r.originator_id, r.version, r.topic, orjson.dumps(state))
    new: Decoded
    if type(d) is Deferred:
        new = Deferred(_plain_mapper(mapper), record, d.cls or object, None)
    else:
        new = decode(mapper, record)
    new.at = d.at
    b.round[at] = new
    return new.position


@pytest.mark.parametrize(("window", "step"), [(1, 1), (5, 2), (boundless._WINDOW, 3),
                                             (boundless._WINDOW, boundless._STEP)])  # fmt: skip
@pytest.mark.parametrize("where", ["early", "middle", "last"])
def test_a_changed_record_is_found_where_the_whole_comparison_found_it(
    recorded: tuple[RoundAudit, UUID],
    where: str,
    window: int,
    step: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compared every ``window`` inputs and after each step of the automatic work that took
    ``step`` participations (the defaults' window and step hold the whole small round; a step
    of 3 compares each piece of a settlement of the round's 12 players as it is derived)."""
    app, rid = recorded
    monkeypatch.setattr(boundless, "_WINDOW", window)
    monkeypatch.setattr(boundless, "_STEP", step)
    untouched = _bundle(app, rid)
    n = len(untouched.round)
    ruled = _ruled(untouched)
    # the first, the first from the middle of the merged log on, the last
    at = {
        "early": ruled[0],
        "middle": next(i for i in ruled if i >= n // 2),
        "last": ruled[-1],
    }[where]
    assert verify_bundle(untouched).ok

    streamed, whole = _bundle(app, rid), _bundle(app, rid)
    position = _changed(streamed, at, app.mapper)
    assert _changed(whole, at, app.mapper) == position
    mine = verify_bundle(streamed)
    monkeypatch.setattr(boundless, "_reexecuted", _at_the_end)
    theirs = verify_bundle(whole)

    assert mine.discrepancies == theirs.discrepancies
    assert not mine.ok
    assert position in {x.position for x in mine.discrepancies}, mine.discrepancies


@pytest.mark.parametrize(("window", "step"), [(1, 1), (5, 2), (boundless._WINDOW, 3)])
def test_an_untouched_round_gives_the_same_verdict(
    recorded: tuple[RoundAudit, UUID], window: int, step: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, rid = recorded
    monkeypatch.setattr(boundless, "_WINDOW", window)
    monkeypatch.setattr(boundless, "_STEP", step)
    log = app.boundless.round_log(rid)
    mine, theirs = boundless.verify_log(log), _whole(log)
    assert mine.ok
    assert theirs.ok
    assert mine.players == theirs.players > 0


def _chunked(redone: list[Any], cuts: list[int]) -> Iterator[list[Any]]:
    at = 0
    for cut in sorted({c % (len(redone) + 1) for c in cuts}):
        yield redone[at:cut]
        at = cut
    yield redone[at:]


@settings(max_examples=300, deadline=None)
@given(
    which=st.integers(0, 10_000),
    ops=OPS,
    side=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_a_comparison_fed_in_chunks_reports_what_the_whole_one_does(
    streams: list[list[Any]],  # noqa: F811
    which: int,
    ops: list[tuple[str, int, int]],
    side: bool,
    cuts: list[int],
) -> None:
    events = streams[which % len(streams)]
    others = [e for s in streams for e in s]
    tampered = _tamper(events, others, ops)
    redone, recorded = (tampered, events) if side else (events, tampered)
    mine, theirs = Verdict("r", 0), Verdict("r", 0)
    compared = _Comparison(recorded)
    for chunk in _chunked(redone, cuts):
        compared.feed(chunk)
    assert compared.finish(mine) == _reference(theirs, _player_of(redone), redone, recorded)
    assert mine.discrepancies == theirs.discrepancies

"""``domain.boundless.engine.Engine`` keeps the participations grouped by what they wait for:
through a whole boundless round (every input of a simulated round fed again, and the
automatic steps after each), every group is exactly the participations whose need it names
(a need recomputed from scratch), and a group nobody waits in any more is dropped, not kept
empty (a set emptied by discards keeps its table: walking it costs as much as when thousands
of players were in it)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from uuid import UUID

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.engine import Engine
from domain.boundless.participation import NOTHING, Participation
from domain.boundless.shared import SharedHand
from domain.events import Input
from replays.boundless import _feed


def _check(eng: Engine) -> None:
    eng.refresh()
    expected: dict[Any, set[UUID]] = defaultdict(set)
    for pid, part in eng.parts.items():
        need = part.need(eng.shared)
        assert eng.need_of(pid) == need
        if need != NOTHING:
            expected[need].add(pid)
    assert dict(eng._groups) == dict(expected)  # no empty group kept
    for (kind, index), ids in expected.items():
        assert eng.waiting(kind, index) == ids
    for kind in {k for k, _ in expected} | {"card", "decision", "settle"}:
        assert eng.count(kind) == sum(len(v) for (k, _), v in expected.items() if k == kind)


def test_every_group_is_what_its_participations_wait_for_and_none_is_empty() -> None:
    app = RoundAudit()
    try:
        simulate(app, variant="boundless", rounds=3, players=6)
        logs = [
            app.boundless.round_log(SharedHand.create_id("sim-boundless", n)) for n in (1, 2, 3)
        ]
    finally:
        app.close()
    emptied = 0
    for log in logs:
        eng: Engine | None = None
        joined: dict[UUID, Participation] = {}
        for e in log:
            if not isinstance(e, Input):
                continue
            eng = _feed(eng, joined, e)
            before = set(eng._groups)
            while eng.step(10**9) is not None:
                pass
            _check(eng)
            emptied += len(before - set(eng._groups))
        assert eng is not None
        assert eng.shared.finished
        assert eng._groups == {}  # a finished round: nobody waits for anything
    assert emptied > 0

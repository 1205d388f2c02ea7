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
    # no empty group kept; inside, each participation keyed by its id's integer (``UUID.int``)
    assert dict(eng._groups) == {n: {p.int for p in ids} for n, ids in expected.items()}
    assert all(eng._by[key].id == pid and eng._by[key] is eng.parts[pid]
               for pid in eng.parts for key in [pid.int])  # fmt: skip
    # the round's order: the order the participations came in (``parts``'), 0, 1, 2...
    assert list(eng._rank.items()) == [(pid.int, at) for at, pid in enumerate(eng.parts)]
    assert all(eng.rank(pid) == at for at, pid in enumerate(eng.parts))
    assert len(eng._by) == len(eng.parts)
    order = list(eng.parts)  # the round's order
    for (kind, index), ids in expected.items():
        assert eng.waiting(kind, index) == ids
        # the service's pending hands: the same participations, in the round's order
        assert [p.id for p in eng.waiting_in_order(kind, index)] == sorted(ids, key=order.index)
    for kind in {k for k, _ in expected} | {"card", "decision", "settle"}:
        assert eng.count(kind) == sum(len(v) for (k, _), v in expected.items() if k == kind)
    # the step's question whether the dealer must wait (``Engine._deciding``)
    assert eng._deciding() == bool(eng.count("card") or eng.count("decision"))


def _logs() -> list[list[Any]]:
    """The logs of three simulated boundless rounds of six players, the same rounds at every
    run (reproducible shoes: the counts below cannot fall under their floors on an unlucky
    shoe, as a random one once did in CI)."""
    app = RoundAudit()
    try:
        simulate(app, variant="boundless", rounds=3, players=6, reproducible_shoes=True)
        return [
            list(app.boundless.round_log(SharedHand.create_id("sim-boundless", n)))
            for n in (1, 2, 3)
        ]
    finally:
        app.close()


def test_every_group_is_what_its_participations_wait_for_and_none_is_empty() -> None:
    logs = _logs()
    emptied = 0
    for log in logs:
        eng: Engine | None = None
        joined: dict[UUID, Participation] = {}
        for e in log:
            if not isinstance(e, Input):
                continue
            eng, fed = _feed(eng, joined, e)
            # the aggregate fed: the shared hand, or the participation once the engine holds
            # it (from its first bet), which the verifier compares next
            if e.originator_id == eng.shared.id:
                assert fed is eng.shared
            else:
                assert fed is eng.parts.get(e.originator_id)
            before = set(eng._groups)
            while eng.step(10**9) is not None:
                pass
            _check(eng)
            emptied += len(before - set(eng._groups))
        assert eng is not None
        assert eng.shared.finished
        assert eng._groups == {}  # a finished round: nobody waits for anything
    assert emptied > 0


def test_groups_exact_after_every_step_and_the_shared_state_replaced_on_every_change() -> None:
    """The engine recomputes the phase and the sequence only when the shared hand's state is
    another object (``Engine.refresh``): that holds only if a shared hand never changes its
    state in place. Through whole rounds, after every input and every single step, the groups
    are exact, and whenever the phase key or the sequence moved the state is a new object."""
    logs = _logs()
    moves = 0
    for log in logs:
        eng: Engine | None = None
        joined: dict[UUID, Participation] = {}
        seen: tuple[object, tuple[object, ...], int] | None = None

        def watch(eng: Engine) -> None:
            nonlocal seen, moves
            now = (eng.shared.state, eng._phase_key(), len(eng.shared.sequence))
            if seen is not None and seen[1:] != now[1:]:
                moves += 1
                assert now[0] is not seen[0], "the shared state changed in place"
            seen = now

        for e in log:
            if not isinstance(e, Input):
                continue
            eng, _ = _feed(eng, joined, e)
            watch(eng)
            _check(eng)
            while eng.step(2) is not None:  # small steps: more of them, each checked
                watch(eng)
                _check(eng)
        assert eng is not None
        assert eng.shared.finished
    assert moves > 10


def _sorted_head(eng: Engine, needs: list[Any], limit: int) -> list[int]:
    """The slow path: every member of the groups sorted in the round's order, the first taken
    (the engine's keys: the ids' integers; ``rank`` by the ids)."""
    members = [key for need in needs for key in eng._groups.get(need, ())]
    ids = {pid.int: pid for pid in eng.parts}
    return sorted(members, key=lambda key: eng.rank(ids[key]))[:limit]


def test_first_of_is_the_head_of_the_sorted_groups_before_every_step() -> None:
    """A step takes the first participations of a group in the round's order
    (``Engine._first_of``) from the group's members sorted once, not sorted again at each
    step: through whole rounds in steps of 1, 2 and 3 participations, before every step, what
    it gives for every group, and for the automatic and revealed cards' groups together (what
    ``_progressable`` asks), is the head of the group sorted afresh; and a settlement in single
    steps sorts its group once (the same queue from its first step to its last)."""
    checked = 0
    for limit in (1, 2, 3):
        for log in _logs():
            eng: Engine | None = None
            joined: dict[UUID, Participation] = {}
            settle_queues: set[int] = set()
            for e in log:
                if not isinstance(e, Input):
                    continue
                eng, _ = _feed(eng, joined, e)
                while True:
                    eng.refresh()
                    for need in list(eng._groups):
                        assert eng._first_of([need], limit) == _sorted_head(eng, [need], limit)
                        checked += 1
                    n = len(eng.shared.sequence)
                    ready = [
                        ("auto", 0),
                        *((k, i) for k, i in eng._groups if k == "card" and i < n),
                    ]
                    head = _sorted_head(eng, ready, limit)
                    assert [pid.int for pid in eng._progressable(limit)] == head
                    assert eng._ready_now() == bool(_sorted_head(eng, ready, 1))
                    if ("settle", 0) in eng._queues:
                        settle_queues.add(id(eng._queues[("settle", 0)]))
                    if eng.step(limit) is None:
                        break
            assert eng is not None
            assert eng.shared.finished
            assert len(settle_queues) == 1  # sorted once for the whole settlement
    assert checked > 100


def test_a_participation_replaced_is_the_one_the_engine_steps() -> None:
    """``Engine.replace`` (the service's reload of a participation another process changed)
    puts the fresh copy in place of the one held, inside too (the engine keys each by its
    id's integer): its steps then change the copy, not the participation it replaced."""
    import copy

    log = _logs()[0]
    eng: Engine | None = None
    joined: dict[UUID, Participation] = {}
    replaced = 0
    for e in log:
        if not isinstance(e, Input):
            continue
        eng, _ = _feed(eng, joined, e)
        for pid, old in list(eng.parts.items()):
            fresh = copy.copy(old)
            eng.replace(fresh)
            assert eng.parts[pid] is fresh
            assert eng._by[pid.int] is fresh
            replaced += 1
        _check(eng)
        while (changed := eng.step(2)) is not None:
            assert all(agg is eng.shared or eng.parts[agg.id] is agg for agg in changed)
            _check(eng)
    assert eng is not None
    assert eng.shared.finished
    assert replaced > 10

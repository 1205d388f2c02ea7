"""The boundless re-execution's shortcuts of branch bcore against what they replaced.

* ``domain.game.player.evolve``: a participation's facts were folded by asking first whether the
  fact is a hand fact (``H.HAND_FACTS``, then ``H.evolve_hand`` on the hand it names), then
  looking the name up in the participation's own table. Now each name is looked up once in one
  table: every fact of every boundless recording and of simulated boundless rounds (splits,
  doubles, surrenders, timeouts, disconnections, side bets, settlements) folds into the very
  state the chain gives.
* ``replays.boundless._feed`` makes each stored input's command from the event's ``__dict__``
  (the payload and the library's header) instead of a copy of its payload alone: every input
  of those rounds makes the same command either way.
* ``Participation.opened_kept`` (what re-execution opens a participation with): the ``Joined``
  kept as a fact, not built as the library's event; the same id, version, state and derived
  events (classes and payloads) as ``opened_by`` followed by ``keep_facts``, for every player
  of those rounds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.domain import DomainEvent

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.events import Input
from domain.game import hands as H
from domain.game import player as P
from domain.game.commands import Command, Join, Start, command_for
from domain.game.state import replace
from replays.reexecute import payload

RECORDINGS = Path(__file__).resolve().parents[2] / "replays" / "recordings"
Facts = list[tuple[str, dict[str, Any]]]


def _chained(s: P.PlayerState, name: str, f: Any) -> P.PlayerState:
    """The fold before branch bcore: a hand fact first, then the participation's own."""
    if name in H.HAND_FACTS:
        assert s.hands is not None
        h = H.evolve_hand(s.hands.hand(f["hand"]), name, f)
        assert h is not None
        return replace(s, hands=replace(s.hands, hands=H.put(s.hands.hands, h)))
    handler = P._PLAYER_EVOLVE.get(name)
    return s if handler is None else handler(s, f)


def _streams(events: list[tuple[str, str, dict[str, Any]]]) -> list[Facts]:
    """Each participation's facts in order, from (originator, class path, payload) rows."""
    by_id: dict[str, Facts] = {}
    for oid, topic, fields in events:
        if ".Participation." in topic or topic.startswith("Participation."):
            by_id.setdefault(oid, []).append((topic.rsplit(".", 1)[-1], fields))
    return list(by_id.values())


def _recorded() -> list[Facts]:
    out: list[Facts] = []
    for path in sorted(RECORDINGS.glob("boundless*.jsonl")):
        lines = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
        rows = [
            (str(x["originator_id"]), str(x["class"]), x["payload"])
            for x in lines
            if x.get("line") == "event"
        ]
        out.extend(_streams(rows))
    return out


def _simulated_events() -> list[DomainEvent]:
    app = RoundAudit()
    try:
        for i in range(3):
            simulate(app, variant="boundless", rounds=6, players=8, table=f"bcore-{i}")
        notes = app.recorder.select_notifications(start=1, limit=1_000_000)
        return [app.mapper.to_domain_event(n) for n in notes]
    finally:
        app.close()


@pytest.fixture(scope="module")
def simulated() -> list[DomainEvent]:
    return _simulated_events()


@pytest.fixture(scope="module")
def streams(simulated: list[DomainEvent]) -> list[Facts]:
    rows = [(str(e.originator_id), type(e).__qualname__, dict(e.__dict__)) for e in simulated]
    return _recorded() + _streams(rows)


def test_the_one_table_names_each_fact_once() -> None:
    assert not set(H.HAND_FACTS) & set(P._PLAYER_EVOLVE)
    assert set(P._EVOLVE) == set(H.HAND_FACTS) | set(P._PLAYER_EVOLVE)


def test_every_participation_fact_folds_as_the_chain_folded_it(streams: list[Facts]) -> None:
    names: set[str] = set()
    assert len(streams) >= 50
    for facts in streams:
        assert facts[0][0] == "Joined", facts[0][0]
        fast = slow = P.joined(facts[0][1])
        for name, f in facts[1:]:
            names.add(name)
            fast, slow = P.evolve(fast, name, f), _chained(slow, name, f)
            assert fast == slow, name
    # the recordings and the simulations reach every kind of fact a participation folds
    for expected in ("BetPlaced", "HandOpened", "CardToHand", "DecisionMade", "HandSplit"):
        assert expected in names
    for expected in ("HandStood", "HandHit", "HandDoubled", "WagerSettled", "WagerAdded"):
        assert expected in names


def _fields(c: Command, players: set[str]) -> dict[str, Any]:
    """A command's fields; a decision's ``balance_of`` (a function) by what it answers."""
    out = {k: getattr(c, k) for k in c.__dataclass_fields__ if k != "balance_of"}
    balance_of = getattr(c, "balance_of", None)
    if balance_of is not None:
        out["balance_of"] = {p: balance_of(p) for p in sorted(players)}
    return out


def test_every_input_makes_the_command_its_payload_makes(simulated: list[DomainEvent]) -> None:
    inputs = [e for e in simulated if isinstance(e, Input) and ".boundless." in type(e).__module__]
    players = {str(e.__dict__.get("player")) for e in inputs} | {"nobody"}
    names: set[str] = set()
    assert len(inputs) >= 200
    for e in inputs:
        name = type(e).__name__
        names.add(name)
        whole, alone = command_for(name, e.__dict__), command_for(name, payload(e))
        assert type(whole) is type(alone)
        assert _fields(whole, players) == _fields(alone, players), name
    for expected in ("Started", "Joined", "BetPlaced", "DecisionMade", "CardDealt"):
        assert expected in names


def test_a_kept_participation_opens_as_the_library_opens_one(
    simulated: list[DomainEvent],
) -> None:
    shared: dict[Any, SharedHand] = {}
    joins = 0
    for e in simulated:
        if isinstance(e, SharedHand.Started):
            start = command_for("Started", payload(e))
            assert isinstance(start, Start)
            shared[e.originator_id] = SharedHand.opened_by(start)
        elif isinstance(e, Participation.Joined):
            joins += 1
            join = command_for("Joined", payload(e))
            assert isinstance(join, Join)
            hand = shared[UUID(join.round_id)]
            made = Participation.opened_by(hand, join)
            made.keep_facts()
            kept = Participation.opened_kept(hand, join)
            assert (kept.id, kept.version, kept.game) == (made.id, made.version, made.game)
            assert kept.id == e.originator_id
            assert sorted(vars(kept)) == sorted(vars(made))
            mine, theirs = kept.derived(), made.derived()
            assert [type(x) for x in mine] == [type(x) for x in theirs]
            assert [payload(x) for x in mine] == [payload(x) for x in theirs]
            assert payload(mine[0]) == payload(e)  # the stored Joined's payload
    assert joins >= 100

"""Verification by re-execution: every conformance round re-executes to identical events, and
altered, removed, swapped or truncated events are found and named."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from scenario_kit import SCENARIOS, play_scenario

from domain.application import RoundAudit
from domain.round import Round
from replays.boundless import verify_round
from replays.reexecute import verify_events

pytestmark = pytest.mark.skipif(not SCENARIOS, reason="../shared/conformance is absent")


def _round(scenario_id: str) -> tuple[str, list[Any]]:
    app = RoundAudit()
    scenario = next(s for s in SCENARIOS if s["id"] == scenario_id)
    rid = play_scenario(app, scenario)
    return rid, list(app.events.get(app.round(rid).id))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_every_conformance_round_reexecutes_to_identical_events(scenario: dict[str, Any]) -> None:
    app = RoundAudit()
    rid = play_scenario(app, scenario)
    if app.boundless.owns(rid):  # SharedHand + Participations: replays.boundless
        shared = verify_round(app, rid)
        assert shared.ok, shared.as_json()
        assert shared.events > 10
        return
    stored = list(app.events.get(app.round(rid).id))
    verdict = verify_events(rid, stored)
    assert verdict.ok, verdict.as_json()
    assert verdict.events == len(stored) > 10


def _replace(e: Any, **changes: Any) -> Any:
    return dataclasses.replace(e, **changes)


def test_an_altered_settlement_is_named_with_its_position_and_rule() -> None:
    rid, stored = _round("P01-blackjack-beats-three-card-21")
    i = next(i for i, e in enumerate(stored) if isinstance(e, Round.WagerSettled))
    stored[i] = _replace(stored[i], payout="30.00")
    verdict = verify_events(rid, stored)
    assert not verdict.ok
    d = verdict.discrepancies[0]
    assert (d.position, d.event, d.field) == (i + 1, "Round.WagerSettled", "payout")
    assert d.recorded == "30.00"
    assert d.expected == "25.00"
    assert d.rule == "OUT-1"


def test_an_altered_card_is_found() -> None:
    rid, stored = _round("P03-surrender-against-nine")
    i = next(i for i, e in enumerate(stored) if isinstance(e, Round.CardDealt))
    stored[i] = _replace(stored[i], card="AS")
    verdict = verify_events(rid, stored)
    assert any(d.event == "Round.CardToHand" and d.field == "card" for d in verdict.discrepancies)


def test_a_deleted_event_is_found() -> None:
    rid, stored = _round("P06-double-after-split")
    i = next(i for i, e in enumerate(stored) if isinstance(e, Round.HandDoubled))
    del stored[i]
    verdict = verify_events(rid, stored)
    assert not verdict.ok
    assert any(d.position == i + 1 for d in verdict.discrepancies)


def test_two_swapped_events_are_found() -> None:
    rid, stored = _round("P05-player-bust-loses-even-if-dealer-busts")
    i = next(i for i, e in enumerate(stored) if isinstance(e, Round.WagerSettled))
    stored[i], stored[i + 1] = stored[i + 1], stored[i]
    assert not verify_events(rid, stored).ok


def test_a_truncated_tail_is_found() -> None:
    rid, stored = _round("P09-two-seat-player")
    verdict = verify_events(rid, stored[:-3])
    assert not verdict.ok
    assert verdict.discrepancies[0].message.startswith("re-execution produced an event")


def test_a_changed_decision_changes_the_consequences() -> None:
    """'I pressed stand and it hit': the stored decision says stand; a log where it says hit
    is refused or diverges, so the recorded consequences can only follow the real input."""
    rid, stored = _round("P01-blackjack-beats-three-card-21")
    i = next(i for i, e in enumerate(stored) if isinstance(e, Round.DecisionMade))
    stored[i] = _replace(stored[i], action="hit")
    assert not verify_events(rid, stored).ok


def test_a_round_log_under_shared_hand_rules_is_refused_at_its_start() -> None:
    """BDL-1: boundless is no longer played as a Round (Round.start refuses shared-hand rules),
    so a Round log under boundless rules re-executes to a refusal naming the rule."""
    old = Round(  # the event constructor, as an old log was written (no start() checks)
        table_id="t1",
        round_number=1,
        rules_key="boundless/1",
        shoe_id="s1",
        shoe_round=1,
        production=False,
        seats={},
        actor={"kind": "system", "id": "test"},
        request_id=None,
        client_time=None,
    )
    stored = old.collect_events()
    verdict = verify_events(str(old.id), stored)
    assert not verdict.ok
    d = verdict.discrepancies[0]
    assert (d.position, d.event, d.field, d.rule) == (1, "Round.Started", "(command)", "BDL-1")
    assert "SharedHand" in d.recorded

"""Play every hand-worked round of ../shared/conformance/scenarios.yaml through the application.

Each scenario runs on a test shoe holding exactly its cards, through ``RoundAudit`` commands,
and must end settled with each player's net, the dealer's cards and the named hands as the
scenario says, having used every card of the scenario and no other.
"""

from __future__ import annotations

from typing import Any

import pytest
from scenario_kit import SCENARIOS, SCENARIOS_FILE, play_scenario

from domain.application import RoundAudit


@pytest.mark.skipif(
    not SCENARIOS_FILE.exists(), reason=f"conformance file absent: {SCENARIOS_FILE}"
)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_conformance_scenario(scenario: dict[str, Any]) -> None:
    app = RoundAudit()
    play_scenario(app, scenario)

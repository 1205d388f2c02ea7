"""RoundAudit on real stores: the same tests against SQLite and PostgreSQL (``store_env``).

Rounds are played through the application, the application is closed and reopened on the same
store, and what comes back must be exactly what was recorded: cards, wagers, balances to the
cent. Refused commands must leave the store unchanged.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from scenario_kit import SCENARIOS, play_scenario

from domain.application import RoundAudit
from domain.errors import CardAccountingError, IllegalAction, InsufficientFunds, WrongOrder


def _notifications(app: RoundAudit) -> int:
    return app.recorder.max_notification_id() or 0


@pytest.mark.skipif(not SCENARIOS, reason="../shared/conformance/scenarios.yaml is absent")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_conformance_scenarios_replay_from_the_store(
    store_env: dict[str, str], scenario: dict[str, Any]
) -> None:
    app = RoundAudit(env=store_env)
    rid = play_scenario(app, scenario)
    live_view = app.round_view(rid)
    balances = {p: app.balance(p) for p in scenario["bets"]}
    app.close()
    reopened = RoundAudit(env=store_env)
    assert reopened.round_view(rid) == live_view
    assert {p: reopened.balance(p) for p in scenario["bets"]} == balances
    reopened.close()


def test_refused_commands_record_nothing(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    app.open_wallet("ann", account_type="test")
    app.deposit("ann", "25.00", transaction_id="d1")
    rid = app.start_round(
        table_id="t1",
        round_number=1,
        variant="multihand",
        production=False,
        test_order=["10H", "9S", "6D", "7C", "5C", "KD", "2H"],
    )
    app.place_bet(rid, player="ann", amount="20.00", spot=1)
    before = _notifications(app)
    with pytest.raises(InsufficientFunds):
        app.place_bet(rid, player="ann", amount="10.00", spot=2)  # 5.00 left
    app.close_betting(rid)
    after_close = _notifications(app)
    with pytest.raises(IllegalAction):
        app.decide(rid, player="ann", action="split")  # 10+6 is no pair
    with pytest.raises(InsufficientFunds):
        app.decide(rid, player="ann", action="double")  # needs 20.00, has 5.00
    assert _notifications(app) == after_close > before
    assert app.balance("ann") == Decimal("5.00")
    view = app.decide(rid, player="ann", action="hit")  # 16 + 5 = 21, stands (HAND-1)
    assert view["phase"] == "settled"
    # dealer 9,7 = 16, draws K: bust -> ann wins 1:1
    assert app.balance("ann") == Decimal("45.00")
    with pytest.raises(WrongOrder):
        app.deal_card(rid, "AS")
    app.close()


def test_live_shoe_refuses_a_card_beyond_the_decks_and_records_nothing(
    store_env: dict[str, str],
) -> None:
    app = RoundAudit(env=store_env)
    sid = app.open_shoe(
        table_id="live-1",
        shoe_number=1,
        kind="live",
        decks=1,
        production=True,
        burn_procedure=True,
    )
    app.burn(sid, card="2S", cards=["3S", "4S"])  # SHOE-2: a 2 burns two cards
    app.open_wallet("bob")
    app.deposit("bob", "100", transaction_id="d1")
    app.open_table("live-1")
    app.sit("live-1", player="bob", seat=3)
    rid = app.start_round(table_id="live-1", round_number=1, variant="deluxe", shoe_id=sid)
    app.place_bet(rid, player="bob", amount="10", spot=3)
    app.close_betting(rid)
    app.deal_card(rid, "AS")
    before = _notifications(app)
    with pytest.raises(CardAccountingError):
        app.deal_card(rid, "AS")  # a second ace of spades in a one-deck shoe
    assert _notifications(app) == before
    assert app.round(rid).card_needed == {"for": "dealer"}
    app.close()

"""Verification of boundless rounds by re-execution (replays/boundless.py), on SQLite and
PostgreSQL: inputs re-executed through fresh SharedHand and Participation aggregates, each
aggregate's consequences compared event by event, D9 hands recomputed for every player; and
the discrepancies an altered, dropped or reordered record produces."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest
from roundkit import Kit, stack

from domain.application import RoundAudit
from domain.boundless.participation import Participation
from domain.boundless.service import Bet, Decision
from domain.errors import InsufficientFunds
from replays.boundless import verify_log, verify_round

V = "boundless"


def played(app: RoundAudit | None = None) -> Kit:
    order = stack(
        V, [["8H", "8D"]], up="AC", hole="9S", draws=["3C", "9D", "KH", "2S"], dealer_draws=["5S"]
    )
    kit = Kit(V, order, players=["A", "B", "C", "S"], app=app)
    for p in "ABC":
        kit.bet(p, 10)
    kit.side("S", "bust", 2)
    kit.side("A", "poker", 1)
    kit.close()
    kit.decide("A", "insurance")
    kit.decide("B", "no_insurance")
    kit.timeout("C")
    kit.decide("A", "split")
    kit.decide("B", "double")
    kit.disconnect("C")
    kit.decide("A", "stand")
    kit.decide("A", "hit")
    if kit.phase == "playing":
        kit.decide("A", "stand")
    assert kit.phase == "settled"
    return kit


def test_a_settled_round_re_executes_to_the_same_events(store_env):
    app = RoundAudit(store_env)
    kit = played(app)
    verdict = verify_round(app, kit.rid)
    assert verdict.ok, verdict.as_json()
    assert verdict.players == 4
    assert verdict.events == len(kit.events())
    app.close()


def test_a_cancelled_round_re_executes_with_every_refund():
    order = stack(V, [["8H", "8D"]], up="6C", hole="9S", draws=["2C", "3C", "4C"])
    kit = Kit(V, order, players=["A", "C"])
    kit.bet("A", 10)
    kit.side("C", "trio", 1)
    kit.close()
    kit.decide("A", "split")
    kit.cancel()
    assert verify_round(kit.app, kit.rid).ok


def test_an_altered_payout_is_named_with_its_field_and_rule():
    kit = played()
    log = kit.app.boundless.round_log(kit.rid)
    i = next(
        i
        for i, e in enumerate(log)
        if isinstance(e, Participation.WagerSettled) and e.wager_id == "B:main"
    )
    log[i] = dataclasses.replace(log[i], payout="99.00")
    verdict = verify_log(log)
    assert not verdict.ok
    d = verdict.discrepancies[0]
    assert (d.aggregate, d.event, d.field, d.recorded) == (
        "B", "Participation.WagerSettled", "payout", "99.00"
    )  # fmt: skip
    assert d.rule is not None


def test_a_dropped_consequence_is_reported():
    kit = played()
    log = [
        e
        for e in kit.app.boundless.round_log(kit.rid)
        if not (isinstance(e, Participation.HandStood) and e.hand == "A.1")
    ]
    verdict = verify_log(log)
    assert any(d.aggregate == "A" for d in verdict.discrepancies)


def test_a_card_given_to_the_wrong_hand_breaks_d9():
    kit = played()
    log = kit.app.boundless.round_log(kit.rid)
    i = next(
        i for i, e in enumerate(log) if isinstance(e, Participation.CardToHand) and e.hand == "A.2"
    )
    log[i] = dataclasses.replace(log[i], card="AS")
    verdict = verify_log(log)
    fields = {(d.aggregate, d.field) for d in verdict.discrepancies}
    assert ("A", "card") in fields
    assert ("A", "hands") in fields  # the recorded hands no longer follow the sequence (D9)


def test_blackjack_against_a_dealer_blackjack_verifies_end_1():
    """END-1 at the peek: no hand is played (a BJ is not even stood), settlement follows."""
    kit = Kit(V, stack(V, [["AH", "KD"]], up="KC", hole="AS"), players=["A", "B", "S"])
    kit.bet("A", 10)
    kit.bet("B", 10)
    kit.side("S", "trio", 1)
    kit.close()
    assert kit.phase == "settled"
    verdict = verify_round(kit.app, kit.rid)
    assert verdict.ok, verdict.as_json()


def test_a_log_that_is_not_a_boundless_round():
    assert not verify_log([]).ok


def test_a_bet_recorded_after_betting_closed_is_refunded_and_verifies():
    """Two processes: one accepted a bet from its stale view while the other closed betting.
    The bet lands after BettingClosed in the log: the round refunds it (PHASE-1)."""
    app = RoundAudit()
    for p in ("A", "LATE"):
        app.open_wallet(p, account_type="test")
        app.deposit(p, "100", transaction_id=f"dep-{p}")
    order = stack(V, [["10H", "7D"]], up="9C", hole="8S")
    rid = app.start_round(
        table_id="race", round_number=1, variant=V, production=False, test_order=order
    )
    assert app.boundless.place_bets(rid, [Bet("A", "10")]) == [None]
    stale = app.boundless.load(app.boundless.shared(rid).id)  # the other process's view
    app.close_betting(rid)
    # the other process, still seeing "betting", records its player's bet and stake
    late = Participation.join(stale, "LATE")  # type: ignore[arg-type]
    wallet = app.wallet("LATE")
    late.place_bet(stale, kind="main", amount="10", balance=wallet.balance)  # type: ignore[arg-type]
    wallet.debit_stake(
        "10.00", round_id=rid, wager_id="LATE:main", transaction_id=f"{rid}/LATE:main/stake"
    )
    app.save(late, wallet)
    assert app.balance("LATE") == 90
    app.boundless.decide_many(rid, [Decision("A", "stand")])
    view = app.round_view(rid)
    assert view["phase"] == "settled"
    late_wager: dict[str, Any] = next(w for w in view["wagers"] if w["player"] == "LATE")
    assert (late_wager["result"], late_wager["payout"]) == ("refund", "10.00")
    assert app.balance("LATE") == 100
    assert "LATE" not in [h["player"] for h in view["hands"]]
    assert verify_round(app, rid).ok


def test_several_bets_of_one_player_in_one_batch_each_see_the_balance_left():
    """A batch (``place_bets``) holding a player's main bet and side bets: each bet is checked
    against, and records, the balance left after the stakes before it, so the money
    check finds every ``balance_seen`` equal to the wallet's balance before that stake; a bet
    the balance no longer covers is refused alone, the others stand."""
    from replays.bundle import StoreReader
    from replays.verify import verify_bundle

    app = RoundAudit()
    app.open_wallet("A", account_type="test")
    app.deposit("A", "15", transaction_id="dep-A")
    order = stack(V, [["10H", "7D"]], up="9C", hole="8S")
    rid = app.start_round(
        table_id="batch", round_number=1, variant=V, production=False, test_order=order
    )
    results = app.boundless.place_bets(
        rid, [Bet("A", "10"), Bet("A", "5", "pair"), Bet("A", "1", "bust")]
    )
    assert results[:2] == [None, None]
    assert isinstance(results[2], InsufficientFunds)
    bets = [e for e in app.boundless.round_log(rid) if type(e).__name__ == "BetPlaced"]
    assert [(b.kind, b.balance_seen) for b in bets] == [("main", "15.00"), ("pair", "5.00")]
    assert app.balance("A") == 0
    app.close_betting(rid)
    app.boundless.decide_many(rid, [Decision("A", "stand")])
    assert app.round_view(rid)["phase"] == "settled"
    verdict = verify_bundle(StoreReader(app).round_bundle(UUID(rid)))
    assert verdict.ok, verdict.as_json()
    app.close()


def test_a_decision_naming_an_impossible_player_id_is_refused_alone():
    """``decide_many`` checks every item on its own: an id no player can have (``:`` is
    reserved) is that item's refusal; the other decisions of the batch are recorded."""
    app = RoundAudit()
    for p in ("A", "B"):
        app.open_wallet(p, account_type="test")
        app.deposit(p, "100", transaction_id=f"dep-{p}")
    order = stack(V, [["10H", "7D"]], up="9C", hole="8S")
    rid = app.start_round(table_id="ids", round_number=1, variant=V, production=False,
                          test_order=order)  # fmt: skip
    assert app.boundless.place_bets(rid, [Bet("A", "10"), Bet("B", "10")]) == [None, None]
    app.close_betting(rid)
    results = app.boundless.decide_many(
        rid, [Decision("A", "stand"), Decision("x:y", "stand"), Decision("NOBODY", "stand"),
              Decision("B", "stand")],
    )  # fmt: skip
    assert results[0] is None
    assert results[3] is None
    assert type(results[1]).__name__ == "UnknownPlayer"
    assert "player id 'x:y' is not usable" in str(results[1])
    assert type(results[2]).__name__ == "UnknownPlayer"
    assert app.round_view(rid)["phase"] == "settled"
    assert verify_round(app, rid).ok
    app.close()


def test_automatic_steps_that_keep_conflicting_end_in_concurrent_update(monkeypatch):
    """When the round's automatic work (cards, dealer, settlement) cannot be saved after the
    retries, the command ends with the domain's ``concurrent-update`` (never a raw store
    error); the decisions it recorded stand, and the next command carries the round on."""
    from eventsourcing.persistence import IntegrityError

    from domain.application import ConcurrentUpdate

    app = RoundAudit()
    app.open_wallet("A", account_type="test")
    app.deposit("A", "100", transaction_id="dep-A")
    order = stack(V, [["10H", "7D"]], up="9C", hole="8S")
    rid = app.start_round(table_id="busy", round_number=1, variant=V, production=False,
                          test_order=order)  # fmt: skip
    app.boundless.place_bets(rid, [Bet("A", "10")])
    app.close_betting(rid)
    svc = app.boundless
    real = svc._save_step

    def always_conflicting(*args: Any, **kwargs: Any) -> None:
        raise IntegrityError("simulated: another writer")

    monkeypatch.setattr(svc, "_save_step", always_conflicting)
    with pytest.raises(ConcurrentUpdate, match="what the command itself recorded stands"):
        svc.decide_many(rid, [Decision("A", "stand")])
    made = [e for e in svc.round_log(rid) if type(e).__name__ == "DecisionMade"]
    assert [e.action for e in made] == ["stand"]  # recorded before the automatic steps
    monkeypatch.setattr(svc, "_save_step", real)
    assert svc.advance(rid)["phase"] == "settled"
    assert verify_round(app, rid).ok
    app.close()

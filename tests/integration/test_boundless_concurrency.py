"""Concurrent decisions of different boundless players never conflict (SQLite and PostgreSQL).

A decision loads only its player's Participation and wallet and reads the SharedHand, so
players deciding at the same time, in several threads and several application instances (as
several API workers would), write disjoint aggregates: no optimistic-concurrency conflict, no
retry, every decision recorded. The round is then finished by the dealer's side in another
instance, which catches up from the log, and re-executes to the same events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.application import RoundAudit
from domain.boundless.service import Bet, BoundlessService, Decision
from replays.boundless import verify_round

PLAYERS = [f"P{i:02d}" for i in range(24)]
INITIAL = ["10H", "9C", "6D", "8S"]  # shared 10,6 = 16 against a 9: hit, stand or surrender


def count_conflicts(svc: BoundlessService, into: list[Exception]) -> None:
    """Record every write conflict the service meets (it would retry them)."""
    original = svc._retry

    def retry(fn: Callable[[], Any]) -> Any:
        def attempt() -> Any:
            try:
                return fn()
            except (IntegrityError, RecordConflictError) as exc:
                into.append(exc)
                raise

        return original(attempt)

    svc._retry = retry  # type: ignore[method-assign]


def live_round(env: dict[str, str]) -> tuple[RoundAudit, str]:
    """A live-shoe round (the studio's reader sends every card: decisions never make the
    dealer reveal one in the same command), every player betting, the deal done."""
    app = RoundAudit(env)
    for p in PLAYERS:
        app.open_wallet(p, account_type="test")
        app.deposit(p, "100", transaction_id=f"dep-{p}")
    sid = app.open_shoe(table_id="conc", shoe_number=1, kind="live", decks=8, production=False)
    rid = app.start_round(
        table_id="conc", round_number=1, variant="boundless", shoe_id=sid, production=False
    )
    assert app.boundless.place_bets(rid, [Bet(p, "10") for p in PLAYERS]) == [None] * 24
    app.close_betting(rid)
    for card in INITIAL:
        app.deal_card(rid, card)
    assert app.round_view(rid)["phase"] == "playing"
    return app, rid


def action(i: int) -> str:
    return ("hit", "stand", "surrender")[i % 3]


def run_threads(work: list[Callable[[], None]]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(work))

    def body(fn: Callable[[], None]) -> None:
        try:
            barrier.wait()
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(fn,)) for fn in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def finish(app: RoundAudit, rid: str) -> None:
    """Reveal the cards the hands (then the dealer) need; players still deciding stand."""
    cards = iter(["2C", "3D", "KS", "7H", "4C", "5S", "2H"])
    while app.round_view(rid)["phase"] not in ("settled", "cancelled"):
        if app.round_view(rid)["card_needed"] is not None:
            app.deal_card(rid, next(cards))
            continue
        pending = app.boundless.pending(rid)
        assert pending, app.round_view(rid)
        app.boundless.decide_many(rid, [Decision(p["player"], "stand") for p in pending])


@pytest.mark.parametrize("workers", [1, 4], ids=["one-instance", "four-instances"])
def test_concurrent_decisions_of_different_players_never_conflict(store_env, workers):
    app, rid = live_round(store_env)
    shared_version = app.boundless.shared(rid).version
    worker_env = {**store_env, "CREATE_TABLE": "n"}
    apps = [app] if workers == 1 else [RoundAudit(worker_env) for _ in range(workers)]
    conflicts: list[Exception] = []
    for a in apps:
        count_conflicts(a.boundless, conflicts)
    threads = 6

    def decide_for(k: int) -> Callable[[], None]:
        def fn() -> None:
            mine = apps[k % len(apps)]
            for i, p in enumerate(PLAYERS):
                if i % threads == k:
                    mine.decide(rid, player=p, action=action(i), request_id=f"req-{p}")

        return fn

    errors = run_threads([decide_for(k) for k in range(threads)])
    assert errors == []
    assert conflicts == [], "concurrent decisions of different players conflicted"

    view = app.round_view(rid)  # another instance's writes, caught up from the log
    by_player = {h["player"]: h for h in view["hands"]}
    for i, p in enumerate(PLAYERS):
        h = by_player[p]
        expected = {"hit": None, "stand": "stand", "surrender": "surrender"}[action(i)]
        assert h["finish_reason"] == expected, (p, h)
    decided = [
        e["payload"]["player"]
        for e in app.round_events(rid)
        if e["type"] == "Participation.DecisionMade"
    ]
    assert sorted(decided) == PLAYERS, "every decision recorded exactly once"
    assert app.boundless.shared(rid).version == shared_version, "decisions never wrote it"
    assert view["card_needed"] == {"for": "sequence", "index": "0"}  # the hitters wait (BDL-2)

    finish(app, rid)
    assert app.round_view(rid)["phase"] == "settled"
    verdict = verify_round(app, rid)
    assert verdict.ok, verdict.as_json()
    for a in apps:
        if a is not app:
            a.close()
    app.close()


def test_concurrent_batches_of_decisions_from_two_instances(store_env):
    app, rid = live_round(store_env)
    other = RoundAudit({**store_env, "CREATE_TABLE": "n"})
    conflicts: list[Exception] = []
    count_conflicts(app.boundless, conflicts)
    count_conflicts(other.boundless, conflicts)
    halves = [PLAYERS[::2], PLAYERS[1::2]]
    results: list[list[Any]] = []

    def batch(a: RoundAudit, players: list[str]) -> Callable[[], None]:
        def fn() -> None:
            decisions = [Decision(p, "stand", request_id=f"b-{p}") for p in players]
            results.append(a.boundless.decide_many(rid, decisions))

        return fn

    errors = run_threads([batch(app, halves[0]), batch(other, halves[1])])
    assert errors == []
    assert conflicts == []
    assert all(r is None for rs in results for r in rs)
    # every player stood: the last writer's instance saw everyone done and played the dealer;
    # if both finished at once, the next command on the round moves it on
    app.boundless.advance(rid)
    finish(app, rid)
    view = app.round_view(rid)
    assert view["phase"] == "settled", view["phase"]
    assert sum(w["result"] == "lose" for w in view["wagers"]) == 24  # 16 against 9, 8 + card
    other.close()
    app.close()

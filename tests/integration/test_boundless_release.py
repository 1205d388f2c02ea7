"""A boundless round lets go of each settled participation once its events are saved
(``Engine.release``), and reads it back from the store when it is asked for again (SQLite and
PostgreSQL): the round's view, a late decision's refusal and the index's catch-up are what they
were while it was held (docs/performance-history.md ``bwrec``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from roundkit import stack

from domain.application import RoundAudit
from domain.boundless.engine import Released
from domain.boundless.index import Tracked
from domain.boundless.participation import participation_id
from domain.boundless.service import Bet, Decision
from domain.errors import DomainError
from domain.game import commands as C
from replays.boundless import verify_round

V = "boundless"
PLAYERS = ("A", "B", "C")


def _play_settled_round(app: RoundAudit) -> str:
    order = stack(V, [["10H", "9D"]], up="9C", hole="8S")  # 19 against 17
    rid = app.start_round(
        table_id="release", round_number=1, variant=V, production=False, test_order=order
    )
    for p in PLAYERS:
        app.open_wallet(p, account_type="test")
        app.deposit(p, "30", transaction_id=f"dep-{p}")
    bets = [Bet(p, "8") for p in PLAYERS] + [Bet("A", "1", "pair")]
    assert app.boundless.place_bets(rid, bets) == [None] * len(bets)
    app.close_betting(rid)
    assert app.boundless.decide_many(rid, [Decision(p, "stand") for p in PLAYERS]) == [None] * 3
    return rid


@pytest.fixture
def settled(store_env: dict[str, str]) -> Iterator[tuple[RoundAudit, str, Tracked]]:
    """A settled three-player round, its application (closed after the test, whatever its
    outcome) and the service's table of the round."""
    app = RoundAudit(store_env)
    try:
        rid = _play_settled_round(app)
        yield app, rid, next(iter(app.boundless._rounds.values()))
    finally:
        app.close()


def test_settled_participations_are_let_go_and_read_back_the_same(
    settled: tuple[RoundAudit, str, Tracked], store_env: dict[str, str]
) -> None:
    app, rid, t = settled
    eng = t.eng
    assert eng.shared.finished
    assert eng.released == len(PLAYERS)
    versions = {}
    for p in PLAYERS:
        kept = eng.kept(participation_id(rid, p))
        assert isinstance(kept, Released)
        assert kept.player == p
        versions[p] = kept.version
    # the view of a process that never held the round (each participation from its events)
    fresh = RoundAudit({**store_env, "CREATE_TABLE": "n"})
    try:
        expected = fresh.boundless.round_view(rid)
    finally:
        fresh.close()
    assert app.boundless.round_view(rid) == expected
    assert eng.released == 0  # read back, and held again
    a = eng.participation("A")
    assert a is not None
    assert a.version == versions["A"] > 1
    assert {w.id: (w.result, str(w.payout)) for w in a.wagers.values()} == {
        "A:main": ("win", "16.00"),
        "A:pair:A": ("lose", "0.00"),
    }
    assert verify_round(app, rid).ok


def test_a_late_decision_for_a_released_player_is_refused_as_when_held(
    settled: tuple[RoundAudit, str, Tracked],
) -> None:
    app, rid, t = settled
    pid = participation_id(rid, "B")
    assert isinstance(t.eng.kept(pid), Released)
    # the refusal a participation as its stored events make it gives (what was held)
    stored = app.boundless._load_part(pid)
    command = C.Decide(player="B", action="hit", balance=app.wallet("B").balance)
    with pytest.raises(DomainError) as held:
        stored.execute(t.eng.shared, command)
    last = app.recorder.max_notification_id()
    with pytest.raises(DomainError) as late:
        app.decide(rid, player="B", action="hit")
    assert (type(late.value), str(late.value)) == (type(held.value), str(held.value))
    assert app.recorder.max_notification_id() == last  # refused before anything was recorded


def test_the_catch_up_skips_a_released_participations_saved_events_without_reading_it(
    settled: tuple[RoundAudit, str, Tracked],
) -> None:
    """The index's catch-up meets the round's own notifications again when another writer
    came in between; those of a released participation are behind its version: skipped, not
    read back from the store."""
    app, _, t = settled
    start = app.boundless.start_position(t.rid)
    assert start is not None
    with t.lock:
        for n in app.recorder.select_notifications(start=start, limit=1000):
            app.boundless._apply(t, n)  # each one again, as a catch-up that met them
    assert t.eng.released == len(PLAYERS)

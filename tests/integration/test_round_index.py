"""The round index projection on SQLite and PostgreSQL: states, players, searches and pages,
a rebuild equal to the live rows, and a batch written without a query per event.

Expectations come from the rounds' own events (``app.events``), not from constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from roundkit import Kit

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from projections.round_index import RoundIndex, RoundQuery, round_players, search
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore, Tx

NINE_UP = ["5H", "10C", "9S", "3C", "8C", "7D", "2D", "9C", "10H", "10D"]


@pytest.fixture
def app(store_url: str) -> Iterator[RoundAudit]:
    audit = RoundAudit(env=environment_for(store_url))
    yield audit
    audit.close()


@pytest.fixture
def store(store_url: str) -> Iterator[ProjectionStore]:
    with ProjectionStore.open(store_url) as s:
        yield s


def fill(app: RoundAudit) -> dict[str, list[str]]:
    """Simulated rounds of two classic variants and one boundless table, a round left in
    betting, a paused one and a cancelled one (test shoes)."""
    ids: dict[str, list[str]] = {}
    for variant, table in (("multihand", "ix-m"), ("deluxe", "ix-d"), ("boundless", "ix-b")):
        ids[variant] = simulate(app, variant=variant, rounds=2, players=4, table=table).round_ids
    open_round = Kit("multihand", NINE_UP, players=("ana", "ben"), app=app, table="ix-open")
    open_round.bet("ana", 10, spot=1)
    paused = Kit("multihand", NINE_UP, players=("cy",), app=app, table="ix-paused")
    paused.bet("cy", 10, spot=1)
    paused.close()
    paused.pause()
    cancelled = Kit("multihand", NINE_UP, players=("di",), app=app, table="ix-cancel")
    cancelled.bet("di", 10, spot=1)
    cancelled.pause()
    cancelled.cancel()
    ids["kits"] = [str(open_round.rid), str(paused.rid), str(cancelled.rid)]
    return ids


def bettors(app: RoundAudit, rid: str) -> set[str]:
    """Who had a bet in the round, from its events (boundless: its participations)."""
    events = list(app.events.get(UUID(rid)))
    if type(events[0]).__qualname__.startswith("SharedHand"):
        return {p.player for p in app.boundless.participations(UUID(rid))}
    return {e.player for e in events if type(e).__name__ == "BetPlaced"}


def caught_up(app: RoundAudit, store: ProjectionStore, **kw: Any) -> ProjectionRunner:
    runner = ProjectionRunner(app, store, [RoundIndex()], **kw)
    runner.catch_up()
    assert runner.position == runner.head
    return runner


def everything(tx: Tx) -> list[Any]:
    return search(tx, RoundQuery(), limit=10_000)


def test_every_round_with_its_state_players_and_times(
    app: RoundAudit, store: ProjectionStore
) -> None:
    ids = fill(app)
    caught_up(app, store)
    with store.read() as tx:
        rows = {r.round_id: r for r in everything(tx)}
    all_ids = [rid for group in ids.values() for rid in group]
    assert set(rows) == set(all_ids)
    open_rid, paused_rid, cancelled_rid = ids["kits"]
    for rid in all_ids:
        row = rows[rid]
        events = list(app.events.get(UUID(rid)))
        started = events[0]
        assert (row.table_id, row.round_number, row.rules_key) == (
            started.table_id,
            started.round_number,
            started.rules_key,
        )
        assert row.boundless == type(started).__qualname__.startswith("SharedHand")
        assert row.players == len(bettors(app, rid))
        assert row.started_at == started.timestamp.isoformat()
        names = {type(e).__name__ for e in events}
        if "RoundSettled" in names:
            assert (row.state, row.ended_at) == ("settled", events[-1].timestamp.isoformat())
    assert (rows[open_rid].state, rows[open_rid].paused) == ("betting", False)
    assert (rows[paused_rid].state, rows[paused_rid].paused) == ("playing", True)
    assert (rows[cancelled_rid].state, rows[cancelled_rid].paused) == ("cancelled", False)
    with store.read() as tx:
        paused = search(tx, RoundQuery(states=("paused",)))
        live = search(tx, RoundQuery(states=("betting", "playing")))
        boundless = search(tx, RoundQuery(variants=("boundless",)))
        ana = search(tx, RoundQuery(player="ana"))
        second = search(tx, RoundQuery(tables=("ix-d",), number=2))
    assert [r.round_id for r in paused] == [paused_rid]
    assert {r.round_id for r in live} == {open_rid, paused_rid}
    assert {r.round_id for r in boundless} == set(ids["boundless"])
    assert [r.round_id for r in ana] == [open_rid]
    assert [r.round_id for r in second] == [ids["deluxe"][1]]


def test_pages_cover_every_round_once_newest_first(app: RoundAudit, store: ProjectionStore) -> None:
    fill(app)
    caught_up(app, store)
    with store.read() as tx:
        whole = everything(tx)
        assert [r.started_us for r in whole] == sorted((r.started_us for r in whole), reverse=True)
        seen: list[str] = []
        after = None
        while True:
            page = search(tx, RoundQuery(), after=after, limit=3)
            seen += [r.round_id for r in page]
            if len(page) < 3:
                break
            after = (page[-1].started_us, page[-1].round_id)
        middle = whole[len(whole) // 2]
        since = search(tx, RoundQuery(started_from=middle.started_us), limit=10_000)
    assert seen == [r.round_id for r in whole]
    assert {r.round_id for r in since} == {
        r.round_id for r in whole if r.started_us >= middle.started_us
    }


def test_a_boundless_rounds_players_by_prefix(app: RoundAudit, store: ProjectionStore) -> None:
    ids = fill(app)
    caught_up(app, store)
    rid = ids["boundless"][0]
    players = sorted(bettors(app, rid))
    with store.read() as tx:
        assert round_players(tx, rid, limit=1000) == players
        first = players[0]
        assert round_players(tx, rid, prefix=first) == [first]
        assert round_players(tx, rid, prefix="nobody") == []
        assert round_players(tx, rid, after=players[0], limit=2) == players[1:3]


def test_a_rebuild_gives_the_live_rows_in_small_batches(
    app: RoundAudit, store: ProjectionStore
) -> None:
    fill(app)
    live = caught_up(app, store, batch_size=7).dump()
    runner = ProjectionRunner(app, store, [RoundIndex()], batch_size=500)
    runner.rebuild()
    assert runner.dump() == live


def test_a_batch_is_a_few_statements_whatever_its_size(
    app: RoundAudit, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(app)
    calls: list[str] = []
    original_execute, original_many = Tx.execute, Tx.executemany
    original_insert, original_update = Tx.insert, Tx.update

    def execute(tx: Tx, sql: str, params: Any = ()) -> int:
        calls.append(sql)
        return original_execute(tx, sql, params)

    def executemany(tx: Tx, sql: str, rows: Any) -> None:
        calls.append(sql)
        original_many(tx, sql, rows)

    def insert(tx: Tx, table: str, columns: Any, rows: Any, conflict: str = "") -> None:
        calls.append(f"insert {table}")
        original_insert(tx, table, columns, rows, conflict)

    def update(tx: Tx, table: str, keys: Any, columns: Any, rows: Any) -> None:
        calls.append(f"update {table}")
        original_update(tx, table, keys, columns, rows)

    runner = ProjectionRunner(app, store, [RoundIndex()], batch_size=5000)
    monkeypatch.setattr(Tx, "execute", execute)
    monkeypatch.setattr(Tx, "executemany", executemany)
    monkeypatch.setattr(Tx, "insert", insert)
    monkeypatch.setattr(Tx, "update", update)
    runner.run_once()
    mine = [c for c in calls if "rounds_index" in c]
    assert runner.position == runner.head
    assert len(mine) <= 8, mine  # inserts of rounds and players, an update per kind of change

"""``StoreVerifier.round_ids`` without a date range reads the round ids alone, with one query
(``StoreReader.first_appearances``) on SQLite and PostgreSQL: the same list, in the same order,
as the walk over every round record that a date range (and the in-memory store) uses, for
classic and boundless rounds recorded interleaved, and with a round known only to the log."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder
from storekit import Store

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.bundle import StoreReader
from replays.verify import StoreVerifier


def _walked(app: RoundAudit, monkeypatch: pytest.MonkeyPatch) -> list[UUID]:
    """The ids the walk over the round records gives (the query made unavailable)."""
    with monkeypatch.context() as m:
        m.setattr(StoreReader, "first_appearances", lambda self, topics: None)
        return StoreVerifier(app).round_ids()


def _record(app: RoundAudit) -> list[UUID]:
    ids: list[str] = []
    ids += simulate(app, variant="european", rounds=2, players=2, table="a").round_ids
    ids += simulate(app, variant="boundless", rounds=1, players=2, table="b").round_ids
    ids += simulate(app, variant="deluxe", rounds=1, players=2, table="c").round_ids
    ids += simulate(app, variant="european", rounds=1, players=2, table="a").round_ids
    return [UUID(r) for r in ids]


def test_the_ids_are_those_of_the_walk_in_the_same_order(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_on_every_store
    made = _record(app)
    verifier = StoreVerifier(app)
    fast = verifier.round_ids()
    assert fast == made  # every round, in the order recorded
    assert fast == _walked(app, monkeypatch)
    # the query ran on the SQL stores (and the memory store walks)
    first = verifier.reader.first_appearances(("domain.round:Round.Started",))
    if isinstance(app.recorder, SQLiteAggregateRecorder | PostgresAggregateRecorder):
        assert first == [r for r in made if r != made[2]]  # the boundless round has no Round
    else:
        assert first is None


def test_a_round_whose_records_were_deleted_is_still_listed_from_the_log(
    store_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = RoundAudit(env=environment_for(store_url))
    try:
        made = _record(app)
    finally:
        app.close()
    Store(store_url, tmp_path / "unused.pem", capsys).delete(made[0])
    app = RoundAudit(env=environment_for(store_url))
    try:
        fast = StoreVerifier(app).round_ids()
        assert fast == _walked(app, monkeypatch)
        assert fast == [*made[1:], made[0]]  # known to the log alone: listed after the others
    finally:
        app.close()

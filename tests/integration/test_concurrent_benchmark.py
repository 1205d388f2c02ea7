"""``benchmarks.concurrent`` with the tables played by several processes (``--processes``,
issue 15's "more service processes on PostgreSQL"), on SQLite and PostgreSQL: every round of
every process recorded and verified, the notification ids without a gap, every process's CPU
counted; and its check of what was recorded (``check_recorded``) fails when a round or an
event is missing. Shapes and outcomes only: the timings belong to the benchmark."""

from __future__ import annotations

import doctest
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from eventsourcing.utils import get_topic
from storekit import twin_store_url

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import concurrent
from benchmarks.__main__ import _app, all_notifications
from domain.errors import RoundNotFound
from domain.round import Round
from replays.verify import StoreVerifier

TABLES, ROUNDS = 3, 2


@pytest.fixture
def raw_url(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A second fresh store of the same kind, for the raw baseline."""
    with twin_store_url(store_url, tmp_path, request) as url:
        yield url


def test_shares_split_the_tables_evenly() -> None:
    assert concurrent.shares(8, 2) == [range(0, 4), range(4, 8)]
    assert concurrent.shares(8, 3) == [range(0, 3), range(3, 6), range(6, 8)]
    assert concurrent.shares(2, 2) == [range(0, 1), range(1, 2)]
    assert [len(s) for s in concurrent.shares(5, 5)] == [1] * 5


def test_two_processes_record_every_round_of_their_tables(store_url: str, raw_url: str) -> None:
    report = concurrent.run(store_url, raw_url, threads=TABLES, rounds=ROUNDS, processes=2)
    assert (report.processes, report.threads, report.rounds) == (2, TABLES, TABLES * ROUNDS)
    assert report.seconds > 0
    assert report.raw_seconds > 0
    assert report.cpu_seconds > 0  # the two recording processes' CPU, not this one's
    assert report.calls is not None
    assert report.groups is not None
    assert report.calls >= report.groups > 0  # each process's saves, in its own commits
    assert (report.server_cpu_seconds is None) == store_url.startswith("sqlite")
    assert f"2 processes, {TABLES} threads (tables), {TABLES * ROUNDS} european rounds" in (
        report.detail()
    )
    assert f"checked: {TABLES * ROUNDS} rounds started and verified" in report.detail()

    # independently of the benchmark's own check: every table's rounds are in the store
    # (its warm-up round on cc-warm-N, then ROUNDS rounds on cc-N, whichever process it was)
    app = _app(store_url)
    try:
        for table in range(TABLES):
            for number in range(1, ROUNDS + 1):
                assert app.round(Round.create_id(f"cc-{table}", number))
            with pytest.raises(RoundNotFound):
                app.round(Round.create_id(f"cc-{table}", ROUNDS + 1))
            assert app.round(Round.create_id(f"cc-warm-{table}", 1))
        notes = all_notifications(app)
        assert [n.id for n in notes] == list(range(1, len(notes) + 1))  # no gap, none lost
        verifier = StoreVerifier(app)
        verdicts = list(verifier.verify_many(verifier.round_ids()))
        assert len(verdicts) == TABLES * (ROUNDS + 1)
        assert all(v.ok for v in verdicts)
    finally:
        app.close()


def test_a_store_url_with_roundaudit_s_own_parameters(store_url: str, raw_url: str) -> None:
    """``--commit-delay``: the URL's ``commit_delay`` reaches every process's group commit;
    the backends' CPU is read over a connection without it (libpq refuses it)."""
    sep = "&" if "?" in store_url else "?"
    report = concurrent.run(
        f"{store_url}{sep}commit_delay=0", raw_url, threads=2, rounds=1, processes=2
    )
    assert report.rounds == 2
    assert "checked: 2 rounds started and verified" in report.detail()


def test_waits_sample_the_backends_on_postgres_only(store_url: str, raw_url: str) -> None:
    """``--waits``: what PostgreSQL's backends were doing while the tables played (each
    process's connections seen); nothing to sample on SQLite."""
    report = concurrent.run(store_url, raw_url, threads=2, rounds=2, processes=2, waits=True)
    if store_url.startswith("sqlite"):
        assert report.waits is None
        return
    assert report.waits is not None
    assert sum(report.waits.values()) > 0
    assert set(report.waits) <= {"idle", "in transaction", "on CPU"} | {
        k for k in report.waits if ":" in k
    }
    assert concurrent.wait_shares(report.waits)


def test_the_module_s_doctests() -> None:
    assert doctest.testmod(concurrent).failed == 0


def test_one_process_is_checked_the_same_way(store_url: str, raw_url: str) -> None:
    report = concurrent.run(store_url, raw_url, threads=2, rounds=1)
    assert (report.processes, report.rounds) == (1, 2)
    assert report.detail().startswith("2 threads (tables), 2 european rounds")
    assert "checked: 2 rounds started and verified" in report.detail()


def test_the_check_fails_when_a_round_or_an_event_is_missing(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    url = "sqlite:///" + quote(str(db))
    concurrent.run(url, "sqlite:///" + quote(str(tmp_path / "raw.db")), threads=2, rounds=2)
    started = get_topic(Round.Started)

    def check(played: int | None = None) -> str:
        app = _app(url)
        try:
            notes = all_notifications(app)
            rounds = sum(n.topic == started for n in notes)  # the warm-up rounds' too
            return concurrent.check_recorded(app, notes, 0, rounds if played is None else played)
        finally:
            app.close()

    assert check() == (
        "checked: 6 rounds started and verified, "
        f"{_count(url)} events in the log without a gap, each in one leaf"
    )
    with pytest.raises(concurrent.RecordingLost, match="7 rounds played, 6 recorded"):
        check(played=7)
    last = _count(url)
    with sqlite3.connect(db) as conn:  # the last event of the last round: no gap to see
        conn.execute("DELETE FROM stored_events WHERE rowid = ?", (last,))
    with pytest.raises(concurrent.RecordingLost, match=r"failed verification|the log"):
        check()
    with sqlite3.connect(db) as conn:  # an event in the middle: a gap
        conn.execute("DELETE FROM stored_events WHERE rowid = ?", (last // 2,))
    with pytest.raises(concurrent.RecordingLost, match="gaps in the notification ids"):
        check()


def _count(url: str) -> int:
    app = _app(url)
    try:
        return len(all_notifications(app))
    finally:
        app.close()

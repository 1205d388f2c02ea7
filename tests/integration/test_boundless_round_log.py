"""A boundless round's log read by its own streams in the service (``BoundlessService.round_log``
through ``RoundIndex.round_records``), on SQLite and PostgreSQL: with other boundless rounds and
classic (european) rounds recorded interleaved, and a participation's ``Joined`` committed in a
transaction of its own, it gives the very events, in the very order, that the scan of the log
(``RoundIndex.round_notifications``) gives: while the rounds are open and once they are settled,
and over HTTP (``GET /rounds/{id}/events``: the same body). What the read meets is what was
committed when it began (the log's last notification id, read first): the scan's records up to
it. The in-memory store still scans."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))

from apikit import ADMIN_TOKEN, bearer
from roundkit import Kit

from api.main import create_app
from api.settings import Settings
from domain.application import RoundAudit
from domain.boundless.index import JOINED, RoundIndex
from domain.boundless.participation import participation_id
from domain.boundless.streams import StreamRows
from domain.events import event_json
from domain.persistence import environment_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.boundless import interleaved

PLAYERS = 4
INTRUDER = "r000p99999"  # as long as the players' names
#: A european round, one box: 10H 8C = 18 stands against the dealer's 9S KD = 19.
EUROPEAN = ["10H", "9S", "8C", "KD"]


def scanned(app: RoundAudit, rid: UUID) -> list[Any]:
    """The round's events as the scan of the log gives them (the service's old read)."""
    return [app.mapper.to_domain_event(n) for n in app.boundless.round_notifications(rid)]


def same_log(app: RoundAudit, rid: UUID) -> list[Any]:
    """``round_log`` (read by streams), checked equal to the scan's, event by event."""
    assert app.boundless.read_by_streams(rid, {rid: None}) is not None  # read by streams
    log = app.boundless.round_log(rid)
    scan = scanned(app, rid)
    assert [(e.originator_id, e.originator_version) for e in log] == [
        (e.originator_id, e.originator_version) for e in scan
    ]
    assert log == scan
    assert [event_json(e) for e in log] == [event_json(e) for e in scan]
    return log


def a_european_round(app: RoundAudit, n: int) -> None:
    """A settled european round of a player of its own, recorded between boundless steps."""
    kit = Kit("european", EUROPEAN, players={f"eu{n}": 100}, app=app, table=f"EU{n}")
    kit.bet(f"eu{n}", 10, spot=1)
    kit.close()
    kit.decide(f"eu{n}", "stand")
    assert kit.phase == "settled"


def record(app: RoundAudit, seen_open: list[int]) -> list[UUID]:
    """Three boundless rounds interleaved, european rounds between their steps, and a
    ``Joined`` naming the first round committed alone while it is open (with european rounds
    after it); while open, every round's log is checked against the scan."""

    def meanwhile(rids: list[str]) -> None:
        a_european_round(app, 1)
        rid = UUID(rids[0])
        victim = participation_id(rid, "r000p00001")
        state = next(e.state for e in app.recorder.select_events(victim) if e.topic == JOINED)
        forged = state.replace(b"r000p00001", INTRUDER.encode())
        assert forged != state
        app.recorder.insert_events(
            [StoredEvent(participation_id(rid, INTRUDER), 1, JOINED, forged)]
        )
        a_european_round(app, 2)
        for r in rids:
            seen_open.append(len(same_log(app, UUID(r))))

    a_european_round(app, 0)
    rids = [UUID(r) for r in interleaved(app, 3, PLAYERS, after_bets=meanwhile)]
    a_european_round(app, 3)
    return rids


def test_the_round_log_among_others_is_the_scan_s(store_url: str) -> None:
    app = RoundAudit(env=environment_for(store_url))
    try:
        seen_open: list[int] = []
        rids = record(app, seen_open)
        assert len(seen_open) == 3
        assert all(n >= 1 + 2 * PLAYERS for n in seen_open)  # started, a Joined and bet each
        for i, rid in enumerate(rids):
            log = same_log(app, rid)
            assert type(log[0]).__qualname__ == "SharedHand.Started"
            assert type(log[-1]).__qualname__ == "SharedHand.RoundSettled"
            streams = {e.originator_id for e in log}
            assert len(streams) == 1 + PLAYERS + (1 if i == 0 else 0)
            players = [f"r{i:03d}p{j:05d}" for j in range(PLAYERS)] + [INTRUDER] * (i == 0)
            assert streams == {rid, *(participation_id(rid, p) for p in players)}
            assert len(log) > seen_open[i]
        intruder = [e for e in same_log(app, rids[0]) if getattr(e, "player", "") == INTRUDER]
        assert [type(e).__qualname__ for e in intruder] == ["Participation.Joined"]
        # the rounds' records are interleaved in the log with each other's and the european's
        first = app.boundless.start_position(rids[0])
        assert first is not None
        between = app.recorder.select_notifications(start=first, limit=10**6)
        assert {n.topic.partition(":")[0] for n in between} >= {
            "domain.round",
            "domain.boundless.shared",
            "domain.boundless.participation",
        }
    finally:
        app.close()


def test_the_read_stops_at_the_last_id_read_first(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records committed after the read began are not the round's yet: with the log's last id
    taken at points inside the round, the read gives the scan's records up to that id (a
    prefix of the commit order, as the scan gives while the round is recorded)."""
    app = RoundAudit(env=environment_for(store_url))
    try:
        rid = record(app, [])[0]
        notes = list(app.boundless.round_notifications(rid))
        ids = [n.id for n in notes]
        for cap in (ids[0], ids[len(ids) // 3], ids[-2], ids[-1] - 1):
            with monkeypatch.context() as m:
                m.setattr(StreamRows, "last_id", lambda self, cap=cap: cap)
                read = app.boundless.read_by_streams(rid, {rid: None})
            assert read is not None
            expected = [(n.originator_id, n.originator_version) for n in notes if n.id <= cap]
            assert [(e.originator_id, e.originator_version) for e in read.records] == expected
    finally:
        app.close()


def test_the_in_memory_store_still_scans() -> None:
    app = RoundAudit()
    rid = UUID(interleaved(app, 2, PLAYERS)[0])
    assert app.boundless.read_by_streams(rid, {rid: None}) is None
    log = app.boundless.round_log(rid)
    assert log == scanned(app, rid)
    assert len({e.originator_id for e in log}) == 1 + PLAYERS


def test_get_round_events_of_a_boundless_round_is_the_same_body(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(
        database_url=store_url, admin_key=ADMIN_TOKEN, allowed_hosts=("testserver",)
    )
    headers = bearer(ADMIN_TOKEN)
    with TestClient(create_app(settings)) as client:
        audit: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
        rids = record(audit, [])
        for rid in rids:
            by_streams = client.get(f"/rounds/{rid}/events", headers=headers)
            with monkeypatch.context() as m:
                m.setattr(RoundIndex, "read_by_streams", lambda *_, **__: None)
                by_scan = client.get(f"/rounds/{rid}/events", headers=headers)
            assert by_streams.status_code == by_scan.status_code == 200
            assert by_streams.content == by_scan.content
            assert len(by_streams.json()["events"]) > 1 + 2 * PLAYERS


def test_the_round_log_decodes_with_the_collector_held_off(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Automatic collection waits while the round log is decoded (``domain.collector.paused``,
    as while a command runs), and is on again after it."""
    app = RoundAudit(env=environment_for(store_url))
    try:
        rid = UUID(interleaved(app, 2, PLAYERS)[0])
        decode = app.mapper.to_domain_event
        enabled: list[bool] = []

        def watched(stored: Any) -> Any:
            enabled.append(gc.isenabled())
            return decode(stored)

        monkeypatch.setattr(app.mapper, "to_domain_event", watched)
        assert gc.isenabled()
        log = app.boundless.round_log(rid)
        assert gc.isenabled()
        assert enabled == [False] * len(enabled)
        assert len(enabled) >= len(log) > 1 + 2 * PLAYERS
    finally:
        app.close()

"""A boundless round opened by a process that does not hold it (a restart, another service
process) on SQLite and PostgreSQL: its first load reads the round by its own streams
(``RoundIndex._load_by_streams``), not the notification log. With other boundless rounds and a
european round recorded interleaved, the fresh process gives the same view and pending hands as
the process that recorded it and as the scan of the log (a fresh process whose read by streams
is switched off), its commands give the same results, and the round it finishes verifies. A
forged ``Joined`` committed alone is treated the same by every path (the held index's catch-up,
the first load by streams, the scan, the round log): one whose id is the player's participation
id is the round's everywhere, one naming the round under another id nowhere. An old round's
view does not follow the log to its end on any path."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))

from roundkit import Kit

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.index import JOINED, RoundIndex
from domain.boundless.participation import participation_id
from domain.boundless.service import Decision
from domain.persistence import environment_for
from replays.log import make_policy
from replays.merkle import generate_key
from replays.note import operator_key
from replays.signer import Signer
from replays.verify import StoreVerifier

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.boundless import action_for, interleaved

ROUNDS = 3
PLAYERS = 4
#: Forged players, as long as the real ones' names: one under its own participation id, one
#: under an id that is not ``participation_id(round, player)``.
INTRUDER = "r000p99999"
IMPOSTOR = "r000p99998"


def european(app: RoundAudit, n: int) -> None:
    """A settled european round (10H 8C = 18 stands against 9S KD = 19) between the steps."""
    kit = Kit(
        "european", ["10H", "9S", "8C", "KD"], players={f"eu{n}": 100}, app=app, table=f"EU{n}"
    )
    kit.bet(f"eu{n}", 10, spot=1)
    kit.close()
    kit.decide(f"eu{n}", "stand")
    assert kit.phase == "settled"


def betting_closed(app: RoundAudit) -> list[UUID]:
    """``ROUNDS`` boundless rounds whose bets were placed in turn (a european round recorded
    after them), betting then closed in each: the rounds wait for their players' decisions."""
    rids = interleaved(app, ROUNDS, PLAYERS, after_bets=lambda _: european(app, 0), play=False)
    return [UUID(r) for r in rids]


def fresh(url: str, *, scan: bool = False) -> RoundAudit:
    """A new process on the store; ``scan``: its first loads follow the log from the round's
    start (the in-memory store's path), its read by streams switched off."""
    app = RoundAudit(env=environment_for(url))
    if scan:
        app.boundless.read_by_streams = lambda *_, **__: None  # type: ignore[method-assign]
    return app


def notes_read(app: RoundAudit) -> list[int]:
    """The notification ids ``app`` reads from the log from now on."""
    read: list[int] = []
    select = app.recorder.select_notifications

    def counting(*args: Any, **kwargs: Any) -> Any:
        notes = select(*args, **kwargs)
        read.extend(n.id for n in notes)
        return notes

    app.recorder.select_notifications = counting  # type: ignore[method-assign]
    return read


def state(app: RoundAudit, rid: UUID) -> tuple[Any, Any, Any]:
    """The round's view, its pending hands and its participations (player, id, version: a
    ``Joined`` alone adds no hand nor wager)."""
    parts = [(p.player, p.id, p.version) for p in app.boundless.participations(rid)]
    return app.round_view(rid), app.boundless.pending(rid), parts


def test_a_reopened_round_answers_as_its_recorder_and_the_scan(store_url: str) -> None:
    app = RoundAudit(env=environment_for(store_url))
    apps = [app]
    try:
        rids = betting_closed(app)
        by_streams, by_scan = fresh(store_url), fresh(store_url, scan=True)
        apps += [by_streams, by_scan]
        read = notes_read(by_streams)
        for rid in rids:
            expected = state(app, rid)
            assert len(expected[1]) == PLAYERS  # every player is asked to decide
            assert state(by_streams, rid) == expected
            assert state(by_scan, rid) == expected
        assert read == []  # first loads by the rounds' own streams
        # the rounds are played to the end, each command by one of the three in turn
        up = {rid: app.boundless.shared(rid).dealer[0].code for rid in rids}
        deciding, wave, turn = list(rids), 0, 0
        while deciding:
            wave += 1
            for rid in list(deciding):
                actor = apps[turn % 3]
                turn += 1
                pending = actor.boundless.pending(rid)
                if not pending:
                    deciding.remove(rid)
                    continue
                ds = [
                    Decision(p["player"], action_for(p["player"], wave, p, up[rid]), p["hand"])
                    for p in pending
                ]
                assert not [e for e in actor.boundless.decide_many(rid, ds, advance=False) if e]
                actor.boundless.advance(rid, dealer=False)
                assert state(app, rid) == state(by_streams, rid) == state(by_scan, rid)
        for i, rid in enumerate(rids):
            assert apps[i % 3].boundless.advance(rid)["phase"] == "settled"
        for rid in rids:
            view = app.round_view(rid)
            assert view["phase"] == "settled"
            later = fresh(store_url)
            apps.append(later)
            assert later.round_view(rid) == view
            assert by_streams.round_view(rid) == by_scan.round_view(rid) == view
        key, origin = generate_key(), "roundaudit.invalid/test"
        Signer(app, key=key, origin=origin).run_once()
        policy = make_policy(operator_key(origin, key.public_key()), origin=origin)
        checker = fresh(store_url)
        apps.append(checker)
        for rid in rids:
            verdict = StoreVerifier(checker, policy=policy).verify(rid)
            assert verdict.ok, verdict
    finally:
        for a in apps:
            a.close()


def forge(app: RoundAudit, rid: UUID, player: str, ident: UUID) -> None:
    """A ``Joined`` of ``player`` naming round ``rid`` under the id ``ident``, committed in a
    transaction of its own (a copy of a real player's, the name changed)."""
    victim = participation_id(rid, "r000p00001")
    real = next(e.state for e in app.recorder.select_events(victim) if e.topic == JOINED)
    forged = real.replace(b"r000p00001", player.encode())
    assert forged != real
    app.recorder.insert_events([StoredEvent(ident, 1, JOINED, forged)])


def test_a_forged_joined_is_treated_the_same_by_every_path(store_url: str) -> None:
    app = RoundAudit(env=environment_for(store_url))
    apps = [app]
    try:
        rids = betting_closed(app)
        rid = rids[0]
        before = state(app, rid)  # the recorder holds the round: it follows the log after
        forge(app, rid, IMPOSTOR, uuid4())
        forge(app, rid, INTRUDER, participation_id(rid, INTRUDER))
        european(app, 9)
        held = state(app, rid)
        assert held != before
        by_streams, by_scan = fresh(store_url), fresh(store_url, scan=True)
        apps += [by_streams, by_scan]
        assert state(by_streams, rid) == held
        assert state(by_scan, rid) == held
        players = [player for player, _, _ in held[2]]
        assert INTRUDER in players
        assert IMPOSTOR not in players
        assert len(players) == PLAYERS + 1
        for a in apps:
            log = a.boundless.round_log(rid)
            scan = [a.mapper.to_domain_event(n) for n in a.boundless.round_notifications(rid)]
            assert log == scan
            joined = {getattr(e, "player", None) for e in log}
            assert INTRUDER in joined
            assert IMPOSTOR not in joined
        for other in rids[1:]:
            assert state(by_streams, other) == state(by_scan, other) == state(app, other)
    finally:
        for a in apps:
            a.close()


def test_the_in_memory_store_still_scans() -> None:
    """No read by streams on the in-memory store: the first load follows the log."""
    app = RoundAudit()
    rids = betting_closed(app)
    app.boundless._rounds.clear()  # as a process that does not hold the rounds
    read = notes_read(app)
    assert app.boundless.read_by_streams(rids[0], {rids[0]: None}) is None
    assert len(app.boundless.pending(rids[0])) == PLAYERS
    assert read


@pytest.mark.parametrize("path", ["streams", "scan"])
def test_an_old_round_view_stops_reading_at_the_round_end(
    store_env: dict[str, str], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view of a finished round, asked of a process that never saw it (an API worker
    started later, a dispute page opened weeks after), does not follow the log to its end: by
    its streams it reads no notification at all; the scan (the in-memory store's path) reads
    the log from the round's start to its end, at most one page past it. Either way, however
    much was played since, the answer is the same."""
    if path == "scan":
        monkeypatch.setattr(RoundIndex, "read_by_streams", lambda *_, **__: None)
    app = RoundAudit(store_env)
    try:
        old = simulate(app, variant="boundless", rounds=1, players=3, table="old").round_ids[0]
        expected = app.round_view(old)
        simulate(app, variant="boundless", rounds=3, players=3, table="later")
        simulate(app, variant="european", rounds=3, players=2)
        last = int(app.recorder.max_notification_id() or 0)
    finally:
        app.close()
    later = RoundAudit(store_env)
    try:
        read = notes_read(later)
        later.boundless.page_size = 20  # pages smaller than what was played after the round
        view = later.round_view(old)
        assert view == expected
        assert view["phase"] == "settled"
        if path == "streams":
            assert read == []  # the round's own streams, no notification
        else:
            assert read
            assert max(read) < last  # stopped at the old round's end, long before the log's
        again = len(read)
        assert later.round_view(old) == expected
        assert len(read) == again  # a finished round's index reads nothing more
    finally:
        later.close()

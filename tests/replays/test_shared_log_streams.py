"""A boundless round read by its own streams (``replays.bundle.StoreReader.shared_log`` on
SQLite and PostgreSQL) rather than by scanning the log: with other rounds recorded
interleaved, it gives the very records, in the very order, that the scan of the log
(``RoundIndex.round_notifications``) gives, the verifier reports the same findings (same
checks, positions and messages) either way for an untouched round and for a record of this
round deleted, added or altered, or a participation joining it in a transaction of its own;
and it fetches no other round's records but their ``Joined`` rows inside the round's range of
the log (counted: the same rows with 0 and 5 other rounds, but for those)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent
from pg import fresh_database
from storekit import Store, same_decoded, timestamp_changed

from domain.application import RoundAudit
from domain.boundless.participation import participation_id
from domain.persistence import environment_for
from replays.bundle import Decoded, StoreReader, decode_stored

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.boundless import interleaved

PLAYERS = 4
JOINED = "domain.boundless.participation:Participation.Joined"


def record(url: str, rounds: int, after_bets: Callable[[list[str]], object] | None = None) -> UUID:
    """``rounds`` boundless rounds recorded interleaved; the first one's id."""
    app = RoundAudit(env=environment_for(url))
    try:
        return UUID(interleaved(app, rounds, PLAYERS, after_bets=after_bets)[0])
    finally:
        app.close()


def both_ways(url: str, rid: UUID) -> list[Decoded]:
    """The round read by its streams, checked equal to the scan's read, record by record."""
    app = RoundAudit(env=environment_for(url))
    try:
        read = StoreReader(app).shared_log(rid)
        by_streams = StoreReader(app)._by_streams(rid, {rid: None})
        assert by_streams is not None  # SQLite and PostgreSQL are read by streams
        scanned = decode_stored(app.mapper, StoreReader(app)._scanned(rid, {rid: None}))
    finally:
        app.close()
    for i, d in enumerate(scanned, start=1):
        d.at = i
    assert len(read) == len(scanned)
    assert [all(same_decoded(a, b)) for a, b in zip(read, scanned, strict=True)] == [True] * len(
        read
    )
    return read


def verify_both_ways(store: Store, rid: UUID, monkeypatch: pytest.MonkeyPatch) -> str:
    """``roundaudit verify ROUND``'s report read by streams, checked equal to the scan's."""
    code, out = store.verify(str(rid))
    with monkeypatch.context() as m:
        m.setattr(StoreReader, "_by_streams", lambda *_: None)
        scan_code, scan_out = store.verify(str(rid))
    assert (code, out) == (scan_code, scan_out)
    return out


@pytest.fixture
def store(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Store:
    return Store(store_url, tmp_path / "key.pem", capsys)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fresh, empty stores of the same kind."""
    if request.param == "sqlite":
        yield (f"sqlite:///{tmp_path}/one.db", f"sqlite:///{tmp_path}/two.db")
        return
    session_url: str = request.getfixturevalue("postgres_url")
    with fresh_database(session_url) as one, fresh_database(session_url) as two:
        yield (one, two)


def _a_participation(rid: UUID, read: list[Decoded]) -> UUID:
    return next(d.record.originator_id for d in read if d.record.originator_id != rid)


def test_an_untouched_round_among_others_reads_and_verifies_the_same(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = record(store.url, 3)
    assert store.sign().checkpoint is not None
    read = both_ways(store.url, rid)
    assert read[0].name == "SharedHand.Started"
    assert read[-1].name == "SharedHand.RoundSettled"
    assert len({d.record.originator_id for d in read}) == 1 + PLAYERS
    out = verify_both_ways(store, rid, monkeypatch)
    assert out.splitlines()[-1] == "1 passed, 0 failed", out


@pytest.mark.parametrize("attack", ["deleted", "added", "altered"])
def test_a_changed_record_of_the_round_among_others_is_found_the_same(
    store: Store, monkeypatch: pytest.MonkeyPatch, attack: str
) -> None:
    rid = record(store.url, 3)
    assert store.sign().checkpoint is not None
    pid = _a_participation(rid, both_ways(store.url, rid))
    rows = store.rows(pid)
    if attack == "deleted":
        store.delete(pid, version=2)
    elif attack == "altered":
        store.set_state(pid, 2, timestamp_changed(rows[1][2]))
    else:  # a copy of the participation's last record at the next version, after the end
        app = RoundAudit(env=environment_for(store.url))
        try:
            version, topic, state = rows[-1]
            app.recorder.insert_events([StoredEvent(pid, version + 1, topic, state)])
        finally:
            app.close()
    read = both_ways(store.url, rid)
    versions = [d.version for d in read if d.record.originator_id == pid]
    expected = {
        "deleted": [v for v, _, _ in rows if v != 2],
        "altered": [v for v, _, _ in rows],
        "added": [v for v, _, _ in rows] + [len(rows) + 1],
    }
    assert versions == expected[attack]
    out = verify_both_ways(store, rid, monkeypatch)
    assert out.splitlines()[-1].startswith("0 passed, 1 failed"), out


def test_a_joined_naming_the_round_after_its_end_is_not_read(store: Store) -> None:
    """The round ends at its shared hand's settlement: a ``Joined`` naming it committed later
    is no participation of it (the scan stops there), read by streams either."""
    rid = record(store.url, 2)
    pid = participation_id(rid, "r000p99999")
    state = next(s for _, t, s in store.rows(participation_id(rid, "r000p00001")) if t == JOINED)
    app = RoundAudit(env=environment_for(store.url))
    try:
        app.recorder.insert_events(
            [StoredEvent(pid, 1, JOINED, state.replace(b"r000p00001", b"r000p99999"))]
        )
    finally:
        app.close()
    read = both_ways(store.url, rid)
    assert pid not in {d.record.originator_id for d in read}


def test_a_joined_committed_again_after_its_stream_s_bets_reads_the_same(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A participation's ``Joined`` deleted and committed again (a later notification id)
    while the round is open, after the participation's bets: the scan meets the stream from
    that ``Joined`` on; read by streams, the same records are read (and reported the same)."""
    moved: list[UUID] = []

    def join_again(rids: list[str]) -> None:
        pid = participation_id(UUID(rids[0]), "r000p00002")
        version, topic, state = store.rows(pid)[0]
        assert (version, topic) == (1, JOINED)
        store.delete(pid, version=1)
        app = RoundAudit(env=environment_for(store.url))
        try:
            app.recorder.insert_events([StoredEvent(pid, 1, JOINED, state)])
        finally:
            app.close()
        moved.append(pid)

    rid = record(store.url, 3, after_bets=join_again)
    assert store.sign().checkpoint is not None
    read = both_ways(store.url, rid)
    assert "Participation.BetPlaced" not in [
        d.name for d in read if d.record.originator_id == moved[0]
    ]
    verify_both_ways(store, rid, monkeypatch)


def test_a_participation_joining_in_a_transaction_of_its_own_is_read(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``Joined`` naming the round, committed alone while the rounds were open (not in any
    of the shared hand's transactions, so the Merkle log does not list it for the round): the
    read by streams still finds it by its ``Joined``, and the verifier reports it."""
    intruder = "r000p99999"  # as long as the players' names
    pid: list[UUID] = []

    def join_alone(rids: list[str]) -> None:
        rid = UUID(rids[0])
        victim = participation_id(rid, "r000p00001")
        state = next(s for _, t, s in store.rows(victim) if t == JOINED)
        forged = state.replace(b"r000p00001", intruder.encode())
        assert forged != state
        pid.append(participation_id(rid, intruder))
        app = RoundAudit(env=environment_for(store.url))
        try:
            app.recorder.insert_events([StoredEvent(pid[0], 1, JOINED, forged)])
        finally:
            app.close()

    rid = record(store.url, 3, after_bets=join_alone)
    assert store.sign().checkpoint is not None
    with store.log() as log:
        assert pid[0] not in log.participations_of(rid)
    read = both_ways(store.url, rid)
    joined = [d for d in read if d.record.originator_id == pid[0]]
    assert [d.name for d in joined] == ["Participation.Joined"]
    assert joined[0].event.player == intruder
    assert len({d.record.originator_id for d in read}) == 2 + PLAYERS
    out = verify_both_ways(store, rid, monkeypatch)
    assert out.splitlines()[-1].startswith("0 passed, 1 failed"), out
    assert intruder in out or str(pid[0]) in out, out


def _rows_read(url: str) -> tuple[int, int]:
    """(rows fetched reading the first round by its streams, ``Joined`` rows of other rounds
    within its range of the log)."""
    app = RoundAudit(env=environment_for(url))
    try:
        rid = UUID(str(_starts(app)[0].originator_id))
        reader = StoreReader(app)
        read = reader.shared_log(rid)
        first = app.boundless.start_position(rid)
        assert first is not None
        end = max(
            n.id
            for n in app.recorder.select_notifications(start=first, limit=10**6)
            if UUID(str(n.originator_id)) == rid
        )
        mine = {d.record.originator_id for d in read}
        others = [
            n
            for n in app.recorder.select_notifications(start=first, stop=end, limit=10**6)
            if n.topic == JOINED and UUID(str(n.originator_id)) not in mine
        ]
        return reader.rows_read, len(others)
    finally:
        app.close()


def _starts(app: RoundAudit) -> list[StoredEvent]:
    return [
        n
        for n in app.recorder.select_notifications(start=1, limit=10**6)
        if n.topic == "domain.boundless.shared:SharedHand.Started"
    ]


def test_the_read_fetches_no_other_rounds_records_but_their_joined_rows(
    two_stores: tuple[str, str],
) -> None:
    """The same round (same table, number, players and decisions) recorded alone in one store
    and among 5 other rounds interleaved in another: reading it by its streams fetches the same
    rows but for the other rounds' ``Joined`` rows inside its range of the log (the query that
    finds the round's participations returns every ``Joined`` there; it is the scan, not this
    read, that read every other record of theirs too)."""
    alone_url, among_url = two_stores
    alone = record(alone_url, 1)
    among = record(among_url, 6)
    assert alone == among
    fetched_alone, joined_alone = _rows_read(alone_url)
    fetched_among, joined_among = _rows_read(among_url)
    assert joined_alone == 0
    assert joined_among == 5 * PLAYERS  # every other round's players joined meanwhile
    assert fetched_among == fetched_alone + joined_among


@pytest.mark.parametrize("defer", [False, True])
def test_the_players_wallets_read_together_are_each_wallet_s_own_records(
    store: Store, defer: bool
) -> None:
    """``StoreReader._read_new`` decodes the wallets of a round's players by one call for all
    of them (branch ``bread``), then gives each wallet its records: each stream holds exactly
    the records that decoding that wallet alone gives (the same records, events and errors,
    in order), deferred the same way (``unmoving``) when the reader defers, and each wallet's
    round-linked movements are its own."""
    from replays.bundle import unmoving, wallet_id

    rid = record(store.url, 2)
    app = RoundAudit(env=environment_for(store.url))
    try:
        reader = StoreReader(app, defer=defer)
        b = reader.round_bundle(rid)
        players = b.players()
        assert len(players) == PLAYERS
        wallets = [wallet_id(p) for p in players]
        for oid in wallets:
            alone = decode_stored(
                app.mapper, app.recorder.select_events(oid), defer=unmoving if defer else None
            )
            together = reader._streams[oid].decoded
            assert {d.record.originator_id for d in together} == {oid}
            assert [d.record.version for d in together] == list(range(1, len(alone) + 1))
            assert [type(d) for d in together] == [type(d) for d in alone]
            assert [all(same_decoded(a, b)) for a, b in zip(together, alone, strict=True)] == [
                True
            ] * len(alone)
            moved = reader._streams[oid].by_round.get(str(rid), [])
            assert moved
            assert {d.record.originator_id for d in moved} == {oid}
        assert sum(d.record.originator_id in set(wallets) for d in b.money) == len(b.money) > 0
    finally:
        app.close()

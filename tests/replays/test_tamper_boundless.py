"""Tampering with a **boundless** round directly in the database is detected and named by
``roundaudit verify``, on SQLite and PostgreSQL.

A boundless round is one ``SharedHand`` stream and one ``Participation`` stream per player; its
evidence is all of them merged in commit order (``replays.bundle.StoreReader.shared_log``), so a
position in a report is the place in that merged log. Each test builds a small store
(simulated boundless rounds, every transaction sealed at commit, a signed checkpoint), makes one
change with SQL, and runs the command as an operator would (the operator key pinned): a
participation's bytes changed, one of its events deleted, two swapped, a whole participation's
first record (its ``Joined``) deleted, the shared hand's tail cut off, a settled amount altered
in the participation and in the wallet, and a card of the shoe altered.
"""

from __future__ import annotations

import gc
import re
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import pytest
from storekit import Store, sign

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from domain.wallet import Wallet
from replays.bundle import Decoded, RoundBundle, StoreReader
from replays.record import SCRIPTS, play
from replays.verify import StoreVerifier

ROUNDS = 3  # simulated (RNG shoe), plus one scripted round on a stacked test shoe
TOTAL = ROUNDS + 1
#: The dealer busts: the main bet and the side bets are paid (a sure payout to tamper with).
PAID = next(s for s in SCRIPTS if s.name == "boundless-side-bets-dealer-busts")


def build(url: str, tmp_path: Path, *, signed: bool = True) -> None:
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="boundless", rounds=ROUNDS, players=4)
        play(app, PAID)
    finally:
        app.close()
    if signed:
        assert sign(url, tmp_path / "key.pem").checkpoint is not None


def make(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], signed: bool) -> Store:
    build(store_url, tmp_path, signed=signed)
    s = Store(store_url, tmp_path / "key.pem", capsys)
    code, out = s.verify()
    assert code == 0, out
    assert out.splitlines()[-1] == f"{TOTAL} passed, 0 failed", out
    return s


@pytest.fixture
def store(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Store:
    return make(store_url, tmp_path, capsys, signed=True)


def bundle(store: Store, rid: UUID) -> RoundBundle:
    app = RoundAudit(env=environment_for(store.url))
    try:
        return StoreReader(app).round_bundle(rid)
    finally:
        app.close()


def busiest(store: Store) -> tuple[UUID, RoundBundle]:
    """The simulated round with the most events, and its evidence before any change."""
    ids = [SharedHand.create_id("sim-boundless", n) for n in range(1, ROUNDS + 1)]
    found = [(rid, bundle(store, rid)) for rid in ids]
    return max(found, key=lambda x: len(x[1].round))


def first(b: RoundBundle, cls: str, *, stream: UUID | None = None) -> Decoded:
    return next(
        d for d in b.round if d.name == cls and (stream is None or d.record.originator_id == stream)
    )


def failed_once(code: int, out: str) -> None:
    assert code == 1, out
    assert out.splitlines()[-1] == f"{TOTAL - 1} passed, 1 failed; the log failed: commit", out


def named(out: str, check: str, position: int | None, event: str, field: str = "") -> bool:
    where = f"position {position}" if position is not None else "round"
    pattern = rf"\[{check}\] {where} [^\n]*{re.escape(event)}{re.escape(field)}"
    return re.search(pattern, out) is not None


def test_the_bundle_merges_every_stream_in_commit_order(store: Store) -> None:
    _rid, b = busiest(store)
    assert b.shared
    assert b.round[0].name == "SharedHand.Started"
    assert b.round[-1].name == "SharedHand.RoundSettled"
    assert [d.position for d in b.round] == list(range(1, len(b.round) + 1))
    parts = b.participations()
    assert len(parts) >= 2
    for oid, decoded in parts.items():
        assert decoded[0].name == "Participation.Joined"
        assert [d.version for d in decoded] == list(range(1, len(decoded) + 1))
        assert b.owners()[oid] == decoded[0].event.player
    closed = first(b, "SharedHand.BettingClosed").position
    assert all(first(b, "Participation.Joined", stream=oid).position < closed for oid in parts)
    assert b.seal is None  # no per-round seal any more
    assert b.evidence is None  # a reader without the log; the verifier reads it


def test_changed_bytes_of_a_decision_are_named(store: Store) -> None:
    """A changed client time: re-execution takes inputs as given; the leaf holds the bytes."""
    rid, b = busiest(store)
    d = first(b, "Participation.BetPlaced")
    oid, version = d.record.key
    state = store.rows(oid)[version - 1][2]
    assert b'"client_time":null' in state
    store.set_state(
        oid, version, state.replace(b'"client_time":null', b'"client_time":"2020-01-01T00:00Z"')
    )
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert named(out, "commit", d.position, "Participation.BetPlaced", " (bytes)"), out
    assert f"Participation {oid} version {version}: the stored bytes are not those leaf" in out
    assert "changed after commit" in out


def test_a_deleted_participation_event_is_named(store: Store) -> None:
    _rid, b = busiest(store)
    d = first(b, "Participation.HandOpened")
    oid, version = d.record.key
    store.delete(oid, version=version)
    code, out = store.verify()
    failed_once(code, out)
    after = next(x for x in b.round if x.record.key == (oid, version + 1))
    assert named(out, "reexecution", after.position - 1, "Participation."), out  # one less now
    assert "versions are not 1..N" in out
    assert named(out, "commit", None, "Participation.HandOpened", " (commit)"), out
    assert f"Participation {oid} version {version} (notification" in out


def test_two_swapped_participation_events_are_named(store: Store) -> None:
    _rid, b = busiest(store)
    settled = first(b, "Participation.WagerSettled")
    oid, vb = settled.record.key
    rows = store.rows(oid)
    (va, ta, sa), (_, tb, sb) = rows[vb - 2], rows[vb - 1]
    assert ta != tb
    store.set_row(oid, va, tb, sb)
    store.set_row(oid, vb, ta, sa)
    code, out = store.verify()
    failed_once(code, out)
    before = next(d for d in b.round if d.record.key == (oid, va))
    assert re.search(r"\[reexecution\] ", out), out
    assert named(out, "commit", before.position, ""), out


def test_a_deleted_participation_is_found_from_the_log(store: Store) -> None:
    """The Joined record is how a participation is found in the store; the leaves of the
    round's transactions name its participation streams, so the rest of the stream is still
    read and the gap named."""
    rid, b = busiest(store)
    joined = first(b, "Participation.Joined")
    oid = joined.record.originator_id
    store.delete(oid, version=1)
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert named(out, "commit", None, "Participation.Joined", " (commit)"), out
    assert "a participation must begin with the player joining the round" in out, out


def test_a_truncated_shared_tail_is_named(store: Store) -> None:
    rid, _b = busiest(store)
    rows = store.rows(rid)
    keep = len(rows) - 2
    store.delete(rid, above=keep)
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert named(out, "commit", None, "SharedHand.RoundSettled", " (commit)"), out
    assert re.search(r"\[reexecution\] ", out), out


def paid(store: Store) -> tuple[UUID, Decoded]:
    """A settlement that credits money: the scripted round's main bet (the dealer busts)."""
    rid = SharedHand.create_id(f"rec-{PAID.name}", 1)
    won = [
        d
        for d in bundle(store, rid).round
        if d.name == "Participation.WagerSettled" and d.event.kind == "main"
    ]
    assert len(won) == 1, won
    assert won[0].event.result == "win", won
    assert Decimal(won[0].event.payout) == 2 * Decimal(won[0].event.stake)  # OUT-2: 1:1
    return rid, won[0]


def test_an_altered_payout_in_a_participation_is_named(store: Store) -> None:
    rid, won = paid(store)
    oid, version = won.record.key
    state = store.rows(oid)[version - 1][2]
    store.set_state(oid, version, re.sub(rb'"payout":"([0-9.]+)"', rb'"payout":"1\1"', state))
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert named(out, "reexecution", won.position, "Participation.WagerSettled", ".payout"), out
    assert named(out, "money", won.position, "WagerSettled", ".wallet.amount"), out
    assert named(out, "commit", won.position, "Participation.WagerSettled", " (bytes)"), out


def test_an_altered_payout_in_a_wallet_is_named(store: Store) -> None:
    rid, won = paid(store)
    wid = Wallet.create_id(won.event.player)
    version, state = next(
        (v, st)
        for v, t, st in store.rows(wid)
        if t.endswith("Wallet.PayoutCredited") and str(rid).encode() in st
    )
    store.set_state(wid, version, re.sub(rb'"amount":"([0-9.]+)"', rb'"amount":"1\1"', state))
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert re.search(r"\[money\] position \d+ [^\n]*WagerSettled.wallet.amount", out), out
    assert named(out, "commit", None, "Wallet.PayoutCredited", " (bytes)"), out


def test_an_altered_card_of_the_shoe_is_named(store: Store) -> None:
    rid, b = busiest(store)
    dealt = first(b, "SharedHand.CardDealt")
    assert b.shoe_id is not None
    shoe_rows = store.rows(b.shoe_id)
    version, _, state = next(
        r
        for r in shoe_rows
        if r[1].endswith("Shoe.CardDrawn")
        and f'"position":{dealt.event.shoe_position},'.encode() in r[2]
    )
    other = b"2C" if dealt.event.card != "2C" else b"3D"
    store.set_state(b.shoe_id, version, state.replace(dealt.event.card.encode(), other))
    code, out = store.verify(str(rid))
    assert code == 1, out
    assert named(out, "shoe", dealt.position, "SharedHand.CardDealt", ".card"), out


def test_a_deleted_event_is_found_before_any_checkpoint(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No checkpoint yet: re-execution names a participation's missing event, and so does its
    transaction's leaf, written at commit."""
    s = make(store_url, tmp_path, capsys, signed=False)
    rid, b = busiest(s)
    d = first(b, "Participation.BetPlaced")  # every participation has one (BDL-1)
    oid, version = d.record.key
    s.delete(oid, version=version)
    code, out = s.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert re.search(r"\[reexecution\] ", out), out
    assert named(out, "commit", None, "Participation.BetPlaced", " (commit)"), out
    assert "[seal]" not in out
    assert "[checkpoint]" not in out  # nothing to prove against yet


def test_a_record_appended_to_a_participation_after_the_round_is_named(store: Store) -> None:
    """A participation's record committed after the round's last event is beyond the scan of
    the round's notifications; the reader still reads it (it asks every stream of the round
    for its last version) and re-execution names it."""
    rid, b = busiest(store)
    oid = next(iter(b.participations()))
    rows = store.rows(oid)
    version, topic, state = rows[-1]
    store.execute(
        f"INSERT INTO {store.table()} (originator_id, originator_version, topic, state) "
        "VALUES (%s, %s, %s, %s)",
        (store._id(oid), version + 1, topic, state),
    )
    assert len(bundle(store, rid).round) == len(b.round) + 1
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert "this recorded event is not derived by re-execution" in out, out
    assert named(out, "commit", len(b.round) + 1, topic.rsplit(":", 1)[-1], " (commit)"), out


def test_verification_leaves_the_garbage_collector_as_it_found_it(store: Store) -> None:
    """A boundless round is read and verified with automatic collection off
    (``domain.collector.paused``, as ``replays.verify`` uses it); it is on again after the
    verdict, and a host that turned it off finds it off."""
    rid, _b = busiest(store)
    app = RoundAudit(env=environment_for(store.url))
    try:
        verifier = StoreVerifier(app)
        assert gc.isenabled()
        assert verifier.verify(rid).discrepancies == []
        assert gc.isenabled()
        gc.disable()
        try:
            assert verifier.verify(rid).discrepancies == []
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        app.close()

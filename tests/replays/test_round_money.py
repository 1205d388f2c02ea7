"""A boundless round's wallet movements on the verifier's digesting read
(``replays.bundle.StoreReader._round_money``): read ``MANY`` wallets a query and not kept by the
reader, each of the round's movements kept by the SHA-256 of its stored bytes
(``replays.bundle.Digested``), and its decoded event let go once the money check has read it
(``RoundBundle.money_checked``). The movements are those of the read holding every record and
every wallet (the reference: ``StoreVerifier``'s second read), in the same order, and the
verdict is the reference's, finding for finding: untouched, with a movement's amount changed,
its bytes changed to the same payload, a movement deleted, the wallets read a few a query, and
a wallet the reader kept from before. On the in-memory store (which reads each wallet on its
own, and keeps it), SQLite (plain and compressed) and PostgreSQL.

The round's records, handed to decoding one by one (``replays.bundle._handed_over``), are the
records of the read that keeps the list whole.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

import orjson
import pytest
from test_digested_boundless import PLAYERS, _delete, _findings, _rows, _set_state, bundles_read

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.wallet import Wallet
from replays import bundle
from replays.bundle import (
    Deferred,
    Digested,
    DroppedState,
    RoundBundle,
    StoreReader,
    _handed_over,
    wallet_id,
)
from replays.verify import StoreVerifier, Verdict

MOVEMENTS = {"Wallet.StakeDebited", "Wallet.PayoutCredited"}


@pytest.fixture
def recorded(app: RoundAudit) -> tuple[RoundAudit, UUID]:
    simulate(app, variant="boundless", rounds=1, players=PLAYERS, reproducible_shoes=True)
    return app, SharedHand.create_id("sim-boundless", 1)


def _digesting(
    app: RoundAudit, rid: UUID, verifier: StoreVerifier | None = None
) -> tuple[Verdict, RoundBundle, StoreVerifier]:
    """The verifier's verdict on its digesting read, the bundle it checked and the verifier."""
    verifier = verifier or StoreVerifier(app)
    with pytest.MonkeyPatch.context() as m:
        seen = bundles_read(m, verifier)
        verdict = verifier.verify(rid)
    assert len(seen) == 1  # no second read: nothing let go was read again
    return verdict, seen[0], verifier


def _reference(app: RoundAudit, rid: UUID) -> tuple[Verdict, RoundBundle]:
    """The verdict of the read holding every record and wallet (``StoreVerifier.verify``'s
    second read, after a ``DroppedState``)."""
    verifier = StoreVerifier(app)
    b = verifier.reader.round_bundle(rid)
    assert not b.money_digested
    return verifier._verify(b), b


def _same_verdict(app: RoundAudit, rid: UUID) -> tuple[Verdict, RoundBundle]:
    v, b, _ = _digesting(app, rid)
    reference, whole = _reference(app, rid)
    assert b.money_digested
    assert _findings(v) == _findings(reference)
    assert v.checks == reference.checks
    # the same movements, in the same order, by their keys
    assert [d.record.key for d in b.money] == [d.record.key for d in whole.money]
    return v, b


def _movement_row(app: RoundAudit, rid: UUID, topic: str) -> tuple[UUID, int, str, bytes]:
    """The first stored movement of ``topic`` for the round (its first player's wallet)."""
    players = StoreReader(app).round_bundle(rid).players()
    wallet = wallet_id(players[0])
    return next(r for r in _rows(app) if r[0] == wallet and r[2].endswith(topic))


def _plain_json(app: RoundAudit) -> None:
    if app.mapper.compressor is not None:
        pytest.skip("the payload is edited as plain JSON")


def test_movements_kept_by_digest_and_let_go(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    v, b, verifier = _digesting(app, rid)
    assert v.ok, v.discrepancies
    assert "money" in v.checks
    assert "commit" in v.checks
    stored = {(oid, version): state for oid, version, _, state in _rows(app)}
    assert len(b.money) > 5  # the players who staked: a movement or two each
    for d in b.money:
        assert type(d) is Deferred
        assert d.name in MOVEMENTS
        assert d.cls is not None
        assert issubclass(d.cls, (Wallet.StakeDebited, Wallet.PayoutCredited))
        assert type(d.record) is Digested
        assert d.record.sha256 == hashlib.sha256(stored[d.record.key]).digest()
        with pytest.raises(DroppedState):
            d.event  # noqa: B018 (let go once the money check read it)
    # the round's wallets are not kept by the reader (the in-memory store reads each on its
    # own, as before, and keeps it)
    kept = [wallet_id(p) in verifier.reader._streams for p in b.players()]
    if hasattr(app.recorder, "_stored_events"):
        assert all(kept)
    else:
        assert not any(kept)
    _same_verdict(app, rid)


def test_a_movement_amount_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    _plain_json(app)
    oid, version, _, state = _movement_row(app, rid, "Wallet.PayoutCredited")
    payload = orjson.loads(state)
    payload["amount"] = f"{float(payload['amount']) + 1:.2f}"
    _set_state(app, oid, version, orjson.dumps(payload))
    v, _ = _same_verdict(app, rid)
    assert not v.ok
    assert ("money", "wallet.amount") in [(x.check, x.field) for x in v.discrepancies]
    assert any(x.check == "commit" for x in v.discrepancies), v.discrepancies


def test_a_movement_with_changed_bytes_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    from test_digested_boundless import _changed

    app, rid = recorded
    oid, version, _, state = _movement_row(app, rid, "Wallet.StakeDebited")
    _set_state(app, oid, version, _changed(app, state))
    v, _ = _same_verdict(app, rid)
    found = [(x.check, x.event, x.field) for x in v.discrepancies]
    # the same payload: only the commit check sees it, naming the movement
    assert found == [("commit", "Wallet.StakeDebited", "(bytes)")], v.discrepancies


def test_a_movement_deleted_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    oid, version, _, _ = _movement_row(app, rid, "Wallet.PayoutCredited")
    _delete(app, oid, version)
    v, _ = _same_verdict(app, rid)
    assert not v.ok
    assert ("money", "wallet") in [(x.check, x.field) for x in v.discrepancies]


def test_the_wallets_read_a_few_a_query(
    recorded: tuple[RoundAudit, UUID], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several queries (``MANY`` of 5 wallets): the same movements in the same order."""
    app, rid = recorded
    monkeypatch.setattr(bundle, "MANY", 5)
    v, b = _same_verdict(app, rid)
    assert v.ok, v.discrepancies
    assert len(b.players()) > 5  # two queries or more
    assert len({d.record.originator_id for d in b.money}) > 5  # movements of more than one


def test_a_wallet_kept_from_before(recorded: tuple[RoundAudit, UUID]) -> None:
    """A wallet the reader read before gives the round's movements from its stream, which
    keeps its events (a later round may read them)."""
    app, rid = recorded
    verifier = StoreVerifier(app)
    player = StoreReader(app).round_bundle(rid).players()[1]
    stream = verifier.reader.wallet_stream(player)
    v, b, _ = _digesting(app, rid, verifier)
    assert v.ok, v.discrepancies
    assert verifier.reader.wallet_stream(player) is stream
    mine = [d for d in stream if d.cls is not None and d.name in MOVEMENTS]
    assert mine
    assert all(d.event is not None for d in mine)
    assert {d.record.key for d in mine} <= {d.record.key for d in b.money}
    _same_verdict(app, rid)


def test_handed_over_empties_the_list_in_order() -> None:
    items: list[Any] = ["a", None, 3, "b"]
    assert list(_handed_over(items)) == ["a", None, 3, "b"]
    assert items == []
    assert list(_handed_over([])) == []


def test_the_round_read_handed_over_is_the_whole_read(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    verifier = StoreVerifier(app)
    handed = verifier.reader.shared_log(rid, defer=True, digest=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(bundle, "_handed_over", lambda stored: stored)
        whole = StoreVerifier(app).reader.shared_log(rid, defer=True, digest=True)
    assert [(type(d), d.record, d.position, d.name) for d in handed] == [
        (type(d), d.record, d.position, d.name) for d in whole
    ]


def test_every_deferred_made_without_its_init_has_every_slot(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    """``Deferred.holding`` and ``Deferred.gone`` make their records without ``__init__`` (a
    boundless round has tens of thousands), each setting the slots itself: a slot one of them
    forgot would raise ``AttributeError`` where a check reads it, so every slot of every
    deferred record of a digesting read (its round's and its movements') is set."""
    app, rid = recorded
    v, b, _verifier = _digesting(app, rid)
    assert v.ok, v.discrepancies
    slots = {"record", "at", *Deferred.__slots__}  # ``event`` and ``error``: its properties
    made = [d for d in (*b.round, *b.money) if type(d) is Deferred]
    gone = {id(d) for d in b.money}
    assert gone
    assert gone <= {id(d) for d in made}  # ``gone``: every movement
    assert len(made) > len(gone)  # and the round's own (``holding``, ``__init__``)
    for d in made:
        unset = sorted(s for s in slots if not hasattr(d, s))
        assert not unset, (d.name, unset)

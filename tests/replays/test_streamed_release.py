"""A boundless round's participation records decoded on the verifier's reading (joins, bets,
added wagers, settlements) are let go once re-execution compares them equal to their
re-derived events (``replays.bundle.Deferred.holding``); the money check, which reads them
too, runs before re-execution (``replays.verify._verify_bundle``). Tampering with what is let
go is still found, finding for finding as by the verifier holding every record:

* a passing round: every such record let go (its event read again raises ``DroppedState``);
* a settlement's amount or a bet's stake changed (re-execution and the money check);
* a wallet movement's amount changed (the money check, whose movements the round's released
  events called for);
* a released record whose bytes changed but decode to the same payload (the commit check);
* a record missing and a record duplicated (re-execution's streams, the commit check).
"""

from __future__ import annotations

from uuid import UUID

import orjson
import pytest
from test_digested_boundless import (
    PLAYERS,
    _append,
    _changed,
    _delete,
    _round_rows,
    _rows,
    _same_verdict,
    _set_state,
    _verified,
)

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from replays.bundle import Deferred, Digested, DroppedState, wallet_id

#: The participation events decoded on reading (they move money or name the player).
HELD = ("Participation.Joined", "Participation.BetPlaced", "Participation.WagerAdded",
        "Participation.WagerSettled")  # fmt: skip


@pytest.fixture
def recorded(app: RoundAudit) -> tuple[RoundAudit, UUID]:
    simulate(app, variant="boundless", rounds=1, players=PLAYERS, reproducible_shoes=True)
    return app, SharedHand.create_id("sim-boundless", 1)


def _plain_json(app: RoundAudit) -> None:
    if app.mapper.compressor is not None:
        pytest.skip("the payload is edited as plain JSON")


def _edit(app: RoundAudit, row: tuple[UUID, int, str, bytes], **changes: object) -> None:
    oid, version, _topic, state = row
    payload = orjson.loads(state)
    payload.update(changes)
    _set_state(app, oid, version, orjson.dumps(payload))


def _row_of(app: RoundAudit, rid: UUID, topic: str) -> tuple[UUID, int, str, bytes]:
    """The round's last record of ``topic``."""
    return next(r for r in reversed(_round_rows(app, rid)) if r[2].endswith(topic))


def test_a_passing_round_lets_go_of_the_records_it_decoded(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    app, rid = recorded
    v, b = _verified(app, rid, digest=True)
    assert v.ok, v.discrepancies
    held = [d for d in b.round if d.name in HELD]
    assert {d.name for d in held} >= {"Participation.Joined", "Participation.BetPlaced",
                                      "Participation.WagerSettled"}  # fmt: skip
    for d in held:
        assert type(d) is Deferred
        assert d.matched  # compared equal, let go
        assert type(d.record) is Digested
        with pytest.raises(DroppedState):
            d.event  # noqa: B018
    # the shared hand's records are kept decoded (the shoe check reads its cards after)
    assert all(type(d) is not Deferred for d in b.round if d.name == "SharedHand.CardDealt")
    assert _same_verdict(app, rid).ok


def test_a_settlement_amount_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    _plain_json(app)
    row = _row_of(app, rid, "Participation.WagerSettled")
    payout = orjson.loads(row[3])["payout"]
    _edit(app, row, payout=f"{float(payout) + 1:.2f}")  # a text, as stored
    v = _same_verdict(app, rid)
    assert not v.ok
    checks = {x.check for x in v.discrepancies}
    assert {"reexecution", "money"} <= checks, v.discrepancies
    assert any(x.field == "payout" for x in v.discrepancies), v.discrepancies


def test_a_stake_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    _plain_json(app)
    row = _row_of(app, rid, "Participation.BetPlaced")
    _edit(app, row, stake="11.00")
    v = _same_verdict(app, rid)
    assert not v.ok
    assert any(x.check == "money" for x in v.discrepancies), v.discrepancies


def test_a_wallet_movement_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    _plain_json(app)
    settled = orjson.loads(_row_of(app, rid, "Participation.WagerSettled")[3])
    wallet = wallet_id(settled["player"])
    row = next(r for r in _rows(app) if r[0] == wallet and r[2].endswith("Wallet.StakeDebited"))
    _edit(app, row, amount="10.01")
    v = _same_verdict(app, rid)
    assert not v.ok
    assert [(x.check, x.field) for x in v.discrepancies if x.check == "money"] == [
        ("money", "wallet.amount"),
        ("money", "balance_seen"),
    ], v.discrepancies


@pytest.mark.parametrize("topic", ["Participation.BetPlaced", "Participation.WagerSettled"])
def test_a_released_record_with_changed_bytes_is_found(
    recorded: tuple[RoundAudit, UUID], topic: str
) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    at = max(i for i, r in enumerate(rows) if r[2].endswith(topic))
    oid, version, _topic, state = rows[at]
    _set_state(app, oid, version, _changed(app, state))
    v, b = _verified(app, rid, digest=True)
    d = b.round[at]
    assert type(d) is Deferred
    assert d.matched  # the same payload: compared equal and let go
    found = [(x.position, x.field) for x in v.discrepancies if x.check == "commit"]
    assert found == [(at + 1, "(bytes)")], v.discrepancies
    assert not _same_verdict(app, rid).ok


def test_a_missing_settlement_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    oid, version, _topic, _state = _row_of(app, rid, "Participation.WagerSettled")
    _delete(app, oid, version)
    v = _same_verdict(app, rid)
    assert not v.ok
    assert {"reexecution", "money"} <= {x.check for x in v.discrepancies}


def test_a_duplicated_bet_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    oid, _version, topic, state = next(r for r in rows if r[2].endswith("Participation.BetPlaced"))
    last = max(v for o, v, _t, _s in rows if o == oid)
    _append(app, oid, last + 1, topic, state)
    v = _same_verdict(app, rid)
    assert not v.ok
    assert any(x.check == "reexecution" for x in v.discrepancies), v.discrepancies

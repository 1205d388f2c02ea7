"""``StoreVerifier.verify_many`` reads rounds ahead in batches (``StoreReader.read_ahead``: the
rounds' records, their shoes' and wallets' new records, a few queries for many rounds): a
tampered round inside a batch is still named with the same findings as when verified alone,
the other rounds of the batch still pass, and a verifier used again after more rounds were
recorded reads what its shoes and wallets gained (the query of the streams' tails), on SQLite
and PostgreSQL (and the in-memory store, which reads round by round).
"""

from __future__ import annotations

import re
from pathlib import Path
from uuid import UUID

import pytest
from storekit import Store

import replays.verify
from cli.simulate import bot_names, simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.wallet import Wallet
from replays.verify import StoreVerifier


def _findings(v: replays.verify.Verdict) -> list[tuple[str, str]]:
    return sorted((d.check, d.message) for d in v.discrepancies)


def test_a_tampered_wallet_row_in_a_later_batch_is_named_and_the_others_pass(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = RoundAudit(env=environment_for(store_url))
    try:
        ids = [UUID(r) for r in simulate(app, variant="european", rounds=5, players=2).round_ids]
    finally:
        app.close()
    # the third round (the first of the second batch of two: its wallets and shoe come from
    # the query of the streams' tails, read after the first batch)
    target = ids[2]
    store = Store(store_url, tmp_path / "unused.pem", capsys)
    stakes = [
        (Wallet.create_id(p), v, st)
        for p in bot_names("sim-european", 2)
        for v, t, st in store.rows(Wallet.create_id(p))
        if t.endswith("Wallet.StakeDebited") and str(target).encode() in st
    ]
    assert stakes, "no stake of the round found in the players' wallets"
    wid, version, state = stakes[0]
    store.set_state(
        wid, version, re.sub(rb'"amount":"([0-9.]+)"', rb'"amount":"1\1"', state, count=1)
    )

    monkeypatch.setattr(replays.verify, "AHEAD", 2)
    app = RoundAudit(env=environment_for(store_url))
    try:
        verdicts = list(StoreVerifier(app).verify_many(ids))
        assert [v.round_id for v in verdicts] == [str(r) for r in ids]
        assert [v.ok for v in verdicts] == [r != target for r in ids]
        bad = verdicts[2]
        assert {"money", "commit"} <= {d.check for d in bad.discrepancies}, bad.discrepancies
        alone = StoreVerifier(app).verify(target)
        assert _findings(alone) == _findings(bad)
    finally:
        app.close()


def test_a_verifier_used_again_reads_what_shoes_and_wallets_gained(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_on_every_store
    monkeypatch.setattr(replays.verify, "AHEAD", 3)
    first = [UUID(r) for r in simulate(app, variant="european", rounds=4, players=2).round_ids]
    verifier = StoreVerifier(app)
    assert all(v.ok for v in verifier.verify_many(first))
    # the same shoe and wallets, more records: the next batches read their tails
    more = [UUID(r) for r in simulate(app, variant="european", rounds=3, players=2).round_ids]
    verifier.log.refresh()
    verdicts = list(verifier.verify_many(first + more))
    assert len(verdicts) == 7
    assert all(v.ok for v in verdicts), [v.discrepancies for v in verdicts if not v.ok]
    # and a single round after a batch is read on its own again
    assert verifier.verify(more[-1]).ok


def test_a_shoe_read_ahead_is_decoded_and_a_wallets_unmoving_records_are_deferred(
    store_url: str,
) -> None:
    """The verifier's reader (``defer``) reads a batch's shoes decoded (every record of a shoe
    is read by its index of cards and its check: no :class:`~replays.bundle.Deferred` wrapper
    to build and decode through) and still defers its wallets' records that are no movement
    (their openings and deposits, which no check reads); the streams hold the very records
    and events a reader without ``defer`` decodes, and every round passes."""
    from replays.bundle import Deferred, StoreReader, wallet_id

    app = RoundAudit(env=environment_for(store_url))
    try:
        ids = [UUID(r) for r in simulate(app, variant="deluxe", rounds=3, players=2).round_ids]
        reader = StoreReader(app, defer=True)
        reader.read_ahead(ids)
        plain = StoreReader(app)
        shoes = {reader.round_bundle(rid).shoe_id for rid in ids}
        assert len(shoes) == 1
        (shoe,) = shoes
        assert shoe is not None
        stream = reader.stream(shoe)
        assert stream
        assert not any(type(d) is Deferred for d in stream)
        assert [(d.record, d.event) for d in stream] == [
            (d.record, d.event) for d in plain.stream(shoe)
        ]
        wallet = reader.stream(wallet_id(bot_names("sim-deluxe", 2)[0]))
        assert any(type(d) is Deferred for d in wallet)
        assert all(v.ok for v in StoreVerifier(app).verify_many(ids))
    finally:
        app.close()

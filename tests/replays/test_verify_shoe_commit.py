"""A verifier checks a shoe's records against their leaves once, and again only as the shoe
grows (``replays.verify.CommitCache``): a live shoe serves many rounds, and each of them still
reports a shoe record whose bytes are not those its leaf committed to, with the same findings
verified alone, in a batch, or after the shoe's other rounds; a shoe that grew after a verifier
checked it gets its new records checked by that verifier. On SQLite and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from storekit import Store

import replays.verify
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.verify import StoreVerifier, Verdict


def _findings(v: Verdict) -> list[tuple[str, str, str]]:
    return sorted((d.check, d.field, d.message) for d in v.discrepancies)


def _reformat(store: Store, shoe_id: UUID, version: int) -> None:
    """The shoe's record ``version`` stored as other bytes of the same JSON (a space after its
    first brace): it decodes to the very same event, so only the commit check can see it."""
    state = {v: s for v, _, s in store.rows(shoe_id)}[version]
    assert state.startswith(b"{"), state[:20]
    store.set_state(shoe_id, version, b"{ " + state[1:])


def _shoe_of(app: RoundAudit, round_id: UUID) -> UUID:
    return UUID(app.round(str(round_id)).shoe_id)


def test_a_changed_record_of_a_live_shoe_is_named_for_every_round_that_uses_it(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = RoundAudit(env=environment_for(store_url))
    try:
        live = [UUID(r) for r in simulate(app, variant="deluxe", rounds=5, players=2).round_ids]
        fresh = [UUID(r) for r in simulate(app, variant="european", rounds=2, players=2).round_ids]
        shoes = {_shoe_of(app, r) for r in live}
        assert len(shoes) == 1, "the deluxe rounds were not dealt from one live shoe"
        (shoe_id,) = shoes
        assert all(_shoe_of(app, r) != shoe_id for r in fresh)
    finally:
        app.close()
    store = Store(store_url, tmp_path / "unused.pem", capsys)
    version = len(store.rows(shoe_id)) // 2  # a card drawn for one of the middle rounds
    _reformat(store, shoe_id, version)

    monkeypatch.setattr(replays.verify, "AHEAD", 2)  # the shoe's rounds across batches
    app = RoundAudit(env=environment_for(store_url))
    try:
        ids = live + fresh
        batched = list(StoreVerifier(app).verify_many(ids))
        assert [v.ok for v in batched] == [r in fresh for r in ids]
        needle = f"Shoe {shoe_id} version {version}: the stored bytes are not those leaf"
        for v in batched[: len(live)]:
            named = [d for d in v.discrepancies if needle in d.message]
            assert [d.check for d in named] == ["commit"], v.discrepancies
        # the same verdicts, each round alone on its own verifier
        assert [_findings(v) for v in batched] == [
            _findings(StoreVerifier(app).verify(r)) for r in ids
        ]
        # and one verifier verifying the shoe's rounds one by one, the last first
        one = StoreVerifier(app)
        again = {r: one.verify(r) for r in reversed(ids)}
        assert [_findings(again[r]) for r in ids] == [_findings(v) for v in batched]
    finally:
        app.close()


def test_a_shoe_that_grew_gets_its_new_records_checked_by_the_same_verifier(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = RoundAudit(env=environment_for(store_url))
    store = Store(store_url, tmp_path / "unused.pem", capsys)
    try:
        first = [UUID(r) for r in simulate(app, variant="deluxe", rounds=3, players=2).round_ids]
        shoe_id = _shoe_of(app, first[0])
        verifier = StoreVerifier(app)
        assert all(v.ok for v in verifier.verify_many(first))
        assert verifier.verify(first[0]).ok
        checked = len(store.rows(shoe_id))
        # a new session retires the table's open shoe (SHOE-1): one more record of it
        simulate(app, variant="deluxe", rounds=1, players=2)
        grown = len(store.rows(shoe_id))
        assert grown > checked
        _reformat(store, shoe_id, grown)  # the shoe's last record, stored after the check
        verifier.log.refresh()
        needle = f"Shoe {shoe_id} version {grown}: the stored bytes are not those leaf"
        # its rounds (each round's shoe is its whole stream, read again), one by one and in a
        # batch: the new record is checked, the old ones still pass
        for v in [verifier.verify(first[0]), *verifier.verify_many(first[1:])]:
            assert not v.ok
            assert [d.check for d in v.discrepancies] == ["commit"], v.discrepancies
            assert needle in v.discrepancies[0].message
        assert _findings(verifier.verify(first[0])) == _findings(
            StoreVerifier(app).verify(first[0])
        )
    finally:
        app.close()


def test_a_verifier_holds_no_more_leaves_than_its_bound(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify --all`` over a large store: the cache starts again once it holds more leaf
    bytes than ``COMMIT_CACHE_BYTES``, and the verdicts are the same as with no bound."""
    app = RoundAudit(env=environment_for(store_url))
    try:
        ids = [UUID(r) for r in simulate(app, variant="european", rounds=4, players=2).round_ids]
        unbounded = StoreVerifier(app)
        expected = [_findings(v) for v in unbounded.verify_many(ids)]
        assert expected == [[] for _ in ids]
        monkeypatch.setattr(replays.verify, "COMMIT_CACHE_BYTES", 1)
        bounded = StoreVerifier(app)
        assert [_findings(v) for v in bounded.verify_many(ids)] == expected
        # each round started it again: only the last round's leaves are held
        assert 0 < bounded._commits.held < unbounded._commits.held
    finally:
        app.close()

"""A store that compresses its events (the library's ``COMPRESSOR_TOPIC`` in the environment
an application is given in code; the service and the CLI never set it) verifies like any
other: a leaf commits to each
event's state **exactly as stored** (docs/spec/leaf.md), so the commit check hashes the stored
bytes, not the plaintext the reader decodes (``replays.bundle.to_record`` keeps the stored
bytes whenever they differ, a cipher's too). Before, every round of such a store failed ("the
stored bytes are not those leaf N committed to"). Stored bytes changed after commit are
still found."""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg import fresh_database

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rules import VARIANTS
from replays.reexecute import Verdict
from replays.verify import StoreVerifier

ZLIB = {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}


@pytest.fixture(params=["sqlite-zlib", pytest.param("postgres-zlib", marks=pytest.mark.postgres)])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RoundAudit]:
    if request.param.startswith("postgres"):
        with fresh_database(request.getfixturevalue("postgres_url")) as url:
            application = RoundAudit(env={**environment_for(url), **ZLIB})
            try:
                yield application
            finally:
                application.close()
        return
    env = {**environment_for(f"sqlite:///{tmp_path}/events.db"), **ZLIB}
    application = RoundAudit(env=env)
    try:
        yield application
    finally:
        application.close()


def _verdicts(app: RoundAudit) -> list[Verdict]:
    verifier = StoreVerifier(app)
    return list(verifier.verify_many(list(verifier.round_ids())))


def test_every_variant_recorded_on_the_store_verifies(app: RoundAudit) -> None:
    assert app.mapper.compressor is not None
    for variant in VARIANTS:
        simulate(app, variant=variant, rounds=2, players=3, table=f"t-{variant}")
    verdicts = _verdicts(app)
    assert len(verdicts) == 2 * len(VARIANTS)
    assert all(v.ok for v in verdicts), [v.as_json() for v in verdicts if not v.ok][:1]


def test_a_compressed_state_changed_after_commit_is_found(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    app = RoundAudit(env={**environment_for(f"sqlite:///{db}"), **ZLIB})
    try:
        report = simulate(app, variant="european", rounds=1, players=2, table="t")
        assert all(v.ok for v in _verdicts(app))
        # the insider rewrites a bet's stake, compressed as the store compresses it
        with sqlite3.connect(db) as conn:
            rowid, state = conn.execute(
                "SELECT rowid, state FROM stored_events WHERE topic LIKE '%BetPlaced' LIMIT 1"
            ).fetchone()
            plain = zlib.decompress(state)
            forged = plain.replace(b'"stake":"', b'"stake":"9', 1)
            assert forged != plain
            conn.execute(
                "UPDATE stored_events SET state=? WHERE rowid=?", (zlib.compress(forged), rowid)
            )
    finally:
        app.close()
    app = RoundAudit(env={**environment_for(f"sqlite:///{db}"), **ZLIB})
    try:
        (verdict,) = _verdicts(app)
        assert verdict.round_id == str(report.round_ids[0])
        assert not verdict.ok
        found = [d for d in verdict.discrepancies if d.check == "commit"]
        assert found
        assert "changed after commit" in found[0].message
        assert found[0].event == "Round.BetPlaced"
    finally:
        app.close()

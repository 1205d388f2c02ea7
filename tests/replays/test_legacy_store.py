"""A store written and sealed by the per-round seal (before seal-at-commit) keeps verifying:
``tests/fixtures/legacy-v1-store.db`` was made by that version (five rounds sealed in round
leaves with a legacy checkpoint, then one more round, unsealed). Until it is migrated its events
are in no transaction's leaf, and verify says so and how to migrate; ``roundaudit seal`` (the
signer) migrates it once, in backfill leaves that follow the round leaves in the same tree; then
every round verifies, the sealed ones against their round leaves too, the legacy checkpoint
still checks, new transactions are sealed at commit, and an edit is found by both seals. On
SQLite (a copy of the file) and PostgreSQL (its rows copied into a fresh database)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from pg import fresh_database, libpq_url
from storekit import ORIGIN, Store

from cli.main import main
from domain.application import RoundAudit
from domain.commit_leaf import BACKFILL, COMMIT, parse_leaf
from domain.persistence import environment_for
from replays.log import MerkleLog, make_policy
from replays.merkle import load_private_key
from replays.note import operator_key
from replays.verify import StoreVerifier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = FIXTURES / "legacy-v1-key.pem"
SEALED = 5
ROUNDS = 6


def _copy_into_postgres(url: str) -> None:
    """The fixture's rows, in notification order, into an empty PostgreSQL store."""
    RoundAudit(env=environment_for(url)).close()  # the schema
    src = sqlite3.connect(FIXTURES / "legacy-v1-store.db")
    with psycopg.connect(libpq_url(url)) as conn:
        rows = src.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "ORDER BY rowid"
        ).fetchall()
        for oid, version, topic, state in rows:
            conn.execute(
                "INSERT INTO roundaudit_events (originator_id, originator_version, topic, state) "
                "VALUES (%s, %s, %s, %s)",
                (UUID(oid), version, topic, state),
            )
        for table in ("merkle_log", "sealed_seeds"):
            for oid, version, topic, state in src.execute(
                f"SELECT originator_id, originator_version, topic, state FROM stored_{table}"
            ).fetchall():
                conn.execute(
                    f"INSERT INTO roundaudit_{table} VALUES (%s, %s, %s, %s)",
                    (UUID(oid), version, topic, state),
                )
    src.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def legacy(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Store]:
    if request.param == "sqlite":
        path = tmp_path / "legacy.db"
        shutil.copy(FIXTURES / "legacy-v1-store.db", path)
        yield Store(f"sqlite:///{path}", KEY, capsys)
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        _copy_into_postgres(url)
        yield Store(url, KEY, capsys)


def verify(store: Store) -> tuple[int, str]:
    """Verified with the legacy key pinned (its raw form: the legacy checkpoint has no origin
    of this deployment; the new checkpoints name ORIGIN)."""
    key, _ = load_private_key(KEY)
    raw = key.public_key().public_bytes_raw().hex()
    return store.verify(pinned=raw, witnesses=False)


def test_a_legacy_store_says_it_needs_the_migration(legacy: Store) -> None:
    code, out = verify(legacy)
    assert code == 1, out
    assert "in no leaf of the log: recorded outside a sealed transaction" in out
    assert "`roundaudit seal` migrates it once" in out
    assert out.splitlines()[-1] == f"0 passed, {ROUNDS} failed; the log failed: commit"


def test_the_signer_migrates_a_legacy_store_once_and_it_verifies(legacy: Store) -> None:
    with legacy.log() as log:
        before = log.size
        assert log.kinds == ["round"] * SEALED
    legacy.capsys.readouterr()
    assert main(["--database-url", legacy.url, "seal", "--signing-key", str(KEY),
                 "--origin", ORIGIN]) == 0  # fmt: skip
    out = legacy.capsys.readouterr().out
    assert "migrated: 1 backfill leaves" in out
    with legacy.log() as log:
        assert log.kinds == ["round"] * SEALED + [BACKFILL]
        assert log.size == before + 1
        cps = log.checkpoints()
        assert [c.legacy is not None for c in cps] == [True, False]
    code, out = verify(legacy)
    assert code == 0, out
    assert out.splitlines()[-1] == f"{ROUNDS} passed, 0 failed"
    # the sealed rounds still check against their round leaves, and all against the log
    app = RoundAudit(env=environment_for(legacy.url))
    try:
        key, _ = load_private_key(KEY)
        policy = make_policy(operator_key(ORIGIN, key.public_key()))
        verifier = StoreVerifier(app, policy=policy)
        verdicts = [verifier.verify(r) for r in verifier.round_ids()]
        assert sum("seal" in v.checks for v in verdicts) == SEALED
        assert all({"commit", "checkpoint"} <= set(v.checks) for v in verdicts)
        # read ahead (their seal rows in one query): the same verdicts
        ahead = list(StoreVerifier(app, policy=policy).verify_many(verifier.round_ids()))
        assert [(v.round_id, v.checks, v.discrepancies, v.notes) for v in ahead] == [
            (v.round_id, v.checks, v.discrepancies, v.notes) for v in verdicts
        ]
        # new transactions are sealed at commit, after the backfill
        app.open_wallet("after-the-migration")
        log = MerkleLog(app).refresh()
        assert parse_leaf(log.leaf(log.size - 1)).kind == COMMIT
    finally:
        app.close()
    assert main(["--database-url", legacy.url, "seal", "--signing-key", str(KEY),
                 "--origin", ORIGIN]) == 0  # fmt: skip
    assert "migrated" not in legacy.capsys.readouterr().out  # once


def test_an_edit_of_a_sealed_legacy_round_is_found_by_both_seals(legacy: Store) -> None:
    assert main(["--database-url", legacy.url, "seal", "--signing-key", str(KEY),
                 "--origin", ORIGIN]) == 0  # fmt: skip
    with legacy.log() as log:
        rid = next(r for r in log.round_ids() if log.round_leaf(r) is not None)
    version, _, state = legacy.rows(rid)[1]
    legacy.set_state(rid, version, state.replace(b'"request_id":null', b'"request_id":"x"'))
    code, out = verify(legacy)
    assert code == 1, out
    assert f"[seal] position {version} " in out
    assert f"[commit] position {version} " in out
    assert out.splitlines()[-1].endswith("; the log failed: commit")

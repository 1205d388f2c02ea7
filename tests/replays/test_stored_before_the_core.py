"""Rounds stored before the game core (issue 13) still verify: a store written once by the code
on ``main`` at ``ef523c7`` (``tests/fixtures/store-main-ef523c7.db.gz``, see its README) is
verified round by round with today's code. That store predates seal-at-commit, so it is first
migrated the way an operator migrates one (``roundaudit seal``, with the development key that
signed its legacy checkpoint): nothing of its rounds is rewritten. Then every round passes every
check (storage, re-execution by the game core, shoe, money, commit, checkpoint, and the legacy
per-round seal), so every round of every variant re-executes to the stored events."""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import pytest
from storekit import ORIGIN

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import make_policy
from replays.merkle import load_private_key
from replays.note import operator_key
from replays.verify import StoreVerifier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STORE = FIXTURES / "store-main-ef523c7.db.gz"
KEY = FIXTURES / "store-main-ef523c7-key.pem"
PUBLIC_KEY = (FIXTURES / "store-main-ef523c7.pub").read_text().strip()
ROUNDS = 108


@pytest.fixture(scope="module")
def old_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the old store, migrated once to seal-at-commit (backfill leaves)."""
    path = tmp_path_factory.mktemp("old-store") / "store.db"
    with gzip.open(STORE, "rb") as src, path.open("wb") as out:
        shutil.copyfileobj(src, out)
    url = f"sqlite:///{path}"
    assert main(["--database-url", url, "seal", "--signing-key", str(KEY),
                 "--origin", ORIGIN]) == 0  # fmt: skip
    return url


def test_the_fixture_key_is_the_key_that_signed_the_old_store() -> None:
    key, _ = load_private_key(KEY)
    assert key.public_key().public_bytes_raw().hex() == PUBLIC_KEY


def test_every_round_stored_by_the_old_code_verifies(old_store: str) -> None:
    app = RoundAudit(env=environment_for(old_store, create_table=False))
    try:
        key, _ = load_private_key(KEY)
        verifier = StoreVerifier(app, policy=make_policy(operator_key(ORIGIN, key.public_key())))
        ids = verifier.round_ids()
        failed = {}
        for rid in ids:
            verdict = verifier.verify(rid)
            if not verdict.ok:
                failed[verdict.label] = verdict.as_json()["discrepancies"][:2]
            assert {"storage", "reexecution", "shoe", "money", "commit", "seal"} <= set(
                verdict.checks
            ), verdict.checks
        assert not failed, failed
        variants = Counter(app.round_view(str(rid))["variant"] for rid in ids)
    finally:
        app.close()
    assert len(ids) == ROUNDS
    assert variants == {"european": 29, "deluxe": 24, "multihand": 24, "lucky7": 23, "boundless": 8}


def test_the_command_line_verifies_the_old_store(
    old_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(
        ["--database-url", old_store, "verify", "--all", "--no-progress",
         "--public-key", PUBLIC_KEY]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert out.strip().splitlines()[-1] == f"{ROUNDS} passed, 0 failed"

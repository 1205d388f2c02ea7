"""Rounds stored before the game core (issue 13) still verify: a store written once by the code
on ``main`` at ``ef523c7`` (``tests/fixtures/store-main-ef523c7.db.gz``, see its README) is
verified round by round with today's code, every check (storage, re-execution, shoe, money,
seal), and every round of every variant re-executes to the stored events."""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import pytest

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.merkle import parse_public_key
from replays.verify import StoreVerifier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STORE = FIXTURES / "store-main-ef523c7.db.gz"
PUBLIC_KEY = (FIXTURES / "store-main-ef523c7.pub").read_text().strip()


@pytest.fixture(scope="module")
def old_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("old-store") / "store.db"
    with gzip.open(STORE, "rb") as src, path.open("wb") as out:
        shutil.copyfileobj(src, out)
    return f"sqlite:///{path}"


def test_every_round_stored_by_the_old_code_verifies(old_store: str) -> None:
    app = RoundAudit(env=environment_for(old_store, create_table=False))
    try:
        verifier = StoreVerifier(app, public_key=parse_public_key(PUBLIC_KEY))
        ids = verifier.round_ids()
        failed = {}
        for rid in ids:
            verdict = verifier.verify(rid)
            if not verdict.ok:
                failed[verdict.label] = verdict.as_json()["discrepancies"][:2]
            assert verdict.checks == ["storage", "reexecution", "shoe", "money", "seal"]
        assert not failed, failed
        variants = Counter(app.round_view(str(rid))["variant"] for rid in ids)
    finally:
        app.close()
    assert len(ids) == 108
    assert variants == {"european": 29, "deluxe": 24, "multihand": 24, "lucky7": 23, "boundless": 8}


def test_the_command_line_verifies_the_old_store(
    old_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["--database-url", old_store, "verify", "--all", "--no-progress",
         "--public-key", PUBLIC_KEY]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert out.strip().endswith("108 passed, 0 failed")

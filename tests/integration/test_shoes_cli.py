"""``roundaudit shoes retire SHOE_ID``: a shoe retired from the command line reveals an RNG
shoe's seed (which recomputes every card it dealt), refuses what cannot be retired, and the
retirement is sealed like any other transaction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from api.settings import SEED_KEY_ENV, write_seed_key
from cli.main import main
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID, PURPOSE, parse_leaf
from domain.persistence import environment_for
from domain.shuffle import commitment, shuffled_order
from domain.vault import SeedKeyRing


def test_retiring_an_rng_shoe_reveals_its_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    ring = SeedKeyRing.generate()  # the command line must open the seed this process sealed
    seed_file = tmp_path / "keys" / "seed.key"
    write_seed_key(seed_file, ring)
    monkeypatch.setenv(SEED_KEY_ENV, str(seed_file))
    app = RoundAudit(env=environment_for(url), seed_key=ring)
    shoe = app.open_shoe(
        table_id="T1", shoe_number=1, kind="rng", decks=8, production=True, burn_procedure=True
    )
    app.burn(shoe)
    app.close()
    capsys.readouterr()
    assert main(["--database-url", url, "shoes", "retire", shoe, "--json"]) == 0
    view = orjson.loads(capsys.readouterr().out)
    assert view["retired"] is True
    seed = bytes.fromhex(view["revealed_seed"])
    assert commitment(seed) == view["commitment"]
    order = [c.code for c in shuffled_order(seed, 8)]
    assert len(view["drawn"]) >= 2  # the shown card and what it burned (SHOE-2)
    assert [d["card"] for d in view["drawn"]] == order[: len(view["drawn"])]
    app = RoundAudit(env=environment_for(url))
    try:
        last = app.commit_table(PURPOSE).select_events(LEAVES_ID, desc=True, limit=1)[0]
        topics = [e.topic for e in parse_leaf(bytes(last.state)).entries]
        assert topics == ["domain.shoe:Shoe.SeedRevealed", "domain.shoe:Shoe.Retired"]
    finally:
        app.close()
    # again: refused, nothing recorded
    assert main(["--database-url", url, "shoes", "retire", shoe]) == 2
    assert "retired" in capsys.readouterr().err


def test_retiring_a_live_shoe_and_an_unknown_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    shoe = app.open_shoe(table_id="T1", shoe_number=1, kind="live", decks=8, production=True)
    app.close()
    assert main(["--database-url", url, "shoes", "retire", shoe]) == 0
    out = capsys.readouterr().out
    assert f"retired shoe {shoe} (live, table T1, 0 card(s) drawn)" in out
    assert "seed" not in out
    assert main(["--database-url", url, "shoes", "retire", "not-a-uuid"]) == 2
    assert "not a valid id" in capsys.readouterr().err

"""The operator's command line: ``roundaudit keys`` and ``roundaudit seed-key``, on SQLite and
PostgreSQL, and the seed key file that ``serve`` and ``simulate`` create on first start."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from api.settings import SEED_KEY_ENV, SettingsError, load_seed_key, write_seed_key
from cli.main import Context, main
from domain.application import RoundAudit
from domain.persistence import environment_for, sqlite_path
from domain.shuffle import new_seed
from domain.vault import SEED_TOPIC, SeedKeyRing


@pytest.fixture
def seed_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "keys" / "seed.key"
    monkeypatch.setenv(SEED_KEY_ENV, str(path))
    monkeypatch.delenv("ROUNDAUDIT_PRODUCTION", raising=False)
    return path


def roundaudit(url: str, *args: str) -> int:
    return main(["--database-url", url, *args])


def test_keys_create_list_and_revoke(
    store_url: str, seed_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert roundaudit(store_url, "keys", "create", "--role", "table-feed", "--table", "T1",
                      "--table", "T2", "--label", "studio-A") == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    token = out[0]
    assert token.startswith("rak_")
    assert "shown this once" in out[1]
    app = RoundAudit(env=environment_for(store_url), seed_key=SeedKeyRing.locked())
    try:
        principal = app.keys.authenticate(token)
        assert principal.tables == frozenset({"T1", "T2"})
        (key,) = app.keys.all()
        assert key.created_by["id"].startswith("cli:")
    finally:
        app.close()
    assert roundaudit(store_url, "keys", "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [k["key_id"] for k in listed] == [principal.key_id]
    assert token.split("_", 2)[2] not in json.dumps(listed)
    assert roundaudit(store_url, "keys", "revoke", principal.key_id, "--reason", "rotated") == 0
    assert "revoked" in capsys.readouterr().out
    assert roundaudit(store_url, "keys", "create", "--role", "player") == 2  # needs --player
    assert "player id" in capsys.readouterr().err
    assert roundaudit(store_url, "keys", "new-token") == 0
    assert capsys.readouterr().out.startswith("rak_")


def plaintext_store(url: str) -> tuple[list[bytes], str]:
    """A store as it was before seeds were encrypted: an RNG shoe in play and two plaintext
    seed rows (one of them that shoe's)."""
    app = RoundAudit(env=environment_for(url), seed_key=SeedKeyRing.generate())
    try:
        sid = app.open_shoe(table_id="T", shoe_number=1, kind="rng", decks=1, production=True)
        shoe = app.shoe(sid)
        seeds = [new_seed() for _ in range(2)]
        # replace the sealed row with a plaintext seed that matches the shoe's commitment:
        # open with the key, write it back in the old format
        seed = app.vault.open(shoe.id)
        assert seed is not None
        from domain.vault import _update

        _update(app.vault.recorder, [(shoe.id, 1, seed)])
        app.vault.recorder.insert_events([StoredEvent(uuid4(), 1, SEED_TOPIC, seeds[0])])
        return [seed, seeds[0]], sid
    finally:
        app.close()


def test_seed_key_migrate_seals_plaintext_seeds_and_the_service_then_starts(
    store_url: str, seed_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, sid = plaintext_store(store_url)
    write_seed_key(seed_file, SeedKeyRing.generate())
    assert roundaudit(store_url, "seed-key", "status") == 1  # plaintext: not fit to serve
    assert "2 plaintext seed(s)" in capsys.readouterr().out
    app = RoundAudit(env=environment_for(store_url), seed_key=load_seed_key(seed_file))
    try:
        assert "seed-key migrate" in app.vault.problems()[0]
    finally:
        app.close()
    assert roundaudit(store_url, "seed-key", "migrate") == 0
    assert "re-sealed 2 seed(s)" in capsys.readouterr().out
    assert roundaudit(store_url, "seed-key", "status", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert status["vault"]["plaintext"] == 0
    assert status["vault"]["sealed"] == {load_seed_key(seed_file).current_id: 2}
    file = sqlite_path(store_url)
    if file is not None:  # the old bytes are gone from the file itself (vacuumed)
        data = file.read_bytes() + (
            file.with_name(file.name + "-wal").read_bytes()
            if file.with_name(file.name + "-wal").exists()
            else b""
        )
        assert all(seed not in data for seed in plain)
    app = RoundAudit(env=environment_for(store_url), seed_key=load_seed_key(seed_file))
    try:
        assert app.vault.problems() == []
        revealed = app.retire_shoe(sid)["revealed_seed"]
        assert bytes.fromhex(revealed) == plain[0]
    finally:
        app.close()


def test_seed_key_rotate_then_drop_old(
    store_url: str, seed_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = SeedKeyRing.generate()
    write_seed_key(seed_file, old)
    app = RoundAudit(env=environment_for(store_url), seed_key=old)
    sid = app.open_shoe(table_id="T", shoe_number=1, kind="rng", decks=1, production=True)
    app.close()
    assert roundaudit(store_url, "seed-key", "drop-old") == 0  # one key only: nothing to drop
    capsys.readouterr()
    assert roundaudit(store_url, "seed-key", "rotate") == 0
    ring = load_seed_key(seed_file)
    assert ring.ids()[1:] == [old.current_id]
    assert "re-sealed 1 seed(s)" in capsys.readouterr().out
    assert roundaudit(store_url, "seed-key", "drop-old") == 0
    capsys.readouterr()
    only_new = load_seed_key(seed_file)
    assert only_new.ids() == [ring.current_id]
    app = RoundAudit(env=environment_for(store_url), seed_key=only_new)
    try:
        assert app.retire_shoe(sid)["revealed_seed"]
    finally:
        app.close()


def test_the_first_start_creates_the_seed_key_file_but_never_over_sealed_seeds(
    tmp_path: Path, seed_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/first.db"
    ctx = Context(database_url=url, create_seed_key=True)
    ring = ctx.seed_key()
    assert seed_file.exists()
    assert oct(seed_file.stat().st_mode & 0o777) == "0o600"
    assert load_seed_key(seed_file) == ring
    assert ctx.seed_key() == ring  # read, not made again
    app = ctx.app()
    app.open_shoe(table_id="T", shoe_number=1, kind="rng", decks=1, production=True)
    ctx.close()
    seed_file.unlink()  # the key file is lost: a new key would open none of the seeds
    with pytest.raises(SettingsError, match="holds 1 sealed seed"):
        Context(database_url=url, create_seed_key=True).seed_key()
    assert not seed_file.exists()
    # a command that does not create it opens no seed at all, and says why
    assert Context(database_url=url).seed_key().keys == ()
    monkeypatch.setenv("ROUNDAUDIT_PRODUCTION", "1")  # production never creates one
    other = tmp_path / "prod.db"
    assert Context(database_url=f"sqlite:///{other}", create_seed_key=True).seed_key().keys == ()


def test_simulate_on_a_fresh_store_creates_the_seed_key(
    tmp_path: Path, seed_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/sim.db"
    assert roundaudit(url, "simulate", "--variant", "multihand", "--rounds", "2") == 0
    assert seed_file.exists()
    assert "created the seed key file" in capsys.readouterr().err
    db = sqlite_path(url)
    assert db is not None
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT state FROM stored_sealed_seeds").fetchall()
    assert rows
    assert all(bytes(r[0]).startswith(b"RAS\x01") for r in rows)

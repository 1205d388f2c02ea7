"""An untouched store verifies clean after many simulated rounds, on SQLite and PostgreSQL;
``seal``, ``proof`` (checked by the independent RFC 9162 verifier), ``export``/``import`` and
``replay`` work on it through the command line.

One store per database kind is simulated for the whole module (200 rounds per variant on
SQLite, i.e. 1,000 rounds, and 50 per variant on PostgreSQL; 1,000 per variant, 5,000 rounds,
on SQLite under ``-m slow``), sealed with a checkpoint every 40 leaves, and only read by the
tests, which is what makes sharing it safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import orjson
import pytest
import rfc9162
from pg import fresh_database
from storekit import ORIGIN

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from domain.round import Round
from domain.rules import VARIANTS
from replays.verify import StoreVerifier

ROUNDS = {"sqlite": 200, "postgres": 50}  # 1,000 and 250 rounds; 5,000 under -m slow


@dataclass
class Simulated:
    url: str
    key: Path
    rounds: dict[str, list[str]]

    def cli(self, *args: str) -> list[str]:
        return ["--database-url", self.url, *args]


def make_store(url: str, key: Path, rounds: int) -> Simulated:
    """Half the rounds, a checkpoint, the other half, another checkpoint."""
    made: dict[str, list[str]] = {v: [] for v in VARIANTS}
    for part in (rounds // 2, rounds - rounds // 2):
        app = RoundAudit(env=environment_for(url))
        try:
            for v in VARIANTS:
                made[v] += simulate(app, variant=v, rounds=part).round_ids
        finally:
            app.close()
        seal = ["--database-url", url, "seal", "--signing-key", str(key), "--origin", ORIGIN]
        assert main(seal) == 0
    return Simulated(url, key, made)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def sim(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Simulated]:
    folder = tmp_path_factory.mktemp("simulated")
    if request.param == "sqlite":
        yield make_store(f"sqlite:///{folder}/events.db", folder / "key.pem", ROUNDS["sqlite"])
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield make_store(url, folder / "key.pem", ROUNDS["postgres"])


def last_line(out: str) -> str:
    return out.strip().splitlines()[-1]


def test_untouched_store_verifies_clean(sim: Simulated, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(sim.cli("verify", "--all", "--signing-key", str(sim.key), "--no-progress"))
    out = capsys.readouterr().out
    total = sum(len(r) for r in sim.rounds.values())
    assert last_line(out) == f"{total} passed, 0 failed", out
    assert "FAIL" not in out
    assert code == 0


def test_boundless_rounds_get_every_check(sim: Simulated) -> None:
    """A boundless round (a shared hand and one participation per player) is checked as fully
    as a Round: storage, re-execution, its shoe, its money and its seal."""
    app = RoundAudit(env=environment_for(sim.url))
    try:
        verdicts = list(StoreVerifier(app).verify_many([UUID(r) for r in sim.rounds["boundless"]]))
    finally:
        app.close()
    assert len(verdicts) == len(sim.rounds["boundless"]) > 0
    bad = [v for v in verdicts if not v.ok]
    assert not bad, bad[0].as_json()
    for v in verdicts:
        assert v.checks == ["storage", "reexecution", "shoe", "money", "commit", "checkpoint"], (
            v.as_json()
        )
        assert v.events > 10


def test_verify_since_until_selects_by_start_time(
    sim: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert (
        main(sim.cli("verify", "--since", "2000-01-01", "--until", "2000-12-31", "--no-progress"))
        == 0
    )
    assert last_line(capsys.readouterr().out) == "0 passed, 0 failed"
    code = main(
        sim.cli("verify", "--since", "2000-01-01", "--signing-key", str(sim.key), "--no-progress")
    )
    out = capsys.readouterr().out
    total = sum(len(r) for r in sim.rounds.values())
    assert last_line(out) == f"{total} passed, 0 failed"
    assert code == 0


def test_every_round_has_an_inclusion_proof_checked_independently(
    sim: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every leaf committing to a round's records, proven in one checkpoint, as C2SP
    tlog-proofs an independent verifier checks; any altered byte fails."""
    raw = rfc9162.raw_public_key(sim.key.read_bytes())
    rounds = [r for v in VARIANTS for r in sim.rounds[v]]
    for rid in rounds[:: max(1, len(rounds) // 25)]:
        capsys.readouterr()
        assert main(sim.cli("proof", rid)) == 0
        doc = orjson.loads(capsys.readouterr().out)
        assert doc["round_id"] == rid
        assert rfc9162.proof_document_ok(doc, ORIGIN, raw), rid
        assert any(rid in item["leaf"] for item in doc["leaves"])
        item = doc["leaves"][0]
        if item["inclusion"]:
            lines = item["tlog_proof"].split("\n")
            lines[2] = ("A" if lines[2][0] != "A" else "B") + lines[2][1:]
            flipped = {**item, "tlog_proof": "\n".join(lines)}
            assert not rfc9162.proof_document_ok({**doc, "leaves": [flipped]}, ORIGIN, raw)
        changed = {**item, "leaf": item["leaf"].replace(" 1 ", " 2 ", 1)}
        assert changed["leaf"] != item["leaf"]
        assert not rfc9162.proof_document_ok({**doc, "leaves": [changed]}, ORIGIN, raw)


def test_consistency_between_checkpoints_checks_independently(
    sim: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = rfc9162.raw_public_key(sim.key.read_bytes())
    capsys.readouterr()
    assert main(sim.cli("proof", "--checkpoint")) == 0
    latest = orjson.loads(capsys.readouterr().out)
    assert latest["number"] == 2  # one after each half
    assert main(sim.cli("proof", "--consistency", "1", "2")) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert rfc9162.consistency_document_ok(doc, ORIGIN, raw)
    proof = list(doc["proof"])
    proof[0] = ("A" if proof[0][0] != "A" else "B") + proof[0][1:]
    assert not rfc9162.consistency_document_ok({**doc, "proof": proof}, ORIGIN, raw)
    assert main(sim.cli("proof", "--key", "--signing-key", str(sim.key))) == 0
    assert orjson.loads(capsys.readouterr().out)["raw"] == raw.hex()


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_simulated_round_exports_imports_and_replays(
    sim: Simulated, variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = sim.rounds[variant][len(sim.rounds[variant]) // 2]
    out_file = tmp_path / "round.jsonl"
    assert main(sim.cli("export", rid, "-o", str(out_file), "--signing-key", str(sim.key))) == 0
    capsys.readouterr()
    assert (
        main(["verify", "--file", str(out_file), "--signing-key", str(sim.key), "--no-progress"])
        == 0
    )
    assert last_line(capsys.readouterr().out) == "1 passed, 0 failed"
    header = orjson.loads(out_file.read_bytes().splitlines()[0])
    assert (header["round_id"], header["variant"]) == (rid, variant)
    # into an empty store: the same records, and it verifies there
    target = f"sqlite:///{tmp_path}/imported.db"
    assert (
        main(["--database-url", target, "import", str(out_file), "--signing-key", str(sim.key)])
        == 0
    )
    assert main(["--database-url", target, "verify", rid, "--no-progress"]) == 0
    assert last_line(capsys.readouterr().out) == "1 passed, 0 failed"
    # step by step, from the store and from the file: the same replay
    assert main(sim.cli("replay", rid)) == 0
    text = capsys.readouterr().out
    assert main(["replay", "--file", str(out_file)]) == 0
    assert capsys.readouterr().out == text
    assert re.search(r"^#1 +input +(Round|SharedHand).Started", text, re.M)
    assert "phase settled" in text or "phase cancelled" in text
    table, number = header["table_id"], header["round_number"]
    model = SharedHand if variant == "boundless" else Round
    assert str(model.create_id(table, number)) == rid
    assert main(sim.cli("replay", f"{table}#{number}", "--json")) == 0
    steps = orjson.loads(capsys.readouterr().out)["steps"]
    assert steps[-1]["view"]["phase"] in ("settled", "cancelled")


@pytest.mark.slow
def test_thousands_of_untouched_rounds_verify_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = make_store(f"sqlite:///{tmp_path}/events.db", tmp_path / "key.pem", 1000)
    capsys.readouterr()
    main(s.cli("verify", "--all", "--signing-key", str(s.key), "--no-progress"))
    out = capsys.readouterr().out
    total = sum(len(r) for r in s.rounds.values())
    assert last_line(out) == f"{total} passed, 0 failed"

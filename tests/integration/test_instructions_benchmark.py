"""`benchmarks.instructions`: the callgrind count behind the performance history's "What
changed" figures. Its output is parsed right, a machine without valgrind gets a refusal that
names it, and (slow, where valgrind is installed) the count covers the counted work only: two
recorded rounds count about twice one, and the warm-up and imports not at all."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from benchmarks import instructions
from benchmarks.__main__ import open_stores

ROOT = Path(__file__).resolve().parents[2]


def test_instructions_of_reads_the_summary_line() -> None:
    out = b"# callgrind format\nevents: Ir\nsummary: 123456789\n\nfn=(1) x\n0 5\ntotals: 99\n"
    assert instructions.instructions_of(out) == 123456789
    assert instructions.instructions_of(b"events: Ir\ntotals: 42\n") == 42


def test_instructions_of_refuses_an_output_without_a_count() -> None:
    with pytest.raises(ValueError, match="summary"):
        instructions.instructions_of(b"events: Ir\nfn=(1) x\n0 5\n")


def test_without_valgrind_the_refusal_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(SystemExit, match="needs valgrind"):
        instructions.main(["record", "--rounds", "1"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_count_covers_the_counted_rounds_only() -> None:
    counts = {}
    with tempfile.TemporaryDirectory() as scratch:
        for rounds in (1, 2):
            with open_stores("sqlite") as stores, stores.fresh() as url:
                out = Path(scratch) / f"r{rounds}.out"
                args = [url, "european", str(rounds)]
                total, printed = instructions.count(ROOT, instructions.RECORD, args, out)
            assert printed == rounds
            counts[rounds] = total
    # A european round is some millions of instructions; the interpreter's start and the
    # imports alone are hundreds of millions, so a toggle that failed to exclude them (or to
    # include the rounds) would break the proportion.
    assert 3_000_000 < counts[1] < 100_000_000
    assert 1.5 < counts[2] / counts[1] < 2.5


def test_the_boundless_store_holds_one_checkpointed_round_its_verifier_key_trusts(
    tmp_path: Path,
) -> None:
    # what ``boundless`` counts the verification of, each tree on the same store: one
    # boundless round of the players asked, checkpointed under the key its vkey names
    from uuid import UUID

    from benchmarks.__main__ import _app
    from replays.log import make_policy
    from replays.note import parse_vkey
    from replays.verify import StoreVerifier

    url = f"sqlite:///{tmp_path / 'events.db'}"
    rid, vkey = instructions.boundless_store(url, "sqlite", 3)
    app = _app(url)
    try:
        policy = make_policy(parse_vkey(vkey), origin=instructions.BOUNDLESS_ORIGIN)
        verdict = StoreVerifier(app, policy=policy).verify(UUID(rid))
        assert verdict.ok, verdict
        assert StoreVerifier(app).round_ids() == [UUID(rid)]
        assert app.boundless.shared(rid).phase == "settled"
    finally:
        app.close()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_boundless_count_prints_a_round_and_a_player(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert instructions.main(["boundless", "--players", "3"]) == 0
    out = capsys.readouterr().out
    assert "sqlite boundless verify (3 players): instructions a round this " in out
    assert "instructions a player this " in out


def test_the_deposit_snippet_answers_every_deposit(tmp_path: Path) -> None:
    # what ``deposit`` counts, run without valgrind: the service's application in-process,
    # two wallets warmed up, then the deposits, each a 200 naming its wallet's player (the
    # snippet asserts it), and the count printed
    import os
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path}/deposits.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", instructions.DEPOSIT, url, "3", "4", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "3"


def test_the_project_snippet_catches_up_and_prints_the_events_of_the_topics(
    tmp_path: Path,
) -> None:
    # what ``project`` counts, run without valgrind: every projection caught up from zero on
    # a store of recorded rounds; the events printed are those of the projections' topics,
    # counted here from the events table, and the projections hold every round afterwards
    import os
    import sqlite3
    import subprocess
    import sys

    from benchmarks.__main__ import _app
    from cli.simulate import simulate
    from projections import make

    url = f"sqlite:///{tmp_path}/events.db"
    app = _app(url)
    try:
        simulate(app, variant="european", rounds=3, players=2, table="t-proj")
    finally:
        app.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", instructions.PROJECT, url],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    topics = sorted({t for p in make() for t in p.topics()})
    db = sqlite3.connect(tmp_path / "events.db")
    try:
        marks = ",".join("?" * len(topics))
        (expected,) = db.execute(
            f"SELECT count(*) FROM stored_events WHERE topic IN ({marks})", topics
        ).fetchone()
        (rounds,) = db.execute("SELECT count(*) FROM rounds_index").fetchone()
    finally:
        db.close()
    assert expected > 0
    assert done.stdout.strip().splitlines()[-1] == str(expected)
    assert rounds == 3

"""``roundaudit seal --follow SECONDS``: sealing as a worker, so that a round is sealed seconds
after it ends, while rounds keep being played by another process (here: another thread with
its own application on the same SQLite file)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import pytest

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.log import MerkleLog, seal_id

ROOT = Path(__file__).resolve().parents[2]


def sealed_rounds(url: str) -> set[UUID]:
    app = RoundAudit(env=environment_for(url))
    try:
        log = MerkleLog(app).refresh()
        return {leaf.round_id for leaf in log.leaves if leaf.round_id is not None}
    finally:
        app.close()


def test_a_following_sealer_seals_rounds_finished_while_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker runs in its own process; rounds are played meanwhile; every round is sealed
    within seconds of its end; SIGTERM stops the worker cleanly (exit 0)."""
    url = f"sqlite:///{tmp_path}/events.db"
    key = tmp_path / "key.pem"
    app = RoundAudit(env=environment_for(url))
    first = simulate(app, variant="european", rounds=2).round_ids
    worker = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--database-url", url, "seal", "--signing-key",
         str(key), "--follow", "0.05", "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        later = simulate(app, variant="boundless", rounds=2, players=3).round_ids
        app.close()
        wanted = {UUID(r) for r in (*first, *later)}
        deadline = time.monotonic() + 60
        while sealed_rounds(url) != wanted and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sealed_rounds(url) == wanted
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "checkpoint #1" in out
    assert "stopped after" in err
    # the log verifies, boundless rounds included
    assert main(["--database-url", url, "verify", "--all", "--no-progress", "--signing-key",
                 str(key)]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines()[-1] == "4 passed, 0 failed"
    app = RoundAudit(env=environment_for(url))
    try:
        rows = MerkleLog(app).recorder.select_events(seal_id(UUID(later[0])))
        assert b'"streams":[' in rows[0].state  # the boundless round's participations
    finally:
        app.close()


def test_max_runs_ends_a_following_sealer(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    made = simulate(app, variant="european", rounds=1).round_ids
    app.close()
    args = ["--database-url", url, "seal", "--signing-key", str(tmp_path / "k.pem")]
    assert main([*args, "--follow", "0.01", "--max-runs", "3", "--no-progress"]) == 0
    assert sealed_rounds(url) == {UUID(made[0])}
    out = capsys.readouterr().out
    assert out.count("sealed 1 round(s)") == 1  # the idle runs print nothing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--follow", "0"], "--follow takes a number of seconds greater than 0"),
        (["--follow", "-1"], "--follow takes a number of seconds greater than 0"),
        (["--max-runs", "2"], "--max-runs takes 1 or more, with --follow"),
        (["--follow", "1", "--max-runs", "0"], "--max-runs takes 1 or more, with --follow"),
    ],
)
def test_bad_follow_options_are_refused_with_their_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    code = main(["--database-url", url, "seal", "--signing-key", str(tmp_path / "k.pem"), *args])
    assert code == 2
    assert message in capsys.readouterr().err

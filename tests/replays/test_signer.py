"""``roundaudit seal``: the checkpoint signer, once and as a worker (``--follow``, every second
by default), sending every checkpoint to a witness running as its own process; it signs only
while the log grows, and refuses to sign a log that no longer extends its last checkpoint."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from storekit import ORIGIN, ROOT, Store, WitnessProcess, operator

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID
from domain.persistence import environment_for
from replays.log import MerkleLog


def latest(url: str) -> tuple[int, int, list[str]]:
    """(log size, size of the latest checkpoint, cosigners of the latest checkpoint)."""
    app = RoundAudit(env=environment_for(url))
    try:
        log = MerkleLog(app).refresh()
        cp = log.latest_checkpoint()
        names = [s.name for s in cp.note.signatures[1:]] if cp and cp.note else []
        return log.size, (cp.size if cp else 0), names
    finally:
        app.close()


def test_a_following_signer_checkpoints_the_growing_log_and_has_it_witnessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker and the witness run in their own processes; rounds are played meanwhile; the
    log is checkpointed and cosigned within seconds; an idle log gets no new checkpoint;
    SIGTERM stops the worker cleanly (exit 0)."""
    url = f"sqlite:///{tmp_path}/events.db"
    key = tmp_path / "key.pem"
    app = RoundAudit(env=environment_for(url))
    simulate(app, variant="european", rounds=1)
    with WitnessProcess(tmp_path / "witness", "witness.example/w1", [operator(key)]) as w:
        worker = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--database-url", url, "seal", "--signing-key",
             str(key), "--origin", ORIGIN, "--witness", w.option, "--follow", "0.2"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            simulate(app, variant="boundless", rounds=2, players=3)
            simulate(app, variant="european", rounds=1)
            app.close()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                size, covered, names = latest(url)
                if covered == size and names:
                    break
                time.sleep(0.1)
            assert covered == size
            assert names == ["witness.example/w1"]
            app2 = RoundAudit(env=environment_for(url))
            count = len(MerkleLog(app2).checkpoints())
            time.sleep(1.0)  # idle: the log does not grow, no checkpoint is signed
            assert len(MerkleLog(app2).checkpoints()) == count
            app2.close()
        finally:
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        assert "cosigned by witness.example/w1" in out
        assert "stopped after" in err
        capsys.readouterr()
        assert main(["--database-url", url, "verify", "--all", "--no-progress", "--public-key",
                     operator(key).vkey(), "--witness", w.option]) == 0  # fmt: skip
        assert capsys.readouterr().out.splitlines()[-1] == "4 passed, 0 failed"


def test_max_runs_ends_a_following_signer_and_idle_runs_print_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    simulate(app, variant="european", rounds=1)
    app.close()
    args = ["--database-url", url, "seal", "--signing-key", str(tmp_path / "k.pem")]
    assert main([*args, "--follow", "0.01", "--max-runs", "3", "--origin", ORIGIN]) == 0
    out = capsys.readouterr().out
    assert out.count("checkpoint #") == 1  # the idle runs sign nothing
    assert main([*args, "--origin", ORIGIN]) == 0  # once: nothing new to sign
    assert "its last checkpoint covers them" in capsys.readouterr().out


def test_without_an_origin_the_signer_says_it_uses_the_development_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    RoundAudit(env=environment_for(url)).open_wallet("p1")
    assert main(["--database-url", url, "seal", "--signing-key", str(tmp_path / "k.pem")]) == 0
    captured = capsys.readouterr()
    assert "no ROUNDAUDIT_LOG_ORIGIN" in captured.err
    assert "roundaudit.invalid/development size 1" in captured.out


def test_the_signer_refuses_a_log_cut_back_below_its_last_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    key = tmp_path / "k.pem"
    app = RoundAudit(env=environment_for(url))
    simulate(app, variant="european", rounds=1)
    app.close()
    args = ["--database-url", url, "seal", "--signing-key", str(key), "--origin", ORIGIN]
    assert main(args) == 0
    store = Store(url, key, capsys)
    store.execute(
        "DELETE FROM stored_merkle_log WHERE originator_id = ? AND originator_version > 3",
        (LEAVES_ID.hex,),
    )
    capsys.readouterr()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "the log was rolled back; nothing is signed" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--follow", "0"], "--follow takes a number of seconds greater than 0"),
        (["--follow", "-1"], "--follow takes a number of seconds greater than 0"),
        (["--max-runs", "2"], "--max-runs takes 1 or more, with --follow"),
        (["--follow", "1", "--max-runs", "0"], "--max-runs takes 1 or more, with --follow"),
        (["--witness", "not-a-vkey"], "--witness"),
    ],
)
def test_bad_signer_options_are_refused_with_their_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    code = main(["--database-url", url, "seal", "--signing-key", str(tmp_path / "k.pem"), *args])
    assert code == 2
    assert message in capsys.readouterr().err

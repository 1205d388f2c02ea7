"""Checkpoint signers of one store take turns (``replays.coordination.signer_lock``), whichever
process or host they run in: while one holds the store's signer lock, ``roundaudit seal`` in
another process waits, and signs once the lock is released; on SQLite and PostgreSQL.

(Interleaved signers could store a checkpoint smaller than the one before it, or two of the
same tree; ``tests/api/test_two_processes.py`` runs two signer processes at once beside two
service processes and checks the checkpoints.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from storekit import ORIGIN

from cli.main import main
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.coordination import signer_lock
from replays.log import MerkleLog

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_signer_waits_for_the_lock(store_url: str, tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    common = ["--database-url", store_url, "seal", "--signing-key", str(key), "--origin", ORIGIN]
    play = ["--database-url", store_url, "simulate", "--variant", "european", "--rounds", "1"]
    assert main([*play, "--no-progress"]) == 0
    assert main(common) == 0  # the key, and a first checkpoint
    assert main([*play, "--no-progress"]) == 0  # the log grows: a second checkpoint is due
    holder = RoundAudit(env=environment_for(store_url, create_table=False))
    try:
        with signer_lock(holder):
            proc = subprocess.Popen(
                [sys.executable, "-m", "cli.main", *common],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            time.sleep(3)
            assert proc.poll() is None, proc.communicate()  # it waits for the lock
            assert len(MerkleLog(holder).refresh().checkpoints()) == 1
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert b"checkpoint #2" in out
        assert len(MerkleLog(holder).refresh().checkpoints()) == 2
    finally:
        holder.close()

"""``python -m benchmarks.project_cpu`` runs a catch-up and the raw read in a process of the
tree it is given and reports both (its shape, not its timings: speed belongs in the
benchmarks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.project_cpu import FIGURES, report, run
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for

ROOT = Path(__file__).resolve().parents[2]


def test_a_run_reports_each_catch_up_and_raw_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=2, players=2, table="cpu")
    finally:
        app.close()
    result = run(ROOT, url, catch_ups=2)
    assert result["events"] > 0
    for figure in FIGURES:
        assert len(result[figure]) == 2
        if figure in ("server", "raw_server"):  # PostgreSQL's backends: none on SQLite
            assert all(value == 0 for value in result[figure])
        else:
            assert all(value > 0 for value in result[figure])
    report("sqlite", {"this": [result]})
    assert "cpu ratio" in capsys.readouterr().out

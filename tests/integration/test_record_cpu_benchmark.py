"""``python -m benchmarks.record_cpu`` runs and reports both variants, and
``python -m benchmarks.concurrent --pair`` its CPU a round in two trees (their shape, not their
timings: speed belongs in the benchmarks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks import concurrent
from benchmarks.record_cpu import VARIANTS, measure


def test_measure_reports_cpu_and_wall_for_each_variant(tmp_path: Path) -> None:
    result = measure(f"sqlite:///{tmp_path}/events.db", {"european": 2, "deluxe": 1})
    assert set(result) == set(VARIANTS)
    for figures in result.values():
        assert set(figures) == {"cpu_ms", "wall_ms"}
        assert all(value > 0 for value in figures.values())


def test_concurrent_pair_runs_its_measure_in_each_tree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m benchmarks.concurrent --pair DIR``: the same measuring code run in this tree
    and in ``DIR`` (here this tree again), alternated, both figures printed."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    argv = ["concurrent", "--pair", str(root), "--runs", "1", "--threads", "2", "--rounds", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    concurrent.main()
    out = capsys.readouterr().out
    assert "sqlite: concurrent record, 2 tables x 1 rounds" in out
    assert "cpu_ms" in out
    assert "wall_ms" in out
    report = concurrent.Report(2, 2, 10, 1.0, 1.0, 1, 2, cpu_seconds=0.01)
    assert "(5.00 ms of CPU a round)" in report.detail()

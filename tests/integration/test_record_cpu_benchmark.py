"""``python -m benchmarks.record_cpu`` runs and reports both variants (its shape, not its
timings: speed belongs in the benchmarks)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.record_cpu import VARIANTS, measure


def test_measure_reports_cpu_and_wall_for_each_variant(tmp_path: Path) -> None:
    result = measure(f"sqlite:///{tmp_path}/events.db", {"european": 2, "deluxe": 1})
    assert set(result) == set(VARIANTS)
    for figures in result.values():
        assert set(figures) == {"cpu_ms", "wall_ms"}
        assert all(value > 0 for value in figures.values())

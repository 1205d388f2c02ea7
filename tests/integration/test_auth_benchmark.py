"""The authentication benchmark (``python -m benchmarks.auth``) runs and times what it says:
each request once with its key and once on the same service with the key check bypassed.
Timings are not asserted here (see the benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.auth import run


def test_the_auth_benchmark_runs_on_sqlite(tmp_path: Path) -> None:
    lines: list[str] = []
    results = run(20, f"sqlite:///{tmp_path}/bench.db", say=lines.append)
    assert set(results) == {
        "GET /rules/deluxe",
        "GET /rounds/{id}",
        "POST /rounds/{id}/bets (refused)",
        "authenticate",
    }
    assert results["authenticate"] > 0
    assert any("baseline" in line and "with key" in line for line in lines)

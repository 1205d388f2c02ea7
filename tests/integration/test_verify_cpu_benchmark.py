"""``python -m benchmarks.verify_cpu`` verifies every round and reads the raw log in a process
of the tree it is given, alternating trees with ``--pair``, and reports both (its shape and that
every round passed, not its timings: speed belongs in the benchmarks), on SQLite and
PostgreSQL."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from benchmarks.project_cpu import FIGURES, alternate, report
from benchmarks.verify_cpu import RUN
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for

TREE = Path(__file__).resolve().parents[2]


def test_runs_of_two_trees_report_each_verification_and_raw_read(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = RoundAudit(env=environment_for(store_url))
    with contextlib.closing(recorder):
        for variant in ("european", "deluxe"):
            simulate(recorder, variant=variant, rounds=2 if variant == "european" else 1)
    runs = alternate({"other": TREE, "this": TREE}, store_url, 2, 2, RUN)
    assert list(runs) == ["other", "this"]
    for results in runs.values():
        assert len(results) == 2
        for result in results:
            assert (result["rounds"], result["failed"]) == (3, 0)
            assert result["events"] > 0
            for figure in FIGURES:
                assert len(result[figure]) == 2
                if figure in ("server", "raw_server") and "postgres" not in store_url:
                    assert all(value == 0 for value in result[figure])  # no backends to read
                else:
                    assert all(value > 0 for value in result[figure])
    report("sqlite", runs, "verification", "the store")
    assert "cpu ratio (raw / verification)" in capsys.readouterr().out

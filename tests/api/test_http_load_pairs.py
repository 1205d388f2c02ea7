"""The HTTP benchmark's paired mode (``benchmarks.http_load``) measures both trees with the same
number of service processes unless told otherwise (a baseline of one process against a branch
of two compared the process counts, not the trees)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.http_load import ROOT, paired_trees


def test_the_baseline_runs_as_many_processes_as_this_tree(tmp_path: Path) -> None:
    assert paired_trees(tmp_path, 2) == [("baseline", tmp_path.resolve(), 2), ("this", ROOT, 2)]
    assert paired_trees(tmp_path, 2, 1) == [("baseline", tmp_path.resolve(), 1), ("this", ROOT, 2)]
    assert paired_trees(None, 3) == [("this", ROOT, 3)]

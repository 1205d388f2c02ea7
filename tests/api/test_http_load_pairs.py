"""The HTTP benchmark's paired mode (``benchmarks.http_load``) measures both trees with the same
number of service processes unless told otherwise (a baseline of one process against a branch
of two compared the process counts, not the trees)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.http_load import ROOT, delay_query, paired_trees, with_delays


def test_the_baseline_runs_as_many_processes_as_this_tree(tmp_path: Path) -> None:
    assert paired_trees(tmp_path, 2) == [("baseline", tmp_path.resolve(), 2), ("this", ROOT, 2)]
    assert paired_trees(tmp_path, 2, 1) == [("baseline", tmp_path.resolve(), 1), ("this", ROOT, 2)]
    assert paired_trees(None, 3) == [("this", ROOT, 3)]


def test_each_commit_delay_is_a_configuration_of_its_own(tmp_path: Path) -> None:
    trees = paired_trees(tmp_path, 2)
    assert with_delays(trees, None) == trees
    swept = with_delays(trees, "0,500")
    assert [(root, n) for _, root, n in swept] == [(tmp_path.resolve(), 2)] * 2 + [(ROOT, 2)] * 2
    assert [delay_query(name) for name, _, _ in swept] == [
        "?commit_delay=0", "?commit_delay=500", "?commit_delay=0", "?commit_delay=500"
    ]  # fmt: skip
    assert delay_query("this") == ""

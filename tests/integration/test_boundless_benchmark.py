"""The boundless benchmark (``python -m benchmarks.boundless``) still runs: ~200 players on
SQLite, recorded, settled, re-executed. Timings are not asserted here (see the benchmark)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.boundless import main, run


def test_benchmark_smoke_200_players_sqlite():
    lines: list[str] = []
    report = run(200, "sqlite", batch=64, verify=True, say=lines.append)
    assert report.phase == "settled"
    assert report.verified is True
    assert report.decisions >= 200
    assert {"split", "double", "hit", "stand"} <= set(report.actions)
    assert report.revealed >= 1
    assert report.decision_events > 0
    assert report.settlement_events >= report.wagers  # every wager settled, payouts credited
    assert report.raw_events >= report.decision_events + report.settlement_events
    assert len(report.lines()) == 13  # with the seal and verify line, the recording's peak
    # the collector's CPU and full collections in each timed phase (gc.callbacks)
    assert list(report.collector) == ["decisions", "settlement", "verify"]
    assert all(s >= 0 for s in report.collector.values())
    assert list(report.full_collections) == ["decisions", "settlement", "verify"]
    assert any(line.startswith("garbage collector (CPU s") for line in report.lines())
    # the recording's own peak: after the settlement, at most the whole run's, at least the start
    assert 0 < report.start_mib <= report.recording_mib <= report.recorded_mib <= report.peak_mib
    assert any(line.startswith("  of which the recording (") for line in report.lines())
    phases = ["start", "wallets", "bets", "decisions", "settlement", "raw append"]
    assert list(report.phases_mib) == phases
    assert report.phases_mib["settlement"] == report.recording_mib
    assert sorted(report.phases_mib.values()) == list(report.phases_mib.values())  # a max
    assert any("of which before the verification" in line for line in report.lines())
    assert report.verify_checks == [
        "storage", "reexecution", "shoe", "money", "commit", "checkpoint"
    ]  # fmt: skip


def test_benchmark_command_line(capsys):
    assert main(["--players", "20", "--store", "sqlite", "--batch", "8"]) in (0, 1)
    out = capsys.readouterr().out
    assert "decision phase" in out
    assert "settlement" in out
    assert "raw library append" in out


def test_benchmark_growth_between_two_sizes(capsys):
    """``--players 20,40``: each size played in a process of its own, then the per-player
    growth of each phase printed from the first size to the second."""
    argv = ["--players", "20,40", "--store", "sqlite", "--batch", "8", "--verify"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "run 1, 20 players: decisions " in out
    assert "run 1, 40 players: decisions " in out
    assert "per-player growth, sqlite, 20 -> 40 players (CPU, median of 1 run(s) each" in out
    for phase in ("decisions", "settlement", "verify"):
        line = rf"  {phase}: [\d.]+ -> [\d.]+ ms a player \(x[\d.]+\); [\d.]+ -> [\d.]+ events"
        assert re.search(line, out), out


def test_report_json_round_trip(tmp_path):
    from benchmarks.boundless import load_report, save_report

    report = run(20, "sqlite", batch=8, say=lambda _s: None)
    save_report(report, tmp_path / "r.json")
    back = load_report(tmp_path / "r.json")
    assert back == report
    assert back.actions == report.actions
    assert sum(back.actions.values()) == report.decisions


def test_benchmark_profiles_each_phase(tmp_path, capsys):
    import pstats

    out = tmp_path / "prof"
    argv = ["--players", "20", "--store", "sqlite", "--batch", "8", "--profile", str(out)]
    assert main(argv) in (0, 1)
    capsys.readouterr()
    functions = {
        phase: {f[2] for f in pstats.Stats(str(out / f"{phase}.prof")).stats}  # type: ignore[attr-defined]
        for phase in ("decisions", "settlement")
    }
    assert "decide_many" in functions["decisions"]
    assert "settle" in functions["settlement"]
    assert "decide_many" not in functions["settlement"]


def test_benchmark_profiles_and_times_the_verification(tmp_path, capsys):
    import pstats

    out = tmp_path / "prof"
    argv = ["--players", "20", "--store", "sqlite", "--batch", "8", "--verify"]
    assert main([*argv, "--profile", str(out)]) in (0, 1)
    printed = capsys.readouterr().out
    assert "round phase: settled; verified" in printed
    timed = r"verify \(every check: [^)]*\): [\d.]+ s \(CPU [\d.]+ s, [\d.]+ ms a player\)"
    assert re.search(timed, printed), printed
    functions = {f[2] for f in pstats.Stats(str(out / "verify.prof")).stats}  # type: ignore[attr-defined]
    assert {"verify_log", "_check_commit"} <= functions
    assert "decide_many" not in functions


def test_single_command_benchmark_runs_and_answers_one_players_hands(tmp_path, capsys):
    """``python -m benchmarks.boundless_single``: each single decision answers its player's
    hands only, and the command line prints both sizes and both ratios (timings not asserted)."""
    from benchmarks.boundless_single import main as single_main
    from benchmarks.boundless_single import measure

    figure = measure(40, f"sqlite:///{tmp_path}/single.db", commands=5)
    assert figure.answered_hands == 1
    assert figure.bet_ms > 0
    assert figure.decision_ms > 0
    assert single_main(["--players", "20,30", "--commands", "4"]) in (0, 1)
    out = capsys.readouterr().out
    assert "20 players" in out
    assert "30 players" in out
    assert "single bet: 30 / 20 players" in out
    assert "single decision: 30 / 20 players" in out


def test_a_round_in_a_process_of_its_own_reports_its_own_peak_not_its_parents():
    """``run_in_process`` (the harness's boundless lines): the child's max RSS figures are
    its own. ``ru_maxrss`` is inherited across fork and exec, so a round started by a harness
    holding 300 MiB said 300 MiB from its start; ``VmHWM`` is the process's own."""
    from benchmarks.boundless import _max_rss_mib, run_in_process

    held = bytearray(300 * 2**20)
    held[::4096] = b"\1" * len(range(0, len(held), 4096))  # every page resident
    parent = _max_rss_mib()
    assert parent >= 300
    report = run_in_process(20, "sqlite", batch=8, verify=True)
    del held
    assert report.verified is True
    assert 0 < report.start_mib <= report.peak_mib < parent - 150

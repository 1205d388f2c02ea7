"""The throughput harness (``python -m benchmarks``, issue 15) still runs: ``--quick`` on SQLite
(and on PostgreSQL against the test session's server), every figure of the issue printed in one
table and written as JSON. Its timings are not asserted here (see docs/performance.md): only the
shape of what it reports, and that what it measured really happened (every round verified, the
service answered every request)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.__main__ import HEAD, main

FIGURES = {
    "record",
    "flat record",
    "concurrent record",
    "verify",
    "verify (2 workers)",
    "flat verify",
    "flat verify (fresh)",
    "project",
    "flat wallet",
    "flat balance",
    "boundless decisions",
    "boundless settlement",
    "boundless verify",
    "boundless memory",
    "flat boundless memory",
    "flat boundless cost",
    "http commands",
    "http reads",
    "http commands at 1,000/s",
    "http reads at 3,000/s",
}
HTTP = ("commands", "reads", "commands at 1,000/s", "reads at 3,000/s")


def _check(data: dict[str, Any], stores: set[str]) -> None:
    assert data["quick"] is True
    assert data["machine"]["cores"] >= 1
    figures = data["figures"]
    expected = {(s, n) for s in stores for n in FIGURES}
    if "postgres" in stores:  # and with several service processes (serve --workers 2)
        expected |= {("postgres", f"http {n} (2 processes)") for n in HTTP}
        expected.add(("postgres", "concurrent record (2 processes)"))  # recording processes
    assert {(f["store"], f["name"]) for f in figures} == expected
    for f in figures:
        assert f["value"] > 0, f
        assert f["met"] in (True, False), f
        assert f["target"], f
        if f["baseline"] is not None:
            assert f["baseline"] > 0, f
            assert f["ratio"] == pytest.approx(f["value"] / f["baseline"]), f
    by_name = {(f["store"], f["name"]): f for f in figures}
    for store in stores:
        assert "(0 failed)" in by_name[(store, "verify")]["detail"]
        workers = by_name[(store, "verify (2 workers)")]
        assert workers["baseline"] == by_name[(store, "verify")]["baseline"]  # the same raw
        assert "(0 failed), verdicts equal to one process's" in workers["detail"]
        assert "CPU efficiency" in workers["detail"]
        memory = by_name[(store, "flat boundless memory")]
        assert memory["value"] == by_name[(store, "boundless memory")]["value"]  # the larger
        assert "20 players against 10, each round in a process of its own" in memory["detail"]
        cost = by_name[(store, "flat boundless cost")]["detail"]
        assert cost.count("verify") == 2, cost  # both rounds verified, each timed
        assert (
            "2 threads (tables), 2 european rounds"
            in by_name[(store, "concurrent record")]["detail"]
        )
        assert (
            "checked: 2 rounds started and verified"
            in (by_name[(store, "concurrent record")]["detail"])
        )
    if "postgres" in stores:  # each of the two processes played one of the two tables
        detail = by_name[("postgres", "concurrent record (2 processes)")]["detail"]
        assert "2 processes, 2 threads (tables), 2 european rounds" in detail
        assert "checked: 2 rounds started and verified" in detail
        # how the two service processes shared the 5 clients' connections, every line
        for n in HTTP:
            shared = by_name[("postgres", f"http {n} (2 processes)")]["detail"]
            split = re.search(r"\(connections (\d+)/(\d+)\)", shared)  # two, not the parent
            assert split is not None, shared
            assert int(split[1]) + int(split[2]) == 5, shared
        assert "verified" in by_name[(store, "boundless verify")]["detail"]
        for n in HTTP:
            assert " 0 errors" in by_name[(store, f"http {n}")]["detail"]
        assert "/s offered" in by_name[(store, "http reads at 3,000/s")]["detail"]


def test_quick_run_prints_one_table_and_writes_json_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert main(["--quick", "--stores", "sqlite", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("store "))
    assert header.split() == HEAD
    assert "targets met" in printed
    _check(orjson.loads(out.read_bytes()), {"sqlite"})


@pytest.mark.postgres
def test_quick_run_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    out = tmp_path / "bench.json"
    args = ["--quick", "--stores", "postgres", "--postgres-url", postgres_url, "--json", str(out)]
    assert main(args) == 0
    _check(orjson.loads(out.read_bytes()), {"postgres"})

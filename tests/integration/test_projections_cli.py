"""``roundaudit projections``, ``report`` and ``dispute`` on a SQLite store."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from roundkit import Kit, stack

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A store with 4 simulated european rounds and one test-shoe multihand round."""
    database = f"sqlite:///{tmp_path}/cli/events.db"
    (tmp_path / "cli").mkdir()
    app = RoundAudit(env=environment_for(database))
    simulate(app, variant="european", rounds=4, table="eu")
    cards = stack("multihand", [["10H", "6C"]], up="9D", hole="8S")
    kit = Kit("multihand", cards, players={"dora": "100"}, app=app, table="kt")
    kit.bet("dora", 10, spot=1)
    kit.close()
    kit.decide("dora", "stand")
    app.close()
    return database


def roundaudit(url: str, *args: str) -> int:
    return main(["--database-url", url, *args])


def days() -> tuple[str, str]:
    today = dt.datetime.now(dt.UTC).date()
    return (today - dt.timedelta(days=1)).isoformat(), (today + dt.timedelta(days=1)).isoformat()


def test_status_rebuild_run_and_reconcile(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert roundaudit(url, "projections", "status") == 0
    out = capsys.readouterr().out
    assert out.count("never run") == 5
    assert roundaudit(url, "projections", "rebuild", "ledger", "--no-progress") == 0
    assert "rebuilt ledger:" in capsys.readouterr().out
    assert roundaudit(url, "projections", "status") == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["ledger"].endswith("up to date")
    assert lines["feed"].endswith("never run")
    assert roundaudit(url, "projections", "run") == 0
    assert "caught up" in capsys.readouterr().out
    assert roundaudit(url, "projections", "status") == 0
    assert capsys.readouterr().out.count("up to date") == 5
    assert roundaudit(url, "projections", "rebuild", "--no-progress") == 0
    assert "rebuilt hand_scores, ledger, feed, observed_rtp, rounds" in capsys.readouterr().out
    assert roundaudit(url, "projections", "reconcile") == 0
    assert capsys.readouterr().out.strip().endswith("players reconciled: ok")
    assert roundaudit(url, "projections", "rebuild", "nope") == 2


def test_report_as_table_csv_and_parquet(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, last = days()
    assert roundaudit(url, "report", "--from", first, "--to", last) == 0
    table = capsys.readouterr().out
    assert "european" in table
    assert "kt" not in table  # a test table is not in the production report
    assert table.splitlines()[-1].startswith("total")

    assert roundaudit(url, "report", "--from", first, "--to", last, "--format", "csv") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows
    assert {r["variant"] for r in rows} == {"european"}
    for r in rows:
        assert Decimal(r["ggr"]) == Decimal(r["handle"]) - Decimal(r["payouts"])

    assert (
        roundaudit(
            url, "report", "--from", first, "--to", last, "--format", "csv", "--include-test"
        )
        == 0
    )
    with_test = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    test_rows = [r for r in with_test if r["table_id"] == "kt"]
    assert [
        (r["kind"], r["wagers"], r["handle"], r["payouts"], r["production"]) for r in test_rows
    ] == [("main", "1", "10.00", "0.00", "false")]

    parquet = tmp_path / "out" / "report.parquet"
    parquet.parent.mkdir()
    args = ("report", "--from", first, "--to", last, "--format", "parquet")
    assert roundaudit(url, *args, "--output", str(parquet)) == 0
    capsys.readouterr()
    import pyarrow.parquet as pq

    records = pq.read_table(parquet).to_pylist()
    assert [
        (str(r["day"]), r["kind"], str(r["wagers"]), str(r["handle"]), str(r["ggr"]))
        for r in records
    ] == [(r["day"], r["kind"], r["wagers"], r["handle"], r["ggr"]) for r in rows]

    assert roundaudit(url, *args) == 2  # parquet needs --output
    assert roundaudit(url, "report", "--from", last, "--to", first) == 2
    assert roundaudit(url, "report", "--from", "yesterday", "--to", last) == 2
    assert roundaudit(url, "report", "--from", "2000-01-01", "--to", "2000-01-02") == 0
    assert "total" in capsys.readouterr().out


def test_dispute_prints_the_timeline(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert roundaudit(url, "dispute", "kt#1", "--player", "dora") == 0
    out = capsys.readouterr().out
    assert "Timeline of player dora" in out
    assert "dora chose stand on hand 1; open: hit, stand, double" in out
    assert roundaudit(url, "dispute", "kt#1", "--player", "dora", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    decision = [e for e in data["entries"] if e["event"] == "DecisionMade"]
    assert [(d["action"], d["actor"], d["balance_seen"]) for d in decision] == [
        ("stand", {"kind": "player", "id": "dora"}, "90.00")
    ]
    assert roundaudit(url, "dispute", "kt#1", "--player", "nobody") == 2
    assert "error: player 'nobody' has no bet" in capsys.readouterr().err
    assert roundaudit(url, "dispute", "kt#9", "--player", "dora") == 2
    assert roundaudit(url, "dispute", "garbage", "--player", "dora") == 2

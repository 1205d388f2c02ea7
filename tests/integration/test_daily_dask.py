"""Daily reports over Parquet exports on Dask equal the single-process ones.

Two shards (two SQLite stores, as two studios would have: their own tables, log and feed),
each with simulated rounds at two tables of different variants plus a test-shoe table. The
single-process report is :func:`projections.feed.daily` on each store; each store is exported
with ``roundaudit report --format parquet --include-test``; the Dask report
(:func:`projections.daily_dask.daily_from_parquet`) over both exports must give the rows of
both single-process reports, row for row and cent for cent, for every filter (production only,
test tables included, one variant, a period outside the data), on Dask's local threads and on
a LocalCluster of two worker processes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from daskkit import closes_not_finishing
from roundkit import Kit, stack

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from projections.daily_dask import daily_from_parquet
from projections.feed import DailyAggregate, Feed, daily
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

TODAY = dt.datetime.now(dt.UTC).date()
FIRST, LAST = TODAY - dt.timedelta(days=1), TODAY + dt.timedelta(days=1)


def _shard(folder: Path, name: str) -> str:
    folder.mkdir()
    url = f"sqlite:///{folder}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=4, table=f"{name}-eu")
        simulate(app, variant="deluxe", rounds=3, table=f"{name}-dlx")
        cards = stack("multihand", [["10H", "6C"]], up="9D", hole="8S")
        kit = Kit("multihand", cards, players={f"{name}dora": "100"}, app=app, table=f"{name}kt")
        kit.bet(f"{name}dora", 10, spot=1)
        kit.close()
        kit.decide(f"{name}dora", "stand")
    finally:
        app.close()
    return url


def _single(url: str, **filters: object) -> list[DailyAggregate]:
    app = RoundAudit(env=environment_for(url))
    try:
        with ProjectionStore.from_env(environment_for(url)) as store:
            ProjectionRunner(app, store, [Feed()]).catch_up()
            with store.read() as tx:
                return daily(tx, FIRST, LAST, **filters)  # type: ignore[arg-type]
    finally:
        app.close()


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[Path]]:
    root = tmp_path_factory.mktemp("shards")
    urls = [_shard(root / "a", "a"), _shard(root / "b", "b")]
    exports = []
    for i, url in enumerate(urls):
        out = root / f"shard-{i}.parquet"
        period = ["--from", FIRST.isoformat(), "--to", LAST.isoformat()]
        options = ["--format", "parquet", "--include-test", "--output", str(out)]
        code = main(["--database-url", url, "report", *period, *options])
        assert code == 0
        exports.append(out)
    return urls, exports


def _key(r: DailyAggregate) -> tuple[object, ...]:
    return (r.day, r.variant, r.table_id, r.kind, r.production, r.account_type)


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"include_test": True},
        {"variant": "deluxe"},
        {"include_test": True, "variant": "multihand"},
    ],
    ids=["production", "with-test", "deluxe", "test-multihand"],
)
def test_dask_report_over_the_exports_equals_the_single_process_reports(
    shards: tuple[list[str], list[Path]], filters: dict[str, object]
) -> None:
    urls, exports = shards
    single = sorted((r for url in urls for r in _single(url, **filters)), key=_key)
    if filters.get("variant") != "multihand" or filters.get("include_test"):
        assert single, "the shards must have rows for this filter"
    got = daily_from_parquet(exports, FIRST, LAST, **filters)  # type: ignore[arg-type]
    assert got == single
    assert {r.table_id[0] for r in got} <= {"a", "b"}


def test_a_period_without_data_is_empty(shards: tuple[list[str], list[Path]]) -> None:
    _urls, exports = shards
    old = dt.date(2000, 1, 1)
    assert daily_from_parquet(exports, old, old, include_test=True) == []
    assert daily_from_parquet([], FIRST, LAST) == []


def test_on_a_local_cluster_of_two_workers(shards: tuple[list[str], list[Path]]) -> None:
    from distributed import LocalCluster

    urls, exports = shards
    single = sorted((r for url in urls for r in _single(url, include_test=True)), key=_key)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        got = daily_from_parquet(
            exports, FIRST, LAST, include_test=True, scheduler=cluster.scheduler_address
        )
    assert got == single
    assert len({r.table_id for r in got}) == 6


def test_report_over_the_exports_on_the_command_line(
    shards: tuple[list[str], list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``roundaudit report --parquet A B --format csv``: the CSV of the two stores' reports."""
    import csv
    import io

    urls, exports = shards
    period = ["--from", FIRST.isoformat(), "--to", LAST.isoformat(), "--include-test"]
    expected = sorted((r for url in urls for r in _single(url, include_test=True)), key=_key)
    capsys.readouterr()
    names = [str(e) for e in exports]
    assert main(["report", *period, "--format", "csv", "--parquet", *names]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["table_id"], r["kind"], r["wagers"], r["handle"], r["payouts"]) for r in rows] == [
        (r.table_id, r.kind, str(r.wagers), str(r.handle), str(r.payouts)) for r in expected
    ]
    assert main(["report", *period, "--parquet", str(tmp_path / "nope.parquet")]) == 2
    assert "no such export" in capsys.readouterr().err
    assert main(["report", *period, "--scheduler", "tcp://127.0.0.1:1"]) == 2


def test_without_a_scheduler_it_runs_on_local_threads_even_beside_a_client(
    shards: tuple[list[str], list[Path]],
) -> None:
    """Without ``scheduler`` the report runs on Dask's local threads, never on a Dask client
    that happens to be the process's default (one another piece of code made, or one left
    half-closed whose cluster is gone: computing on it would wait for that cluster for ever)."""
    from distributed import Client, LocalCluster

    urls, exports = shards
    single = sorted((r for url in urls for r in _single(url, include_test=True)), key=_key)
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,  # the process's default client while it is open
    ):
        from distributed import default_client

        assert default_client() is client
        before = cluster.scheduler.transition_counter
        got = daily_from_parquet(exports, FIRST, LAST, include_test=True)
        assert cluster.scheduler.transition_counter == before, "the report ran on the client"
    assert got == single


def test_a_report_on_a_cluster_leaves_no_default_client_behind(
    shards: tuple[list[str], list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report given a scheduler's address connects a client of its own, used for its
    computation only and never the process's default: even when its close does not finish
    (a close that timed out leaves a client ``closing``, which Dask would still pick as the
    default for every later ``compute``), no later report runs on it."""
    from distributed import LocalCluster
    from distributed.client import _get_global_client

    _urls, exports = shards
    assert _get_global_client() is None
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        closes_not_finishing(monkeypatch) as half_closed,
    ):
        got = daily_from_parquet(
            exports, FIRST, LAST, include_test=True, scheduler=cluster.scheduler_address
        )
        assert half_closed, "the report's client was closed"
        assert _get_global_client() is None
    assert got

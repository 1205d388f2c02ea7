"""Reads from a real PostgreSQL streaming replica (``ROUNDAUDIT_READ_DATABASE_URL``), with
read-your-writes.

Two throwaway PostgreSQL clusters on loopback: a primary and a hot standby made with
``pg_basebackup -R`` (``tests/pgrepl.py``), asynchronous, so that the replica can lag. The
service writes to the primary and reads audits and projections from the replica:

* a round recorded on the primary is verified, replayed and proven through the service, read
  from the replica (the service's reader is on the standby's port);
* with the standby's replay paused (``pg_wal_replay_pause()``), a round recorded after it is
  not answered stale: the audit read waits ``ROUNDAUDIT_READ_WAIT`` and answers 503
  ``replica-behind``; once replay resumes, the same read answers the round;
* a projection read (the round search) waits for the replica's projection tables to hold the
  primary's head, so a round the projections worker applied on the primary is found;
* ``roundaudit verify --all`` against the replica URL passes, on a replica, with Dask workers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from apikit import Api, check_problem, service_settings
from fastapi.testclient import TestClient
from pgrepl import Standby, pause_replay, replicated_store, resume_replay, wait_replayed

from api.main import create_app
from api.settings import SettingsError, read_database_url
from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from projections import make
from projections.runner import ProjectionRunner
from projections.store import ProjectionStore

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[str, str, Standby]]:
    """(primary store URL, the same database on the standby, the standby)."""
    with replicated_store() as store:  # asynchronous: the replica may lag
        yield store.url, store.replica, store.standby


def test_audit_and_projection_reads_come_from_the_replica_and_see_every_write(
    pair: tuple[str, str, Standby], tmp_path: Path
) -> None:
    url, replica, _standby = pair
    settings = service_settings(url, read_database_url=replica, read_wait=1.0, read_drive=False)
    with TestClient(create_app(settings)) as client:
        api = Api(client)
        state: Any = client.app.state  # type: ignore[attr-defined]
        assert state.reader is not None
        assert (
            state.reader.factory.datastore.pool.kwargs["port"]
            == replica.rsplit(":", 1)[1].split("/")[0]
        )
        primary = state.audit
        first = simulate(primary, variant="european", rounds=2, table="rep").round_ids
        # audit reads: from the replica, after it replayed the primary's head
        for rid in first:
            verdict = api.ok("GET", f"/rounds/{rid}/verification")
            assert verdict["ok"] is True, verdict
            steps = api.ok("GET", f"/rounds/{rid}/replay")
            assert steps["round_id"] == rid
            assert steps["stopped"] is None

        # the replica stops replaying: a later write is not answered stale
        pause_replay(replica)
        try:
            late = simulate(primary, variant="european", rounds=1, table="rep").round_ids[0]
            r = api.client.get(f"/rounds/{late}/verification")
            check_problem(r, 503, "replica-behind", f"/rounds/{late}/verification")
            assert "try again" in r.json()["detail"]
        finally:
            resume_replay(replica)
        verdict = api.ok("GET", f"/rounds/{late}/verification")
        assert verdict["ok"] is True, verdict

        # projection reads: the worker applies the projections on the primary; the replica's
        # copy is read once it holds the primary's head
        with ProjectionStore.open(url) as store:
            ProjectionRunner(primary, store, make(None)).catch_up()
        page = api.ok("GET", "/rounds", params={"table": "rep"})
        found = {r["round_id"] for r in page["rounds"]}
        assert found == {*first, late}, page
        assert page["projection"]["lag"] == 0, page


def test_verify_on_the_replica_with_dask_workers(
    pair: tuple[str, str, Standby],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``verify`` reads the replica ``ROUNDAUDIT_READ_DATABASE_URL`` names (the store stays
    the primary), in one process and on two Dask workers."""
    url, replica, _standby = pair
    app = RoundAudit(env=environment_for(url, create_table=False))
    try:
        made = simulate(app, variant="deluxe", rounds=3, table="rep-dlx").round_ids
    finally:
        app.close()
    wait_replayed(url.split("/audit")[0] + "/postgres", replica.split("/audit")[0] + "/postgres")
    monkeypatch.setenv("ROUNDAUDIT_READ_DATABASE_URL", replica)
    capsys.readouterr()
    pause_replay(replica)  # the replica is what verify reads:
    try:
        late = RoundAudit(env=environment_for(url, create_table=False))
        try:  # a round the primary has and the paused replica not yet
            behind = simulate(late, variant="european", rounds=1, table="rep-late").round_ids
        finally:
            late.close()
        assert main(["--database-url", url, "verify", behind[0], "--no-progress"]) == 1
        capsys.readouterr()
    finally:
        resume_replay(replica)
    wait_replayed(url.split("/audit")[0] + "/postgres", replica.split("/audit")[0] + "/postgres")
    assert main(["--database-url", url, "verify", "--all", "--no-progress"]) == 0
    single = capsys.readouterr().out.strip().splitlines()[-1]
    dask = ["verify", "--all", "--no-progress", "--workers", "2"]
    assert main(["--database-url", url, *dask]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == single
    assert single.startswith(f"{int(single.split()[0])} passed, 0 failed")
    # this test's own rounds at least (the module's other tests may have added more)
    assert int(single.split()[0]) >= len(made) + len(behind)


def test_the_harness_waits_for_every_acknowledged_commit_and_pauses_for_real(
    pair: tuple[str, str, Standby],
) -> None:
    """The harness the tests above stand on (``tests/pgrepl.py``). The test clusters commit
    with ``synchronous_commit = off``: a commit acknowledged to the application may still be
    in the primary's WAL buffers. ``wait_replayed`` must wait for it anyway (waiting for the
    primary's WAL *write* position alone returned before the standby had the last commits: a
    replica read then missed them, and ``verify --workers 2`` above once read a log shorter
    than the rounds its workers read next). ``pause_replay`` must return only once replay has
    stopped: a commit after it is not on the standby until ``resume_replay``."""
    url, replica, _standby = pair
    primary, standby = (u.split("/audit")[0] + "/postgres" for u in (url, replica))
    with psycopg.connect(primary, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS harness_probe (n integer PRIMARY KEY)")
        conn.execute("TRUNCATE harness_probe")
        for n in range(1, 41):
            conn.execute("INSERT INTO harness_probe VALUES (%s)", (n,))
            wait_replayed(primary, standby)
            assert _scalar(standby, "SELECT max(n) FROM harness_probe") == n, n
        pause_replay(standby)
        try:
            conn.execute("INSERT INTO harness_probe VALUES (41)")
            time.sleep(0.5)  # several WAL writer rounds: sent to the standby, not replayed
            assert _scalar(standby, "SELECT max(n) FROM harness_probe") == 40
        finally:
            resume_replay(standby)
    wait_replayed(primary, standby)
    assert _scalar(standby, "SELECT max(n) FROM harness_probe") == 41


def _scalar(url: str, query: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_the_read_url_must_be_postgres() -> None:
    assert read_database_url("") is None
    with pytest.raises(SettingsError, match="SQLite file has no replicas"):
        read_database_url("sqlite:///x.db")
    with pytest.raises(SettingsError, match="ROUNDAUDIT_READ_DATABASE_URL"):
        read_database_url("postgresql://u@h1:5432,h2:x/db")

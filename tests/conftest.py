"""Shared fixtures: event stores on SQLite and PostgreSQL.

* ``postgres_url`` (session): URL of a database created for this test session. With
  ``ROUNDAUDIT_TEST_POSTGRES_URL`` set, on that server; otherwise in a throwaway cluster started
  from the local PostgreSQL binaries (see ``tests/pg.py``) and deleted at the end. Without
  binaries the PostgreSQL tests are skipped, or fail when ``ROUNDAUDIT_REQUIRE_POSTGRES=1``.
* ``store_url``: a fresh, empty store for each test, parametrized ``sqlite`` / ``postgres``
  (the latter marked ``postgres``): a file in ``tmp_path``, or a new database in the session
  server, dropped after the test.
* ``store_env``: ``domain.persistence.environment_for(store_url)``.
* ``app_on_every_store``: a ``RoundAudit`` on the in-memory store, SQLite and PostgreSQL
  (parametrized ``memory`` / ``sqlite`` / ``postgres``), closed after the test.
* Every test runs with ``ROUNDAUDIT_SEED_KEY`` naming a file in its own ``tmp_path``, so a
  command that creates the seed key file (``roundaudit simulate``, ``serve``) never writes one
  into the working tree.
* Every test leaves the process's garbage collector as it found it (on or off, the heap
  frozen or not, the thresholds): one that does not fails at its teardown, named, and the
  collector is put back, so no later test runs under its setting (the tests of
  ``domain.collector.paused`` and its callers assume a collector on and a heap not frozen).
  ``collector_restored``: for a test that tunes the collector on purpose (the service's
  factory ``api.main.get_app`` freezes the heap and raises a threshold), put back after it.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote
from uuid import uuid4

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import pg` under any import mode

from pg import (
    REQUIRE_ENV,
    URL_ENV,
    PostgresUnavailable,
    ThrowawayCluster,
    create_database,
    drop_database,
    find_bindir,
    fresh_database,
    searched_locations,
    url_with_database,
)

from domain.application import RoundAudit
from domain.persistence import environment_for


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but PostgreSQL is unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _seed_key_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUNDAUDIT_SEED_KEY", str(tmp_path / "keys" / "seed.key"))
    # `roundaudit verify` keeps no verifier state unless a test gives one (--state): its
    # default file, one per database URL in the user's state folder, would outlive the test
    # (tests/replays/test_verifier_state.py covers the state)
    monkeypatch.setenv("ROUNDAUDIT_VERIFIER_STATE", "none")


def _collector_state() -> tuple[bool, int, tuple[int, int, int]]:
    return gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()


def _put_collector_back(enabled: bool, frozen: int, thresholds: tuple[int, int, int]) -> None:
    if gc.get_freeze_count() and not frozen:
        gc.unfreeze()
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.fixture(autouse=True)
def _collector_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    found = _collector_state()
    yield
    left = _collector_state()
    if left != found:
        _put_collector_back(*found)
        pytest.fail(
            f"{request.node.nodeid} left the garbage collector (enabled, objects frozen, "
            f"thresholds) at {left}, found at {found}",
            pytrace=False,
        )


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """The garbage collector put back as it was after a test that tunes it on purpose."""
    found = _collector_state()
    try:
        yield
    finally:
        _put_collector_back(*found)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of its own for this session, on the configured or a throwaway server."""
    cluster: ThrowawayCluster | None = None
    admin_url = os.environ.get(URL_ENV)
    if not admin_url:
        bindir = find_bindir()
        if bindir is None:
            _unavailable(
                "PostgreSQL server binaries not installed (initdb/pg_ctl not found): searched "
                f"{searched_locations()}; install them or set {URL_ENV}"
            )
        cluster = ThrowawayCluster(bindir)
        try:
            admin_url = cluster.start()
        except PostgresUnavailable as e:
            cluster.stop()
            _unavailable(str(e))
        except BaseException:
            cluster.stop()
            raise
    dbname = f"roundaudit_session_{uuid4().hex[:16]}"
    try:
        create_database(admin_url, dbname)
        yield url_with_database(admin_url, dbname)
        drop_database(admin_url, dbname)
    finally:
        if cluster is not None:
            cluster.stop()


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty event store for this test."""
    if request.param == "sqlite":
        yield "sqlite:///" + quote(str(tmp_path / "events.db"))
        return
    session_url: str = request.getfixturevalue("postgres_url")
    with fresh_database(session_url) as url:
        yield url


@pytest.fixture
def store_env(store_url: str) -> dict[str, str]:
    """The eventsourcing environment of ``store_url``."""
    return environment_for(store_url)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def app_on_every_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RoundAudit]:
    """A ``RoundAudit`` on the in-memory store, SQLite and PostgreSQL."""
    if request.param == "memory":
        application = RoundAudit()
    elif request.param == "sqlite":
        application = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    else:
        with fresh_database(request.getfixturevalue("postgres_url")) as url:
            application = RoundAudit(env=environment_for(url))
            yield application
            application.close()
            return
    yield application
    application.close()

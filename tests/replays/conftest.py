"""Fixtures of the replay tests: ``app``, an application on each kind of store a round's
records are read from (the in-memory store, SQLite plain and compressed, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg import fresh_database

from domain.application import RoundAudit
from domain.persistence import environment_for

ZLIB = {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}


@pytest.fixture(
    params=["memory", "sqlite", "sqlite-zlib", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RoundAudit]:
    if request.param == "memory":
        application = RoundAudit()
    elif request.param.startswith("sqlite"):
        extra = ZLIB if request.param == "sqlite-zlib" else {}
        env = {**environment_for(f"sqlite:///{tmp_path}/events.db"), **extra}
        application = RoundAudit(env=env)
    else:
        with fresh_database(request.getfixturevalue("postgres_url")) as url:
            application = RoundAudit(env=environment_for(url))
            try:
                yield application
            finally:
                application.close()
        return
    try:
        yield application
    finally:
        application.close()

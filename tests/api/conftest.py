"""Fixtures of the HTTP tests: a service on a fresh SQLite file, and a small client helper.

Every test talks HTTP to ``api.main.create_app`` through ``TestClient`` (its lifespan opens
the ``RoundAudit`` on ``tmp_path`` and records the admin key ``apikit.ADMIN_TOKEN``), so keys,
routes, schemas, problem responses and the store are exercised together. Helpers live in
``apikit.py``; every request they send carries a key of a role allowed for its route.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import apikit` in any import mode

from apikit import Api, service_settings

from api.main import create_app
from api.settings import Settings
from domain.application import RoundAudit


#: TestClient sends ``Host: testserver``; the service answers only for the hosts it is told.
@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return service_settings(f"sqlite:///{tmp_path}/api.db")


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def api(client: TestClient) -> Api:
    return Api(client)


@pytest.fixture
def audit(client: TestClient) -> RoundAudit:
    """The service's own application (open while the client is)."""
    app: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
    return app

"""The service process tunes its garbage collector once started (``api.main.tune_collector``):
the start-up heap frozen, the youngest generation's threshold raised; applications built for
tests or embedded elsewhere leave the collector as they found it; in the tuned process
``domain.collector.paused`` still holds the collector off."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from apikit import service_settings
from fastapi.testclient import TestClient

import api.main
from api.main import SERVICE_GC_THRESHOLDS, create_app, get_app
from domain.collector import paused


@pytest.mark.usefixtures("collector_restored")
def test_the_service_freezes_its_start_up_heap_and_raises_the_young_threshold(
    tmp_path: Path,
) -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/a.db"), tune_gc=True)) as c:
        assert gc.get_freeze_count() > 10_000  # the modules, routes and application
        assert gc.get_threshold() == SERVICE_GC_THRESHOLDS
        assert c.get("/health").status_code == 200
        with paused():  # a boundless command's pause still holds the collector off
            assert not gc.isenabled()
        assert gc.isenabled()
    assert SERVICE_GC_THRESHOLDS[0] > 700  # Python's default young threshold


@pytest.mark.usefixtures("collector_restored")
def test_an_application_built_without_it_leaves_the_collector_alone(tmp_path: Path) -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/a.db"))) as c:
        assert c.get("/health").status_code == 200
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == (700, 10, 10)


def test_the_service_factory_asks_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(api.main, "create_app", lambda *a, **k: calls.append(k) or "app")
    assert get_app() == "app"  # type: ignore[comparison-overlap]
    assert calls == [{"tune_gc": True}]

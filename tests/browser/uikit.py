"""Helpers of the browser tests (``conftest.py`` has the fixtures): the service under test,
where screenshots go, the browser's paths and flags."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = Path(os.environ.get("ROUNDAUDIT_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("ROUNDAUDIT_CHROMEDRIVER", "/usr/bin/chromedriver"))
REQUIRE_ENV = "ROUNDAUDIT_REQUIRE_BROWSER"
VARIANTS = ("deluxe", "multihand", "lucky7", "european", "boundless")
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1" or os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> None:
    if required():
        pytest.fail(f"the browser tests must run here, but {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Service:
    """A running service: its URL, admin key, store, and an HTTP client with a key."""

    url: str
    admin: str
    database_url: str
    keys: dict[tuple[str, str | None], str] = field(default_factory=dict)

    def api(self, method: str, path: str, *, key: str | None = None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {key or self.admin}", **kw.pop("headers", {})}
        r = httpx.request(method, self.url + path, headers=headers, timeout=30, **kw)
        assert r.status_code < 300, (method, path, r.status_code, r.text)
        return r.json() if r.headers.get("content-type", "").startswith("application/json") else r

    def key(self, role: str, player: str | None = None) -> str:
        if (role, player) not in self.keys:
            body = {"role": role, "player": player, "label": f"browser-test-{role}"}
            self.keys[(role, player)] = self.api("POST", "/api-keys", json=body)["token"]
        return self.keys[(role, player)]


def roundaudit(env: dict[str, str], *args: str) -> None:
    exe = Path(sys.executable).with_name("roundaudit")
    subprocess.run([str(exe), *args], env=env, check=True, capture_output=True, timeout=300)


__all__ = [
    "CHROMEDRIVER",
    "CHROME_FLAGS",
    "CHROMIUM",
    "SHOTS",
    "VARIANTS",
    "Service",
    "free_port",
    "required",
    "roundaudit",
    "unavailable",
]

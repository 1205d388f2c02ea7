"""Fixtures of the browser tests: a real service process on loopback, Debian's Chromium.

* ``service`` (module): a store filled by ``roundaudit simulate`` (one round of every variant)
  and ``roundaudit serve`` on a free loopback port, with the test's admin key; stopped (and
  its files removed) at the end of the module. Rounds the tests need beyond the simulated ones
  are played through the service's HTTP API (``Service.api``), as a table feed would.
* ``browser`` (module): headless Chromium (``/usr/bin/chromium``) through ChromeDriver
  (``/usr/bin/chromedriver``) with Selenium, a fresh profile, no network of its own. Without
  them the tests are skipped with the reason, except in CI (``CI`` or
  ``ROUNDAUDIT_REQUIRE_BROWSER=1``), where a missing browser fails them.
* Screenshots go to ``artifacts/screenshots/`` (git-ignored; CI keeps the folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import uikit` in any import mode

from uikit import (
    CHROME_FLAGS,
    CHROMEDRIVER,
    CHROMIUM,
    SHOTS,
    VARIANTS,
    Service,
    free_port,
    roundaudit,
    unavailable,
)

from domain.keys import new_token


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    folder = Path(tempfile.mkdtemp(prefix="roundaudit-ui-"))
    admin = new_token()
    url = f"sqlite:///{folder / 'ui.db'}"
    env = {
        **os.environ,
        "ROUNDAUDIT_DATABASE_URL": url,
        "ROUNDAUDIT_SEED_KEY": str(folder / "seed.key"),
        "ROUNDAUDIT_ADMIN_KEY": admin,
    }
    roundaudit(env, "seed-key", "create", str(folder / "seed.key"))
    for variant in VARIANTS:
        players = "40" if variant == "boundless" else "3"
        roundaudit(env, "simulate", "--variant", variant, "--rounds", "1", "--players", players,
                    "--no-progress")  # fmt: skip
    port = free_port()
    exe = Path(sys.executable).with_name("roundaudit")
    log = open(folder / "serve.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            if proc.poll() is not None:
                raise RuntimeError((folder / "serve.log").read_text())
            time.sleep(0.1)
        else:
            raise RuntimeError("the service did not start: " + (folder / "serve.log").read_text())
        yield Service(base, admin, url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        unavailable(
            f"Chromium ({CHROMIUM}) or ChromeDriver ({CHROMEDRIVER}) is not installed "
            "(Debian: apt-get install chromium chromium-driver)"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service as DriverService
    except ImportError:
        unavailable("selenium is not installed (the dev dependencies pin it)")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager never downloads anything
    profile = tempfile.mkdtemp(prefix="roundaudit-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1400,1600")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=DriverService(str(CHROMEDRIVER)), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS

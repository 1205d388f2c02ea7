"""Service processes for the multi-process tests: ``roundaudit serve`` (uvicorn) on loopback,
and clients that retry a command with its ``Idempotency-Key`` until it has an answer.

:func:`service` starts one process on a store URL and waits for ``/health``. :class:`Retrier`
sends one command again and again (same key, same body), alternating between the services it
is given, until it gets a 2xx or a 4xx that is the command's own answer; connection errors,
5xx and 409 ``request-in-progress`` are *unknown outcomes*, retried; so is 409
``concurrent-update`` (nothing was recorded: the API says to send it again). It remembers the first
acknowledgement of each key.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from apikit import ADMIN_TOKEN, bearer
from storekit import free_port

ROOT = Path(__file__).resolve().parents[1]
RETRIED = frozenset({500, 502, 503, 504})


@contextmanager
def service(
    store_url: str,
    tmp_path: Path,
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """(the process, its base URL); terminated at the end. ``args``: more ``serve`` options
    (``--workers 2``)."""
    port = port or free_port()
    full = {
        **os.environ,
        "ROUNDAUDIT_DATABASE_URL": store_url,
        "ROUNDAUDIT_ADMIN_KEY": ADMIN_TOKEN,
        # ROUNDAUDIT_SEED_KEY: the test's own (tests/conftest.py), shared by every process
        **(env or {}),
    }
    log_path = tmp_path / f"server-{port}-{time.monotonic_ns()}.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
        ],
        env=full,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(log_path.read_bytes()[-3000:].decode(errors="replace"))
            time.sleep(0.1)
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()


class Retrier:
    """Sends commands with their keys to several services until each has an answer."""

    def __init__(self, bases: Sequence[str], *, timeout: float = 10.0) -> None:
        self.clients = [httpx.Client(base_url=b, timeout=timeout) for b in bases]
        self.attempts = 0
        self.unknown = 0  # attempts whose outcome the client could not know

    def close(self) -> None:
        for c in self.clients:
            c.close()

    def send(
        self, path: str, body: dict[str, Any], key: str, *, deadline: float, start: int = 0
    ) -> httpx.Response | None:
        """The command's answer (None when ``deadline`` passed without one)."""
        i = start
        while time.monotonic() < deadline:
            client = self.clients[i % len(self.clients)]
            i += 1
            self.attempts += 1
            try:
                r = client.post(
                    path, json=body, headers={**bearer(ADMIN_TOKEN), "Idempotency-Key": key}
                )
            except httpx.HTTPError:
                self.unknown += 1
                time.sleep(0.05)
                continue
            if r.status_code in RETRIED or (
                r.status_code == 409
                and ("request-in-progress" in r.text or "concurrent-update" in r.text)
            ):
                self.unknown += 1
                time.sleep(0.05)
                continue
            return r
        return None


class LogTail:
    """A reader that tails a store's notification log in a thread of its own while a test
    writes, keeping every id it reads in ``seen``: a feed is gap-free when ``seen`` is every
    id stored, in order, once (``tests/api/test_two_processes.py``, ``test_workers.py``)."""

    def __init__(self, url: str) -> None:
        from domain.application import RoundAudit
        from domain.persistence import environment_for

        self.seen: list[int] = []
        self._stop = threading.Event()
        self._reader = RoundAudit(env=environment_for(url, create_table=False))
        self._thread = threading.Thread(target=self._tail)

    def start(self) -> LogTail:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Read to the end of what is stored now, then stop and close the reader."""
        self._stop.set()
        self._thread.join(timeout=60)
        self._reader.close()

    def _tail(self) -> None:
        position = 0
        while True:
            done = self._stop.is_set()
            page = self._reader.recorder.select_notifications(
                start=position, limit=500, inclusive_of_start=False
            )
            for n in page:
                self.seen.append(n.id)
                position = n.id
            if done and not page:
                return
            if not page:
                time.sleep(0.005)

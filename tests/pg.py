"""A throwaway PostgreSQL server for the test session, and fresh databases inside it.

Used by ``tests/conftest.py``; nothing here is pytest-specific, so it can be driven by hand::

    with ThrowawayCluster(find_bindir()) as admin_url:
        with fresh_database(admin_url) as url:
            ...

The cluster lives in a temporary folder, listens on 127.0.0.1 only (a free port) with its
unix socket inside that folder, trusts local connections, and runs with ``fsync=off``
(``durable=True``: PostgreSQL's durable defaults, for the benchmarks): it is for tests and
benchmarks only, and it is stopped and deleted at the end.

``initdb`` refuses to run as root. When the tests run as root, the server binaries run as the
``postgres`` OS user (``subprocess`` with ``user=``/``group=``, i.e. setuid/setgid in the child
before exec) and the temporary folder is chowned to that user; otherwise they run as the
current user.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit
from uuid import uuid4

import psycopg
from psycopg import sql

URL_ENV = "ROUNDAUDIT_TEST_POSTGRES_URL"
REQUIRE_ENV = "ROUNDAUDIT_REQUIRE_POSTGRES"
SERVER_USER = "postgres"
SUPERUSER = "postgres"
BIN_GLOB_ROOT = Path("/usr/lib/postgresql")
# Query parameters of our database URLs that libpq does not know (see domain.persistence).
_NON_LIBPQ_PARAMS = frozenset({"schema", "pool_size", "max_overflow", "commit_delay"})


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL can be started here (not an error in the code under test)."""


class PostgresStartError(RuntimeError):
    """The binaries are there but the throwaway server did not start; carries the log."""


def find_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: from PATH, else the newest
    ``/usr/lib/postgresql/<version>/bin``."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        bindir = Path(initdb).resolve().parent
        if _complete(bindir):
            return bindir
    candidates = [p for p in BIN_GLOB_ROOT.glob("*/bin") if _complete(p)]
    candidates.sort(key=lambda p: _version_key(p.parent.name), reverse=True)
    return candidates[0] if candidates else None


def searched_locations() -> str:
    return f"PATH and {BIN_GLOB_ROOT}/*/bin"


def _complete(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres"))


def _version_key(name: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in name.split("."))
    except ValueError:
        return (0,)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def libpq_url(url: str) -> str:
    """``url`` without the query parameters that only roundaudit understands."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in _NON_LIBPQ_PARAMS]
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit(parts._replace(scheme=scheme, query=urlencode(query)))


def url_with_database(url: str, dbname: str) -> str:
    """``url`` pointing at database ``dbname`` instead (user, host, query unchanged)."""
    return urlunsplit(urlsplit(url)._replace(path="/" + quote(dbname)))


def create_database(admin_url: str, dbname: str) -> None:
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))


def drop_database(admin_url: str, dbname: str) -> None:
    """Drop ``dbname``, disconnecting anything still connected to it (PostgreSQL 13+)."""
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
        )


def terminate_others(url: str) -> None:
    """Terminate every other backend of ``url``'s database (as a server's restart would:
    the pooled connections on it are lost)."""
    with psycopg.connect(libpq_url(url), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@contextlib.contextmanager
def fresh_database(admin_url: str, prefix: str = "test_") -> Iterator[str]:
    """Create an empty database next to ``admin_url``'s, yield its URL, drop it after."""
    dbname = f"{prefix}{uuid4().hex}"
    create_database(admin_url, dbname)
    try:
        yield url_with_database(admin_url, dbname)
    finally:
        drop_database(admin_url, dbname)


class ThrowawayCluster:
    """initdb + pg_ctl start in a temporary folder; :meth:`stop` stops and deletes it.

    ``start()`` returns the superuser URL of the ``postgres`` database, over TCP on
    127.0.0.1 with trust authentication.
    """

    def __init__(self, bindir: Path, *, start_timeout: int = 60, durable: bool = False) -> None:
        """``durable=True`` keeps PostgreSQL's defaults ``fsync``, ``synchronous_commit`` and
        ``full_page_writes`` on (benchmarks: an acknowledgement means durable); the tests run
        without them."""
        self.bindir = bindir
        self.durable = durable
        self.start_timeout = start_timeout
        self.root: Path | None = None
        self.port: int | None = None
        self._as_user: dict[str, Any] = {}
        self._running = False

    # -- context manager -------------------------------------------------------------------

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def datadir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    def start(self) -> str:
        self._as_user = self._server_identity()
        self.root = Path(tempfile.mkdtemp(prefix="roundaudit-pg-"))
        atexit.register(self.stop)
        sockdir = self.root / "sock"
        sockdir.mkdir()
        if self._as_user:
            for path in (self.root, sockdir):
                os.chown(path, self._as_user["user"], self._as_user["group"])
        self._run(
            "initdb",
            "-D", str(self.datadir),
            "-U", SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip
        durability = (
            "fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n"
            if self.durable
            else "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
        )
        with (self.datadir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                "\n# roundaudit throwaway test cluster\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{sockdir}'\n" + durability + "max_connections = 200\n"
            )
        (self.datadir / "pg_hba.conf").write_text(
            "# roundaudit throwaway test cluster: loopback and local socket only\n"
            "local all all trust\n"
            "host  all all 127.0.0.1/32 trust\n",
            encoding="utf-8",
        )
        last_error: PostgresStartError | None = None
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = free_port()
            try:
                self._run(
                    "pg_ctl",
                    "-D", str(self.datadir),
                    "-l", str(self.logfile),
                    "-o", f"-p {self.port}",
                    "-w", "-t", str(self.start_timeout),
                    "start",
                )  # fmt: skip
            except PostgresStartError as e:
                last_error = e
                if "could not bind" not in self._log_tail():
                    raise
                continue
            self._running = True
            url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
            self._wait_until_accepting(url)
            return url
        assert last_error is not None
        raise last_error

    def stop(self) -> None:
        """Stop the server (immediate mode: its data is thrown away) and delete the folder."""
        if self.root is None:
            return
        if self._running:
            try:
                self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")
            except PostgresStartError:
                self._kill_postmaster()
            self._running = False
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _server_identity() -> dict[str, Any]:
        if os.geteuid() != 0:
            return {}
        try:
            entry = pwd.getpwnam(SERVER_USER)
        except KeyError:
            msg = (
                f"running as root, and initdb refuses root, but there is no {SERVER_USER!r} OS "
                f"user to run the server as; create one or set {URL_ENV}"
            )
            raise PostgresUnavailable(msg) from None
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _run(self, program: str, *args: str) -> None:
        assert self.root is not None
        out = self.root / f"{program}.out"
        with out.open("wb") as sink:
            if self._as_user:
                os.chown(out, self._as_user["user"], self._as_user["group"])
            result = subprocess.run(
                [str(self.bindir / program), *args],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                env={**os.environ, "LC_ALL": "C", "TZ": "UTC"},
                timeout=self.start_timeout + 30,
                check=False,
                **self._as_user,
            )
        if result.returncode != 0:
            output = out.read_text(encoding="utf-8", errors="replace")
            msg = (
                f"{program} {' '.join(args)} failed with exit code {result.returncode}:\n"
                f"{output}\n--- server log ---\n{self._log_tail()}"
            )
            raise PostgresStartError(msg)

    def _log_tail(self, lines: int = 40) -> str:
        try:
            text = self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])

    def _wait_until_accepting(self, url: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                with psycopg.connect(url, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _kill_postmaster(self) -> None:
        """Last resort when pg_ctl cannot stop it: SIGQUIT the postmaster we started."""
        try:
            pid = int((self.datadir / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGQUIT)

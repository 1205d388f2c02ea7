"""A throwaway PostgreSQL primary with a streaming standby, on loopback, for the replica and
failover tests (nothing pytest-specific; as ``tests/pg.py``, whose cluster it extends).

* :class:`Primary`: a :class:`pg.ThrowawayCluster` that accepts replication connections from
  loopback; :meth:`Primary.synchronous` names the standby in ``synchronous_standby_names``
  with ``synchronous_commit`` (``on`` or ``remote_apply``): a commit is acknowledged only when
  the standby has it (flushed, or applied and visible).
* :class:`Standby`: ``pg_basebackup -R`` of the primary (the standby signal and
  ``primary_conninfo`` written by the tool, ``application_name`` set so that the primary can
  name it), started as a hot standby on its own port; :meth:`Standby.promote` makes it the
  primary (``pg_ctl promote``).
* :meth:`Primary.kill` SIGKILLs the postmaster and every server process: the machine is gone,
  nothing is flushed or shut down cleanly.

``fsync`` stays off as in every test cluster (a killed *process* loses nothing the kernel
holds; what is tested is replication and the service, not the disk).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pg import (
    REQUIRE_ENV,
    SUPERUSER,
    PostgresStartError,
    ThrowawayCluster,
    find_bindir,
    free_port,
)

STANDBY_NAME = "standby1"


def server_binaries() -> Path:
    """The server binaries, or the test is skipped (fails with ROUNDAUDIT_REQUIRE_POSTGRES=1)."""
    import pytest

    bindir = find_bindir()
    if bindir is None:
        reason = "PostgreSQL server binaries not installed: the replication tests need them"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return bindir


class Primary(ThrowawayCluster):
    """The primary: a throwaway cluster that streams its WAL to loopback standbys."""

    def start(self) -> str:
        url = super().start()
        with (self.datadir / "pg_hba.conf").open("a", encoding="utf-8") as hba:
            hba.write("local replication all trust\nhost replication all 127.0.0.1/32 trust\n")
        self._append_conf("wal_level = replica\nmax_wal_senders = 10\nwal_keep_size = '256MB'\n")
        self._run("pg_ctl", "-D", str(self.datadir), "-w", "reload")
        return url

    def _append_conf(self, text: str) -> None:
        with (self.datadir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n" + text)

    def synchronous(self, mode: str = "remote_apply", standby: str = STANDBY_NAME) -> None:
        """Make commits wait for ``standby`` (``mode``: ``on`` or ``remote_apply``)."""
        self._append_conf(f"synchronous_standby_names = '{standby}'\nsynchronous_commit = {mode}\n")
        self._run("pg_ctl", "-D", str(self.datadir), "-w", "reload")
        deadline = time.monotonic() + 30
        url = self.url
        while True:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s",
                    (standby,),
                ).fetchone()
            if row is not None and row[0] == "sync":
                return
            if time.monotonic() > deadline:
                raise PostgresStartError(f"{standby} never became a synchronous standby: {row}")
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def kill(self) -> None:
        """SIGKILL the postmaster and every process it started (as a machine that dies)."""
        try:
            pid = int((self.datadir / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return
        children = _children(pid)
        for p in (pid, *children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in (pid, *children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._running = False


class Standby(ThrowawayCluster):
    """A hot standby of ``primary``, made with ``pg_basebackup -R``."""

    def __init__(self, primary: Primary, *, name: str = STANDBY_NAME) -> None:
        super().__init__(primary.bindir, start_timeout=primary.start_timeout)
        self.primary = primary
        self.name = name

    def start(self) -> str:
        self._as_user = self._server_identity()
        self.root = Path(tempfile.mkdtemp(prefix="roundaudit-pg-standby-"))
        atexit.register(self.stop)
        sockdir = self.root / "sock"
        sockdir.mkdir()
        if self._as_user:
            for path in (self.root, sockdir):
                os.chown(path, self._as_user["user"], self._as_user["group"])
        conninfo = (
            f"host=127.0.0.1 port={self.primary.port} user={SUPERUSER} application_name={self.name}"
        )
        self._run(
            "pg_basebackup",
            "-D", str(self.datadir),
            "-d", conninfo,
            "-R",
            "-X", "stream",
            "--checkpoint=fast",
            "--no-sync",
        )  # fmt: skip
        with (self.datadir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"\nunix_socket_directories = '{sockdir}'\nhot_standby = on\n"
                "hot_standby_feedback = on\n"
                # a standby's own commits (after promotion) wait for nobody
                "synchronous_standby_names = ''\n"
            )
        self.port = free_port()
        self._run(
            "pg_ctl",
            "-D", str(self.datadir),
            "-l", str(self.logfile),
            "-o", f"-p {self.port}",
            "-w", "-t", str(self.start_timeout),
            "start",
        )  # fmt: skip
        self._running = True
        url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        self._wait_until_accepting(url)
        return url

    def promote(self) -> float:
        """Promote to primary; returns the seconds until it accepts writes."""
        t0 = time.monotonic()
        self._run("pg_ctl", "-D", str(self.datadir), "-w", "promote")
        url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        while True:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is not None and not row[0]:
                return time.monotonic() - t0
            time.sleep(0.05)


@dataclass
class ReplicatedStore:
    """A store's database on a primary and its standby (see :func:`replicated_store`)."""

    primary: Primary
    standby: Standby
    url: str  # the database on the primary
    replica: str  # the same database on the standby

    def multi_host(self, query: str = "target_session_attrs=read-write&connect_timeout=2") -> str:
        """The store's multi-host URL (primary first, then the standby)."""
        dbname = self.url.rsplit("/", 1)[1]
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return f"postgresql://{SUPERUSER}@{hosts}/{dbname}?{query}"


@contextlib.contextmanager
def replicated_store(
    *, synchronous: str | None = None, dbname: str = "audit"
) -> Iterator[ReplicatedStore]:
    """A primary with a fresh roundaudit store (its schema made once) and a hot standby of
    it; with ``synchronous`` (``on``, ``remote_apply``) the standby is synchronous. Both are
    stopped and deleted at the end."""
    from pg import create_database, url_with_database

    from domain.application import RoundAudit
    from domain.persistence import environment_for

    primary = Primary(server_binaries())
    admin = primary.start()
    standby = Standby(primary)
    try:
        create_database(admin, dbname)
        url = url_with_database(admin, dbname)
        RoundAudit(env=environment_for(url)).close()  # the schema, once, on the primary
        standby.start()
        if synchronous is not None:
            primary.synchronous(synchronous)
        assert standby.port is not None
        yield ReplicatedStore(primary, standby, url, replica_url(url, standby.port))
    finally:
        standby.stop()
        primary.stop()


def replica_url(url: str, port: int) -> str:
    """``url`` (a database of the primary) on the standby's port."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}@127.0.0.1:{port}"))


def wait_replayed(primary_url: str, standby_url: str, timeout: float = 30) -> None:
    """Until the standby has replayed everything the primary had recorded when called.

    The target is the primary's WAL *insert* position (``pg_current_wal_insert_lsn()``), not
    its write position (``pg_current_wal_lsn()``): the test clusters commit with
    ``synchronous_commit = off``, so a transaction acknowledged to the application may have
    its commit record still in the primary's WAL buffers (the WAL writer writes it within
    ``wal_writer_delay``); waiting for the write position alone returned before the standby
    had the last commits, and a read of the replica then missed them."""
    with psycopg.connect(primary_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
    assert row is not None
    target = row[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(standby_url, autocommit=True) as conn:
        while True:
            r = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
            if r is not None and r[0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the standby did not catch up")
            time.sleep(0.05)


def pause_replay(standby_url: str, timeout: float = 30) -> None:
    """Pause the standby's replay and wait until it *is* paused: ``pg_wal_replay_pause()`` only
    requests it (``pg_get_wal_replay_pause_state()`` says ``pause requested`` until the startup
    process stops), and a transaction committed on the primary in between may still be
    replayed. :func:`resume_replay` undoes it."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(standby_url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        while True:
            r = conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()
            if r is not None and r[0] == "paused":
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby's replay did not pause (state {r})")
            time.sleep(0.01)


def resume_replay(standby_url: str) -> None:
    """Resume the standby's replay (after :func:`pause_replay`)."""
    with psycopg.connect(standby_url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_resume()")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False


__all__ = [
    "Primary",
    "ReplicatedStore",
    "Standby",
    "pause_replay",
    "replica_url",
    "replicated_store",
    "resume_replay",
    "server_binaries",
    "wait_replayed",
]

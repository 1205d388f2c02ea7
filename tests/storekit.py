"""What the tamper, witness and signer tests share: a store edited with SQL as an insider would
(SQLite or PostgreSQL), fresh copies of a built store, the checkpoint signer, a witness run as
its own process on loopback, ``roundaudit verify`` run as an operator would, a commit writer
that refuses a save (:class:`FailingWriter`), and a second empty store of a test's kind
(:func:`twin_store_url`)."""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import UUID, uuid4

import psycopg
import pytest
from pg import libpq_url, url_with_database
from psycopg import sql

from cli.main import main
from domain.application import RoundAudit
from domain.commit_leaf import LEAF_TOPIC, LEAVES_ID, PURPOSE, parse_leaf, state_digest
from domain.persistence import environment_for, sqlite_path
from replays.bundle import Decoded
from replays.log import MerkleLog, WitnessKey
from replays.merkle import load_private_key
from replays.note import NoteKey, operator_key, witness_key
from replays.signer import Signer, SignReport

ROOT = Path(__file__).resolve().parents[1]
ORIGIN = "casino.example/roundaudit/test"


def sealed_rounds(url: str, key: Path, variants: Sequence[str], rounds: int) -> list[str]:
    """``rounds`` simulated rounds of each of ``variants`` recorded in the store at ``url``,
    then a checkpoint sealed with the operator key at ``key`` (origin :data:`ORIGIN`): the
    round ids, in the order recorded."""
    from cli.simulate import simulate

    app = RoundAudit(env=environment_for(url))
    try:
        made = [r for v in variants for r in simulate(app, variant=v, rounds=rounds).round_ids]
    finally:
        app.close()
    assert main(["--database-url", url, "seal", "--signing-key", str(key), "--origin", ORIGIN]) == 0
    return made


def verify_report(url: str, key: Path, report: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    """``roundaudit verify ARGS`` on the store at ``url`` (no progress bar, the operator key
    ``key`` pinned, the JSON report written to ``report``): (exit code, standard output, the
    JSON report)."""
    import io

    import orjson

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "--database-url", url, "verify", "--no-progress",
                "--signing-key", str(key), "--json", str(report), *args,
            ]
        )  # fmt: skip
    return code, out.getvalue(), orjson.loads(report.read_bytes())


def same_decoded(a: Decoded, b: Decoded) -> list[bool]:
    """How two decodings of a record compare: the same record, event class, event fields,
    error and merged position (each True when equal)."""
    return [
        a.record == b.record,
        type(a.event) is type(b.event),
        (a.event.__dict__ if a.event is not None else None)
        == (b.event.__dict__ if b.event is not None else None),
        a.error == b.error,
        a.at == b.at,
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class WitnessProcess:
    """``roundaudit witness serve`` in its own process, on a free loopback port."""

    state: Path
    name: str
    logs: Sequence[NoteKey]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def key(self) -> NoteKey:
        private, _ = load_private_key(self.state / "witness-key.pem", create=True)
        return witness_key(self.name, private.public_key())

    @property
    def trusted(self) -> WitnessKey:
        return WitnessKey(self.key, self.url)

    @property
    def option(self) -> str:
        return f"{self.key.vkey()}@{self.url}"

    def start(self) -> WitnessProcess:
        self.key  # noqa: B018 - makes the key before the process reads it
        args = ["witness", "serve", "--state", str(self.state), "--name", self.name]
        for k in self.logs:
            args += ["--log", k.vkey()]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", *args, "--port", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the witness exited: {self.process.communicate()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return self
            time.sleep(0.05)
        raise RuntimeError("the witness did not start listening")

    def stop(self) -> tuple[int, str, str]:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=30)
        code = self.process.returncode
        self.process = None
        return code, out, err

    def __enter__(self) -> WitnessProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.stop()


def sign(
    url: str, key_file: Path, witnesses: Sequence[WitnessKey] = (), origin: str = ORIGIN
) -> SignReport:
    """One run of the checkpoint signer (``roundaudit seal``) on the store at ``url``."""
    app = RoundAudit(env=environment_for(url))
    try:
        key, _ = load_private_key(key_file, create=True)
        return Signer(app, key=key, origin=origin, witnesses=witnesses).run_once()
    finally:
        app.close()


def operator(key_file: Path, origin: str = ORIGIN) -> NoteKey:
    key, _ = load_private_key(key_file, create=True)
    return operator_key(origin, key.public_key())


@dataclass
class Store:
    """A store edited with SQL, and verified with the command line."""

    url: str
    key: Path  # the operator's signing key (the pinned key is its public half)
    capsys: pytest.CaptureFixture[str]
    witnesses: list[WitnessProcess] = field(default_factory=list)
    origin: str = ORIGIN

    @property
    def postgres(self) -> bool:
        return self.url.startswith("postgres")

    def table(self, purpose: str = "events") -> str:
        return f"roundaudit_{purpose}" if self.postgres else f"stored_{purpose}"

    @contextlib.contextmanager
    def sql(self) -> Iterator[Any]:
        if self.postgres:
            with psycopg.connect(libpq_url(self.url)) as conn:
                yield conn
        else:
            path = sqlite_path(self.url)
            assert path is not None
            conn = sqlite3.connect(path)
            try:
                yield conn
                conn.commit()
            finally:
                conn.close()

    def _id(self, oid: UUID) -> Any:
        return oid if self.postgres else oid.hex

    def _q(self, text: str) -> str:
        return text if self.postgres else text.replace("%s", "?")

    def execute(self, text: str, params: Sequence[Any] = ()) -> list[Any]:
        with self.sql() as c:
            cur = c.execute(self._q(text), tuple(params))
            try:
                return list(cur.fetchall())
            except (psycopg.ProgrammingError, sqlite3.ProgrammingError):
                return []

    @property
    def nid(self) -> str:
        """The notification id column of the events table."""
        return "notification_id" if self.postgres else "rowid"

    def rows(self, oid: UUID, purpose: str = "events") -> list[tuple[int, str, bytes]]:
        got = self.execute(
            f"SELECT originator_version, topic, state FROM {self.table(purpose)} "
            "WHERE originator_id = %s ORDER BY originator_version",
            (self._id(oid),),
        )
        return [(int(v), str(t), bytes(s)) for v, t, s in got]

    def notifications(self, topic_like: str = "%") -> list[tuple[int, UUID, int, str, bytes]]:
        """(notification id, originator id, version, topic, state) in commit order."""
        got = self.execute(
            f"SELECT {self.nid}, originator_id, originator_version, topic, state FROM "
            f"{self.table()} WHERE topic LIKE %s ORDER BY {self.nid}",
            (topic_like,),
        )
        return [(int(n), UUID(str(o)), int(v), str(t), bytes(s)) for n, o, v, t, s in got]

    def set_state(self, oid: UUID, version: int, state: bytes, purpose: str = "events") -> None:
        self.execute(
            f"UPDATE {self.table(purpose)} SET state = %s "
            "WHERE originator_id = %s AND originator_version = %s",
            (state, self._id(oid), version),
        )

    def set_row(self, oid: UUID, version: int, topic: str, state: bytes) -> None:
        self.execute(
            f"UPDATE {self.table()} SET topic = %s, state = %s "
            "WHERE originator_id = %s AND originator_version = %s",
            (topic, state, self._id(oid), version),
        )

    def delete(
        self,
        oid: UUID,
        *,
        version: int | None = None,
        above: int | None = None,
        purpose: str = "events",
    ) -> None:
        args: tuple[Any, ...]
        if version is None and above is None:
            cond, args = "", (self._id(oid),)
        else:
            op, arg = ("= %s", version) if version is not None else ("> %s", above)
            cond, args = f" AND originator_version {op}", (self._id(oid), arg)
        self.execute(f"DELETE FROM {self.table(purpose)} WHERE originator_id = %s{cond}", args)

    def delete_after(self, notification_id: int) -> None:
        """Cut the events table after a notification id (the tail of the log of events)."""
        self.execute(f"DELETE FROM {self.table()} WHERE {self.nid} > %s", (notification_id,))

    def number(self, rid: UUID) -> int:
        state = self.rows(rid)[0][2]
        found = re.search(rb'"round_number":(\d+)', state)
        assert found is not None
        return int(found.group(1))

    def rewrite_with_leaf(self, oid: UUID, version: int, new_state: bytes) -> int:
        """Change an event and rewrite its leaf to match (as an insider would): returns the
        leaf's index."""
        with self.log() as log:
            index = log.locate(oid, version)
            assert index is not None
            old = log.leaf(index).decode()
        entry = next(e for e in parse_leaf(old.encode()).entries if e.key == (oid, version))
        self.set_state(oid, version, new_state)
        new = old.replace(entry.sha256, state_digest(new_state))
        self.execute(
            f"UPDATE {self.table(PURPOSE)} SET state = %s WHERE originator_id = %s "
            "AND originator_version = %s AND topic = %s",
            (new.encode(), self._id(LEAVES_ID), index + 1, LEAF_TOPIC),
        )
        return index

    @contextlib.contextmanager
    def log(self) -> Iterator[MerkleLog]:
        """The store's Merkle log, read (its application open while in use)."""
        app = RoundAudit(env=environment_for(self.url))
        try:
            yield MerkleLog(app).refresh()
        finally:
            app.close()

    def verify(
        self, *args: str, pinned: str | None = None, witnesses: bool = True
    ) -> tuple[int, str]:
        """``roundaudit verify`` (``--all`` by default) with the operator key pinned (its
        vkey, unless ``pinned`` names another) and the running witnesses trusted."""
        self.capsys.readouterr()
        options = ["--public-key", pinned or operator(self.key, self.origin).vkey()]
        if witnesses:  # asked when running, else trusted by their key alone
            for w in self.witnesses:
                options += ["--witness", w.option if w.process is not None else w.key.vkey()]
        code = main(
            [
                "--database-url",
                self.url,
                "verify",
                *(args or ("--all",)),
                *options,
                "--no-progress",
            ]
        )
        return code, self.capsys.readouterr().out

    def sign(self) -> SignReport:
        return sign(self.url, self.key, [w.trusted for w in self.witnesses], self.origin)


# ------------------------------------------------------------------------------ copies
def timestamp_changed(state: bytes) -> bytes:
    """A stored event's bytes with one digit of its server timestamp's seconds changed (which
    re-execution sets aside: only the seal sees it)."""
    changed = re.sub(
        rb'("_data_":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d)(\d)',
        lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10).encode(),
        state,
        count=1,
    )
    assert changed != state
    return changed


def copy_store(template: str, tmp_path: Path, postgres_url: str | None = None) -> str:
    """A fresh copy of the store at ``template`` (a SQLite file, or a PostgreSQL database:
    ``CREATE DATABASE ... TEMPLATE``); the caller drops a PostgreSQL copy with
    :func:`drop_copy`."""
    if template.startswith("postgres"):
        assert postgres_url is not None
        name = f"copy_{uuid4().hex}"
        source = template.rsplit("/", 1)[1].split("?", maxsplit=1)[0]
        with psycopg.connect(libpq_url(postgres_url), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(source)
                )
            )
        return url_with_database(postgres_url, name)
    source = sqlite_path(template)
    assert source is not None
    target = tmp_path / f"copy-{uuid4().hex[:8]}.db"
    with sqlite3.connect(source) as a, sqlite3.connect(target) as b:
        a.backup(b)
    return "sqlite:///" + str(target)


def drop_copy(url: str, postgres_url: str | None) -> None:
    if url.startswith("postgres") and postgres_url is not None:
        name = url.rsplit("/", 1)[1].split("?", maxsplit=1)[0]
        with psycopg.connect(libpq_url(postgres_url), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def copy_witness(w: WitnessProcess, to: Path) -> WitnessProcess:
    """The same witness (key and state) in a folder of its own, for one store copy."""
    shutil.copytree(w.state, to)
    (to / "lock").unlink(missing_ok=True)
    return WitnessProcess(to, w.name, w.logs)


class WriterRefused(RuntimeError):
    """What :class:`FailingWriter` raises."""


class FailingWriter:
    """A commit writer (``domain.commits``) that refuses every save given ``fail=True``."""

    purposes: tuple[str, ...] = ()

    def write(self, tx: Any, events: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        if kwargs.get("fail"):
            raise WriterRefused("the writer refuses this save")


@contextlib.contextmanager
def twin_store_url(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A second empty store of the same kind as ``store_url`` (the ``store_url`` fixture's)."""
    if store_url.startswith("sqlite"):
        yield "sqlite:///" + quote(str(tmp_path / "twin.db"))
        return
    from pg import fresh_database

    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        yield url

"""Reads from a PostgreSQL read replica, with read-your-writes: ``ROUNDAUDIT_READ_DATABASE_URL``.

This module owns where the service reads when a replica is configured, and how a read waits
for the writes before it:

* **Audit reads** (a round's replay, verification, export and proof, the Merkle log's
  checkpoints and consistency proofs) read the replica through :data:`AuditReader`, a second
  :class:`~domain.application.RoundAudit` opened on it (``CREATE_TABLE=n``, no seed key: these
  reads never open a sealed seed). API keys, idempotency records and every command stay on the
  primary (``ROUNDAUDIT_DATABASE_URL``): a revocation or a write is never read stale.
* **Projection reads** (searches, the feed, reports) read the replica's copy of the projection
  tables (:class:`ReplicaReadSide`): the projections are applied on the primary, by
  ``roundaudit projections run --follow`` (the service cannot write on a standby, so
  ``ROUNDAUDIT_READ_DRIVE`` does not apply), and reach the replica by replication.
* **Read-your-writes.** Each read first takes the head of the log **on the primary** (the
  highest notification id committed when the request arrived), then waits, up to
  ``ROUNDAUDIT_READ_WAIT`` seconds, until the replica has replayed that far: its own log's head
  (audit reads) or the positions of the projections read. Anything a client was answered
  before its read is therefore in what it reads, whichever service process answered it. A
  replica still behind after the wait answers 503 ``replica-behind`` (``Retry-After: 1``)
  rather than a stale view; with a synchronous standby in ``remote_apply`` mode it never is.

Without the setting every read goes to the primary, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
from fastapi import Depends, Request

from api.readside import ProjectionUnavailable, Reading, ReadSide
from domain.errors import DomainError
from projections import make
from projections.store import ProjectionStore, ProjectionStoreError

if TYPE_CHECKING:
    from api.settings import Settings
    from domain.application import RoundAudit

__all__ = [
    "AuditReader",
    "ReplicaBehind",
    "ReplicaProjectionStore",
    "ReplicaReadSide",
    "audit_reader",
    "open_reader",
    "wait_for_head",
]

POLL_SECONDS = 0.01


class ReplicaBehind(DomainError):
    """The read replica has not replayed the writes this read must see yet."""

    code = "replica-behind"
    status = 503


def open_reader(settings: Settings) -> RoundAudit | None:
    """The application on the read replica, or None without ``ROUNDAUDIT_READ_DATABASE_URL``."""
    if not settings.read_database_url:
        return None
    from domain.application import RoundAudit
    from domain.persistence import environment_for
    from domain.vault import SeedKeyRing

    env = environment_for(settings.read_database_url, create_table=False)
    return RoundAudit(env=env, seed_key=SeedKeyRing.locked())


def head(app: Any) -> int:
    """The highest notification id committed to ``app``'s store (0 when empty)."""
    return int(app.recorder.max_notification_id() or 0)


def wait_for_head(reader: Any, position: int, timeout: float) -> int:
    """Wait until ``reader``'s store holds the log up to ``position``; returns its head, or
    raises :class:`ReplicaBehind` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        now = head(reader)
        if now >= position:
            return now
        if time.monotonic() >= deadline:
            raise ReplicaBehind(
                f"the read replica holds the log up to {now}, not yet {position} (the head "
                "when this request arrived); try again"
            )
        time.sleep(POLL_SECONDS)


def audit_reader(request: Request) -> RoundAudit:
    """The application audit reads use: the replica, once it holds the primary's head (or the
    primary itself without a replica)."""
    state = request.app.state
    reader: RoundAudit | None = getattr(state, "reader", None)
    primary: RoundAudit = state.audit
    if reader is None:
        return primary
    wait_for_head(reader, head(primary), state.settings.read_wait)
    return reader


AuditReader = Annotated["RoundAudit", Depends(audit_reader)]


class ReplicaProjectionStore(ProjectionStore):
    """A projection store on a replica: read only, so no tables are created (the primary's
    projections created them; the replica has them by replication)."""

    def __init__(self, dialect: Any, conn: Any) -> None:
        self.dialect = dialect
        self._conn = conn
        self._lock = threading.Lock()


class ReplicaReadSide(ReadSide):
    """The read side on a replica's projection tables (see the module docstring)."""

    store_class = ReplicaProjectionStore

    def __init__(self, app: Any, env: dict[str, str], *, wait: float) -> None:
        super().__init__(app, env, wait=wait, drive=False)

    @contextmanager
    def reading(self, *names: str) -> Iterator[Reading]:
        wanted = tuple(sorted(set(names)))
        versions = {p.name: p.version for p in make(wanted)}
        target = head(self.app)  # the primary's head: what this read must see
        deadline = time.monotonic() + self.wait
        with self._connection() as conn:
            try:
                while True:
                    try:
                        found = conn.store.positions()
                    except psycopg.errors.UndefinedTable:
                        found = {}  # the tracking table is not replicated yet
                    stale = [
                        f"{n} (stored v{found[n][1]}, code v{v})"
                        for n, v in versions.items()
                        if n in found and found[n][1] != v
                    ]
                    if stale:
                        raise ProjectionUnavailable(
                            "projection tables written by another version: "
                            + ", ".join(stale)
                            + "; run `roundaudit projections rebuild NAME` on the primary"
                        )
                    position = min(found.get(n, (0, 0))[0] for n in wanted)
                    if position >= target or time.monotonic() >= deadline:
                        break
                    time.sleep(POLL_SECONDS)
                with conn.store.read() as tx:
                    yield Reading(tx, position, target)
            except ProjectionStoreError as exc:
                raise ProjectionUnavailable(f"the projections cannot be read: {exc}") from None

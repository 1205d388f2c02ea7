"""The read side of the service: projections brought up to date, then read, for each request.

The searches, histories, the reporting feed and the daily reports read tracked projections
(``projections/``), kept in the event store's own database. :class:`ReadSide` (one per
service process, made by ``api.main``) gives a route a read transaction on them that is as
current as the log was when the request arrived (read-your-writes):

1. it reads the head of the notification log;
2. it waits, up to ``ROUNDAUDIT_READ_WAIT`` seconds, until every projection the route reads
   has passed that head. With ``ROUNDAUDIT_READ_DRIVE=1`` (default) the service applies the
   batches itself, one request at a time (a process-wide lock: a second request waits for the
   first one's batches instead of racing it); with ``0`` it only watches a
   ``roundaudit projections run --follow`` worker;
3. it opens one read transaction, so what the route reads agrees with itself, and tells the
   route the projections' lowest position and the head (answers carry both: a reader sees
   when a projection is behind, e.g. while a rebuild replays the log).

Connections to the projection tables are pooled (a few per process, closed at shutdown); each
carries its runners, whose tables are created once. A projection written by another schema
version (``ProjectionOutdated``) or a store that cannot be reached answers 503
``projection-unavailable``, naming what to do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from domain.errors import DomainError
from projections import make
from projections.runner import (
    ProjectionOutdated,
    ProjectionRunner,
    ProjectionStatus,
    projection_status,
)
from projections.store import ProjectionStore, ProjectionStoreError, Tx

POOL_SIZE: Final = 4


class ProjectionUnavailable(DomainError):
    """A projection cannot be read now (outdated schema, store unreachable)."""

    code = "projection-unavailable"
    status = 503


@dataclass
class Reading:
    """An open read of some projections: the transaction, and how current it is."""

    tx: Tx
    position: int  # the lowest position of the projections read
    head: int  # the log's head when the request arrived

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def freshness(self) -> dict[str, int]:
        return {"position": self.position, "head": self.head, "lag": self.lag}


@dataclass
class _Connection:
    store: ProjectionStore
    runners: dict[tuple[str, ...], ProjectionRunner] = field(default_factory=dict)


class ReadSide:
    """See the module docstring."""

    #: The projection store class (``api.replica`` reads a replica's tables with its own).
    store_class: type[ProjectionStore] = ProjectionStore

    def __init__(self, app: Any, env: dict[str, str], *, wait: float, drive: bool) -> None:
        self.app = app
        self.env = env
        self.wait = wait
        self.drive = drive
        self._pool: list[_Connection] = []
        self._pool_lock = threading.Lock()
        self._drive_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ connections
    @contextmanager
    def _connection(self) -> Iterator[_Connection]:
        with self._pool_lock:
            conn = self._pool.pop() if self._pool else None
        if conn is None:
            try:
                conn = _Connection(self.store_class.from_env(self.env))
            except ProjectionStoreError as exc:
                raise ProjectionUnavailable(
                    f"the projection store cannot be opened: {exc}"
                ) from None
        broken = False
        try:
            yield conn
        except DomainError:
            raise  # a refusal: the connection is fine
        except Exception:
            broken = True  # a failed statement may leave the connection unusable
            raise
        finally:
            with self._pool_lock:
                keep = not broken and not self._closed and len(self._pool) < POOL_SIZE
                if keep:
                    self._pool.append(conn)
            if not keep:
                conn.store.close()

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.store.close()

    def _runner(self, conn: _Connection, names: tuple[str, ...]) -> ProjectionRunner:
        runner = conn.runners.get(names)
        if runner is None:
            runner = ProjectionRunner(self.app, conn.store, make(names))
            conn.runners[names] = runner
        return runner

    # ------------------------------------------------------------------ reading
    @contextmanager
    def reading(self, *names: str) -> Iterator[Reading]:
        """A read transaction on projections ``names``, caught up as the module docstring
        says."""
        wanted = tuple(sorted(set(names)))
        head = int(self.app.recorder.max_notification_id() or 0)
        with self._connection() as conn:
            try:
                runner = self._runner(conn, wanted)
                position = self._catch_up(runner, head)
                with conn.store.read() as tx:
                    yield Reading(tx, position, head)
            except ProjectionOutdated as exc:
                raise ProjectionUnavailable(str(exc)) from None
            except ProjectionStoreError as exc:
                raise ProjectionUnavailable(f"the projections cannot be read: {exc}") from None

    def _catch_up(self, runner: ProjectionRunner, head: int) -> int:
        position = runner.position
        if position >= head or self.wait <= 0:
            return position
        deadline = time.monotonic() + self.wait
        if not self.drive:
            runner.wait_for(head, timeout=self.wait, drive=False)
            return runner.position
        # one request drives at a time; the others find the work done when they get the lock
        if not self._drive_lock.acquire(timeout=self.wait):
            return runner.position
        try:
            left = max(0.0, deadline - time.monotonic())
            runner.wait_for(head, timeout=left, drive=True)
        finally:
            self._drive_lock.release()
        return runner.position

    def status(self, names: Sequence[str] | None = None) -> list[ProjectionStatus]:
        """Each projection's position against the head, read as it is (nothing driven)."""
        with self._connection() as conn:
            try:
                return projection_status(self.app, conn.store, make(names))
            except ProjectionStoreError as exc:
                raise ProjectionUnavailable(f"the projections cannot be read: {exc}") from None


__all__ = ["POOL_SIZE", "ProjectionUnavailable", "ReadSide", "Reading"]

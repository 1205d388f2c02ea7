"""The projection runner: follows the notification log by polling, batch by batch.

Why polling: the library's SQLite recorder has no subscriptions (DESIGN.md), and polling
``select_notifications`` works the same on SQLite and PostgreSQL. Both stores commit
notifications in id order (SQLite has one writer; the PostgreSQL recorder takes
``LOCK TABLE ... IN EXCLUSIVE MODE`` around each insert), so every id at or below the head
(``max_notification_id``) is committed and will never be filled in later.

One batch (:meth:`ProjectionRunner.run_once`):

1. read the head, then up to ``batch_size`` notifications after the lowest position of the
   runner's projections, up to that head, for the topics the lagging projections handle;
2. decode them (outside any transaction, so the write lock is short), once for all the
   lagging projections, into :class:`~projections.recorded.Recorded` records (read from the
   event table and parsed by ``orjson``, equal to the library's decoding field by field;
   :class:`~projections.recorded.BatchReader`); each projection is handed the events of the
   classes it handles after its own position. Steps 1-3 run with automatic garbage collection held
   off (``domain.collector.paused``): a batch keeps thousands of decoded events alive, which
   the collector otherwise walked again and again (about a fifth of a catch-up's CPU);
3. in **one** transaction of the projection store: lock the projections' tracking rows (one
   statement), check that nobody moved them meanwhile (another runner, a rebuild), apply each
   projection's events after its own position, and move them all to the batch's end (one
   statement). The end is the id of the last notification read when the batch
   is full, else the head read in step 1 (a topic filter skips notifications, and PostgreSQL ids
   can have **gaps** after a refused save: the runner never waits for "the next id").

A crash anywhere before the commit leaves rows and position as they were, so the batch is
applied again from the same position: nothing lost, nothing counted twice. A rebuild drops a
projection's tables and tracking row and replays it from zero in the same way.

Read-your-writes: :meth:`ProjectionRunner.wait_for` returns once every projection of the
runner has passed a notification id (the one a command's save returned, or the head read after
it), driving the batches itself or, with ``drive=False``, waiting for another process to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

from domain.collector import paused
from projections.base import Projection, Tracked
from projections.recorded import BatchReader
from projections.store import ProjectionStore, ProjectionStoreError

#: Notifications a batch reads at most on SQLite. Large, so that a catch-up makes few
#: transactions (each costs a commit and a statement or two a table); a runner that follows
#: the log live reads what arrived since its last batch, usually far fewer. Not larger: on
#: SQLite a batch holds the database's write lock while it is applied.
DEFAULT_BATCH_SIZE = 5000
#: The same on PostgreSQL, where a batch locks only its projections' tracking rows (the
#: application's writers and the readers never wait for it): a batch's fixed cost there is
#: a durable commit, a few dozen round trips and a statement or two a table, about a sixth
#: of the server's work for a catch-up of 8,000 events in batches of 5,000 (issue 15,
#: ``project``; docs/performance-history.md, branch ``pgproj``). About 20,000 decoded events
#: (a few tens of MB) are held at once.
POSTGRES_BATCH_SIZE = 20_000
Progress = Callable[[int, int], None]


class ProjectionOutdated(ProjectionStoreError):
    """A projection's stored rows were written by another schema version: rebuild it."""


class PositionMoved(ProjectionStoreError):
    """Another runner (or a rebuild) moved a projection while this one read a batch."""


@dataclass(frozen=True, slots=True)
class ProjectionStatus:
    name: str
    position: int | None  # None: never run on this store
    head: int
    version: int
    stored_version: int | None

    @property
    def lag(self) -> int:
        return max(0, self.head - (self.position or 0))

    @property
    def outdated(self) -> bool:
        return self.stored_version is not None and self.stored_version != self.version


def projection_status(
    app: Any, store: ProjectionStore, projections: Iterable[Projection]
) -> list[ProjectionStatus]:
    """Each projection's position against the head of the log, without creating anything
    (a projection never run on this store has ``position`` None)."""
    found = store.positions()
    head = int(app.recorder.max_notification_id() or 0)
    return [
        ProjectionStatus(
            name=p.name,
            position=found[p.name][0] if p.name in found else None,
            head=head,
            version=p.version,
            stored_version=found[p.name][1] if p.name in found else None,
        )
        for p in projections
    ]


def default_batch_size(store: ProjectionStore) -> int:
    """A runner's batch size unless told: :data:`POSTGRES_BATCH_SIZE` on PostgreSQL, else
    :data:`DEFAULT_BATCH_SIZE`."""
    return POSTGRES_BATCH_SIZE if store.dialect == "postgres" else DEFAULT_BATCH_SIZE


class ProjectionRunner:
    """Runs ``projections`` over the log of ``app`` into ``store`` (see the module docstring).

    ``batch_size`` defaults to :func:`default_batch_size` of the store.
    ``app`` is any ``eventsourcing`` application (``RoundAudit``): the runner uses its
    ``recorder`` (its event table, ``max_notification_id``) and ``mapper``. ``light=False``
    decodes every batch with the library's ``select_notifications`` and ``mapper`` instead
    (:class:`~projections.recorded.BatchReader`; the tests' reference).
    A runner and its store belong to one thread.
    """

    def __init__(
        self,
        app: Any,
        store: ProjectionStore,
        projections: Iterable[Projection],
        *,
        batch_size: int | None = None,
        filter_topics: bool = True,
        light: bool = True,
    ) -> None:
        self.app = app
        self.reader = BatchReader(app, light=light)
        self.store = store
        self.projections = list(projections)
        if not self.projections:
            raise ValueError("a runner needs at least one projection")
        names = [p.name for p in self.projections]
        if len(set(names)) != len(names):
            raise ValueError(f"projection names must be unique: {names}")
        if batch_size is None:
            batch_size = default_batch_size(store)
        if batch_size < 1:
            raise ValueError("batch_size must be 1 or more")
        self.batch_size = batch_size
        self.filter_topics = filter_topics
        self._handles: dict[str, dict[type, bool]] = {}  # projection -> event class -> handled
        self._create()

    # ------------------------------------------------------------------ schema
    def _create(self) -> None:
        with self.store.transaction(ddl=True) as tx:
            for p in self.projections:
                p.create(tx)
                tx.track(p.name, p.version)

    def _check_versions(self, found: dict[str, tuple[int, int]]) -> None:
        stale = [
            f"{p.name} (stored v{found[p.name][1]}, code v{p.version})"
            for p in self.projections
            if p.name in found and found[p.name][1] != p.version
        ]
        if stale:
            raise ProjectionOutdated(
                "projection tables written by another version: "
                + ", ".join(stale)
                + "; run `roundaudit projections rebuild NAME`"
            )

    # ----------------------------------------------------------------- queries
    @property
    def head(self) -> int:
        """The highest notification id committed to the log (0 when empty)."""
        return int(self.app.recorder.max_notification_id() or 0)

    def positions(self) -> dict[str, int]:
        found = self.store.positions()
        return {p.name: found.get(p.name, (0, p.version))[0] for p in self.projections}

    @property
    def position(self) -> int:
        """The lowest position of the runner's projections."""
        return min(self.positions().values())

    def status(self) -> list[ProjectionStatus]:
        return projection_status(self.app, self.store, self.projections)

    # ----------------------------------------------------------------- running
    def run_once(self, *, head: int | None = None) -> int:
        """Apply one batch; returns how many notifications it read (0 when there were none,
        though the positions may still have moved over skipped topics or gaps).

        ``head``: the head of the log read just before by the caller (every id at or below
        it is committed), which the batch then reads up to instead of asking again (one round
        trip fewer: :meth:`catch_up`'s first batch); by default the head is read after the
        positions.

        Raises :class:`PositionMoved` when another runner moved a projection meanwhile
        (nothing of this batch is kept; run again) and :class:`ProjectionOutdated` when a
        projection must be rebuilt first.
        """
        found = self.store.positions()
        self._check_versions(found)
        before = {p.name: found.get(p.name, (0, p.version))[0] for p in self.projections}
        if head is None:
            head = self.head
        lagging = [p for p in self.projections if before[p.name] < head]
        if not lagging:
            return 0
        start = min(before[p.name] for p in lagging)
        topics: list[str] = []
        if self.filter_topics:
            topics = sorted({t for p in lagging for t in p.topics()})
        with paused():
            # The batch's notifications and events are freed when _read_and_apply returns,
            # before collection resumes: it then finds a small young generation, not them.
            return self._read_and_apply(lagging, before, start + 1, head, topics)

    def _read_and_apply(
        self,
        lagging: Sequence[Projection],
        before: dict[str, int],
        first: int,
        head: int,
        topics: Sequence[str],
    ) -> int:
        events: list[Tracked] = self.reader.read(first, self.batch_size, head, topics)
        end = events[-1][0] if len(events) >= self.batch_size else head
        self._apply(lagging, before, events, end)
        return len(events)

    def _apply(
        self,
        lagging: Sequence[Projection],
        before: dict[str, int],
        events: Sequence[Tracked],
        end: int,
    ) -> None:
        with self.store.transaction() as tx:
            # Lock every tracking row first, with one statement in name order (two runners
            # never deadlock), and check that nobody moved them since they were read.
            found = tx.lock_positions([p.name for p in lagging])
            for p in sorted(lagging, key=lambda p: p.name):
                locked = found.get(p.name)
                if locked is None or locked[0] != before[p.name] or locked[1] != p.version:
                    raise PositionMoved(
                        f"projection {p.name} moved from {before[p.name]} to "
                        f"{None if locked is None else locked[0]} while this batch was read"
                    )
            # The events' classes, once a batch: each projection's share is then picked by a
            # set lookup a class (``compress``), not by Python code an event.
            kinds = [e.cls for _, e in events] if self.filter_topics else []
            classes = set(kinds)
            moves: list[tuple[str, int, int]] = []
            for p in lagging:
                if end <= before[p.name]:
                    # A projection further on than this batch (a new one joined the runner
                    # at 0): the batch is not its business, and its position never goes back.
                    continue
                mine: Sequence[Tracked] = events
                picked: Sequence[type] = kinds
                if events and events[0][0] <= before[p.name]:
                    behind = [n > before[p.name] for n, _ in events]
                    mine = list(compress(events, behind))
                    picked = list(compress(kinds, behind))
                if self.filter_topics:
                    handled = self._handled(p, classes)
                    if not classes <= handled:
                        mine = list(compress(mine, map(handled.__contains__, picked)))
                if mine:
                    p.apply(tx, mine)
                moves.append((p.name, end, p.version))
            # every position moved by one statement, in the transaction of the rows
            tx.set_positions(moves)

    def _handled(self, p: Projection, classes: Iterable[type]) -> set[type]:
        """The event classes among ``classes`` that ``p`` handles (``isinstance``, decided
        once a class: the filter then costs a set lookup an event)."""
        known = self._handles.setdefault(p.name, {})
        for cls in classes:
            if cls not in known:
                known[cls] = issubclass(cls, p.handles)
        return {cls for cls, yes in known.items() if yes}

    def catch_up(self, *, progress: Progress | None = None, retries: int = 5) -> int:
        """Apply batches until every projection has reached the head read at the start;
        returns the number of notifications read. ``progress(position, head)`` is called
        after each batch."""
        target = self.head
        total = 0
        moved = 0
        last = -1
        head: int | None = target  # the first batch reads up to it, without asking again
        while True:
            try:
                n = self.run_once(head=head)
            except PositionMoved:
                moved += 1
                if moved > retries:
                    raise
                continue
            finally:
                head = None
            total += n
            position = self.position
            if progress is not None:
                progress(position, max(target, position))
            if position >= target or (n == 0 and position == last):
                return total
            last = position

    def wait_for(
        self,
        position: int,
        *,
        timeout: float = 10.0,
        drive: bool = True,
        interval: float = 0.05,
    ) -> bool:
        """Block until every projection of the runner is at ``position`` or beyond.

        With ``drive=True`` (default) this runner applies the batches itself; with
        ``drive=False`` it only polls the tracking table while another process runs the
        projections. Returns False when ``timeout`` seconds passed first.
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.position >= position:
                return True
            busy = False
            if drive:
                try:
                    busy = self.run_once() > 0
                except PositionMoved:
                    busy = True
            if time.monotonic() >= deadline:
                return self.position >= position
            if not busy:
                time.sleep(interval)

    def follow(
        self,
        *,
        interval: float = 0.5,
        stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Run batches until ``stop()`` is true, sleeping ``interval`` when caught up."""
        while not stop():
            try:
                n = self.run_once()
            except PositionMoved:
                continue
            if n and on_batch is not None:
                on_batch(n)
            if not n:
                time.sleep(interval)

    # ----------------------------------------------------------------- rebuild
    def rebuild(
        self, names: Iterable[str] | None = None, *, progress: Progress | None = None
    ) -> int:
        """Drop the named projections (default: all of this runner's) with their tracking,
        recreate them empty at position 0 (``reset``) and replay the log; returns
        notifications read."""
        self.reset(names)
        return self.catch_up(progress=progress)

    def reset(self, names: Iterable[str] | None = None) -> None:
        """Drop the named projections (default: all of this runner's) with their tracking and
        recreate them empty at position 0, in one transaction; an unknown name changes
        nothing (``KeyError``)."""
        wanted = set(names) if names is not None else {p.name for p in self.projections}
        unknown = wanted - {p.name for p in self.projections}
        if unknown:
            raise KeyError(f"unknown projection(s): {', '.join(sorted(unknown))}")
        with self.store.transaction(ddl=True) as tx:
            for p in self.projections:
                if p.name in wanted:
                    p.drop(tx)
                    tx.forget(p.name)
                    p.create(tx)
                    tx.set_position(p.name, 0, p.version)

    def dump(self) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
        """Every row of every projection of the runner (tests, audits)."""
        with self.store.read() as tx:
            return {p.name: p.dump(tx) for p in self.projections}


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "POSTGRES_BATCH_SIZE",
    "PositionMoved",
    "ProjectionOutdated",
    "ProjectionRunner",
    "ProjectionStatus",
    "default_batch_size",
    "projection_status",
]

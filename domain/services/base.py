"""RoundAudit's foundation: configuration, the store's recorder with the commit hook, loading
with a plain projector, retries on a concurrent writer's conflict, the vault of sealed RNG
seeds and the API keys.

Seeds of RNG shoes are kept in a sealed table of their own (``stored_sealed_seeds``), outside
the notification log and encrypted with the seed key the application is given
(``domain.vault``), until the shoe is retired and the seed revealed as an event; a seed is
written by the transaction that records its shoe (``domain.side_rows``, :meth:`AuditBase.
_save_new`). API keys are
kept by ``keys`` (``domain.keys.KeyRing``). A command sent with an idempotency key records
its answer in the first transaction it commits (``domain.idempotency``, :meth:`AuditBase._record`).

Every transaction that records events also appends its Merkle leaf (``domain.commit_leaf``),
written by the store's recorder in the same database transaction (the commit hook,
``domain.commits``): :meth:`AuditBase.install_commit_writer` adds another kind of row to every
transaction, :meth:`AuditBase.commit_table` reads one back. :meth:`AuditBase.save` is the
library's, with each aggregate's events collected by :class:`Collected` (no run-time Protocol
check per object: the boundless round index saves through it too), and stored by the
library's event store whose ``put`` makes its records the short way (``domain.event_store``,
:meth:`AuditBase.construct_event_store`). A command reads its round's
shoe through :class:`ShoeOf`, only when it needs the shoe.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.domain import Aggregate, BaseAggregate
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    EventStore,
    Recording,
)
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.utils import Environment, EnvType

from domain.commits import CommitHook, CommitWriter, hooked_recorder
from domain.errors import (
    AlreadyExists,
    ConcurrentUpdate,
    DomainError,
    InvalidRequest,
    ShoeNotFound,
)
from domain.event_store import LeanEventStore
from domain.group_commit import CARRIED
from domain.idempotency import CURRENT, KWARG, IdempotencyStore
from domain.ids import check_id as check_id_grammar
from domain.ids import check_player_id
from domain.keys import KeyRing
from domain.leaf_writer import MerkleLeafWriter
from domain.log_tail import stored_uuid
from domain.recorder import Recorder, RoundRecorder
from domain.shoe import Shoe
from domain.side_rows import NONE, SEEDS, SHOE_ROUNDS, SideRows, SideRowWriter
from domain.sqlite_pool import plain_checkouts
from domain.store import CONFLICTS, LogTail, Saving, Watched, fork, keep_saved, project, retry
from domain.table import Table
from domain.vault import SeedKeyRing, SeedVault, ephemeral_ring

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
A = TypeVar("A", bound="AuditBase")
Json = dict[str, Any]
MAX_NUMBER = 2**62
MAX_DECKS = 16
#: The aggregates whose state is flat (``domain.store.fork``): copied one level deep for a
#: command (a recorder's immutable game state shared), never deep-copied.
FLAT_AGGREGATES: tuple[type, ...] = (Recorder, Shoe, Table)
#: The aggregates a save puts into the cache when it does not hold them yet (a round, shoe or
#: table just created: the next command reads it); others only refresh an entry it holds
#: (``domain.store.keep_saved``: a boundless round's thousands of participations stay out).
KEPT_NEW: tuple[type, ...] = (RoundRecorder, Shoe, Table)
#: How many shoes' opened seeds a process keeps (the oldest forgotten first).
OPENED_SEEDS = 1000


class AuditBase(Application[UUID]):
    """The store under every command group of ``RoundAudit``."""

    name = "RoundAudit"
    # A bounded cache of aggregates, fast-forwarded from the store on every get (so another
    # process's writes are seen) and copied for each command (so a refused command leaves it
    # untouched: ``_get``, ``domain.store.fork``). Long-lived aggregates (a deluxe Table
    # across thousands of rounds) then cost only their new events to load, not their whole
    # history; a round's state is immutable, so its copy shares it. A committed save leaves a
    # copy of what it saved in the cache (``_record``, ``domain.store.keep_saved``), so the next
    # command does not read back and apply the events this process has just written.
    env: ClassVar[dict[str, str]] = {"AGGREGATE_CACHE_MAXSIZE": "1000"}
    #: the store's group commit tells the repository of its groups' saves (construct_repository)
    _told_at_commit: bool = False

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Configuration comes only from the ``env`` passed in (never ``os.environ``), so a
        stray ``ROUNDAUDIT_*`` variable cannot switch the store or its safety settings."""
        merged = dict(type(self).env)
        if env is not None:
            merged.update(env)
        return Environment(name, merged)

    def __init__(
        self, env: Mapping[str, str] | None = None, *, seed_key: SeedKeyRing | None = None
    ) -> None:
        """``seed_key``: the keys that seal RNG seeds at rest (the service and the command
        line pass ``ROUNDAUDIT_SEED_KEY``'s). Without it, a key made for this process only is
        used: fine for tests and throwaway stores, but no other process can then open the
        seeds of the shoes it left open."""
        self._commit_tables: dict[str, AggregateRecorder] = {}
        super().__init__(env=dict(env) if env is not None else None)
        # shoe id -> its opened seed: a sealed seed never changes, so each shoe's is read and
        # opened once per process, not once per command that draws (``_sealed_seed``); a shoe
        # this process creates keeps the seed its save sealed once the save has committed
        # (``_save_new``), neither read back nor decrypted
        self._opened_seeds: dict[UUID, bytes] = {}
        self.vault = SeedVault(
            self.commit_table(SEEDS), seed_key if seed_key is not None else ephemeral_ring()
        )
        # shoe id -> the rounds started on it (versions 1..n), to tell which are in play
        self._shoe_rounds = self.commit_table(SHOE_ROUNDS)
        # rounds known finished (that never changes back) -> their shoe id
        self._finished: dict[UUID, UUID | None] = {}
        self.keys = KeyRing(self)
        self.install_commit_writer(MerkleLeafWriter())  # no event is ever outside the log
        # a new shoe's sealed seed and a new round's index row, in the save that records it
        self.install_commit_writer(SideRowWriter())
        # what a command sent with an idempotency key answered, in its own transaction
        self.idempotency = IdempotencyStore(self)

    # ------------------------------------------------------------------ the commit hook
    def construct_recorder(self) -> ApplicationRecorder:
        """The store's recorder with the commit hook (``domain.commits``), whatever the
        environment says: no RoundAudit records an event outside the Merkle log. On SQLite
        its datastore's checkouts are plain context managers (``domain.sqlite_pool.
        plain_checkouts``)."""
        recorder = hooked_recorder(self.factory)
        datastore = getattr(recorder, "datastore", None)
        if isinstance(datastore, SQLiteDatastore):
            plain_checkouts(datastore)
        return recorder

    def construct_event_store(self) -> EventStore[UUID]:
        """The library's event store whose ``put`` makes its records the short way
        (``domain.event_store``: the same records and stored bytes)."""
        return LeanEventStore(mapper=self.mapper, recorder=self.recorder)

    def construct_repository(self) -> Watched:
        """The repository whose cache is caught up with the log once a command, not queried
        per aggregate (``domain.store.Watched``; the library's cache settings otherwise),
        told of each group commit's events by the store's group commit itself."""
        size = self.env.get(self.AGGREGATE_CACHE_MAXSIZE)
        assert isinstance(self.recorder, CommitHook)  # every hooked recorder reads the tail
        log = cast(LogTail, self.recorder)
        committer = getattr(self.recorder, "group_commit", None)  # domain.group_commit
        repository = Watched(
            self.events,
            log,
            cache_maxsize=int(size) if size else 1000,
            flat=FLAT_AGGREGATES,
            new=KEPT_NEW,
            flight=committer,
        )
        if committer is not None:  # a group's saves reach the cache at its commit
            committer.committed = repository.committed
        self._told_at_commit = committer is not None
        return repository

    @property
    def commit_hook(self) -> CommitHook:
        assert isinstance(self.recorder, CommitHook)
        return self.recorder

    def commit_table(self, purpose: str) -> AggregateRecorder:
        """The table a commit writer writes (made on first use; the same object the hook
        writes through, so the in-memory store shares it)."""
        if purpose not in self._commit_tables:
            self._commit_tables[purpose] = self.factory.aggregate_recorder(purpose=purpose)
        return self._commit_tables[purpose]

    def install_commit_writer(self, writer: CommitWriter) -> None:
        """Run ``writer`` in every transaction that records events from now on (see
        ``domain.commits``: it receives the transaction's events and ``app.save``'s keyword
        arguments, and its rows commit or roll back with them)."""
        self.commit_hook.install(writer, {p: self.commit_table(p) for p in writer.purposes})

    def save(
        self, *objs: Any | None, **kwargs: Any
    ) -> list[Recording[UUID]]:  # the library's signature, for every caller
        """The library's ``save``, collecting the aggregates' events by :class:`Collected`
        (no run-time Protocol check per aggregate), then recording them as the library does."""
        processing_event = Collected(objs, kwargs)
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        self._notify(recordings)
        self.notify(processing_event.events)  # the library's deprecated hook, called as it does
        return recordings

    def _record(self, processing_event: ProcessingEvent[UUID]) -> list[Recording[UUID]]:
        """The library's recording, carrying the idempotency record of the command running
        under an idempotency key (``domain.idempotency``) in its first transaction: the
        answer is rendered from the aggregates this transaction commits."""
        repository = self.repository
        saving: Saving | None = None
        if isinstance(repository, Watched) and self._told_at_commit:
            # a group commit's leader gives them to the repository at the commit
            # (domain.group_commit.CARRIED, domain.store.Watched.committed)
            saving = Saving(processing_event.aggregates)
            processing_event.saved_kwargs[CARRIED] = saving
        pending = CURRENT.get()
        if (
            pending is None
            or pending.committed is not None
            or KWARG in processing_event.saved_kwargs
        ):
            recordings = super()._record(processing_event)
        else:
            record = pending.record_for(processing_event.aggregates)
            processing_event.saved_kwargs[KWARG] = (record, record.stored(pending.seal))
            recordings = super()._record(processing_event)
            pending.committed = record
        if saving is not None and saving.told:  # its group's leader told the repository
            return recordings
        # committed: the next command's get starts from what it saved (domain.store.keep_saved),
        # and the cache's mark moves past these events (domain.store.Watched.saved)
        if isinstance(repository, Watched):
            rows = [
                (r.notification.id, r.domain_event.originator_id, r.domain_event.originator_version)
                for r in recordings
            ]
            repository.saved(rows, processing_event.aggregates)
        else:
            keep_saved(repository.cache, processing_event.aggregates, FLAT_AGGREGATES, KEPT_NEW)
        return recordings

    # ------------------------------------------------------------------ plumbing
    def _get(self, cls: type[T], ident: UUID, missing: type[DomainError], what: str) -> T:
        found = self._get_or_none(cls, ident)
        if found is None:
            raise missing(f"{what} not found")
        return found

    def _get_or_none(self, cls: type[T], ident: UUID) -> T | None:
        """The aggregate ``ident`` of class ``cls`` (a copy of the cached one), or None when
        there is none: one read where asking ``ident in repository`` first read it twice."""
        try:
            cached: object = self.repository.get(
                ident, projector_func=project, deepcopy_from_cache=False
            )
        except AggregateNotFoundError:
            return None
        return fork(cached, FLAT_AGGREGATES) if isinstance(cached, cls) else None

    def _retry(self, fn: Callable[[], T]) -> T:
        """``fn`` (a command), each attempt after catching the cache up with the log."""

        def attempt() -> T:
            with self._caught_up():
                return fn()

        return retry(attempt)

    def _caught_up(self) -> AbstractContextManager[None]:
        """A block (one command attempt) that first catches the cache up with the log, then
        uses cached aggregates without a query each (``domain.store.Watched.current``)."""
        repository = self.repository
        return repository.current() if isinstance(repository, Watched) else nullcontext()

    def _save_new(
        self, first: Aggregate, *others: Aggregate | None, what: str, side: SideRows = NONE
    ) -> list[Recording[UUID]]:
        """Save the new aggregate ``first`` (``what`` names it), the others changed with it and
        the side rows written with them (``domain.side_rows``), in one transaction.

        Not retried: the library takes an aggregate's pending events as it saves them, so a
        second attempt with the same objects would record nothing and still answer success.
        A conflict is :class:`~domain.errors.AlreadyExists` when another writer created
        ``first`` meanwhile, else :class:`~domain.errors.ConcurrentUpdate`; either way nothing
        of this save is recorded."""
        try:
            recordings = self.save(first, *others, **side.save_kwargs())
        except CONFLICTS:
            if self.recorder.select_events(first.id, limit=1):  # the store, not a cache
                raise AlreadyExists(f"{what} already exists") from None
            raise ConcurrentUpdate(
                f"another writer changed what {what} is created with at the same moment; "
                "nothing was recorded: send the command again"
            ) from None
        for sealed in side.sealed_seeds:  # committed: the seed it sealed, never decrypted back
            self._keep_seed(stored_uuid(sealed.row.originator_id), sealed.seed)
        return recordings

    # ------------------------------------------------------------- sealed seeds
    def _sealed_seed(self, shoe: Shoe) -> bytes | None:
        if shoe.kind != "rng":
            return None
        seed = self._opened_seeds.get(shoe.id)
        if seed is not None:
            return seed
        seed = self.vault.open(shoe.id)
        if seed is None:
            raise ShoeNotFound(f"the sealed seed of shoe {shoe.id} is missing from the vault")
        self._keep_seed(shoe.id, seed)
        return seed

    def _keep_seed(self, shoe_id: UUID, seed: bytes) -> None:
        if len(self._opened_seeds) >= OPENED_SEEDS:
            self._opened_seeds.pop(next(iter(self._opened_seeds)), None)
        self._opened_seeds[shoe_id] = seed

    def shoe(self, shoe_id: str | UUID) -> Shoe:
        return self._get(Shoe, uuid_of(shoe_id, ShoeNotFound), ShoeNotFound, f"shoe {shoe_id}")


class ShoeOf:
    """A command's shoe, read (``read(shoe_id)``: from the caught-up cache, as the round was)
    when first asked for, then the same object: a command that draws no card and retires no
    shoe does not read it (``Rounds._run``). :meth:`touched` is the shoe to save: when it was
    read and has changed since."""

    __slots__ = ("_id", "_read", "_shoe", "_version")

    def __init__(self, read: Callable[[str], Shoe], shoe_id: str) -> None:
        self._read = read
        self._id = shoe_id
        self._shoe: Shoe | None = None
        self._version = 0

    def __call__(self) -> Shoe:
        shoe = self._shoe
        if shoe is None:
            shoe = self._shoe = self._read(self._id)
            self._version = shoe.version
        return shoe

    def touched(self) -> Shoe | None:
        shoe = self._shoe
        return shoe if shoe is not None and shoe.version != self._version else None


class Collected(ProcessingEvent[UUID]):
    """The events and aggregates of one ``app.save(...)``, collected as the library's
    ``ProcessingEvent.collect_events`` does, the same events in the same order, but an
    aggregate (``eventsourcing.domain.BaseAggregate``, every one ``RoundAudit`` saves) is
    recognised by its class: the library asks ``isinstance`` of two run-time checkable
    Protocols for every object (about 9 us an aggregate, 3-4 % of a command's CPU). Anything
    else (a bare event, another kind of object) goes through the library's own method."""

    def __init__(self, objs: tuple[Any | None, ...], kwargs: Mapping[str, Any]) -> None:
        super().__init__()
        for obj in objs:
            if isinstance(obj, BaseAggregate):
                self.events.extend(obj.collect_events())
                self.aggregates[obj.id] = obj
            elif obj is not None:
                super().collect_events(obj)  # in its place, by the library
        self.saved_kwargs.update(kwargs)


def caught_up(fn: Callable[Concatenate[A, P], R]) -> Callable[Concatenate[A, P], R]:
    """Run the ``RoundAudit`` command ``fn`` in one caught-up block (``AuditBase._caught_up``):
    for a command not retried as a whole (``start_round``)."""

    @functools.wraps(fn)
    def wrapper(app: A, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with app._caught_up():
            return fn(app, *args, **kwargs)

    return wrapper


def check_id(value: object, field: str) -> None:
    """The id grammar (``domain.ids``): player ids its narrower form."""
    if field in ("player_id", "player"):
        check_player_id(value, field)
    else:
        check_id_grammar(value, field)


def check_number(value: object, field: str, high: int = MAX_NUMBER) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidRequest(f"{field} must be a whole number from 1 to {high}, got {value!r}")


#: Text -> the UUID it parses to, for the ids commands name as text (a round's id on each of
#: its commands, its shoe's id): parsed once while kept (:data:`UUIDS_KEPT` at most, all
#: forgotten when full). Only text that parses is kept; a UUID is never changed in place.
_PARSED: dict[str, UUID] = {}
UUIDS_KEPT = 4096


def uuid_of(value: str | UUID, missing: type[DomainError]) -> UUID:
    """``value`` as a UUID (text parsed as ``UUID(text)`` parses it, once while kept:
    :data:`_PARSED`); ``missing`` raised when it is none."""
    if isinstance(value, UUID):
        return value
    if type(value) is str:
        found = _PARSED.get(value)
        if found is not None:
            return found
    try:
        parsed = UUID(str(value))
    except ValueError:
        raise missing(f"{value!r} is not a valid id (a UUID)") from None
    if type(value) is str:
        if len(_PARSED) >= UUIDS_KEPT:
            _PARSED.clear()
        _PARSED[value] = parsed
    return parsed


def uuid_or_none(value: object) -> UUID | None:
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError:
        return None


__all__ = [
    "FLAT_AGGREGATES",
    "MAX_DECKS",
    "MAX_NUMBER",
    "AuditBase",
    "ShoeOf",
    "caught_up",
    "check_id",
    "check_number",
    "uuid_of",
    "uuid_or_none",
]

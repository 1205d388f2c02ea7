"""Idempotency records: what a command sent under an idempotency key answered, kept in the
transaction that recorded it.

A client (an API key) sends a state-changing command with an idempotency key. This module owns
the **record** of such a command and where it is kept; ``api.idempotency`` owns the HTTP side
(the ``Idempotency-Key`` header, the fingerprint, replays and refusals).

* **The record** (:class:`Record`): the API key's id and the idempotency key (its scope: one
  API key's keys never meet another's), the request's fingerprint (method, path, canonical
  body), when it was made, and the answer: status, the headers that matter (``Location``,
  ``Content-Type``) and the body's exact bytes (compressed when large; **sealed** with
  AES-256-GCM under a key derived from the sender's API key secret when the answer holds a
  secret, ``POST /api-keys``' token: the store, which holds only a hash of that secret, cannot
  open it).
* **Same transaction.** The record is written by a commit writer (``domain.commits``,
  :class:`IdempotencyWriter`) in the very database transaction that records the command's
  events: an acknowledged command and its record are never separated, and a crash leaves
  either both or neither. The application hands the writer the record through the command's
  :class:`PendingCommand` (a context variable set by the web layer for the duration of one
  command): the first transaction the command makes (``domain.services.base``,
  ``AuditBase._record``) renders the answer from the aggregates it is about to commit and
  carries the record.
* **One winner.** The record's key is the table's primary key (originator id
  :func:`record_id`, version 1): of two processes running the same command at once, the second
  transaction to commit aborts whole (nothing of its command is recorded) and that process
  answers the winner's record. A retry of a conflicting transaction first looks for the record
  (:class:`RecordedElsewhere` when another transaction holds it).
* **Commands whose answer comes later.** A boundless round's command records its input in one
  transaction and then does the round's automatic work in several more (thousands of players);
  its first transaction carries a **claim** (version 1, no answer yet) and the answer follows
  as version 2 once the work is done. A repeat that finds a claim without an answer waits for
  it; after the lease it is answered by the route's recovery (``api.idempotency``).
* **Refusals** record no events: their record (the problem answered) is written in a
  transaction of its own, with the same primary key.
* **Retention.** Records are kept at least the window (default 7 days) and then deleted by
  :meth:`IdempotencyStore.prune` (``roundaudit idempotency prune``, and the service every
  hour): it never deletes a record younger than the window. Each row's topic carries its
  creation time (``roundaudit:idempotency@<UTC time>``), indexed, so a prune is one range
  delete.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol
from uuid import UUID

import orjson
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from eventsourcing.persistence import AggregateRecorder, IntegrityError, StoredEvent
from eventsourcing.popo import POPOAggregateRecorder
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder
from eventsourcing.utils import strtobool
from isal import isal_zlib
from psycopg.sql import SQL, Identifier

from domain.commits import CommittedEvent, CommitTransaction, CommitWriter
from domain.event_store import frozen
from domain.log_tail import PostgresTail, SQLiteTail
from domain.store import TAIL_PAGE, Watched


class Store(Protocol):
    """What the records need of the application (``domain.services.base.AuditBase``): its
    commit tables, its commit writers, and a transaction of its own."""

    def commit_table(self, purpose: str) -> AggregateRecorder: ...

    def install_commit_writer(self, writer: CommitWriter) -> None: ...

    def save(self, **kwargs: Any) -> object: ...


PURPOSE: Final = "idempotency"
TOPIC_PREFIX: Final = "roundaudit:idempotency@"
DEFAULT_WINDOW: Final = timedelta(days=7)
KWARG: Final = "idempotency"
_COMPRESS_ABOVE = 2048
#: ISA-L's level for a record's answer (``isal.isal_zlib``: levels 0-3; the output is a zlib
#: stream, read by ``zlib.decompress``). Measured on a deposit's answer (13,144 bytes, its
#: wallet's latest 50 movements; callgrind, a compression): zlib level 1 at memory level 4
#: (what records were written with before, branch `hdep2`) 593 bytes in 219,800 instructions;
#: ISA-L level 0 877 bytes in 40,800, level 1 584 in 82,800, level 2 584 in 85,500. Level 0
#: also grows an answer that does not compress by a quarter (5,000 random bytes: 6,259, where
#: level 1 writes 5,011 and zlib 5,031); level 1 writes no more than zlib did on these.
_COMPRESS_LEVEL = 1
_SEAL_INFO = b"roundaudit idempotency answer v1"

Aggregates = Mapping[UUID, Any]
Render = Callable[[Aggregates], "Answer | None"]


def record_id(key_id: str, key: str) -> UUID:
    """The record's id: a hash of the API key's id and the idempotency key (its scope)."""
    digest = hashlib.sha256(
        b"roundaudit-idempotency\x00" + key_id.encode() + b"\x00" + key.encode()
    )
    return UUID(bytes=digest.digest()[:16])


#: The text of a record's time (:func:`now_text`), as ``strftime`` writes it.
TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"


def now_text(at: datetime | None = None) -> str:
    """A UTC time as fixed-width text (sorts as it compares): :data:`TIME_FORMAT` as
    ``strftime`` writes it. A year of four digits (1000-9999) is written by ``%`` formatting,
    the same text at about a third of ``strftime``'s CPU (every command under a key makes one);
    an earlier year, which glibc's ``%Y`` does not pad to four digits, by ``strftime`` itself.

    >>> now_text(datetime(2024, 5, 1, 12, 0, tzinfo=UTC))
    '2024-05-01T12:00:00.000000Z'
    """
    t = (at or datetime.now(UTC)).astimezone(UTC)
    if t.year < 1000:
        return t.strftime(TIME_FORMAT)
    # ``%`` rather than an f-string: 0.9 us against 1.5 (the f-string formats each field apart)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (  # noqa: UP031
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond,
    )  # fmt: skip


def compress(body: bytes) -> bytes:
    """A record's answer as the zlib stream it keeps: ISA-L's deflate (``isal.isal_zlib``, level
    :data:`_COMPRESS_LEVEL`, a 32 KiB window), about a third of zlib's instructions at level 1.
    Its output is a zlib stream like any other (``"encoding": "zlib"``): ``zlib.decompress``
    gives the body back, in this release and in a process of an earlier one (a rolling upgrade
    reads either way), as it does every record zlib wrote before (level 6, level 1, memory
    level 8 or 4)."""
    return isal_zlib.compress(body, _COMPRESS_LEVEL, isal_zlib.MAX_WBITS)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer exactly as it was given."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class RecordedElsewhere(Exception):
    """Another transaction holds the record of this key: this command must answer it."""


@dataclass(frozen=True)
class Record:
    """One row of the table (see the module docstring)."""

    record_id: UUID
    key_id: str
    key: str
    fingerprint: str
    method: str
    path: str
    created: str
    version: int = 1
    answer: Answer | None = None
    sealed: bool = False
    check_first: bool = False

    @property
    def topic(self) -> str:
        return TOPIC_PREFIX + self.created

    def answered(self, answer: Answer | None, *, check_first: bool) -> Record:
        """This record with ``answer`` and ``check_first`` (``dataclasses.replace``'s record:
        its fields, two of them replaced, become the new record's ``__dict__`` at once,
        ``domain.event_store.frozen``, where ``replace`` reads the class's fields again and
        the constructor sets each of the eleven through ``object.__setattr__``; every
        command under a key makes one)."""
        return frozen(Record, {**self.__dict__, "answer": answer, "check_first": check_first})

    def state(self, seal: Callable[[UUID, bytes], bytes] | None = None) -> bytes:
        doc: dict[str, Any] = {
            "key_id": self.key_id,
            "key": self.key,
            "fingerprint": self.fingerprint,
            "method": self.method,
            "path": self.path,
            "created": self.created,
        }
        if self.answer is not None:
            body = self.answer.body
            encoding = "raw"
            if len(body) > _COMPRESS_ABOVE:
                body, encoding = compress(body), "zlib"
            sealed = seal is not None and self.sealed
            if sealed:
                assert seal is not None
                body = seal(self.record_id, body)
            doc["answer"] = {
                "status": self.answer.status,
                "headers": [list(h) for h in self.answer.headers],
                "body": base64.b64encode(body).decode(),
                "encoding": encoding,
                "sealed": sealed,
            }
        return orjson.dumps(doc)

    def stored(self, seal: Callable[[UUID, bytes], bytes] | None = None) -> StoredEvent:
        return StoredEvent(self.record_id, self.version, self.topic, self.state(seal))

    @classmethod
    def parse(
        cls, row: StoredEvent, unseal: Callable[[UUID, bytes], bytes | None] | None = None
    ) -> Record:
        doc = orjson.loads(row.state)
        rid = (
            row.originator_id
            if isinstance(row.originator_id, UUID)
            else UUID(str(row.originator_id))
        )
        answer = None
        sealed = False
        a = doc.get("answer")
        if a is not None:
            body = base64.b64decode(a["body"])
            sealed = bool(a.get("sealed"))
            if sealed:
                opened = unseal(rid, body) if unseal is not None else None
                body = opened if opened is not None else b""
            if a.get("encoding") == "zlib" and (not sealed or body):
                body = zlib.decompress(body)
            answer = Answer(int(a["status"]), body, tuple((k, v) for k, v in a["headers"]))
        return cls(
            record_id=rid,
            key_id=doc["key_id"],
            key=doc["key"],
            fingerprint=doc["fingerprint"],
            method=doc["method"],
            path=doc["path"],
            created=doc["created"],
            version=int(row.originator_version),
            answer=answer,
            sealed=sealed,
        )


def sealer(
    secret: bytes,
) -> tuple[Callable[[UUID, bytes], bytes], Callable[[UUID, bytes], bytes | None]]:
    """(seal, unseal) with AES-256-GCM under HKDF-SHA256(``secret``), the record id as salt."""

    def key(rid: UUID) -> bytes:
        return HKDF(SHA256(), 32, rid.bytes, _SEAL_INFO).derive(secret)

    def seal(rid: UUID, data: bytes) -> bytes:
        nonce = hashlib.sha256(rid.bytes + data).digest()[:12]
        return nonce + AESGCM(key(rid)).encrypt(nonce, data, rid.bytes)

    def unseal(rid: UUID, data: bytes) -> bytes | None:
        try:
            return AESGCM(key(rid)).decrypt(data[:12], data[12:], rid.bytes)
        except Exception:
            return None

    return seal, unseal


@dataclass
class PendingCommand:
    """The command running now under an idempotency key (set by the web layer)."""

    claim: Record
    render: Render | None = None
    seal: Callable[[UUID, bytes], bytes] | None = None
    #: The record committed with the command's first transaction, once it has committed.
    committed: Record | None = None
    attempts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def record_for(self, aggregates: Aggregates) -> Record:
        """The record this attempt's transaction carries: the answer rendered from the
        aggregates about to be committed, or a claim when it cannot be rendered yet."""
        self.attempts += 1
        answer = self.render(aggregates) if self.render is not None else None
        return self.claim.answered(answer, check_first=self.attempts > 1)


CURRENT: ContextVar[PendingCommand | None] = ContextVar("roundaudit_idempotency", default=None)


class IdempotencyWriter:
    """The commit writer of the records (``domain.commits``)."""

    purposes: tuple[str, ...] = (PURPOSE,)

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        item = kwargs.get(KWARG)
        if item is None:
            return
        record, row = item
        if record.check_first and tx.last(PURPOSE, record.record_id) is not None:
            raise RecordedElsewhere(f"idempotency key {record.key!r} is recorded already")
        tx.insert(PURPOSE, [row])


class IdempotencyStore:
    """The records of one application (see the module docstring)."""

    def __init__(self, app: Store) -> None:
        self.app = app
        self.table: AggregateRecorder = app.commit_table(PURPOSE)
        app.install_commit_writer(IdempotencyWriter())
        env: Any = getattr(app, "env", {})
        if strtobool(env.get("CREATE_TABLE") or "yes"):
            # not on a read replica (CREATE_TABLE=n): the primary made the index
            self._index()

    # ------------------------------------------------------------------ reading
    def rows(self, rid: UUID) -> list[StoredEvent]:
        """The record's rows. Inside a command's scope (``domain.store.Watched.ahead``), read
        with the log's tail that the command's catch-up reads next: on PostgreSQL in the same
        round trip (``domain.log_tail.PostgresTail.rows_and_tail``), on SQLite on the same
        connection (``SQLiteTail.rows_and_tail``, which also reads the rows alone, outside a
        scope, without the library's transaction around them): the same rows either way."""
        repository = getattr(self.app, "repository", None)
        recorder = getattr(self.app, "recorder", None)
        if isinstance(repository, Watched) and isinstance(recorder, PostgresTail):
            after = repository.tail_wanted()
            if after is not None and isinstance(self.table, PostgresAggregateRecorder):
                rows, tail = recorder.rows_and_tail(
                    self.table.events_table_name, rid, after, TAIL_PAGE
                )
                repository.offer_tail(after, tail)
                return list(rows)
        if isinstance(recorder, SQLiteTail) and isinstance(self.table, SQLiteAggregateRecorder):
            after = repository.tail_wanted() if isinstance(repository, Watched) else None
            read, sqlite_tail = recorder.rows_and_tail(
                self.table.events_table_name, rid, after, TAIL_PAGE
            )
            if after is not None and sqlite_tail is not None and isinstance(repository, Watched):
                repository.offer_tail(after, sqlite_tail)
            return read
        found: Sequence[StoredEvent] = self.table.select_events(rid)
        return list(found)

    def get(
        self, rid: UUID, unseal: Callable[[UUID, bytes], bytes | None] | None = None
    ) -> list[Record]:
        """The record's rows (version 1: the record or a claim; version 2: a claim's answer)."""
        return [Record.parse(r, unseal) for r in self.rows(rid)]

    # ------------------------------------------------------------------ writing
    def put(self, record: Record, seal: Callable[[UUID, bytes], bytes] | None = None) -> bool:
        """Write ``record`` in a transaction of its own (no events); False when its key is
        taken already (the other writer won)."""
        try:
            self.app.save(**{KWARG: (record, record.stored(seal))})
        except (IntegrityError, RecordedElsewhere):
            return False
        return True

    # ------------------------------------------------------------------ retention
    def _index(self) -> None:
        """An index on the rows' topic (their creation time), for the prune's range delete."""
        table = self.table
        if isinstance(table, SQLiteAggregateRecorder):
            name = table.events_table_name
            with table.datastore.transaction(commit=True) as c:
                c.execute(f"CREATE INDEX IF NOT EXISTS {name}_created ON {name} (topic)")
        elif isinstance(table, PostgresAggregateRecorder):
            schema, name = table.datastore.schema, table.events_table_name
            with table.datastore.transaction(commit=True) as curs:
                curs.execute(
                    SQL("CREATE INDEX IF NOT EXISTS {} ON {}.{} (topic)").format(
                        Identifier(f"{name}_created"), Identifier(schema), Identifier(name)
                    )
                )

    def prune(self, *, window: timedelta = DEFAULT_WINDOW, now: datetime | None = None) -> int:
        """Delete the records made before ``now - window`` (never a younger one); how many
        rows went."""
        if window < timedelta(0):
            raise ValueError("the window cannot be negative")
        cutoff = TOPIC_PREFIX + now_text((now or datetime.now(UTC)) - window)
        table = self.table
        if isinstance(table, SQLiteAggregateRecorder):
            name = table.events_table_name
            with table.datastore.transaction(commit=True) as c:
                c.execute(
                    f"DELETE FROM {name} WHERE topic >= ? AND topic < ?", (TOPIC_PREFIX, cutoff)
                )
                return int(c.sqlite_cursor.rowcount)
        if isinstance(table, PostgresAggregateRecorder):
            schema, name = table.datastore.schema, table.events_table_name
            with table.datastore.transaction(commit=True) as curs:
                curs.execute(
                    SQL("DELETE FROM {}.{} WHERE topic >= %s AND topic < %s").format(
                        Identifier(schema), Identifier(name)
                    ),
                    (TOPIC_PREFIX, cutoff),
                )
                return int(curs.rowcount)
        assert isinstance(table, POPOAggregateRecorder)
        return _prune_popo(table, cutoff)


def _prune_popo(table: POPOAggregateRecorder, cutoff: str) -> int:
    with table._database_lock:
        stored = table._stored_events
        keep = [s for s in stored if not (TOPIC_PREFIX <= s.topic < cutoff)]
        gone = len(stored) - len(keep)
        if gone:
            table._stored_events = keep
            index: defaultdict[str, dict[int, int]] = defaultdict(dict)
            for i, s in enumerate(keep):
                index[str(s.originator_id)][s.originator_version] = i
            table._stored_events_index = index
        return gone


__all__ = [
    "CURRENT",
    "DEFAULT_WINDOW",
    "PURPOSE",
    "TIME_FORMAT",
    "Answer",
    "IdempotencyStore",
    "IdempotencyWriter",
    "PendingCommand",
    "Record",
    "RecordedElsewhere",
    "compress",
    "now_text",
    "record_id",
    "sealer",
]

"""PostgreSQL: a group of concurrent saves committed in one pipeline, two round trips.

This module owns the two ways ``domain.commits``' PostgreSQL recorder commits a group
(``domain.group_commit``), and how it commits a save alone. First :func:`commit_pipelined`:
BEGIN, the events table's lock (``SET LOCAL lock_timeout`` and ``LOCK TABLE ... IN EXCLUSIVE
MODE``, the library's, which keeps commit order equal to notification order) and NOTIFY once
for the group, every save's insert, one sync for the notification ids they got; then every
save's writers' rows (its Merkle leaf, its idempotency record) and the COMMIT, sent together.
A save alone (:func:`commit_alone`) is sent the same way. Without a pipeline, with a
savepoint per save, a group made eight round trips a save, most of them under the lock.

These statements go **through libpq's own calls** (:class:`Pipe`: libpq's pipeline mode on
the pooled connection, as ``api.versions`` and ``domain.log_tail`` read): each insert a
statement prepared once per connection (named by a digest of its text, :data:`PREPARED`),
its parameters and the notification ids it returns in the binary format, up to
:data:`VALUES_ROWS` rows a statement; the writers write and read through
:class:`PipelineTx` (``domain.commits.CommitTransaction``), their inserts sent without a
round trip of their own. Through psycopg's pipeline, a cursor a save and its dict rows, the
group cost about 14 % of a deposit's service CPU (py-spy, branch ``pghttp3``). The rows stored,
their order and their notification ids are the library's (``tests/integration/
test_pg_pipelined_group.py``).

When the database refuses one of the statements (an event at a version another writer took,
a writer's row under a key taken, which it reports only with the COMMIT's sync), nothing of
the group is stored: :func:`commit_pipelined` answers False and the recorder commits the
group again with a savepoint per save (:func:`commit_with_savepoints`, through psycopg's
cursors), so that the conflict is its save's alone. Any other failure before the COMMIT was
sent is raised as one before the commit (each save is then committed alone, retried on a
lost connection); after it, as the commit's (``inserted``: the group fails). A statement
found deallocated (psycopg deallocates every statement of a session when it sees a
``ROLLBACK`` there) is prepared again and the transaction run again once on its connection.

It also owns how the savepoint path and ``CommitHook.transact`` **insert rows** through
psycopg (:func:`insert_rows`): up to :data:`VALUES_ROWS` rows by one prepared ``INSERT ...
VALUES`` with plain parameters, whose text is made once (:func:`statement`); more by the
library's own statement, one array of its composite type (dumped value by value in Python,
about three times the CPU of the plain parameters)."""

from __future__ import annotations

import contextlib
import hashlib
import select
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final, NoReturn
from uuid import UUID

import psycopg
from eventsourcing.persistence import (
    IntegrityError,
    PersistenceError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresAggregateRecorder
from psycopg.pq import ConnStatus, DiagnosticField, ExecStatus, TransactionStatus
from psycopg.sql import SQL, Composable, Identifier

from domain.group_commit import Pending, driver_errors

#: Runs a save's writers in the open transaction: (cursor, its events, their ids, its kwargs).
Write = Callable[[Any, Sequence[StoredEvent], Any, Mapping[str, Any]], None]


#: The most rows :func:`insert_rows` inserts by ``VALUES`` (four parameters a row); a save of
#: more rows (a boundless round's) is inserted by the library's composite array.
VALUES_ROWS: Final = 32

_STATEMENTS: dict[Hashable, bytes] = {}


def statement(curs: Any, key: Hashable, build: Callable[[], Composable]) -> bytes:
    """The text of the statement ``build`` composes, composed once per ``key`` (a statement's
    ``Composed.as_bytes`` otherwise runs at each execution) and kept for the process: the
    inserts here, and ``api.versions``' statement of several ids' last versions."""
    text = _STATEMENTS.get(key)
    if text is None:
        text = _STATEMENTS[key] = build().as_bytes(curs)
    return text


def insert_rows(
    curs: Any, table: PostgresAggregateRecorder, rows: Sequence[StoredEvent], *, ids: bool
) -> None:
    """Insert ``rows`` into ``table``'s events table, in their order, by one statement (with
    ``ids``, ``RETURNING notification_id``: the application recorder's table, whose ids the
    library's ``_fetch_ids_after_insert_events`` then reads); see the module docstring."""
    n = len(rows)
    if n == 0:
        return
    if n > VALUES_ROWS:
        PostgresAggregateRecorder._insert_stored_events(table, curs, rows)
        return
    schema, name = table.datastore.schema, table.events_table_name

    def build() -> Composable:
        return (
            SQL(
                "INSERT INTO {}.{} (originator_id, originator_version, topic, state) VALUES "
            ).format(Identifier(schema), Identifier(name))
            + SQL(", ").join([SQL("(%s, %s, %s, %s)")] * n)
            + SQL(" RETURNING notification_id" if ids else "")
        )

    query = statement(curs, ("insert", schema, name, n, ids), build)
    params: list[Any] = []
    for r in rows:
        params += (r.originator_id, r.originator_version, r.topic, r.state)
    curs.execute(query, params, prepare=True)


def commit_pipelined(
    recorder: Any, batch: list[Pending], inserted: list[bool], run: Run, event: Event
) -> bool:
    """Commit ``batch`` in one pipeline on ``recorder`` (the hooked PostgreSQL application
    recorder, ``domain.commits``): True when committed (each save's ids set), False when the
    database refused a statement (nothing stored, each save's outcome still to decide); see
    the module docstring."""
    sent: list[bool] = []
    try:
        _commit_libpq(recorder, batch, run, event, sent)
    except (psycopg.IntegrityError, IntegrityError):
        for item in batch:
            item.ids = item.error = None
        return False
    except Exception:
        if sent:
            inserted.append(True)  # the COMMIT was sent: its outcome is the group's
        raise
    inserted.append(True)
    return True


def commit_alone(recorder: Any, item: Pending, run: Run, event: Event) -> Sequence[int] | None:
    """Commit one save as :func:`commit_pipelined` commits a group (its two round trips),
    raising what the database refused (the library's error, by ``get_connection``) and any
    writer's error; the ids of its events."""
    _commit_libpq(recorder, [item], run, event, [])
    return item.ids


def _commit_libpq(
    recorder: Any, batch: list[Pending], run: Run, event: Event, sent: list[bool]
) -> None:
    """BEGIN, the lock and NOTIFY (when there are events), every save's insert, a sync; each
    save's writers (``run``), the COMMIT, a sync: through libpq's own calls (:class:`Pipe`).
    ``sent`` is marked once the COMMIT is about to be sent. A statement prepared on the
    connection and deallocated since aborts the transaction (psycopg deallocates every
    statement of the session, ours too, when it sees a ``ROLLBACK`` on a connection where it
    prepared some: the savepoint path's ``ROLLBACK TO``): it is run again once on the same
    connection, once the statements the session still holds are read
    (:meth:`Pipe.known_prepared`): the others are prepared again, and cannot be missing
    again."""
    with recorder.datastore.get_connection() as conn:
        for attempt in range(2):
            sent.clear()
            pipe = Pipe(conn, recorder.datastore)
            try:
                if attempt:
                    pipe.known_prepared()
                pipe.command(b"BEGIN")
                numbered: list[list[int]] = [[] for _ in batch]
                if any(item.events for item in batch):  # else no lock, and no round trip
                    for text in _lock_texts(recorder, conn):
                        pipe.command(text)
                    numbered = [pipe.insert(recorder, item.events, ids=True) for item in batch]
                    pipe.sync()
                tx = PipelineTx(pipe, recorder, event)
                for item, ids in zip(batch, numbered, strict=True):
                    got = ids if item.events else None
                    run(tx, item.events, got, item.kwargs)
                    item.ids, item.error = got, None
                pipe.command(b"COMMIT")
                sent.append(True)
                pipe.sync()
                return
            except _Deallocated:
                for item in batch:
                    item.ids = item.error = None
                if attempt:
                    raise psycopg.OperationalError(
                        "a statement prepared again was deallocated at once"
                    ) from None
            finally:
                pipe.close()


def _lock_texts(recorder: Any, conn: Any) -> list[bytes]:
    """The texts of the library's ``SET LOCAL lock_timeout``, ``LOCK TABLE ... IN EXCLUSIVE
    MODE`` and ``NOTIFY`` for ``recorder``'s events table (made once per process)."""
    key = ("lock", recorder.datastore.schema, recorder.events_table_name)
    found = _LOCKS.get(key)
    if found is None:
        texts = [s.as_bytes(conn) for s in recorder.lock_table_statements]
        texts.append(SQL("NOTIFY {0}").format(Identifier(recorder.channel_name)).as_bytes(conn))
        found = _LOCKS[key] = texts
    return found


_LOCKS: dict[Hashable, list[bytes]] = {}

#: Runs a save's writers in the open transaction: (its transaction, its events, their ids,
#: its kwargs).
Run = Callable[[Any, Sequence[StoredEvent], Any, Mapping[str, Any]], None]
#: Makes an event as a writer reads it (``domain.commits.CommittedEvent``): (notification id,
#: originator id, version, topic, state).
Event = Callable[[int, UUID, int, str, bytes], Any]

_UUID_OID, _INT8_OID, _TEXT_OID, _BYTEA_OID = 2950, 20, 25, 17
_FATAL, _ABORTED, _SYNC = (
    ExecStatus.FATAL_ERROR,
    ExecStatus.PIPELINE_ABORTED,
    ExecStatus.PIPELINE_SYNC,
)
#: The field of a failed result that holds its SQLSTATE (``domain.log_tail`` reads it too).
SQLSTATE: Final = DiagnosticField.SQLSTATE
NO_SUCH_STATEMENT: Final = b"26000"  # invalid_sql_statement_name
#: The statements prepared on each of the pool's connections by their names (forgotten with
#: the connection): :class:`Pipe`'s and ``domain.log_tail``'s.
PREPARED: weakref.WeakKeyDictionary[Any, set[bytes]] = weakref.WeakKeyDictionary()


#: psycopg's errors and the library's that its ``PostgresDatastore.get_connection`` raises for
#: them, psycopg's base ``Error`` last, as ``PersistenceError`` (``domain.group_commit.
#: library_error``; ``domain.log_tail.read_prepared`` takes a connection from the pool without
#: that context manager).
PSYCOPG_ERRORS: Final[tuple[tuple[type[Exception], type[Exception]], ...]] = (
    *driver_errors(psycopg),
    (psycopg.Error, PersistenceError),
)


class _Deallocated(Exception):
    """A statement this process prepared on the connection is gone (its transaction aborted)."""


def raise_for(result: Any, pgconn: Any) -> NoReturn:
    """Raise psycopg's error of the failed ``result``: the error of its SQLSTATE, or
    ``OperationalError`` when the connection is lost (no SQLSTATE, or the connection no
    longer good), as psycopg's cursors raise it; ``get_connection`` makes either the
    library's, and the recorders' retry takes another connection on a lost one."""
    if result.error_field(SQLSTATE) is None or pgconn.status != ConnStatus.OK:
        message = result.error_message.decode(errors="replace") or "the connection was lost"
        raise psycopg.OperationalError(message)
    raise psycopg.errors.error_from_result(result)


def prepared_name(text: bytes) -> bytes:
    """The name of the prepared statement ``text``: a digest of it (another table's, or
    another schema's, statement has another name; no counter shared between threads)."""
    return b"roundaudit_" + hashlib.blake2b(text, digest_size=8).hexdigest().encode()


_Sink = Callable[[Any], None] | None


class Pipe:
    """A pooled connection in libpq's pipeline mode, driven through libpq's own calls (as
    ``api.versions`` and ``domain.log_tail`` read): statements prepared once per connection,
    their parameters and rows in the binary format; results read at each :meth:`sync`,
    waiting on the socket (``select``, which releases the interpreter lock). Any statement
    the database refuses is raised, after the sync, as psycopg's error (:func:`raise_for`).
    :meth:`close` reads what is left, rolls back an open transaction and leaves pipeline
    mode; a connection it cannot bring back idle is closed (the pool discards it)."""

    def __init__(self, conn: Any, datastore: Any) -> None:
        if datastore.originator_id_type != "uuid":
            raise ProgrammingError(
                "the group commit's pipeline sends originator ids as uuid, not "
                f"{datastore.originator_id_type!r}"
            )
        self.conn = conn
        self.pgconn = pgconn = conn.pgconn
        self.prepared = PREPARED.setdefault(conn, set())
        self.schema = datastore.schema
        self.queued: list[tuple[bytes | None, _Sink]] = []  # (a name prepared, or a sink)
        self.syncs = 0  # syncs sent, their results not read yet
        pgconn.enter_pipeline_mode()

    # ------------------------------------------------------------------ sending
    def command(self, text: bytes) -> None:
        """A statement without parameters or rows (unnamed)."""
        self.pgconn.send_query_params(text, None)
        self.queued.append((None, None))

    def query(self, text: bytes, types: Sequence[int], params: Sequence[Any], sink: _Sink) -> None:
        """The prepared statement ``text`` (prepared first on this connection when it is not
        yet), with binary ``params``; ``sink`` is given its result (binary rows)."""
        name = prepared_name_of(text)
        if name not in self.prepared:
            self.pgconn.send_prepare(name, text, types)
            self.queued.append((name, None))
            self.prepared.add(name)  # taken back at the sync unless the database prepared it
        self.pgconn.send_query_prepared(name, params, _binary(len(params)), 1)
        self.queued.append((None, sink))

    @staticmethod
    def oid(value: Any) -> bytes:
        """An originator id as a binary ``uuid`` parameter."""
        return (value if isinstance(value, UUID) else UUID(str(value))).bytes

    def insert(
        self, table: PostgresAggregateRecorder, rows: Sequence[StoredEvent], *, ids: bool
    ) -> list[int]:
        """Insert ``rows`` into ``table``'s events table, in their order, by prepared ``INSERT
        ... VALUES`` statements of up to :data:`VALUES_ROWS` rows; the list the notification
        ids are put in at the sync (with ``ids``)."""
        numbered: list[int] = []
        sink = _ids_into(numbered) if ids else None
        for start in range(0, len(rows), VALUES_ROWS):
            chunk = rows[start : start + VALUES_ROWS]
            n = len(chunk)
            text = _insert_text(self.schema, table.events_table_name, n, ids)
            params: list[Any] = []
            for r in chunk:
                params += (
                    self.oid(r.originator_id),
                    r.originator_version.to_bytes(8, "big", signed=True),
                    r.topic.encode(),
                    r.state,
                )
            self.query(text, (_UUID_OID, _INT8_OID, _TEXT_OID, _BYTEA_OID) * n, params, sink)
        return numbered

    # ------------------------------------------------------------------ reading
    def sync(self) -> None:
        """Send a sync, read every result queued since the last; raise the first statement
        the database refused (the rest were skipped: the transaction is aborted)."""
        pgconn = self.pgconn
        pgconn.pipeline_sync()
        self.syncs += 1
        queued, self.queued = self.queued, []
        self._flush()
        refused = None
        for name, sink in queued:
            done = False
            while (result := self._next()) is not None:
                status = result.status
                if status == _FATAL:
                    refused = refused or result
                elif status != _ABORTED:
                    done = True
                    if sink is not None:
                        sink(result)
            if name is not None and not done:
                self.prepared.discard(name)  # not prepared after all
        result = self._next()
        if result is None or result.status != _SYNC:
            raise_for(result if result is not None else _LOST, pgconn)
        self.syncs -= 1
        if refused is not None:
            if refused.error_field(SQLSTATE) == NO_SUCH_STATEMENT:
                raise _Deallocated
            raise_for(refused, pgconn)

    def _flush(self) -> None:
        pgconn = self.pgconn
        while pgconn.flush():  # the socket took only part: wait for room, reading meanwhile
            if _wait(pgconn.socket, select.POLLIN | select.POLLOUT) & select.POLLIN:
                pgconn.consume_input()

    def _next(self) -> Any:
        """The next result (None between two statements' results), once it has arrived."""
        pgconn = self.pgconn
        while pgconn.is_busy():
            _wait(pgconn.socket, select.POLLIN)
            pgconn.consume_input()
        return pgconn.get_result()

    def known_prepared(self) -> None:
        """Learn which of our statements the session holds (after one was found deallocated:
        psycopg deallocates them all when it sees a ROLLBACK, but not only it can)."""
        self.pgconn.exit_pipeline_mode()
        result = self.pgconn.exec_(b"SELECT name FROM pg_prepared_statements")
        if result.status != ExecStatus.TUPLES_OK:
            raise_for(result, self.pgconn)
        held = {bytes(result.get_value(r, 0) or b"") for r in range(result.ntuples)}
        self.prepared.clear()
        self.prepared.update(name for name in held if name.startswith(b"roundaudit_"))
        self.pgconn.enter_pipeline_mode()

    def close(self) -> None:
        """Read what is left, roll back an open transaction, leave pipeline mode (see the
        class docstring)."""
        pgconn = self.pgconn
        try:
            if self.queued:
                with contextlib.suppress(psycopg.DatabaseError, _Deallocated):
                    self.sync()  # what it refused is rolled back below
            nothing = 0
            while self.syncs:  # a sync whose reading was interrupted
                result = self._next()
                if result is None:
                    nothing += 1
                    if nothing > 2 or pgconn.status != ConnStatus.OK:
                        raise psycopg.OperationalError("a pipeline's results were lost")
                    continue
                nothing = 0
                if result.status == _SYNC:
                    self.syncs -= 1
            if pgconn.transaction_status != TransactionStatus.IDLE:
                self.command(b"ROLLBACK")
                self.sync()
            pgconn.exit_pipeline_mode()
        except Exception:
            self.prepared.clear()
            self.conn.close()  # not brought back idle: the pool discards it


def _wait(fd: int, events: int) -> int:
    """Wait until the socket ``fd`` is ready for ``events`` (the interpreter lock released)."""
    poll = select.poll()
    poll.register(fd, events)
    ready = 0
    while not ready:
        for _, got in poll.poll():
            ready |= got
    return ready


class _Lost:
    """What :func:`raise_for` reads of a result that never came."""

    error_message = b"the connection was lost"

    @staticmethod
    def error_field(field: Any) -> None:
        return None


_LOST: Final = _Lost()


class PipelineTx:
    """A commit writer's transaction (``domain.commits.CommitTransaction``) on a :class:`Pipe`:
    its inserts are sent without waiting (their errors come with the next sync), its reads
    (``last``, ``events``) sync and read at once."""

    def __init__(self, pipe: Pipe, recorder: Any, event: Event) -> None:
        self.pipe, self.recorder, self.event = pipe, recorder, event

    def _name(self, purpose: str) -> str:
        return str(self.recorder.table(purpose).events_table_name)

    def insert(self, purpose: str, rows: Sequence[StoredEvent]) -> None:
        self.pipe.insert(self.recorder.table(purpose), rows, ids=False)

    def append(self, purpose: str, originator_id: UUID, topic: str, state: bytes) -> None:
        pipe = self.pipe
        text = _text(
            "INSERT INTO {0}.{1} (originator_id, originator_version, topic, state) VALUES "
            "($1, (SELECT COALESCE(MAX(originator_version), 0) + 1 FROM {0}.{1} "
            "WHERE originator_id = $1), $2, $3)",
            pipe.schema,
            self._name(purpose),
        )
        params = [pipe.oid(originator_id), topic.encode(), state]
        pipe.query(text, (_UUID_OID, _TEXT_OID, _BYTEA_OID), params, None)

    def last(self, purpose: str, originator_id: UUID) -> StoredEvent | None:
        pipe = self.pipe
        text = _text(
            "SELECT originator_version, topic, state FROM {0}.{1} WHERE originator_id = $1 "
            "ORDER BY originator_version DESC LIMIT 1",
            pipe.schema,
            self._name(purpose),
        )
        got: list[Any] = []
        pipe.query(text, (_UUID_OID,), [pipe.oid(originator_id)], got.append)
        pipe.sync()
        result = got[0]
        if result.ntuples == 0:
            return None
        value = result.get_value
        return StoredEvent(
            originator_id, _int(value(0, 0)), bytes(value(0, 1)).decode(), bytes(value(0, 2))
        )

    def events(self, *, after: int, before: int | None, limit: int) -> list[Any]:
        pipe = self.pipe
        text = _text(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {0}.{1} WHERE notification_id > $1 AND notification_id < $2 "
            "ORDER BY notification_id LIMIT $3",
            pipe.schema,
            self.recorder.events_table_name,
        )
        top = (1 << 63) - 1 if before is None else before
        got: list[Any] = []
        params = [_int8(after), _int8(top), _int8(limit)]
        pipe.query(text, (_INT8_OID,) * 3, params, got.append)
        pipe.sync()
        result, out = got[0], []
        value = result.get_value
        for r in range(result.ntuples):
            out.append(
                self.event(
                    _int(value(r, 0)),
                    UUID(bytes=bytes(value(r, 1))),
                    _int(value(r, 2)),
                    bytes(value(r, 3)).decode(),
                    bytes(value(r, 4)),
                )
            )
        return out


def _int(data: Any) -> int:
    return int.from_bytes(data, "big", signed=True)


def _int8(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _ids_into(numbered: list[int]) -> Callable[[Any], None]:
    def sink(result: Any) -> None:
        value = result.get_value
        numbered.extend(_int(value(r, 0)) for r in range(result.ntuples))

    return sink


_TEXTS: dict[Hashable, bytes] = {}
_NAMES: dict[bytes, bytes] = {}
_FORMATS: dict[int, list[int]] = {}


def _binary(n: int) -> list[int]:
    found = _FORMATS.get(n)
    if found is None:
        found = _FORMATS[n] = [1] * n
    return found


def prepared_name_of(text: bytes) -> bytes:
    """:func:`prepared_name`, made once per text."""
    found = _NAMES.get(text)
    if found is None:
        found = _NAMES[text] = prepared_name(text)
    return found


def _text(template: str, schema: str, table: str) -> bytes:
    """``template`` with ``{0}.{1}`` the table, made once."""
    key = (template, schema, table)
    found = _TEXTS.get(key)
    if found is None:
        found = _TEXTS[key] = (
            SQL(template).format(Identifier(schema), Identifier(table)).as_string().encode()
        )
    return found


def _insert_text(schema: str, table: str, n: int, ids: bool) -> bytes:
    key = ("insert", schema, table, n, ids)
    found = _TEXTS.get(key)
    if found is None:
        values = ", ".join(
            f"(${4 * i + 1}, ${4 * i + 2}, ${4 * i + 3}, ${4 * i + 4})" for i in range(n)
        )
        found = _TEXTS[key] = (
            SQL("INSERT INTO {}.{} (originator_id, originator_version, topic, state) VALUES ")
            .format(Identifier(schema), Identifier(table))
            .as_string()
            .encode()
            + values.encode()
            + (b" RETURNING notification_id" if ids else b"")
        )
    return found


def commit_with_savepoints(
    recorder: Any, batch: list[Pending], inserted: list[bool], write: Write
) -> None:
    """Commit ``batch`` in one transaction, a savepoint per save, each statement its own round
    trip (errors surface in their save's savepoint): a save that meets a conflict is rolled
    back to its savepoint and gets it as its error; the others commit."""
    with recorder.datastore.get_connection() as conn, conn.transaction():
        for item in batch:
            try:
                with conn.transaction(), conn.cursor() as curs:  # a savepoint
                    ids = None
                    if item.events:
                        recorder._insert_stored_events(curs, item.events, **item.kwargs)
                        ids = recorder._fetch_ids_after_insert_events(curs, item.events)
                    write(curs, item.events, ids, item.kwargs)
            except (psycopg.IntegrityError, IntegrityError) as exc:
                item.ids, item.error = None, IntegrityError(str(exc))
                item.error.__cause__ = exc
            else:
                item.ids = ids
        inserted.append(True)


__all__ = [
    "NO_SUCH_STATEMENT",
    "PREPARED",
    "SQLSTATE",
    "VALUES_ROWS",
    "Event",
    "Pipe",
    "PipelineTx",
    "Run",
    "Write",
    "commit_alone",
    "commit_pipelined",
    "commit_with_savepoints",
    "insert_rows",
    "prepared_name",
    "raise_for",
    "statement",
]

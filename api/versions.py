"""The last stored versions of several aggregates read in one round trip.

A request that checks its API key and then reads a kept answer (``GET /rounds/{id}``) needs
two versions from the store: the key's (``api.auth.KeyCache``: a revocation by any process
holds at once) and the round's (``api.roundviews``). On PostgreSQL each point query is a
network round trip; :func:`last_versions` reads both in **one statement** (one indexed
``ORDER BY originator_version DESC LIMIT 1`` per id, joined by ``UNION ALL``), in the same
snapshot, when the request is served. Every other store reads each id by a local point
query, which costs no round trip: SQLite the version alone (:func:`last_version`,
``domain.sqlite_reads.LeanReads.last_version``), the in-memory store its last event through
the recorder's own ``select_events``.

On PostgreSQL the service reads that statement **on the event loop** too
(:class:`LoopVersions`, made by :func:`loop_versions`): a few connections of its own, opened
by psycopg's asynchronous mode (autocommit, so each statement reads what is committed when it
runs), so a kept ``GET /rounds/{id}`` needs no worker thread: the loop sends the statement,
serves other requests while the server answers, and never blocks on the network. Under the
HTTP benchmark's reads the thread-pool trip (AnyIO's hand-over, the worker's wake-up and the
way back) cost more of the service's CPU than the statement itself (measured alone, 50
concurrent readers: 15-16 us of CPU a statement on the loop, sent through libpq's own calls,
40-44 through psycopg's asynchronous cursor, 136-170 us through AnyIO's pool).
A statement that fails, a connection lost, a reader closed or asked from another event loop:
:meth:`LoopVersions.read` answers None and the caller reads as before, in its thread-pool trip
(where a store that is really down raises the store's error, as it did).

:class:`Known` carries what was read to the checks that need it, which read for themselves
any id it does not hold: what is decided is the same either way, only the number of round
trips changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final
from uuid import UUID

from domain.pg_group import statement
from domain.sqlite_reads import LeanReads

#: Versions read for a request: id -> its last stored version (None: nothing stored).
Known = Mapping[UUID, int | None]
NOTHING: Known = {}
#: The connections of one process's :class:`LoopVersions` (at most; opened when first needed):
#: as many statements at once as the routes' default threads (``api.settings``) ran before.
LOOP_CONNECTIONS: Final = 8
#: Their ``application_name`` (``pg_stat_activity`` shows them by it).
APPLICATION_NAME: Final = "roundaudit-loop-versions"


def last_version(recorder: Any, originator_id: UUID) -> int | None:
    """The version of the last event stored for ``originator_id`` (None: nothing stored): on
    SQLite the version alone (``domain.sqlite_reads.LeanReads.last_version``), elsewhere the
    last event read by the recorder's ``select_events``."""
    if isinstance(recorder, LeanReads):
        return recorder.last_version(originator_id)
    last = recorder.select_events(originator_id, desc=True, limit=1)
    return int(last[0].originator_version) if last else None


def version_of(recorder: Any, originator_id: UUID, known: Known) -> int | None:
    """``originator_id``'s last version: from ``known`` when it holds it, else read."""
    if originator_id in known:
        return known[originator_id]
    return last_version(recorder, originator_id)


def last_versions(recorder: Any, ids: Sequence[UUID]) -> dict[UUID, int | None]:
    """Each id's last stored version: one statement on PostgreSQL, one point query per id
    elsewhere."""
    wanted = list(dict.fromkeys(ids))
    if len(wanted) > 1 and _is_postgres(recorder):
        return _pg_last_versions(recorder, wanted)
    return {i: last_version(recorder, i) for i in wanted}


def _is_postgres(recorder: Any) -> bool:
    from eventsourcing.postgres import PostgresAggregateRecorder

    return isinstance(recorder, PostgresAggregateRecorder)


def _statement(schema: str, table: str, n: int, *, native: bool = False) -> bytes:
    """The one statement for ``n`` ids: each id's row is its position among the ids (``n``)
    and its last version (``v``); an id with nothing stored has no row. Its placeholders
    psycopg's (``%s``), or ``native``: the server's own (``$1``...). Rendered to bytes once
    (``domain.pg_group.statement``: psycopg renders a composed statement again at every
    execution, and then looks for its placeholders; those of bytes it keeps)."""
    from psycopg.sql import SQL, Composable, Identifier, Literal

    def build() -> Composable:
        one = (
            "(SELECT {i} AS n, originator_version AS v FROM {schema}.{table} "
            "WHERE originator_id = {p} ORDER BY originator_version DESC LIMIT 1)"
        )
        return SQL(" UNION ALL ").join(
            SQL(one).format(
                i=Literal(i),
                schema=Identifier(schema),
                table=Identifier(table),
                p=SQL(f"${i + 1}" if native else "%s"),
            )
            for i in range(n)
        )

    return statement(None, ("versions", schema, table, n, native), build)


def _versions(ids: list[UUID], rows: Any) -> dict[UUID, int | None]:
    out: dict[UUID, int | None] = dict.fromkeys(ids)
    for n, v in rows:
        out[ids[n]] = int(v)
    return out


def _pg_last_versions(recorder: Any, ids: list[UUID]) -> dict[UUID, int | None]:
    statement = _statement(recorder.datastore.schema, recorder.events_table_name, len(ids))
    with recorder.datastore.get_connection() as conn, conn.cursor() as curs:
        curs.execute(statement, ids, prepare=True)
        rows = [(row["n"], row["v"]) for row in curs.fetchall()]
    return _versions(ids, rows)


#: PostgreSQL's type oid of ``uuid`` (the statement's parameters, sent as 16 bytes each).
_UUID_OID: Final = 2950


class _Connection:
    """One connection of a :class:`LoopVersions`: psycopg's (it connects and closes) and the
    statements prepared on it (by their number of ids)."""

    __slots__ = ("conn", "prepared")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.prepared: set[int] = set()


class LoopVersions:
    """:func:`last_versions` on PostgreSQL read on the event loop (see the module docstring):
    at most :data:`LOOP_CONNECTIONS` connections, opened by psycopg's asynchronous mode when
    first needed on the loop that first reads, each statement on a connection of its own (a
    reader with every connection busy waits for the first one free).

    A statement is sent through the connection's libpq object itself (psycopg's ``pq``: the
    statement prepared once per connection, its ids sent and its two integers read in
    PostgreSQL's binary format, the loop told to wake the reader when the socket has data):
    through psycopg's cursor the same statement cost 40-44 us of CPU on the loop, this way
    15-16 (50 concurrent readers, measured alone). The connection is in autocommit, so each
    statement reads what is committed when it runs. Anything unexpected (an error result, a
    connection lost) discards the connection and answers None."""

    def __init__(
        self,
        connect: dict[str, Any],
        schema: str,
        table: str,
        *,
        size: int = LOOP_CONNECTIONS,
        password: Any = None,
    ) -> None:
        self._connect = connect
        self._password = password  # the library's password function, when it has one
        self._schema, self._table = schema, table
        self.size = size
        self._idle: deque[_Connection] = deque()
        self._waiting: deque[asyncio.Future[_Connection | None]] = deque()
        self._opened = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    async def read(self, ids: Sequence[UUID]) -> dict[UUID, int | None] | None:
        """Each id's last stored version, read now in one statement; None when it could not be
        read here (the caller reads for itself)."""
        loop = asyncio.get_running_loop()
        if self._closed or (self._loop is not None and loop is not self._loop):
            return None
        self._loop = loop
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        conn = await self._take()
        if conn is None:
            return None
        try:
            rows = await self._run(loop, conn, wanted)
        except BaseException as e:  # a connection in an unknown state is not used again
            await self._discard(conn)
            if isinstance(e, Exception):
                return None
            raise  # a cancellation
        self._give(conn)
        return _versions(wanted, rows)

    async def _run(
        self, loop: asyncio.AbstractEventLoop, conn: _Connection, ids: list[UUID]
    ) -> list[tuple[int, int]]:
        from psycopg import pq

        pgconn, n = conn.conn.pgconn, len(ids)
        name = b"roundaudit_versions_%d" % n
        if n not in conn.prepared:
            statement = _statement(self._schema, self._table, n, native=True)
            pgconn.send_prepare(name, statement, [_UUID_OID] * n)
            await _result(loop, pgconn, pq.ExecStatus.COMMAND_OK)
            conn.prepared.add(n)
        pgconn.send_query_prepared(name, [i.bytes for i in ids], [1] * n, 1)
        result = await _result(loop, pgconn, pq.ExecStatus.TUPLES_OK)
        value = result.get_value
        return [(_int(value(r, 0)), _int(value(r, 1))) for r in range(result.ntuples)]

    async def _take(self) -> _Connection | None:
        if self._idle:
            return self._idle.pop()
        if self._opened < self.size:
            self._opened += 1
            try:
                return await self._open()
            except Exception:
                self._opened -= 1
                return None
        waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:  # handed a connection just before: not lost
            if waiter.done() and not waiter.cancelled():
                handed = waiter.result()
                if handed is not None:
                    self._give(handed)
            raise

    async def _open(self) -> _Connection:
        import psycopg

        kwargs = dict(self._connect)
        if self._password is not None:
            kwargs["password"] = self._password()
        conn = await psycopg.AsyncConnection.connect(**kwargs, autocommit=True)
        conn.pgconn.nonblocking = 1
        return _Connection(conn)

    def _give(self, conn: _Connection) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    async def _discard(self, conn: _Connection) -> None:
        self._opened -= 1
        with contextlib.suppress(Exception):
            await conn.conn.close()
        while self._waiting:  # a waiter reads for itself rather than wait for nothing
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def aclose(self) -> None:
        """Close the connections (at the service's shutdown); later reads answer None."""
        self._closed = True
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
        while self._idle:
            with contextlib.suppress(Exception):
                await self._idle.pop().conn.close()


def _int(data: bytes) -> int:
    """An integer of PostgreSQL's binary format (big-endian, signed, of any width)."""
    return int.from_bytes(data, "big", signed=True)


async def _result(loop: asyncio.AbstractEventLoop, pgconn: Any, expected: Any) -> Any:
    """The result of what ``pgconn`` was just sent, the loop serving others while the server
    answers: its first result (a ``RuntimeError`` unless of the ``expected`` status), every
    other one read and dropped."""
    fd = pgconn.socket
    while pgconn.flush():  # the rest of the statement, when the socket took only part of it
        await _ready(loop, fd, write=True)
    first = None
    while True:
        pgconn.consume_input()
        while pgconn.is_busy():
            await _ready(loop, fd)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            break
        if first is None:
            first = result
    if first is None or first.status != expected:
        message = first.error_message if first is not None else b"no result"
        raise RuntimeError(message.decode(errors="replace"))
    return first


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, *, write: bool = False) -> None:
    """Wait until the socket ``fd`` has data to read (or room to write)."""
    waiter = loop.create_future()
    if write:
        loop.add_writer(fd, _wake, waiter)
    else:
        loop.add_reader(fd, _wake, waiter)
    try:
        await waiter
    finally:
        if write:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def loop_versions(recorder: Any) -> LoopVersions | None:
    """A :class:`LoopVersions` on ``recorder``'s PostgreSQL database (None for any other
    store, whose reads need no round trip): its connections take the library pool's
    connection settings (hosts, user, password, ``target_session_attrs``:
    ``domain.pgcluster``), so they reach the server the pool's do; one that fails is dropped
    (the pool, for its part, checks its connections before use)."""
    if not _is_postgres(recorder):
        return None
    datastore = recorder.datastore
    pool = datastore.pool
    connect = {k: v for k, v in dict(pool.kwargs).items() if k != "row_factory"}
    connect.setdefault("connect_timeout", max(1, round(pool.timeout)))
    connect.setdefault("application_name", APPLICATION_NAME)
    return LoopVersions(
        connect,
        schema=datastore.schema,
        table=recorder.events_table_name,
        password=getattr(pool, "get_password_func", None),
    )


__all__ = [
    "APPLICATION_NAME",
    "LOOP_CONNECTIONS",
    "NOTHING",
    "Known",
    "LoopVersions",
    "last_version",
    "last_versions",
    "loop_versions",
    "version_of",
]

"""The projections' view of a stored event, and the reading of a batch of them from the log.

This module owns :class:`Recorded` (one notification of the log as the projections read it)
and :class:`BatchReader` (the runner's read-and-decode of a batch). A record holds:

* ``cls`` and ``name``: the event's class (resolved from its topic, as the library does) and
  its name (``"BetPlaced"``);
* ``originator_id`` as **text** (``str(UUID)``), ``originator_version``;
* ``at``: the event's server time as ISO 8601 text (``timestamp.isoformat()``);
  :func:`moment` parses it into the ``datetime`` the library would have made;
* every other field of the event's payload as an attribute, decoded as the library decodes it
  (tagged UUIDs, Decimals and datetimes inside the payload restored by the store's
  transcoder, :meth:`~domain.persistence.OrjsonTranscoder.untag`; it runs only when the
  stored bytes may hold a tag besides the timestamp's,
  :func:`at_most_one_tag`: every tagged value writes the key
  ``"_type_"``, and bytes with a ``\\u`` escape, which could spell it otherwise, are
  untagged whole).

Two ways to get one, equal field by field (``tests/integration/test_projections.py``,
``TestLightDecoding``, holds them equal on every notification of a store of every variant,
the projections' tables equal row for row, and an upcast, a tagged payload value and a
non-UTC time decoded alike, on SQLite and PostgreSQL):

* the runner's own path (:meth:`BatchReader.read`): the batch's rows read straight from the
  event table (the library's query, through the recorder's own connection, as tuples; on
  PostgreSQL in binary format, so the state is not sent as hex text, and in chunks decoded as
  they arrive), each
  payload parsed by ``orjson`` and kept as the record's attributes. No ``Notification``, UUID
  or ``datetime`` object is made: the projections name aggregates and times by their text,
  which the stored JSON already holds. The decoding done by the library and the projections'
  ``str(UUID)`` / ``isoformat()`` on every event made up about a third of a catch-up's CPU
  (issue 15, ``project``; docs/performance-history.md, branch ``projfast``).
* the library's path (:func:`of_event`): a record made from the domain event that
  ``app.mapper.to_domain_event`` decoded. The reader takes it for what it does not decode
  itself: an application whose mapper has a cipher or a compressor, a transcoder other than
  :class:`~domain.persistence.OrjsonTranscoder`, a store other than the library's SQLite and
  PostgreSQL recorders, ids that are not UUIDs, and an event stored at an older
  ``class_version`` (which the library upcasts). ``BatchReader(app, light=False)`` reads every
  batch that way (the tests' reference).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from eventsourcing.utils import resolve_topic, retry

from domain.kept import KeptValues
from domain.persistence import OrjsonTranscoder

#: Attributes a record sets beside its payload's fields (a payload with one of these names
#: is refused rather than shadowed; a record has no methods a field could hide).
RESERVED = frozenset({"cls", "name", "originator_id", "originator_version", "at"})

_TIMESTAMP_KEYS = frozenset({"_type_", "_data_"})
_new = object.__new__
_set = object.__setattr__


#: A tag's key as the transcoder writes it (see :func:`at_most_one_tag`).
_TAG_KEY = b'"_type_"'


def at_most_one_tag(data: bytes) -> bool:
    r"""Whether the JSON ``data`` (as the store's ``OrjsonTranscoder`` writes it) holds at
    most one tagged value: a tag's key appears at most once as written, and no ``\u``
    escape could spell one otherwise (bytes of a store, even rewritten, are read exactly
    either way: a False only means the transcoder's whole walk). :class:`BatchReader`
    restores the tags of a payload only when its bytes may hold one besides the
    timestamp's.

    >>> at_most_one_tag(b'{"timestamp":{"_data_":"t","_type_":"datetime_iso"},"a":"1"}')
    True
    >>> at_most_one_tag(b'{"a":{"_data_":"1.5","_type_":"decimal_str"},"t":{"_type_":1}}')
    False
    >>> at_most_one_tag(b'{"a":{"\\u005ftype_":"decimal_str","_data_":"1"},"t":{"_type_":1}}')
    False
    >>> at_most_one_tag(b'{"a":"say \\"hi\\"","t":{"_type_":1}}')
    True

    A ``\u`` needs a backslash: the bytes are searched for a backslash first (one byte,
    ``memchr``: about a third of the two-byte search, and the stored payloads hardly ever
    hold one), for ``\u`` only when one is there; the answer is the same.
    """
    return data.count(_TAG_KEY) <= 1 and (b"\\" not in data or b"\\u" not in data)


class Recorded:
    """One stored event as the projections read it (see the module docstring)."""

    cls: type
    name: str
    originator_id: str
    originator_version: int
    at: str

    if TYPE_CHECKING:  # the payload's fields, whatever the event's class

        def __getattr__(self, field: str) -> Any: ...

    def __repr__(self) -> str:
        return f"Recorded({self.name}, {self.originator_id}, v{self.originator_version})"


def moment(e: Recorded) -> dt.datetime:
    """The server time of a record as the library's ``timestamp`` (a ``datetime``)."""
    return dt.datetime.fromisoformat(e.at)


def _record(state: dict[str, Any]) -> Recorded:
    r: Recorded = _new(Recorded)
    _set(r, "__dict__", state)
    return r


def of_event(event: Any) -> Recorded:
    """The record of a domain event decoded by the library (``app.mapper``)."""
    state = dict(vars(event))
    timestamp = state.pop("timestamp")
    if not RESERVED.isdisjoint(state.keys() - {"originator_id", "originator_version"}):
        raise ValueError(f"{type(event).__qualname__} has a field named like a record's own")
    cls = type(event)
    state["cls"] = cls
    state["name"] = cls.__name__
    state["originator_id"] = str(event.originator_id)
    state["at"] = timestamp.isoformat()
    return _record(state)


def _uuid_text(stored: str) -> str:
    return str(UUID(stored))


#: Texts of the stored ids the reader has seen (SQLite stores a UUID as 32 hex digits; the
#: projections name it by ``str(UUID)``), emptied when full.
_ID_TEXTS: KeptValues[str, str, str] = KeptValues(_uuid_text, most=16_384)


def _dashed(stored: str) -> str:
    return _ID_TEXTS.kept(stored, stored)


#: A row of the event table: notification id, originator id (text), version, topic, state.
Row = Sequence[Any]


class BatchReader:
    """Reads and decodes batches of the log of ``app`` for the projection runner (see the
    module docstring); ``light=False`` takes the library's path for every batch."""

    def __init__(self, app: Any, *, light: bool = True) -> None:
        self.app = app
        self.mapper = app.mapper
        recorder = app.recorder
        self._dialect = ""
        if light and self._decodes_itself(recorder):
            if isinstance(recorder, SQLiteApplicationRecorder):
                self._dialect = "sqlite"
            elif isinstance(recorder, PostgresApplicationRecorder):
                self._dialect = "postgres"
        # topic -> (class, name, class_version)
        self._kinds: dict[str, tuple[type, str, int]] = {}

    @property
    def light(self) -> bool:
        """Whether batches are read by this module's own path (else the library's)."""
        return bool(self._dialect)

    def _decodes_itself(self, recorder: Any) -> bool:
        mapper = self.mapper
        datastore = getattr(recorder, "datastore", None)
        return (
            not mapper.cipher
            and not mapper.compressor
            and isinstance(mapper.transcoder, OrjsonTranscoder)
            and getattr(datastore, "originator_id_type", None) == "uuid"
        )

    def read(
        self, first: int, limit: int, stop: int, topics: Sequence[str]
    ) -> list[tuple[int, Recorded]]:
        """The notifications from id ``first`` to ``stop`` (inclusive), of ``topics`` (all
        when empty), at most ``limit``, in id order, each with its record."""
        if not self._dialect:
            notes = self.app.recorder.select_notifications(first, limit, stop=stop, topics=topics)
            to_event = self.mapper.to_domain_event
            return [(n.id, of_event(to_event(n))) for n in notes]
        if self._dialect == "sqlite":
            rows = self._sqlite_rows(first, limit, stop, topics)
            dashed = _dashed
            return [self._decode(r, dashed(r[1])) for r in rows]
        records: list[tuple[int, Recorded]] = self._postgres_read(first, limit, stop, topics)
        return records

    # ------------------------------------------------------------------ reading
    def _sqlite_rows(self, first: int, limit: int, stop: int, topics: Sequence[str]) -> list[Row]:
        """The library's query (``SQLiteApplicationRecorder.select_notifications``), as
        tuples, through the recorder's own connection."""
        import sqlite3

        from domain.group_commit import library_error

        recorder = self.app.recorder
        statement = (
            "SELECT rowid, originator_id, originator_version, topic, state"
            f" FROM {recorder.events_table_name} WHERE rowid>=? AND rowid<=? "
        )
        params: list[Any] = [first, stop]
        if topics:
            statement += f"AND topic IN ({','.join('?' * len(topics))}) "
            params += list(topics)
        statement += "ORDER BY rowid LIMIT ?"
        params.append(limit)
        try:
            with recorder.datastore.get_connection(commit=False) as conn, conn.cursor() as c:
                c.row_factory = None  # plain tuples (this cursor only)
                c.execute(statement, params)
                rows: list[Row] = c.fetchall()
                return rows
        except sqlite3.Error as exc:
            raise library_error(exc) from exc

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def _postgres_read(
        self, first: int, limit: int, stop: int, topics: Sequence[str]
    ) -> list[tuple[int, Recorded]]:
        """The library's query (``PostgresApplicationRecorder.select_notifications``), as
        tuples in binary format, the ids as text, through the recorder's own pool, each row
        decoded as it arrives, retried (read and decoding again) as the library retries it
        (connection errors: 10 attempts, 0.2 s apart).

        The rows come in chunks of :data:`STREAM_ROWS` (libpq's chunked rows mode): the
        client decodes a chunk while the server reads and sends the next, where reading all
        first and decoding after left the server idle during the decoding and the client
        idle during the reading (about 10 ms of a 60 ms read of the benchmark's topics)."""
        from psycopg.rows import tuple_row
        from psycopg.sql import SQL, Identifier

        recorder = self.app.recorder
        statement = SQL(
            "SELECT notification_id, originator_id::text, originator_version, topic, state"
            " FROM {schema}.{table} WHERE notification_id>=%s AND notification_id<=%s"
        ).format(
            schema=Identifier(recorder.datastore.schema),
            table=Identifier(recorder.events_table_name),
        )
        params: list[Any] = [first, stop]
        if topics:
            statement += SQL(" AND topic = ANY(%s)")
            params.append(list(topics))
        statement += SQL(" ORDER BY notification_id LIMIT %s")
        params.append(limit)
        decode = self._decode
        with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as c:
            # binary results: the state arrives as its bytes, not as hex text to decode (the
            # server's work and the client's halve: 60 -> 36 ms for the benchmark's topics)
            rows = c.stream(statement, params, binary=True, size=STREAM_ROWS)
            return [decode(r, r[1]) for r in rows]

    # ----------------------------------------------------------------- decoding
    def _kind(self, topic: str) -> tuple[type, str, int]:
        kind = self._kinds.get(topic)
        if kind is None:
            cls = resolve_topic(topic)
            kind = self._kinds[topic] = (cls, cls.__name__, getattr(cls, "class_version", 1))
        return kind

    def _decode(self, row: Row, originator_id: str) -> tuple[int, Recorded]:
        nid, _stored_id, version, topic, data = row
        cls, name, class_version = self._kinds.get(topic) or self._kind(topic)
        state = orjson.loads(data)
        timestamp = state.pop("timestamp", None)
        stored_version = state.pop("class_version", 1)
        size = len(state)
        if (
            stored_version != class_version
            or type(timestamp) is not dict
            or timestamp.keys() != _TIMESTAMP_KEYS
            or timestamp["_type_"] != "datetime_iso"
        ):
            return nid, self._by_library(row)
        if not at_most_one_tag(data):  # a tagged value besides the timestamp: restore it
            state = self.mapper.transcoder.untag(state)
        state["cls"] = cls
        state["name"] = name
        state["originator_id"] = originator_id
        state["originator_version"] = version
        state["at"] = timestamp["_data_"]
        if len(state) != size + 5:  # a payload field named like one of these
            return nid, self._by_library(row)
        r: Recorded = _new(Recorded)
        _set(r, "__dict__", state)
        return nid, r

    def _by_library(self, row: Row) -> Recorded:
        """The record of one row by the library's own decoding (upcasting included)."""
        _nid, stored_id, version, topic, data = row
        event = self.mapper.to_domain_event(
            StoredEvent(UUID(stored_id), version, topic, bytes(data))
        )
        return of_event(event)


#: Rows a chunk of a PostgreSQL batch's read (:meth:`BatchReader._postgres_read`).
STREAM_ROWS = 1000

__all__ = ["RESERVED", "STREAM_ROWS", "BatchReader", "Recorded", "moment", "of_event"]

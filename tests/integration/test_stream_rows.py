"""The queries of many streams (``domain.boundless.streams.StreamRows.many``, ``streams``, one
stream after a version: ``after``, and the verifier's reader on top of them,
``replays.bundle.StoreReader._select_many`` and ``_last_versions``), on SQLite and PostgreSQL
(whose rows come in the binary format, as plain tuples): every stream's records are exactly the
library's (``select_events``: ids, versions, topics, the very bytes of the states, ``bytes``),
with the notification ids the library's log gives them, with ``after`` only those above each
stream's version, and each row carries the very UUID object it was asked by (the rows of one
stream share it). States of every byte value (a zero byte, bytes that are not UTF-8, an empty
state) come back unchanged."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from domain.application import RoundAudit
from domain.boundless.streams import MANY, StreamRows
from domain.persistence import environment_for
from replays.bundle import StoreReader

TOPIC = "tests.integration.test_stream_rows:Odd"
STATES = [b"", b"\x00", bytes(range(256)), b'{"a":1}', b"\xff\xfe not utf-8 \x80"]


def _store(url: str, streams: int) -> tuple[RoundAudit, list[UUID]]:
    """An application on ``url`` with ``streams`` streams of 1 to 5 records (no stream for the
    last id asked: it has none), written by the library's recorder."""
    app = RoundAudit(env=environment_for(url))
    ids = [uuid4() for _ in range(streams)]
    events = [
        StoredEvent(oid, v, TOPIC, STATES[(i + v) % len(STATES)] + oid.bytes[: v % 3])
        for i, oid in enumerate(ids)
        for v in range(1, 2 + i % 5)
    ]
    # interleaved: one version of every stream after the other, in many transactions
    events.sort(key=lambda e: (e.originator_version, str(e.originator_id)))
    for at in range(0, len(events), 97):
        app.recorder.insert_events(events[at : at + 97])
    return app, ids


def _library(app: RoundAudit, oid: UUID, gt: int | None = None) -> list[StoredEvent]:
    return [
        StoredEvent(UUID(str(s.originator_id)), s.originator_version, s.topic, bytes(s.state))
        for s in app.recorder.select_events(oid, gt=gt)
    ]


def test_streams_are_the_library_records_with_their_notification_ids(store_url: str) -> None:
    app, ids = _store(store_url, MANY + 40)  # two queries' worth of streams
    try:
        asked = [*ids, uuid4()]  # a stream with no record
        found = StreamRows(app.recorder).streams(asked)
        assert found is not None
        nids = {
            (UUID(str(n.originator_id)), n.originator_version): n.id
            for n in app.recorder.select_notifications(1, 100_000)
        }
        assert set(found) == set(ids)
        for oid in ids:
            rows = found[oid]
            assert [e for _, e in rows] == _library(app, oid)
            assert [nid for nid, _ in rows] == [nids[oid, e.originator_version] for _, e in rows]
            for nid, e in rows:
                assert e.originator_id is oid  # the very object asked by
                assert type(e.state) is bytes
                assert type(nid) is int
                assert type(e.originator_version) is int
    finally:
        app.close()


def test_select_many_and_last_versions_are_the_library_records(store_url: str) -> None:
    app, ids = _store(store_url, MANY + 40)
    try:
        reader = StoreReader(app)
        asked = [*ids, uuid4()]
        whole = reader._select_many(asked)
        assert whole is not None
        assert {oid: whole[oid] for oid in ids} == {oid: _library(app, oid) for oid in ids}
        assert whole[asked[-1]] == []
        after = [i % 4 for i in range(len(asked))]
        tails = reader._select_many(asked, after=after)
        assert tails is not None
        for oid, gt in zip(asked, after, strict=True):
            assert tails[oid] == _library(app, oid, gt=gt)
            assert all(e.originator_id is oid for e in tails[oid])
        last = reader._last_versions(asked)
        assert last == {oid: len(_library(app, oid)) for oid in ids}
        assert all(any(k is oid for k in last) for oid in ids)  # keyed by the objects asked
    finally:
        app.close()


def test_one_stream_after_a_version_is_the_library_records(store_url: str) -> None:
    """``StreamRows.after``: one stream's rows above each version (none, some, all of them, a
    stream with no record), in version order, as plain tuples whose values are the library's,
    the states the very bytes stored (every byte value), with only the columns asked."""
    app, ids = _store(store_url, 12)
    try:
        rows_of = StreamRows(app.recorder)
        for oid in [*ids, uuid4()]:
            for gt in range(7):
                rows = rows_of.after(oid, "originator_version, topic, state", gt)
                assert rows is not None
                assert [
                    StoredEvent(oid, version, topic, state) for version, topic, state in rows
                ] == _library(app, oid, gt=gt)
                assert all(type(r) is tuple and type(r[2]) is bytes for r in rows)
        assert rows_of.after(ids[-1], "originator_version", 0) == [
            (v,) for v in range(1, len(_library(app, ids[-1])) + 1)
        ]
    finally:
        app.close()


def test_rows_are_plain_tuples_read_without_a_transaction(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``many`` and ``after`` answer plain tuples on both stores (no ``sqlite3.Row`` a row) and
    send each ``SELECT`` alone, in autocommit mode: the library's transaction (a ``BEGIN``
    and a ``ROLLBACK`` around it, on PostgreSQL two more round trips) is never opened. Their
    rows are still the library's (the tests above)."""
    app, ids = _store(store_url, 6)
    try:
        datastore = app.recorder.datastore  # type: ignore[attr-defined]

        def no_transaction(*args: object, **kwargs: object) -> None:
            raise AssertionError("a transaction was opened for a lone SELECT")

        monkeypatch.setattr(datastore, "transaction", no_transaction)
        rows_of = StreamRows(app.recorder)
        many = rows_of.many(ids, "originator_version, topic, state", " ORDER BY originator_id")
        assert many is not None
        assert len(many) == sum(len(_library(app, oid)) for oid in ids)
        assert all(type(row) is tuple for _, row in many)
        after = [1] * len(ids)
        tails = rows_of.many(ids, "originator_version", "", after=after)
        assert tails is not None
        assert all(type(row) is tuple for _, row in tails)
        assert sorted((oid, row[1]) for oid, row in tails) == sorted(
            (oid, e.originator_version) for oid in ids for e in _library(app, oid, gt=1)
        )
        one = rows_of.after(ids[0], "originator_version", 0)
        assert one is not None
        assert all(type(row) is tuple for row in one)
    finally:
        app.close()

"""An idempotency record's answer reads back byte for byte, whatever zlib level compressed it
(``domain.idempotency.Record``: the fastest level since branch `sqlcmd`; records written
before at level 6 still read), plain, compressed and sealed, on every store; a record read
with the log's tail (``rows_and_tail`` on SQLite and PostgreSQL) reads as the library reads
each."""

from __future__ import annotations

import base64
import zlib
from dataclasses import replace
from pathlib import Path
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import ProgrammingError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder

from domain import pg_group
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID
from domain.commit_leaf import PURPOSE as LEAF_PURPOSE
from domain.idempotency import Answer, Record, now_text, record_id, sealer
from domain.log_tail import PostgresTail, SQLiteTail
from domain.persistence import environment_for

#: About a deposit's answer: a wallet's view with its latest 50 movements.
MOVEMENT = {
    "kind": "deposit",
    "transaction_id": "http-0-1-123456",
    "amount": "1.00",
    "balance_after": "123.00",
    "round_id": None,
    "wager_id": None,
    "rule": None,
    "reason": None,
    "reversed_transaction_id": None,
    "actor": {"kind": "supervisor", "id": "cashier", "key": "k-0123456789", "role": "cashier"},
}
BODY = orjson.dumps(
    {"player_id": "h1", "movements": [{**MOVEMENT, "amount": f"{i}.00"} for i in range(50)]}
)


def _record(key: str, body: bytes, *, sealed: bool = False) -> Record:
    return Record(
        record_id("k1", key), "k1", key, "fp", "POST", "/wallets/h1/deposits", now_text(),
        answer=Answer(200, body, (("content-type", "application/json"),)), sealed=sealed,
    )  # fmt: skip


def test_answers_read_back_byte_for_byte(app_on_every_store: RoundAudit) -> None:
    app = app_on_every_store
    seal, unseal = sealer(b"the sender's secret")
    cases = [("small", b'{"ok":true}', False), ("large", BODY, False), ("sealed", BODY, True)]
    for key, body, sealed in cases:
        record = _record(key, body, sealed=sealed)
        assert app.idempotency.put(record, seal if sealed else None)
        (back,) = app.idempotency.get(record.record_id, unseal)
        assert back.answer == record.answer
    doc = orjson.loads(_record("large", BODY).state())
    assert doc["answer"]["encoding"] == "zlib"
    assert len(doc["answer"]["body"]) < len(BODY) // 10  # compressed, then base64


def test_a_record_compressed_at_another_level_reads_the_same() -> None:
    """A record stored before (zlib level 6) and one stored now give the same answer."""
    record = _record("old", BODY)
    now = record.stored()
    doc = orjson.loads(now.state)
    doc["answer"]["body"] = base64.b64encode(zlib.compress(BODY, 6)).decode()
    old = StoredEvent(now.originator_id, now.originator_version, now.topic, orjson.dumps(doc))
    assert old.state != now.state
    assert Record.parse(old) == Record.parse(now) == replace(record, check_first=False)
    assert Record.parse(old).answer == record.answer


def _claim_and_answer(app: RoundAudit, players: tuple[str, ...]) -> tuple[Record, Record]:
    """A claim (version 1) and its answer (version 2) stored under one key, then a wallet
    opened and a deposit made for each of ``players`` (the log's tail)."""
    claim = replace(_record("later", BODY), answer=None)
    assert app.idempotency.put(claim)
    answered = replace(_record("later", BODY), version=2)
    app.idempotency.table.insert_events([answered.stored()])
    for player in players:
        app.open_wallet(player, account_type="test")
        app.deposit(player, "5.00", transaction_id=f"t-{player}")
    return claim, answered


def test_sqlite_reads_a_record_with_the_tail_as_the_library_reads_each(tmp_path: Path) -> None:
    """``SQLiteTail.rows_and_tail`` (the record and the log's tail on one connection, no
    transaction around them): a record's rows (a claim and its answer, versions 1 and 2) and
    the tail after any mark are what the library's ``select_events`` and ``log_tail`` read
    one by one; a key without a record reads none; outside a command's scope the store reads
    the rows alone, the same rows."""
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    recorder = app.recorder
    assert isinstance(recorder, SQLiteTail)
    table = app.idempotency.table
    claim, answered = _claim_and_answer(app, ("ann",))
    top = recorder.max_notification_id() or 0
    assert top > 0
    name = app.idempotency.table.events_table_name
    for rid in (claim.record_id, record_id("k1", "none")):
        library = [(r.originator_version, r.topic, r.state) for r in table.select_events(rid)]
        for after in (None, 0, 1, top - 1, top):
            rows, tail = recorder.rows_and_tail(name, rid, after, 1000)
            assert [(r.originator_version, r.topic, r.state) for r in rows] == library
            assert all(r.originator_id == rid for r in rows)
            assert tail == (None if after is None else recorder.log_tail(after, 1000))
        assert [r.originator_version for r in app.idempotency.rows(rid)] == [
            v for v, _, _ in library
        ]
    assert [r.answer for r in app.idempotency.get(claim.record_id)] == [None, answered.answer]
    app.close()


@pytest.mark.postgres
def test_postgres_reads_a_record_with_the_tail_as_the_library_reads_each(
    postgres_url: str,
) -> None:
    """``PostgresTail.rows_and_tail`` (the record and the log's tail in one statement through
    libpq's own calls, its rows in the binary format): a record's rows (a claim and its
    answer, versions 1 and 2) and the tail after any mark and for any limit are what the
    library's ``select_events`` and ``log_tail`` read one by one; a key without a record reads
    none; another table's rows read by its own statement on the same connections; its
    statement deallocated on the pooled connections since (``DEALLOCATE``) is
    prepared again and reads the same; the pooled connections lost (their backends
    terminated), the read is retried on new ones, as the library's reads are; a failing
    statement raises the library's error."""
    from pg import fresh_database, terminate_others

    with fresh_database(postgres_url) as url:
        app = RoundAudit(env=environment_for(url))
        recorder = app.recorder
        assert isinstance(recorder, PostgresTail)
        table = app.idempotency.table
        claim, answered = _claim_and_answer(app, ("ann", "bob", "cid"))
        top = recorder.max_notification_id() or 0
        assert top > 3
        name = table.events_table_name

        def check() -> None:
            for rid in (claim.record_id, record_id("k1", "none")):
                library = [
                    (r.originator_version, r.topic, r.state) for r in table.select_events(rid)
                ]
                for after, limit in ((0, 1000), (1, 1000), (0, 2), (top - 1, 1000), (top, 1000)):
                    rows, tail = recorder.rows_and_tail(name, rid, after, limit)
                    assert [(r.originator_version, r.topic, r.state) for r in rows] == library
                    assert all(r.originator_id == rid for r in rows)
                    assert tail == recorder.log_tail(after, limit)
                    assert all(isinstance(oid, UUID) for _, oid, _ in tail)

        check()
        leaves = app.commit_table(LEAF_PURPOSE)  # another table's statement, on the same pool
        assert isinstance(leaves, PostgresAggregateRecorder)
        library_leaves = [(r.originator_version, r.state) for r in leaves.select_events(LEAVES_ID)]
        assert library_leaves
        for _ in range(3):  # both statements on each pooled connection, kept apart
            rows, tail = recorder.rows_and_tail(leaves.events_table_name, LEAVES_ID, 0, 1000)
            assert [(r.originator_version, r.state) for r in rows] == library_leaves
            assert tail == recorder.log_tail(0, 1000)
            check()
        dropped = 0
        for pooled, names in list(pg_group.PREPARED.items()):  # idle in the pool here
            for statement in names if not pooled.closed else ():  # (closed: other tests')
                pooled.pgconn.exec_(b"DEALLOCATE " + statement)  # as DISCARD ALL would
                dropped += 1
        assert dropped >= 1
        check()
        terminate_others(url)  # every pooled connection lost, as in a server's restart
        for _ in range(3):  # retried on the pool's new connections, as the library's reads are
            assert recorder.rows_and_tail(name, record_id("k1", "none"), top, 1000) == ([], [])
        check()
        with pytest.raises(ProgrammingError):
            recorder.rows_and_tail("no_such_table", claim.record_id, 0, 10)
        assert [r.answer for r in app.idempotency.get(claim.record_id)] == [None, answered.answer]
        app.close()

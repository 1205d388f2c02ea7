"""The idempotency record's answer kept as a raw deflate stream (session 26), and the records
written before it (zlib streams) still answered the same (``domain.idempotency``: ``compress``,
``decompress``, ``Record.state``, ``Record.parse``)."""

from __future__ import annotations

import base64
import zlib
from uuid import uuid4

import orjson
import pytest
from eventsourcing.persistence import StoredEvent

from domain.idempotency import (
    DEFLATE,
    ZLIB,
    Answer,
    Record,
    compress,
    decompress,
    now_text,
    sealer,
)

MOVEMENT = {"kind": "deposit", "amount": "1.00", "balance_after": "123.00", "rule": None}
LARGE = orjson.dumps({"movements": [{**MOVEMENT, "transaction_id": f"t-{i}"} for i in range(50)]})
SMALL = b'{"ok":true}'
HEADERS = (("content-type", "application/json"),)


def _record(body: bytes, *, sealed: bool = False) -> Record:
    return Record(
        uuid4(), "k1", "key", "fp", "POST", "/wallets/h1/deposits", now_text(),
        answer=Answer(200, body, HEADERS), sealed=sealed,
    )  # fmt: skip


def _main_zlib(body: bytes) -> bytes:
    """A large answer as records were compressed before session 26 (a zlib stream: level 1,
    memory level 4; level 1 or 6 at memory level 8 before that)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 4)
    return packer.compress(body) + packer.flush()


def _as_main_wrote(record: Record, packed: bytes) -> StoredEvent:
    """``record`` stored as main's ``Record.state`` wrote it: the answer ``packed`` (already
    compressed, and sealed when the record is), encoding ``zlib``."""
    stored = record.stored()
    doc = orjson.loads(stored.state)
    doc["answer"]["body"] = base64.b64encode(packed).decode()
    doc["answer"]["encoding"] = ZLIB
    doc["answer"]["sealed"] = record.sealed
    return StoredEvent(stored.originator_id, 1, stored.topic, orjson.dumps(doc))


def test_a_large_answer_is_kept_as_a_raw_deflate_stream() -> None:
    record = _record(LARGE)
    doc = orjson.loads(record.state())
    kept = base64.b64decode(doc["answer"]["body"])
    assert doc["answer"]["encoding"] == DEFLATE == "deflate"
    assert kept == compress(LARGE)
    assert zlib.decompress(kept, -zlib.MAX_WBITS) == LARGE
    with pytest.raises(zlib.error):  # no zlib header: not a zlib stream
        zlib.decompress(kept)
    assert len(kept) < len(LARGE) // 10
    assert Record.parse(record.stored()).answer == record.answer


def test_a_small_answer_is_kept_as_it_is() -> None:
    record = _record(SMALL)
    doc = orjson.loads(record.state())
    assert doc["answer"]["encoding"] == "raw"
    assert base64.b64decode(doc["answer"]["body"]) == SMALL
    assert Record.parse(record.stored()).answer == record.answer


def test_records_written_before_read_the_same() -> None:
    """A record main wrote (a zlib stream, any level) answers what the same record written
    now answers."""
    record = _record(LARGE)
    for packed in (_main_zlib(LARGE), zlib.compress(LARGE, 1), zlib.compress(LARGE, 6)):
        old = _as_main_wrote(record, packed)
        assert old.state != record.stored().state
        assert Record.parse(old) == Record.parse(record.stored())
        assert Record.parse(old).answer == record.answer


def test_sealed_answers_old_and_new_read_the_same() -> None:
    seal, unseal = sealer(b"the sender's secret")
    record = _record(LARGE, sealed=True)
    new = record.stored(seal)
    assert orjson.loads(new.state)["answer"]["sealed"] is True
    old = _as_main_wrote(record, seal(record.record_id, _main_zlib(LARGE)))
    for row in (new, old):
        back = Record.parse(row, unseal)
        assert back.answer == record.answer
        assert back.sealed
        # without the sender's secret the answer is not opened (nor decompressed): empty
        _, wrong = sealer(b"another secret")
        assert Record.parse(row, wrong).answer == Answer(200, b"", HEADERS)


def test_decompress_by_encoding() -> None:
    assert decompress(compress(LARGE), DEFLATE) == LARGE
    assert decompress(_main_zlib(LARGE), ZLIB) == LARGE
    assert decompress(SMALL, "raw") == SMALL
    assert decompress(SMALL, None) == SMALL  # a record without an encoding: as it is
    with pytest.raises(zlib.error):
        decompress(compress(LARGE), ZLIB)

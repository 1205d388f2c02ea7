"""An idempotency record's answer compressed by ISA-L (``domain.idempotency.compress``, branch
`hdep3`) is the zlib stream records always kept:

* every body compressed by it reads back with plain ``zlib.decompress`` (what a process of the
  previous release does with a record whose ``"encoding"`` is ``"zlib"``), and a record stored
  now still says ``"zlib"`` and reads back through :meth:`Record.parse`;
* records written by plain zlib (the previous releases: level 1 at memory level 4 or 8, level
  6) read back the same answer;
* a sealed record (the compressed answer sealed under the sender's secret) opens to the same
  answer with the secret, and to none without it, as before;
* the records' size: a large JSON answer still compresses below a tenth, and an answer that
  does not compress grows by a few bytes at most.
"""

from __future__ import annotations

import base64
import os
import zlib
from uuid import uuid4

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.idempotency import Answer, Record, compress, now_text, sealer
from tests.integration.test_idempotency_record import MOVEMENT  # a deposit answer's movement

HEADERS = (("content-type", "application/json"),)


def _view(n: int) -> bytes:
    """A wallet's view with ``n`` movements, about what a deposit answers."""
    moves = [{**MOVEMENT, "transaction_id": f"t-{i}", "amount": f"{i}.00"} for i in range(n)]
    return orjson.dumps({"player_id": "h1", "balance": "51.00", "movements": moves})


def _record(body: bytes, *, sealed: bool = False) -> Record:
    return Record(
        uuid4(), "k1", "key", "fp", "POST", "/wallets/h1/deposits", now_text(),
        answer=Answer(200, body, HEADERS), sealed=sealed,
    )  # fmt: skip


def _previous_release_reads(state: bytes) -> bytes:
    """An unsealed record's answer as the previous release's ``Record.parse`` reads it: the
    body's base64, then ``zlib.decompress`` when its encoding is ``"zlib"``."""
    a = orjson.loads(state)["answer"]
    body = base64.b64decode(a["body"])
    return zlib.decompress(body) if a["encoding"] == "zlib" else body


def _with_body(record: Record, packed: bytes) -> Record:
    """``record`` as stored with ``packed`` for its compressed answer (as an older release
    wrote it), parsed back."""
    stored = record.stored()
    doc = orjson.loads(stored.state)
    doc["answer"]["body"] = base64.b64encode(packed).decode()
    row = type(stored)(stored.originator_id, 1, stored.topic, orjson.dumps(doc))
    return Record.parse(row)


BODIES = st.one_of(
    st.binary(max_size=20_000),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=300), st.integers(1, 200)),
    st.builds(_view, st.integers(0, 120)),
)


@settings(max_examples=300, deadline=None)
@given(BODIES)
def test_what_compress_writes_plain_zlib_reads(body: bytes) -> None:
    packed = compress(body)
    assert zlib.decompress(packed) == body
    assert zlib.decompressobj().decompress(packed) == body  # a stream, read in one go or not
    # an answer that does not compress grows by a few bytes (its blocks' headers), no more
    assert len(packed) <= len(body) + len(body) // 1000 + 64
    record = _record(body)
    state = record.stored().state
    assert _previous_release_reads(state) == body
    assert Record.parse(record.stored()).answer == record.answer
    if len(body) > 2048:
        assert orjson.loads(state)["answer"]["encoding"] == "zlib"
        assert base64.b64decode(orjson.loads(state)["answer"]["body"]) == packed


@settings(max_examples=100, deadline=None)
@given(BODIES.filter(lambda b: len(b) > 2048))
def test_records_plain_zlib_wrote_read_the_same(body: bytes) -> None:
    record = _record(body)
    for level, memory in ((1, 4), (1, 8), (6, 8)):  # hdep2's, sqlcmd's, the first releases'
        packer = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, memory)
        old = packer.compress(body) + packer.flush()
        assert _with_body(record, old).answer == record.answer


def test_a_sealed_record_opens_to_the_same_answer() -> None:
    seal, unseal = sealer(b"the sender's secret")
    _, wrong = sealer(b"another secret")
    for body in (_view(50), _view(900), os.urandom(70_000), b'{"token":"rak_x"}'):
        record = _record(body, sealed=True)
        stored = record.stored(seal)
        a = orjson.loads(stored.state)["answer"]
        assert a["sealed"] is True
        assert a["encoding"] == ("zlib" if len(body) > 2048 else "raw")
        opened = unseal(record.record_id, base64.b64decode(a["body"]))
        assert opened is not None
        assert (zlib.decompress(opened) if a["encoding"] == "zlib" else opened) == body
        assert Record.parse(stored, unseal).answer == record.answer
        assert Record.parse(stored, wrong).answer == Answer(200, b"", HEADERS)
        assert Record.parse(stored).answer == Answer(200, b"", HEADERS)
    # a sealed record plain zlib compressed (the previous release) opens the same
    body = _view(50)
    record = _record(body, sealed=True)
    stored = record.stored(seal)
    doc = orjson.loads(stored.state)
    doc["answer"]["body"] = base64.b64encode(seal(record.record_id, zlib.compress(body, 1)))
    doc["answer"]["body"] = doc["answer"]["body"].decode()
    row = type(stored)(stored.originator_id, 1, stored.topic, orjson.dumps(doc))
    assert Record.parse(row, unseal).answer == record.answer


def test_a_large_json_answer_still_compresses_below_a_tenth() -> None:
    for n in (50, 120, 900):
        body = _view(n)
        assert len(body) > 10_000
        packed = compress(body)
        assert len(packed) < len(body) // 10
        # within a tenth of what zlib level 1 wrote (the previous release; 0-7 % more here)
        packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 4)
        assert len(packed) * 10 <= len(packer.compress(body) + packer.flush()) * 11

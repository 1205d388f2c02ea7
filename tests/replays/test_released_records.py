"""What the verifier lets go of a boundless round before its verdict, and tampering after that
point: the verdict is the one it gives holding everything, finding for finding.

* A participation's deferred record compared equal to its re-derived event is kept by its
  bytes' digest (``Deferred._let_go``): a record whose bytes changed but still decode to the
  same payload is let go, and the commit check still finds it, at its position.
* A change that re-execution reports makes a check read records let go (the finding's owner):
  the verifier reads the round again, holding every record's bytes, and gives the same verdict.
* A leaf read again for the round's evidence is given parsed (the parse kept by its tree
  hash) only when its text hashes to the tree's leaf (``MerkleLog.read_leaves``): a leaf
  rewritten in the table after the verifier read the log is found, as by a verifier that kept
  no leaf parsed.
* A leaf's entries are compared from its columns (``ParsedLeaf.committed``): a record whose
  leaf names other bytes is found, with the entry's digest in the finding.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
import pytest
from test_digested_boundless import (
    PLAYERS,
    _changed,
    _findings,
    _round_rows,
    _same_verdict,
    _set_state,
    _sql,
    _verified,
)

import replays.log
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.commit_leaf import LEAVES_ID, forget_parsed, parse_leaf
from replays.bundle import Deferred, Digested
from replays.verify import StoreVerifier, Verdict


@pytest.fixture
def recorded(app: RoundAudit) -> tuple[RoundAudit, UUID]:
    # a reproducible shoe: the round has the records these tests edit (a shoe of the CSPRNG
    # gave the dealer a blackjack now and then, and then no hand stood)
    simulate(app, variant="boundless", rounds=1, players=PLAYERS, reproducible_shoes=True)
    return app, SharedHand.create_id("sim-boundless", 1)


def _deferred_at(app: RoundAudit, rid: UUID, topic: str) -> int:
    """The merged log's index of the last participation record of ``topic`` (a deferred one)."""
    b = _verified(app, rid, digest=True)[1]
    return max(
        i
        for i, d in enumerate(b.round)
        if type(d) is Deferred and d.record.topic.endswith(topic) and d.record.originator_id != rid
    )


def test_a_record_let_go_with_changed_bytes_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    at = _deferred_at(app, rid, "Participation.HandOpened")
    oid, version, _topic, state = _round_rows(app, rid)[at]
    _set_state(app, oid, version, _changed(app, state))
    v, b = _verified(app, rid, digest=True)
    # compared equal (the payload is the same) and let go in the verifier's one pass
    d = b.round[at]
    assert type(d) is Deferred
    assert d.matched
    assert type(d.record) is Digested
    found = [x for x in v.discrepancies if x.check == "commit"]
    assert [(x.position, x.field) for x in found] == [(at + 1, "(bytes)")]
    assert "the stored bytes are not those leaf" in found[0].message
    assert _same_verdict(app, rid) is not None  # the reference's findings


def _total_changed(state: bytes) -> bytes:
    """A ``HandStood`` with another total: re-execution finds it."""
    payload = orjson.loads(state)
    payload["total"] += 1
    return orjson.dumps(payload)


def test_a_finding_that_reads_records_let_go_reads_the_round_again(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    app, rid = recorded
    if app.mapper.compressor is not None:
        pytest.skip("the payload is edited as plain JSON")
    at = _deferred_at(app, rid, "Participation.HandStood")
    oid, version, _topic, state = _round_rows(app, rid)[at]
    _set_state(app, oid, version, _total_changed(state))
    verifier = StoreVerifier(app)
    reads: list[bool] = []
    read = verifier.reader.round_bundle

    def round_bundle(round_id: UUID, **kwargs: Any) -> Any:
        reads.append(bool(kwargs.get("digest")))
        return read(round_id, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(verifier.reader, "round_bundle", round_bundle)
        v = verifier.verify(rid)
    assert reads == [True, False]  # the second read holds every record's bytes
    assert not v.ok
    assert any(x.check == "reexecution" for x in v.discrepancies), v.discrepancies
    assert not any("could not be re-executed" in x.message for x in v.discrepancies)
    assert _findings(v) == _findings(_same_verdict(app, rid))


def _leaf_table(app: RoundAudit) -> str:
    postgres = "postgres" in type(app.recorder.datastore).__module__  # type: ignore[attr-defined]
    return "roundaudit_merkle_log" if postgres else "stored_merkle_log"


def _rewrite_leaf(app: RoundAudit, index: int, data: bytes) -> None:
    table = _leaf_table(app)
    run = _sql(app)
    run(
        f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?",
        (data, LEAVES_ID, index + 1),
    )


def _leaf_changed(app: RoundAudit, rid: UUID) -> tuple[int, bytes, bytes, int]:
    """A leaf of the round with one participation record's digest changed: its index, its
    bytes, its new bytes and the merged log's position of that record."""
    b = StoreVerifier(app).reader.round_bundle(rid)
    assert b.evidence is not None
    d = next(d for d in reversed(b.round) if d.record.originator_id != rid)
    for index in b.evidence.indexes():
        data = b.evidence.text(index)
        for e in parse_leaf(data).entries:
            if e.key == (d.record.originator_id, d.record.version):
                other = ("0" if e.sha256[0] != "0" else "1") + e.sha256[1:]
                new = data.replace(e.sha256.encode(), other.encode())
                return index, data, new, d.position
    raise AssertionError("no leaf names the record")


def _rewritten_after_the_read(
    app: RoundAudit, rid: UUID, index: int, data: bytes, *, kept: bool
) -> Verdict:
    """The verdict of a verifier that read the log, then found leaf ``index`` rewritten to
    ``data`` when it read the round; ``kept=False``: nothing kept parsed (the reference)."""
    forget_parsed()
    verifier = StoreVerifier(app)  # the log read: its leaves kept parsed, as they were
    # the round outgrew the log's cache of recent leaves (a round of thousands of players'
    # older leaves): none of its leaves is held there, each is read again for its evidence
    verifier.log._cache.clear()
    verifier.log._cached_bytes = 0
    if not kept:
        forget_parsed()
    _rewrite_leaf(app, index, data)
    return verifier.verify(rid)


def test_a_leaf_rewritten_after_the_log_was_read_is_found(
    recorded: tuple[RoundAudit, UUID], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, rid = recorded
    if not hasattr(app.recorder, "datastore"):
        pytest.skip("the in-memory store has no leaf table to rewrite")
    # the log's cache of recent leaves holds one: the round's leaves are read again for its
    # evidence, as a round of thousands of players outgrows the cache (a leaf the cache holds
    # is the parse of the very text the log hashed: not read again)
    monkeypatch.setattr(replays.log, "_CACHE_BYTES", 1)
    index, old, new, position = _leaf_changed(app, rid)
    v = _rewritten_after_the_read(app, rid, index, new, kept=True)
    assert not v.ok
    messages = [x.message for x in v.discrepancies if x.check == "commit"]
    assert any(f"leaf {index} read now is not the leaf hashed" in m for m in messages), messages
    assert any(
        x.check == "commit" and x.position == position and x.field == "(bytes)"
        for x in v.discrepancies
    ), v.discrepancies
    # the same findings as a verifier that kept no leaf parsed
    _rewrite_leaf(app, index, old)
    reference = _rewritten_after_the_read(app, rid, index, new, kept=False)
    assert _findings(v) == _findings(reference)

"""The verifier's state keeps the checkpoints it checked (``replays.logstate``): a later run
reads and checks only the newer ones, with the same verdicts as a verifier without state, on the
in-memory store, SQLite and PostgreSQL; and every attack on the checkpoints is still found: the
last checked one changed or deleted, the one a round's evidence uses changed, a new one that
contradicts the kept tree, numbers that repeat, go back or skip, a new one smaller than the last
checked, a state checked under another trust policy (everything checked again), and a whole
store run (``reread``) compares every checked one."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import UUID

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eventsourcing.persistence import StoredEvent
from pg import fresh_database
from storekit import Store

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import PURPOSE
from domain.persistence import environment_for
from replays.log import (
    CHECKPOINTS_ID,
    LogError,
    MerkleLog,
    TrustPolicy,
    WitnessKey,
    checkpoint_event,
    make_policy,
)
from replays.logstate import StatefulLog, VerifierState
from replays.merkle import generate_key
from replays.note import Note, checkpoint_text, cosign, operator_key, sign, witness_key
from replays.verify import LogVerdict, StoreVerifier, verify_log

ORIGIN = "example.test/checkpoints"
WITNESS = "witness.example/w1"


@dataclass
class Setup:
    """One store (its application kept open), the operator's and a witness's keys, rows of
    the checkpoints edited as an insider would (SQL, or the in-memory store's own lists)."""

    app: RoundAudit
    store: Store | None  # None: the in-memory store
    folder: Path
    key: Ed25519PrivateKey
    witness: Ed25519PrivateKey

    @property
    def state(self) -> Path:
        return self.folder / "state.sqlite"

    @property
    def policy(self) -> TrustPolicy:
        trusted = WitnessKey(witness_key(WITNESS, self.witness.public_key()))
        pinned = operator_key(ORIGIN, self.key.public_key())
        return make_policy(pinned, origin=ORIGIN, witnesses=[trusted], quorum=1)

    def record(self, table: str) -> list[UUID]:
        ids = simulate(self.app, variant="european", rounds=2, players=2, table=table).round_ids
        return [UUID(r) for r in ids]

    def log(self) -> MerkleLog:
        return MerkleLog(self.app).refresh()

    def sign(
        self,
        *,
        size: int | None = None,
        root: bytes | None = None,
        number: int | None = None,
        cosigned: bool = False,
    ) -> int:
        """A checkpoint signed the signer's way (of the whole log by default): its number."""
        log = self.log()
        size = log.size if size is None else size
        text = checkpoint_text(ORIGIN, size, log.tree.root(size) if root is None else root)
        sigs = [sign(text, ORIGIN, self.key)]
        if cosigned:
            sigs.append(cosign(text, WITNESS, self.witness, 1_700_000_000 + len(sigs)))
        number = len(log.checkpoints()) + 1 if number is None else number
        event = checkpoint_event(number, Note(text, tuple(sigs)), f"2026-01-01T00:00:{number:02}")
        self.app.commit_table(PURPOSE).insert_events([event])
        return number

    def row(self, number: int) -> bytes:
        rows = self.app.commit_table(PURPOSE).select_events(CHECKPOINTS_ID, gt=number - 1)
        return bytes(rows[0].state)

    def set_row(self, number: int, state: bytes) -> None:
        if self.store is None:
            table: Any = self.app.commit_table(PURPOSE)
            at = table._stored_events_index[str(CHECKPOINTS_ID)][number]
            old = table._stored_events[at]
            table._stored_events[at] = StoredEvent(CHECKPOINTS_ID, number, old.topic, state)
            return
        self.store.set_state(CHECKPOINTS_ID, number, state, purpose=PURPOSE)

    def delete_from(self, number: int) -> None:
        """Delete checkpoint #``number`` and every later one."""
        if self.store is None:
            index = self.app.commit_table(PURPOSE)._stored_events_index[str(CHECKPOINTS_ID)]  # type: ignore[attr-defined]
            for n in [n for n in index if n >= number]:
                del index[n]
            return
        self.store.delete(CHECKPOINTS_ID, above=number - 1, purpose=PURPOSE)

    def verifier(self, *, state: bool = True, **kw: Any) -> StoreVerifier:
        return StoreVerifier(
            self.app, policy=self.policy, state=self.state if state else None, **kw
        )

    def run(self, rid: UUID, *, state: bool = True, **kw: Any) -> tuple[LogVerdict, Any]:
        """What ``roundaudit verify [--state PATH] ROUND_ID`` checks: the log, the round."""
        v = self.verifier(state=state, **kw)
        return verify_log(v.log, v.policy), v.verify(rid)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Setup]:
    keys = generate_key(), generate_key()
    if request.param == "memory":
        app = RoundAudit()
        yield Setup(app, None, tmp_path, *keys)
        app.close()
        return
    if request.param == "sqlite":
        url = "sqlite:///" + quote(str(tmp_path / "events.db"))
        app = RoundAudit(env=environment_for(url))
        yield Setup(app, Store(url, tmp_path / "op.pem", capsys), tmp_path, *keys)
        app.close()
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        app = RoundAudit(env=environment_for(url))
        yield Setup(app, Store(url, tmp_path / "op.pem", capsys), tmp_path, *keys)
        app.close()


def _grown(s: Setup) -> tuple[list[UUID], list[UUID]]:
    """Rounds and checkpoints as a signer makes them (a cosigned one among them); the
    verifier's state made; then more rounds and checkpoints."""
    first = s.record("a")
    s.sign(size=2)
    s.sign(cosigned=True)
    second = s.record("b")
    s.sign()
    s.verifier()  # the state made: every checkpoint checked
    assert VerifierState(s.state).checkpoint == 3
    third = s.record("c")
    s.sign(cosigned=True)
    s.sign()
    return first + second, third


def _same(kept: StoreVerifier, fresh: StoreVerifier, ids: list[UUID]) -> None:
    a, b = verify_log(kept.log, kept.policy), verify_log(fresh.log, fresh.policy)
    assert a.as_json() == b.as_json()
    assert [v.as_json() for v in kept.verify_many(ids)] == [
        v.as_json() for v in fresh.verify_many(ids)
    ]


def test_a_later_run_checks_only_the_newer_checkpoints_with_the_same_verdicts(s: Setup) -> None:
    old, new = _grown(s)
    kept = s.verifier()
    assert isinstance(kept.log, StatefulLog)
    assert [c.number for c in kept.log.unchecked_checkpoints()] == [4, 5]
    fresh = s.verifier(state=False)
    _same(kept, fresh, old + new)
    verdicts = list(kept.verify_many(old + new))
    assert all(v.ok and v.final is True for v in verdicts)
    assert VerifierState(s.state).checkpoint == 5
    again = s.verifier()  # nothing new: no checkpoint read but the last one checked
    assert not again.log.unchecked_checkpoints()  # type: ignore[union-attr]
    _same(again, s.verifier(state=False), old + new)
    out = verify_log(again.log, again.policy)
    assert out.ok
    assert (out.checkpoints, out.final_size) == (5, s.log().size)


def test_the_covering_checkpoint_comes_from_the_state(s: Setup) -> None:
    old, _ = _grown(s)
    v = s.verifier()
    ev = v.log.evidence(v.reader.round_bundle(old[0]), policy=v.policy)
    assert ev.checkpoint is not None
    assert ev.checkpoint.number == 4  # the latest final one covering it: new
    s.verifier()
    v = s.verifier()  # #4 is now kept: looked up in the state, read alone
    assert not v.log.unchecked_checkpoints()
    ev = v.log.evidence(v.reader.round_bundle(old[0]), policy=v.policy)
    assert ev.checkpoint is not None
    assert ev.checkpoint.number == 4
    assert not ev.problems
    s.sign()  # #6, not final
    v = s.verifier()
    s.verifier()
    v = s.verifier()
    fresh = s.verifier(state=False)
    bundle = v.reader.round_bundle(old[0])
    for policy, number in ((v.policy, 4), (TrustPolicy(), 6)):  # under which #4 is not final
        for log in (v.log, fresh.log):
            ev = log.evidence(bundle, policy=policy)
            assert ev.checkpoint is not None
            assert ev.checkpoint.number == number


@pytest.fixture(name="s")
def _s(setup: Setup) -> Setup:
    return setup


# ------------------------------------------------------------------------------ attacks
def _fails(s: Setup, rid: UUID, text: str, check: str, in_round: str | None = "") -> None:
    """The log fails ``check`` with ``text``; the round fails too, naming ``in_round`` (by
    default ``text``: a finding on the log as a whole), unless ``in_round`` is None (a check
    of the log alone, as without state)."""
    log, verdict = s.run(rid)
    assert not log.ok
    assert check in log.failed_checks
    assert any(text in p for p in log.problems), log.problems
    if in_round is not None:
        assert not verdict.ok
        assert any((in_round or text) in d.message for d in verdict.discrepancies)


def test_the_last_checked_checkpoint_changed_is_found_every_run(s: Setup) -> None:
    old, _ = _grown(s)
    s.verifier()
    mark = VerifierState(s.state).checkpoint
    row = orjson.loads(s.row(mark))
    row["signed_at"] = "2020-01-01T00:00:00"  # still validly signed: only its row changed
    s.set_row(mark, orjson.dumps(row, option=orjson.OPT_SORT_KEYS))
    for _ in range(2):  # the state is not brought forward past it
        _fails(s, old[0], f"checkpoint #{mark} is not the one the verifier checked", "consistency")
    log, _ = s.run(old[0], reread=True)  # the whole store, against the state: the same
    assert any(f"checkpoint #{mark} is not the one the verifier checked" in p for p in log.problems)


def test_the_last_checked_checkpoint_deleted_is_a_rollback(s: Setup) -> None:
    old, _ = _grown(s)
    s.verifier()
    mark = VerifierState(s.state).checkpoint
    s.delete_from(mark)
    _fails(s, old[0], f"checkpoint #{mark}; the store no longer holds it", "rollback")
    # signed again under the same number (numbers go back): not the one checked
    s.sign(number=mark, size=2)
    _fails(s, old[0], f"checkpoint #{mark} is not the one the verifier checked", "consistency")


def test_an_older_checked_checkpoint_a_round_uses_changed_is_found(s: Setup) -> None:
    """Only the last checked checkpoint is read at every run; the one a round's evidence uses
    is read when used, and a whole-store run reads every one."""
    old, _ = _grown(s)
    s.verifier()
    s.sign()  # a later checkpoint, not final: #2 and #4 stay the final ones
    row = orjson.loads(s.row(4))
    row["witnesses"] = {"edited": "yes"}
    s.set_row(4, orjson.dumps(row, option=orjson.OPT_SORT_KEYS))
    log, verdict = s.run(old[0])
    assert not verdict.ok
    assert any("checkpoint #4 is not the one the verifier checked" in d.message
               for d in verdict.discrepancies)  # fmt: skip
    log, _ = s.run(old[0], reread=True)
    assert not log.ok
    assert any("checkpoint #4 is not the one the verifier checked" in p for p in log.problems)


def test_a_new_checkpoint_that_contradicts_the_kept_tree_is_found_and_not_kept(s: Setup) -> None:
    old, _ = _grown(s)
    s.verifier()
    size = s.log().size
    s.sign(size=size, root=b"\x01" * 32)  # signed by the operator: a fork of the log
    for _ in range(2):
        found = "is not the root of the stored leaves"
        _fails(s, old[0], found, "consistency", "is not the log's tree at that size")
        assert VerifierState(s.state).checkpoint == 5  # never marked as checked
    log, fresh = s.run(old[0], state=False)  # the same verdicts without state
    assert not log.ok
    assert not fresh.ok


def test_numbers_that_skip_and_sizes_that_go_back_are_found(s: Setup) -> None:
    old, _ = _grown(s)
    s.verifier()
    s.sign(number=7)  # #6 missing
    _fails(s, old[0], "checkpoint #6 before it was deleted", "rollback", None)
    s.delete_from(7)
    s.sign(size=2)  # smaller than the last one checked
    _fails(s, old[0], "it is smaller than #5", "consistency", None)


def test_checkpoints_checked_under_another_policy_are_checked_again(s: Setup) -> None:
    old, _ = _grown(s)
    s.verifier()  # every checkpoint checked with the operator key pinned
    other = make_policy(operator_key(ORIGIN, generate_key().public_key()), origin=ORIGIN)
    v = StoreVerifier(s.app, policy=other, state=s.state)
    assert [c.number for c in v.log.unchecked_checkpoints()] == [1, 2, 3, 4, 5]
    out = verify_log(v.log, other)
    assert "signature" in out.failed_checks
    assert not v.verify(old[0]).ok
    assert VerifierState(s.state).checkpoint == 5  # not marked under the other policy
    unpinned = StoreVerifier(s.app, state=s.state)  # no key: checked again, then kept
    assert len(unpinned.log.unchecked_checkpoints()) == 5
    assert s.verifier().log.unchecked_checkpoints()  # back to the pinned key: again


def test_the_signer_reads_the_last_checkpoint_alone(s: Setup) -> None:
    """``latest_checkpoint`` and the next number (``add_checkpoint``) come from the last row:
    the same as from every row, also after an unreadable last row or a deleted one before."""
    s.record("a")
    for size in (1, 2, 3):
        s.sign(size=size)
    log = s.log()
    latest = log.latest_checkpoint()
    assert latest is not None
    assert (latest.number, latest.size) == (3, 3)
    s.set_row(3, b"not a checkpoint")
    latest = s.log().latest_checkpoint()
    assert latest is not None
    assert latest.number == 2  # the last readable one, as before
    s.delete_from(2)
    s.sign(size=1, number=3)  # #2 deleted, #3 stored
    note = Note(checkpoint_text(ORIGIN, 4, log.tree.root(4)), ())
    assert log.add_checkpoint(note).number == 4  # after the last, never a number reused
    assert [c.number for c in s.log().checkpoints()] == [1, 3, 4]


def test_a_state_made_before_it_kept_checkpoints_checks_them_all_once(s: Setup) -> None:
    old, _ = _grown(s)
    with sqlite3.connect(s.state) as db:  # the state as the format's first version made it
        db.execute("DROP TABLE checkpoints")
        db.execute("DELETE FROM meta WHERE key IN ('checkpoint', 'final', 'policy')")
    v = s.verifier()
    assert [c.number for c in v.log.unchecked_checkpoints()] == [1, 2, 3, 4, 5]
    _same(v, s.verifier(state=False), old)
    assert VerifierState(s.state).checkpoint == 5
    assert not s.verifier().log.unchecked_checkpoints()


def test_one_checkpoint_is_read_alone(s: Setup) -> None:
    """``checkpoint(n)`` (the proofs, ``GET /log/consistency``) reads row ``n`` alone, and
    answers what the whole list answers: the same checkpoint, an unreadable row as unreadable,
    a deleted one as missing; ``last_checkpoint_number`` is the last row's number."""
    s.record("a")
    for size in (1, 2, 3):
        s.sign(size=size)
    whole = {c.number: c.as_json() for c in s.log().checkpoints()}
    log = s.log()
    read: list[int] = []
    select = log.table.select_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = select(*args, **kwargs)
        read.append(len(rows))
        return rows

    log.table.select_events = counted  # type: ignore[method-assign]
    for n in (1, 2, 3):
        assert log.checkpoint(n).as_json() == whole[n]
    assert read == [1, 1, 1]
    assert log.last_checkpoint_number() == 3
    with pytest.raises(LogError, match="no checkpoint #4"):
        log.checkpoint(4)
    s.set_row(3, b"not a checkpoint")
    unreadable = s.log().checkpoint(3)
    assert unreadable.error is not None
    assert unreadable.as_json() == s.log().checkpoints()[-1].as_json()
    s.delete_from(2)
    s.sign(size=1, number=3)  # #2 deleted, #3 stored again
    log = s.log()
    for _ in ("a row at a time", "from the list read whole"):
        with pytest.raises(LogError, match="no checkpoint #2"):
            log.checkpoint(2)
        assert log.checkpoint(3).as_json() == s.log().checkpoints()[-1].as_json()
        assert log.last_checkpoint_number() == 3
        log.checkpoints()

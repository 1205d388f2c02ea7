"""The verifier's own state of the log (``replays.logstate``, ``StoreVerifier(app, state=...)``,
``roundaudit verify --state``): the same verdicts as a verifier that reads the whole log, on the
in-memory store, SQLite and PostgreSQL, as the store grows; and every attack on the part of the
log a state keeps is found (SQLite and PostgreSQL, edited with SQL as an insider would): a
rewritten old leaf (with its event, consistently: what a fresh verifier cannot see before a
checkpoint covers it), a deleted record together with its leaf's entry, a truncated log, a
forked log (the same size, another root; a rewrite re-signed), a state file of another log's
origin (refused), a corrupt state file (refused, never a pass)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from uuid import UUID

import pytest
from storekit import Store, timestamp_changed

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import LEAF_TOPIC, LEAVES_ID, PURPOSE, parse_leaf
from domain.persistence import environment_for
from replays.log import MerkleLog, TrustPolicy, make_policy
from replays.logstate import StateError, StatefulLog, VerifierState
from replays.merkle import generate_key
from replays.signer import Signer
from replays.verify import StoreVerifier, verify_log


def _record(app: RoundAudit, table: str = "") -> list[UUID]:
    ids = simulate(app, variant="european", rounds=3, players=2, table=f"eu{table}").round_ids
    ids += simulate(app, variant="deluxe", rounds=2, players=2, table=f"dlx{table}").round_ids
    return [UUID(r) for r in ids]


def _verdicts(verifier: StoreVerifier, ids: list[UUID]) -> list[object]:
    return [v.as_json() for v in verifier.verify_many(ids)]


def _same_log(kept: MerkleLog, fresh: MerkleLog) -> None:
    """The state's tree, kinds and index are those of the log read whole."""
    assert kept.size == fresh.size
    assert kept.tree.root() == fresh.tree.root()
    assert list(kept.kinds) == list(fresh.kinds)
    for _index, e in fresh.iter_entries():
        assert kept.locate(*e.key) == fresh.locate(*e.key)
        assert kept.versions_logged(e.originator_id) == fresh.versions_logged(e.originator_id)
        assert kept.leaves_of(e.originator_id) == fresh.leaves_of(e.originator_id)
    assert kept.round_ids() == fresh.round_ids()
    for size in range(1, fresh.size + 1, max(1, fresh.size // 7)):
        assert kept.tree.root(size) == fresh.tree.root(size)
        assert kept.tree.inclusion_proof(size - 1) == fresh.tree.inclusion_proof(size - 1)
        assert kept.tree.consistency_proof(size) == fresh.tree.consistency_proof(size)


def test_a_verifier_with_state_gives_the_verdicts_of_a_fresh_one_as_the_store_grows(
    app_on_every_store: RoundAudit, tmp_path: Path
) -> None:
    app = app_on_every_store
    state = tmp_path / "state.sqlite"
    first = _record(app)
    made = StoreVerifier(app, state=state)  # no state yet: reads the whole log, saves it
    assert not isinstance(made.log, StatefulLog)
    assert _verdicts(made, first) == _verdicts(StoreVerifier(app), first)
    second = _record(app, "2")  # the store grows
    kept = StoreVerifier(app, state=state)
    assert isinstance(kept.log, StatefulLog)
    fresh = StoreVerifier(app)
    _same_log(kept.log, fresh.log)
    both = first + second
    assert _verdicts(kept, both) == _verdicts(fresh, both)
    assert all(v.ok for v in kept.verify_many(both))
    assert verify_log(kept.log).ok
    # saved: a third verifier starts from the grown state and reads no leaf it kept
    assert VerifierState(state).size == fresh.log.size
    again = StoreVerifier(app, state=state)
    assert isinstance(again.log, StatefulLog)
    assert again.log.kinds.base == fresh.log.size
    assert not again.log.kinds.new
    _same_log(again.log, fresh.log)


# ------------------------------------------------------------------------------ attacks
@pytest.fixture
def kept(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Kept:
    """A store of five rounds whose verifier saved its state, then two more rounds."""
    app = RoundAudit(env=environment_for(store_url))
    try:
        first = _record(app)
        StoreVerifier(app, state=tmp_path / "state.sqlite")
        second = _record(app, "2")
    finally:
        app.close()
    return Kept(Store(store_url, tmp_path / "operator.pem", capsys), tmp_path, first, second)


class Kept:
    def __init__(self, store: Store, folder: Path, first: list[UUID], second: list[UUID]):
        self.store, self.folder, self.first, self.second = store, folder, first, second
        self.state = folder / "state.sqlite"

    def verifier(self, *, state: bool = True, **kw: object) -> tuple[RoundAudit, StoreVerifier]:
        app = RoundAudit(env=environment_for(self.store.url))
        return app, StoreVerifier(app, state=self.state if state else None, **kw)  # type: ignore[arg-type]

    def run(self, rid: UUID, *, state: bool = True) -> tuple[bool, bool, list[str]]:
        """(the log's verdict ok, the round's ok, every finding's text) of one round."""
        app, v = self.verifier(state=state)
        try:
            log = verify_log(v.log, v.policy)
            verdict = v.verify(rid)
            texts = [*log.problems, *(d.message for d in verdict.discrepancies)]
            return log.ok, verdict.ok, texts
        finally:
            app.close()

    def leaf_of(self, oid: UUID, version: int) -> tuple[int, bytes]:
        with self.store.log() as log:
            index = log.locate(oid, version)
            assert index is not None
            return index, log.leaf(index)

    def set_leaf(self, index: int, data: bytes) -> None:
        s = self.store
        s.execute(
            f"UPDATE {s.table(PURPOSE)} SET state = %s WHERE originator_id = %s "
            "AND originator_version = %s AND topic = %s",
            (data, s._id(LEAVES_ID), index + 1, LEAF_TOPIC),
        )

    def leaf_rows(self) -> int:
        s = self.store
        got = s.execute(
            f"SELECT COUNT(*) FROM {s.table(PURPOSE)} WHERE originator_id = %s",
            (s._id(LEAVES_ID),),
        )
        return int(got[0][0])


def test_an_old_leaf_rewritten_with_its_event_is_found_by_the_state_alone(kept: Kept) -> None:
    """An event of an old round and its leaf rewritten consistently, with no checkpoint: a
    fresh verifier reads the rewritten log as it is; the state kept the leaf's hash."""
    rid = kept.first[1]
    version, _, state = kept.store.rows(rid)[2]
    index = kept.store.rewrite_with_leaf(rid, version, timestamp_changed(state))
    found = kept.run(rid, state=False)
    assert found == (True, True, []), found[2]  # the window, without a state
    log_ok, round_ok, texts = kept.run(rid)
    assert log_ok  # neither end of the kept log was touched
    assert not round_ok
    assert any(f"leaf {index} read now is not the leaf hashed" in t for t in texts), texts


def test_a_record_deleted_with_its_leaf_entry_is_found(kept: Kept) -> None:
    """The insider deletes a round's record and takes its line out of the leaf (the index an
    operator could keep would go too): the verifier's state still has the leaf's hash and its
    own index names the record."""
    rid = kept.first[0]
    rows = kept.store.rows(rid)
    version = rows[-1][0]  # the round's last event
    index, leaf = kept.leaf_of(rid, version)
    entry = next(e for e in parse_leaf(leaf).entries if e.key == (rid, version))
    line = next(x for x in leaf.split(b"\n") if entry.sha256.encode() in x)
    kept.store.delete(rid, version=version)
    kept.set_leaf(index, leaf.replace(line + b"\n", b"").replace(b"\n" + line, b""))
    _, round_ok, texts = kept.run(rid)
    assert not round_ok
    assert any(f"leaf {index} read now is not the leaf hashed" in t for t in texts), texts
    app, v = kept.verifier()
    try:
        assert v.log.locate(rid, version) == index  # the verifier's own index
    finally:
        app.close()


def test_a_truncated_log_is_a_rollback_and_the_state_is_not_reset(kept: Kept) -> None:
    saved = VerifierState(kept.state).size
    assert saved > 0
    kept.store.delete(LEAVES_ID, above=saved - 2, purpose=PURPOSE)  # shorter than the state
    for _ in range(2):  # and again: the state was not reset by the first run
        log_ok, round_ok, texts = kept.run(kept.first[0])
        assert not log_ok
        assert not round_ok
        assert any("it was cut back" in t for t in texts), texts
        assert VerifierState(kept.state).size == saved
    app, v = kept.verifier(reread=True)  # `verify --all`: the whole log, the same finding
    try:
        out = verify_log(v.log, v.policy, app=app)
        assert "rollback" in out.failed_checks
    finally:
        app.close()
    assert VerifierState(kept.state).size == saved


def test_a_forked_log_of_the_same_size_is_found(kept: Kept) -> None:
    """The state is brought up to date, then the log's last leaf is replaced (the same size,
    another root): a fork, for a round of any age; and a whole-store run names the leaf."""
    app, v = kept.verifier()
    size = v.log.size
    app.close()
    s = kept.store
    last = s.execute(
        f"SELECT state FROM {s.table(PURPOSE)} WHERE originator_id = %s "
        "AND originator_version = %s",
        (s._id(LEAVES_ID), size),
    )[0][0]
    kept.set_leaf(size - 1, bytes(last).replace(b"roundaudit/leaf/v2", b"roundaudit/leaf/v2 "))
    log_ok, round_ok, texts = kept.run(kept.first[0])
    assert not log_ok
    assert not round_ok
    assert any(f"the store's leaf {size - 1} is not the one" in t for t in texts), texts
    assert kept.leaf_rows() == size
    app, v = kept.verifier(reread=True)
    try:
        out = verify_log(v.log, v.policy, app=app)
        assert "fork" in out.failed_checks
        assert any(f"leaf {size - 1}" in p for p in out.problems)
    finally:
        app.close()


def test_a_rewrite_signed_after_the_state_is_a_consistency_finding(kept: Kept) -> None:
    """An old leaf rewritten with its event, then a checkpoint signed over the rewritten log:
    a fresh verifier sees a signed, consistent log; the state's tree is not that checkpoint's."""
    rid = kept.first[2]
    version, _, state = kept.store.rows(rid)[3]
    kept.store.rewrite_with_leaf(rid, version, timestamp_changed(state))
    app = RoundAudit(env=environment_for(kept.store.url))
    try:
        report = Signer(app, key=generate_key(), origin="example.test/log").run_once()
        assert report.checkpoint is not None
    finally:
        app.close()
    assert kept.run(rid, state=False)[:2] == (True, True)
    log_ok, round_ok, texts = kept.run(rid)
    assert not log_ok
    assert not round_ok
    assert any("the log was rewritten" in t for t in texts), texts


def test_a_state_of_another_origin_is_refused(
    kept: Kept, capsys: pytest.CaptureFixture[str]
) -> None:
    app = RoundAudit(env=environment_for(kept.store.url))
    try:
        StoreVerifier(app, state=kept.folder / "a.sqlite", policy=_pinned("a.example/log"))
        with pytest.raises(StateError, match=r"is the state of the log 'a\.example/log'"):
            StoreVerifier(app, state=kept.folder / "a.sqlite", policy=_pinned("b.example/log"))
    finally:
        app.close()


def _pinned(origin: str) -> TrustPolicy:
    return make_policy(None, origin=origin)


def test_a_corrupt_state_file_is_refused(kept: Kept) -> None:
    garbage = kept.folder / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all " * 100)
    with pytest.raises(StateError, match="not a verifier state file"):
        VerifierState(garbage)
    other = kept.folder / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    with pytest.raises(StateError, match="not a verifier state file"):
        VerifierState(other)
    size = VerifierState(kept.state).size
    # a kept hash changed: the store's leaf is not the state's: a finding, never a pass
    with sqlite3.connect(kept.state) as db:
        db.execute(
            "UPDATE nodes SET hash = ? WHERE level = 0 AND idx = ?", (b"\x07" * 32, size - 1)
        )
    log_ok, round_ok, _ = kept.run(kept.first[0])
    assert not log_ok
    assert not round_ok
    # its tree's nodes lost: refused when the verifier needs them, never a pass
    with sqlite3.connect(kept.state) as db:
        db.execute("DELETE FROM nodes")
    with pytest.raises(StateError, match="of its tree is missing"):
        kept.verifier()


def test_the_command_line_keeps_its_state(kept: Kept, capsys: pytest.CaptureFixture[str]) -> None:
    state = kept.folder / "cli.sqlite"
    rid = str(kept.second[0])
    base = ["--database-url", kept.store.url, "verify"]
    assert main([*base, rid, "--state", str(state), "--no-progress"]) == 0
    assert VerifierState(state).size > 0
    assert main([*base, rid, "--state", str(state), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "1 passed, 0 failed"
    assert "compared with this verifier's state" not in out
    kept.store.delete(LEAVES_ID, above=VerifierState(state).size - 1, purpose=PURPOSE)
    assert main([*base, rid, "--state", str(state), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "rollback" in out
    assert "it was cut back" in out
    # the operator of a store replaced on purpose is told which state said so, and what to do
    assert f"compared with this verifier's state of it, {state}" in out
    assert "--state none" in out
    bad = kept.folder / "bad.sqlite"
    bad.write_bytes(b"garbage" * 100)
    assert main([*base, rid, "--state", str(bad), "--no-progress"]) == 2
    assert "is not a verifier state file" in capsys.readouterr().err
    assert main(["verify", "--help"]) == 0
    assert "--state PATH" in capsys.readouterr().out


def test_a_new_tail_that_a_checkpoint_contradicts_is_not_kept(kept: Kept) -> None:
    """A checkpoint is signed over the two rounds recorded after the state was saved, then one
    of their events is rewritten with its leaf before the verifier reads them: the checkpoint
    fails, the round fails, and the state is not extended by that tail."""
    saved = VerifierState(kept.state).size
    app = RoundAudit(env=environment_for(kept.store.url))
    try:
        assert Signer(app, key=generate_key(), origin="example.test/log").run_once().checkpoint
    finally:
        app.close()
    rid = kept.second[0]
    version, _, state = kept.store.rows(rid)[2]
    kept.store.rewrite_with_leaf(rid, version, timestamp_changed(state))
    log_ok, round_ok, texts = kept.run(rid)
    assert not log_ok
    assert not round_ok
    assert any("the log was rewritten" in t for t in texts), texts
    assert VerifierState(kept.state).size == saved


def test_a_leaf_line_of_version_0_is_reported_not_a_crash(kept: Kept) -> None:
    """A rewritten leaf with a line for version 0 (no record has it: versions start at 1), of
    the round's own stream and of a stream never seen: a fresh verifier, one with its state
    and a whole-store run each report it (the leaf is not the one hashed, or commits to a
    record the store does not hold) instead of failing on the index, and the round's own
    versions are still located where they were."""
    rid = kept.second[0]
    version = kept.store.rows(rid)[-1][0]
    index, leaf = kept.leaf_of(rid, version)
    stranger = UUID("00000000-0000-4000-8000-00000000000f")
    forged = leaf + b"".join(
        f"1 {oid} 0 {'0' * 64} Round.Started\n".encode() for oid in (rid, stranger)
    )
    assert [e.version for e in parse_leaf(forged).entries][-2:] == [0, 0]
    kept.set_leaf(index, forged)
    for state in (False, True):
        log_ok, round_ok, texts = kept.run(rid, state=state)
        assert not (log_ok and round_ok), texts
    app, v = kept.verifier(state=False)
    try:
        assert v.log.locate(rid, version) == index
        assert v.log.locate(rid, 0) is None
        assert v.log.locate(stranger, 0) is None
        out = verify_log(v.log, v.policy, app=app)
        assert not out.ok, out.problems
    finally:
        app.close()

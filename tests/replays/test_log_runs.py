"""The log's read indexes a large leaf from its columns (``MerkleLog._index_entries`` over
``ParsedLeaf.located``, a leaf of more than ``replays.log._RUNS_MAX`` entries) and makes no run
of its entries (``ParsedLeaf.runs``, kept with the leaf once made): a verifier no longer holds
a boundless round's leaves' runs from its read of the log to its commit check (about 3.5 MiB
at 4,000 players); a small leaf is indexed from its runs as before. Either way the index is the
one the entries give one by one (streams whose versions skip, repeat, go back or are 0; the
rounds started); with every leaf indexed entry by entry, the commit check makes the runs of
its round's leaves itself, and still finds a payout changed, a bet deleted, a bet's bytes
changed and a leaf's entry rewritten, on every store."""

from __future__ import annotations

from uuid import UUID

import orjson
import pytest
from leafkit import kept_parses, read_by_a_log
from leafkit import leaf_entry as _entry
from test_digested_boundless import (
    PLAYERS,
    _changed,
    _delete,
    _round_rows,
    _rows,
    _set_state,
)
from test_released_records import _leaf_changed, _rewrite_leaf

import replays.log
from cli.simulate import simulate
from domain import commit_leaf
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.commit_leaf import FORMAT, LEAVES_ID, PURPOSE, ParsedLeaf, parse_leaf
from replays.log import ROUND_STARTED_TOPICS
from replays.merkle import leaf_hash
from replays.verify import StoreVerifier, Verdict

_STARTED = sorted(ROUND_STARTED_TOPICS)[0]


@pytest.mark.parametrize("runs_max", [0, 3, 1000])
def test_the_log_s_read_indexes_the_entries_and_makes_no_run_of_a_large_leaf(
    runs_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runs_max`` 0: every leaf indexed entry by entry; 3: the leaves of more than 3 entries
    (the last, of 3, from its runs); 1000: every leaf from its runs (made)."""
    monkeypatch.setattr(replays.log, "_RUNS_MAX", runs_max)
    a, b, c = UUID(int=10), UUID(int=11), UUID(int=12)
    texts = [
        # a's versions 1, 2 and 4 (3 skipped); c's version 0 (a forged line) between
        _entry(1, a, 1, _STARTED) + _entry(2, a, 2) + _entry(3, c, 0) + _entry(4, a, 4),
        _entry(5, b, 1) + _entry(6, b, 2) + _entry(7, a, 3) + _entry(8, a, 2) + _entry(9, c, 1),
        # a version again (its first leaf kept), one going back, a round started later
        _entry(10, b, 2) + _entry(11, b, 1) + _entry(12, b, 6) + _entry(13, c, 2, _STARTED),
        _entry(14, c, 1, _STARTED) + _entry(15, a, 5) + _entry(16, a, 6),
    ]
    datas = [f"{FORMAT} commit\n{text}".encode() for text in texts]
    with read_by_a_log(datas) as (_log, where, rounds, _):
        assert where[a] == [0, 0, 1, 0, 3, 3]
        assert where[b] == [1, 1, -1, -1, -1, 2]
        assert where[c] == [1, 2]
        assert rounds == [a, c]
        # every leaf kept parsed, with its runs made only when indexed from them
        held = kept_parses(datas)
        assert all(held)
        made = [p is not None and p._runs is not None for p in held]
        assert made == [parse_leaf(data).count() <= runs_max for data in datas]
        assert made == {0: [False] * 4, 3: [False, False, False, True], 1000: [True] * 4}[runs_max]
        # the runs, made when a check asks, are the entries the index holds
        first = held[0]
        assert first is not None
        runs = first.runs()
        assert [(oid, first, count) for oid, first, count, _ in runs] == [(a, 1, 2), (a, 4, 1)]


# ------------------------------------------------------------------ a boundless round's verdict
@pytest.fixture
def recorded(app: RoundAudit, monkeypatch: pytest.MonkeyPatch) -> tuple[RoundAudit, UUID]:
    """A boundless round of a few players, its log read with every leaf indexed entry by entry
    (as a round of thousands of players' leaves are: each lists more than ``_RUNS_MAX``)."""
    monkeypatch.setattr(replays.log, "_RUNS_MAX", 0)
    simulate(app, variant="boundless", rounds=1, players=PLAYERS, reproducible_shoes=True)
    return app, SharedHand.create_id("sim-boundless", 1)


def _verified(app: RoundAudit, rid: UUID) -> Verdict:
    """A fresh verifier's verdict, after checking that its read of the log made no run."""
    commit_leaf.forget_parsed()
    verifier = StoreVerifier(app)
    assert any(_held(app))
    assert not any(p._runs is not None for p in _held(app))
    return verifier.verify(rid)


def _held(app: RoundAudit) -> list[ParsedLeaf]:
    """The log's leaves kept parsed (by their tree hash)."""
    leaves = [bytes(s.state) for s in app.commit_table(PURPOSE).select_events(LEAVES_ID)]
    found = [commit_leaf.kept_parsed(leaf_hash(data)) for data in leaves]
    return [p for p in found if p is not None]


def _found(v: Verdict) -> list[tuple[str | None, str]]:
    return [(x.check, x.field) for x in v.discrepancies]


def test_a_boundless_round_passes_and_its_leaves_runs_are_made_by_the_commit_check(
    recorded: tuple[RoundAudit, UUID],
) -> None:
    app, rid = recorded
    v = _verified(app, rid)
    assert v.ok, v.discrepancies
    assert "commit" in v.checks
    assert any(p._runs is not None for p in _held(app))


def test_a_payout_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    if app.mapper.compressor is not None:
        pytest.skip("the payload is edited as plain JSON")
    oid, version, _, state = next(r for r in _rows(app) if r[2].endswith("Wallet.PayoutCredited"))
    payload = orjson.loads(state)
    payload["amount"] = f"{float(payload['amount']) + 1:.2f}"
    _set_state(app, oid, version, orjson.dumps(payload))
    v = _verified(app, rid)
    assert ("money", "wallet.amount") in _found(v)
    assert ("commit", "(bytes)") in _found(v), v.discrepancies


def test_a_bet_deleted_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    oid, version = next((o, v) for o, v, t, _s in rows if t.endswith("Participation.BetPlaced"))
    _delete(app, oid, version)
    v = _verified(app, rid)
    assert not v.ok
    # the commit check's runs of the round's leaves: the entry no record holds any more
    assert any(d.check == "commit" and "deleted" in d.message for d in v.discrepancies)


def test_a_record_s_bytes_changed_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    app, rid = recorded
    rows = _round_rows(app, rid)
    oid, version, _, state = next(r for r in rows if r[2].endswith("Participation.BetPlaced"))
    _set_state(app, oid, version, _changed(app, state))
    v = _verified(app, rid)
    assert ("commit", "(bytes)") in _found(v), v.discrepancies


def test_a_leaf_rewritten_is_found(recorded: tuple[RoundAudit, UUID]) -> None:
    """A participation record's digest changed in its leaf before the verifier reads the log:
    the leaf no longer commits to the record (a commit finding at the record's position)."""
    app, rid = recorded
    if not hasattr(app.recorder, "datastore"):
        pytest.skip("the in-memory store has no leaf table to rewrite")
    index, _old, new, position = _leaf_changed(app, rid)
    _rewrite_leaf(app, index, new)
    v = _verified(app, rid)
    assert not v.ok
    assert any(
        x.check == "commit" and x.position == position and x.field == "(bytes)"
        for x in v.discrepancies
    ), v.discrepancies

"""A log read whole at once (``MerkleLog.refresh``: the new leaves hashed into the tree level
by level, ``MerkleTree.extend``, each parsed and indexed, the last ones kept in the cache of
recent leaves, their parses of the very text hashed, no text) is the very log that adding its
leaves one at a time makes: the same tree (every node), kinds, spans, index, rounds, legacy
round leaves and cached parses, on every store (memory, SQLite plain and compressed,
PostgreSQL), whether read in one refresh or in several, with leaves that are not a
transaction's among them (malformed, of another topic, a legacy round leaf); a deleted leaf row
still ends the read at the gap. The signer's ``TreeLog`` (the leaves hashed a page at a time,
never parsed) holds the same tree."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventsourcing.persistence import StoredEvent

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import (
    FORMAT,
    LEAF_TOPIC,
    LEAVES_ID,
    PURPOSE,
    ROUND_LEAF_TOPIC,
    kept_parsed,
    parse_leaf,
)
from domain.persistence import environment_for
from replays import log as log_module
from replays.log import LogError, MerkleLog, TreeLog
from replays.merkle import MerkleTree, generate_key, leaf_hash, leaf_hashes
from replays.signer import Signer


def _record(app: RoundAudit, table: str) -> None:
    simulate(app, variant="european", rounds=3, players=2, table=f"eu{table}")
    simulate(app, variant="deluxe", rounds=2, players=2, table=f"dlx{table}")


def _odd_leaves(app: RoundAudit) -> None:
    """Leaves that are not a transaction's, after the last one: a malformed v2 leaf, a legacy
    round leaf, an unreadable legacy round leaf, a row of another topic, an empty v2 leaf."""
    table = app.commit_table(PURPOSE)
    size = len(table.select_events(LEAVES_ID))
    rows = [
        (LEAF_TOPIC, f"{FORMAT} commit\n1 not-a-uuid 1 {'ab' * 32} t\n".encode()),
        (ROUND_LEAF_TOPIC, orjson.dumps({"round_id": "00000000-0000-0000-0000-00000000000a"})),
        (ROUND_LEAF_TOPIC, b"{not json"),
        ("some:other-topic", b"anything"),
        (LEAF_TOPIC, f"{FORMAT} backfill\n".encode()),
    ]
    table.insert_events(
        [StoredEvent(LEAVES_ID, size + 1 + i, t, data) for i, (t, data) in enumerate(rows)]
    )


def _leaf_by_leaf(app: RoundAudit) -> MerkleLog:
    """The log of ``app`` with its leaves added one at a time, in order."""
    log = MerkleLog(app)
    for s in app.commit_table(PURPOSE).select_events(LEAVES_ID):
        log._add(s.topic, bytes(s.state))
    return log


def _read_in_three(app: RoundAudit, log: MerkleLog) -> MerkleLog:
    """``log`` refreshed three times while ``app`` records rounds, the odd leaves among them
    (each refresh answering the log itself)."""
    _record(app, "a")
    assert log.refresh() is log
    _record(app, "b")
    log.refresh()
    _odd_leaves(app)
    _record(app, "c")
    log.refresh()
    return log


def _shape(log: MerkleLog) -> dict[str, Any]:
    return {
        "levels": log.tree.levels,
        "kinds": list(log.kinds),
        "spans": log._spans,
        "where": {oid: list(v) for oid, v in log._where.items()},
        "rounds": list(log._rounds),
        "round_leaf": dict(log._round_leaf),
        "cache": [(i, p.size, p) for i, p in log._cache.items()],
        "cached bytes": log._cached_bytes,
    }


@pytest.mark.parametrize("parse_run", [512, 3])
@pytest.mark.parametrize("cache", [(4096, 16 << 20), (7, 16 << 20), (50, 3000), (3, 1)])
def test_a_log_read_at_once_is_the_log_added_leaf_by_leaf(
    app: RoundAudit, cache: tuple[int, int], parse_run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """... with the cache of recent leaves large, a few leaves, a few bytes (fewer than some
    leaves hold: the last leaf is still kept), the log read in one refresh or three, and its
    leaves parsed 512 or 3 at a time (``_PARSE_RUN``)."""
    monkeypatch.setattr(log_module, "_CACHE", cache[0])
    monkeypatch.setattr(log_module, "_CACHE_BYTES", cache[1])
    monkeypatch.setattr(log_module, "_PARSE_RUN", parse_run)
    steps = _read_in_three(app, MerkleLog(app))
    whole = MerkleLog(app).refresh()
    expected = _shape(_leaf_by_leaf(app))
    assert _shape(whole) == expected
    assert _shape(steps) == expected
    assert {"commit", "backfill", "round", "other"} <= set(whole.kinds)
    assert whole._cache
    for index, parsed in whole._cache.items():  # the parse of the very text hashed
        data = whole.leaf(index)
        assert parse_leaf(data) == parsed
        assert parsed.size == len(data)
        assert parsed is kept_parsed(whole.tree.leaf(index))  # kept by the tree's hash
    assert whole._cached_bytes == sum(p.size for p in whole._cache.values())
    leaves = [whole.leaf(i) for i in range(whole.size)]
    assert whole.tree.root() == MerkleTree([leaf_hash(data) for data in leaves]).root()


def test_a_read_stops_at_a_deleted_leaf_row(tmp_path: Path) -> None:
    """Leaf rows 1..N with row 5 deleted (SQLite, by SQL): the log read whole holds the 4
    leaves before the gap, and names the missing row, as before."""
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        _record(app, "a")
        rows = app.commit_table(PURPOSE).select_events(LEAVES_ID)
        assert len(rows) > 5
        with sqlite3.connect(tmp_path / "events.db") as db:
            db.execute(
                "DELETE FROM stored_merkle_log WHERE originator_id = ? AND originator_version = 5",
                (LEAVES_ID.hex,),
            )
        log = MerkleLog(app).refresh()
        assert log.size == 4
        assert log.tree.levels == MerkleTree(leaf_hashes(bytes(r.state) for r in rows[:4])).levels
        assert log.missing_leaf_row() == 4
    finally:
        app.close()


@pytest.mark.parametrize("n", range(0, 40))
def test_extend_is_append_of_each_hash(n: int) -> None:
    """``MerkleTree.extend`` gives every node ``append`` gives, from any tree size, in any
    number of steps."""
    hashes = leaf_hashes(bytes([i]) * i for i in range(n))
    one = MerkleTree()
    for h in hashes:
        one.append(h)
    for cut in range(n + 1):
        tree = MerkleTree()
        tree.extend(hashes[:cut])
        tree.extend([])
        tree.extend(hashes[cut:])
        assert tree.levels == one.levels
    assert one.root() == MerkleTree(hashes).root()


# ------------------------------------------------------------------- the signer's TreeLog
@pytest.mark.parametrize(
    "page", [(16, 4 << 20, 4096), (1, 1, 2), (2, 3000, 5)], ids=["default", "one", "small"]
)
def test_the_signers_tree_log_is_the_tree_of_the_whole_log(
    app: RoundAudit, page: tuple[int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TreeLog`` (what the signer reads: the leaves hashed a page at a time, never parsed)
    holds the very tree a ``MerkleLog`` read whole holds, every node, read in one refresh or
    in several, with pages of one leaf, of a few, or of its defaults (the first page
    ``_TREE_FIRST`` rows, then as many as ``_TREE_BYTES`` hold, at most ``_TREE_MOST``), with
    leaves that are not a transaction's among them."""
    first, size, most = page
    monkeypatch.setattr(log_module, "_TREE_FIRST", first)
    monkeypatch.setattr(log_module, "_TREE_BYTES", size)
    monkeypatch.setattr(log_module, "_TREE_MOST", most)
    steps = _read_in_three(app, TreeLog(app))
    whole = MerkleLog(app).refresh()
    assert whole.size > 20
    assert steps.size == whole.size
    assert steps.tree.levels == whole.tree.levels
    assert TreeLog(app).refresh().tree.levels == whole.tree.levels


def test_the_signers_tree_log_stops_at_a_deleted_leaf_row(tmp_path: Path) -> None:
    """A deleted leaf row ends a ``TreeLog``'s read at the gap as it ends a ``MerkleLog``'s,
    whether the gap falls inside a page or at its start."""
    url = f"sqlite:///{tmp_path}/events.db"
    app = RoundAudit(env=environment_for(url))
    try:
        _record(app, "a")
        rows = app.commit_table(PURPOSE).select_events(LEAVES_ID)
        with sqlite3.connect(tmp_path / "events.db") as db:
            db.execute(
                "DELETE FROM stored_merkle_log WHERE originator_id = ? AND originator_version = 5",
                (LEAVES_ID.hex,),
            )
        expected = MerkleTree(leaf_hashes(bytes(r.state) for r in rows[:4])).levels
        for first in (1, 2, 3, 4, 16):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(log_module, "_TREE_FIRST", first)
                m.setattr(log_module, "_TREE_BYTES", 1)
                log = TreeLog(app).refresh()
            assert log.size == 4, first
            assert log.tree.levels == expected
            assert log.refresh().size == 4  # read again: still the gap
    finally:
        app.close()


def test_the_signers_tree_log_refuses_what_needs_the_entries(app: RoundAudit) -> None:
    """A ``TreeLog`` never reads its leaves' entries: what needs them (locating an event, the
    rounds, the kinds of leaves, a round's leaves) is refused with a ``LogError`` that says
    so, never answered from an empty index."""
    _record(app, "a")
    log = TreeLog(app).refresh()
    whole = MerkleLog(app).refresh()
    rid = whole.round_ids()[0]
    asks = [
        lambda: log.locate(rid, 1),
        log.round_ids,
        lambda: log.knows_round(rid),
        lambda: log.leaves_of(rid),
        log.other_leaves,
        lambda: list(log.kinds),
        lambda: log.parsed(0),
    ]
    for ask in asks:
        with pytest.raises(LogError, match="holds the tree alone"):
            ask()
    assert log.checkpoints() == whole.checkpoints()  # the checkpoints are read as a MerkleLog's


def test_the_signer_reads_a_tree_log_and_signs_the_same_root(app: RoundAudit) -> None:
    """The signer's own log is a ``TreeLog``; its checkpoint is of the root a verifier's
    ``MerkleLog`` computes, checkpoint after checkpoint as the log grows."""
    key = generate_key()
    signer = Signer(app, key=key, origin="roundaudit.invalid/tree")
    assert type(signer.log) is TreeLog
    for table in ("a", "b"):
        _record(app, table)
        cp = signer.run_once().checkpoint
        assert cp is not None
        whole = MerkleLog(app).refresh()
        assert (cp.size, cp.root) == (whole.size, whole.tree.root())

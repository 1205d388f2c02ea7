"""The commit check of a round whose leaves pass the bound of the leaves kept parsed
(``domain.commit_leaf.PARSED_MAX_BYTES``) and of the log's cache of recent leaves (here one
leaf: ``replays.log._CACHE_BYTES``): the round's evidence reads again first those the
verifier's read of the whole log left parsed (``MerkleLog.read_leaves``, ``kept_first``, by
their tree hash), so none of them is parsed again, and its verdict is the one it gives when
every leaf is kept, on an intact round and on tampered ones (SQLite and PostgreSQL).

A boundless round's leaves are large (a leaf a save batch); at 8,000+ players their text
passes the 64 MiB bound, and the commit check, asking in the leaves' order, parsed every one
of them a second time: the older leaves it asked first pushed out the newer ones before it
asked for them. Here the bound is set to hold about half of a small round's leaves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID

import pytest
from storekit import Store, operator, sign

from cli.simulate import simulate
from domain import commit_leaf
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.persistence import environment_for
from replays import log as log_module
from replays.bundle import StoreReader
from replays.log import make_policy
from replays.merkle import leaf_hash
from replays.verify import StoreVerifier

ROUNDS = 2
PLAYERS = 12
TABLE = "sim-boundless"


@pytest.fixture
def store(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Store:
    app = RoundAudit(env=environment_for(store_url))
    try:
        simulate(app, variant="boundless", rounds=ROUNDS, players=PLAYERS, table=TABLE)
    finally:
        app.close()
    assert sign(store_url, tmp_path / "key.pem").checkpoint is not None
    return Store(store_url, tmp_path / "key.pem", capsys)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The tree hash of every leaf the parser parses (not those it answers from its kept
    leaves); the log's cache holds one leaf (the round's leaves are read again)."""
    done: list[bytes] = []
    parse = commit_leaf._parse_leaf

    def counted(data: bytes) -> commit_leaf.ParsedLeaf:
        done.append(leaf_hash(data))
        return parse(data)

    monkeypatch.setattr(commit_leaf, "_parse_leaf", counted)
    monkeypatch.setattr(log_module, "_CACHE_BYTES", 1)
    yield done
    commit_leaf.forget_parsed()


def last_round() -> UUID:
    return SharedHand.create_id(TABLE, ROUNDS)


def verify(store: Store, rid: UUID, parses: list[bytes]) -> tuple[dict[str, Any], Checked]:
    """A fresh verifier's verdict on ``rid`` (nothing parsed when it starts), and what its
    commit check read and parsed (:class:`Checked`)."""
    commit_leaf.forget_parsed()
    app = RoundAudit(env=environment_for(store.url))
    try:
        key = operator(store.key)
        verifier = StoreVerifier(app, policy=make_policy(key, origin=key.name))
        kept: set[bytes] = set()
        before: list[int] = []

        def ordered(leaves: Iterable[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
            if not before:  # when the round's leaves are first read again (a tampered
                # round's are read again once more, when the verifier reads it whole)
                kept.update(commit_leaf._KEPT.leaves)
                # the leaf the log's cache holds (its last one) is not read again
                kept.update(map(verifier.log.tree.leaf, verifier.log._cache))
                before.append(len(parses))
            return commit_leaf.kept_first(leaves)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(log_module, "kept_first", ordered)
            verdict = verifier.verify(rid)
        assert before
        asked = {key: p.size for key, p in verifier._commits.leaves.values()}
        return verdict.as_json(), Checked(set(asked), kept, parses[before[0] :], asked)
    finally:
        app.close()


class Checked(NamedTuple):
    """Leaves by their tree hash."""

    #: the leaves the commit check read
    asked: set[bytes]
    #: the leaves kept parsed (or held by the log's cache) when the round's leaves were read
    #: again
    kept: set[bytes]
    #: the leaves parsed from then on
    parsed: list[bytes]
    #: the length of each asked leaf's text
    sizes: dict[bytes, int]


def bound_for_half(checked: Checked) -> int:
    """A bound of leaf text that keeps about half of the leaves the commit check read, the
    last round's (the log's newest leaves but its shoe's later ones, none here)."""
    sizes = sorted(checked.sizes.values())
    return sum(sizes[: len(sizes) // 2 + 1])


def test_no_leaf_the_log_left_parsed_is_parsed_again(
    store: Store, parses: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = last_round()
    whole, every = verify(store, rid, parses)
    assert whole["ok"], whole
    assert len(every.asked) >= 4
    assert every.asked <= every.kept  # the default bound keeps them all
    assert not every.parsed
    monkeypatch.setattr(commit_leaf, "PARSED_MAX_BYTES", bound_for_half(every))
    bounded, some = verify(store, rid, parses)
    assert bounded == whole
    assert some.asked == every.asked
    assert some.asked & some.kept, "some of the round's leaves are kept when the check starts"
    assert some.asked - some.kept, "and some are not: the round's leaves pass the bound"
    # none of those kept is parsed again; each of the others once
    assert not set(some.parsed) & some.kept
    assert Counter(some.parsed) == Counter(some.asked - some.kept)


@pytest.mark.parametrize("kind", ["bytes", "deleted"])
def test_a_tampered_round_has_the_same_verdict_under_the_bound(
    store: Store, parses: list[bytes], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    rid = last_round()
    _, every = verify(store, rid, parses)
    app = RoundAudit(env=environment_for(store.url))
    try:
        part = sorted(StoreReader(app).round_bundle(rid).participations())[0]
    finally:
        app.close()
    version, _, state = store.rows(part)[-1]
    if kind == "bytes":
        store.set_state(part, version, state.replace(b'"', b' "', 1))
    else:
        store.delete(part, version=version)
    whole, _ = verify(store, rid, parses)
    assert not whole["ok"]
    assert any(d["check"] == "commit" for d in whole["discrepancies"]), whole
    monkeypatch.setattr(commit_leaf, "PARSED_MAX_BYTES", bound_for_half(every))
    bounded, some = verify(store, rid, parses)
    assert some.asked - some.kept
    assert bounded == whole

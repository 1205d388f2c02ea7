"""Test oracles for Merkle leaves (``domain.commit_leaf``) and the log's index of them
(``replays.log.MerkleLog``), written the slow, obvious way: what the product's fast paths are
compared with. One home for each, shared by the leaf, log and commit-hook tests."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from domain import commit_leaf
from domain.commit_leaf import COMMIT, FORMAT
from domain.commits import CommittedEvent
from replays.log import ROUND_STARTED_TOPICS

if TYPE_CHECKING:
    from domain.commit_leaf import ParsedLeaf
    from replays.log import MerkleLog


def leaf_entry(n: int, oid: UUID, version: int, topic: str = "t") -> str:
    """One entry line of a leaf: notification ``n``, stream ``oid`` at ``version``, a fixed
    digest, ``topic``."""
    return f"{n} {oid} {version} {'cd' * 32} {topic}\n"


def expected_leaf(events: Sequence[CommittedEvent]) -> bytes:
    """The commit leaf of ``events`` as the module docstring of ``domain.commit_leaf`` writes
    it: its header, then a line an event (number, stream, version, SHA-256 of the state,
    topic)."""
    lines = [f"{FORMAT} {COMMIT}\n"]
    for e in events:
        digest = hashlib.sha256(e.state).hexdigest()
        lines.append(
            f"{e.notification_id} {e.originator_id!s} {e.originator_version} {digest} {e.topic}\n"
        )
    return "".join(lines).encode()


def reference_index(
    datas: Sequence[bytes],
) -> tuple[dict[UUID, list[int]], list[UUID], list[tuple[int, int]]]:
    """The log's index of the leaves ``datas`` made from each leaf's entries one by one: per
    stream the first leaf of each version (-1: none), the rounds started (in the order their
    first leaf came), and each leaf's span of notification ids ((-1, -1): no entry)."""
    where: dict[UUID, list[int]] = {}
    rounds: dict[UUID, None] = {}
    spans: list[tuple[int, int]] = []
    for index, data in enumerate(datas):
        entries = commit_leaf._parse_leaf(data).entries
        spans.append((entries[0][0], entries[-1][0]) if entries else (-1, -1))
        for _, oid, version, _, topic in entries:
            if version < 1:
                continue
            versions = where.setdefault(oid, [])
            versions.extend([-1] * (version - len(versions)))
            if versions[version - 1] == -1:
                versions[version - 1] = index
            if version == 1 and topic in ROUND_STARTED_TOPICS:
                rounds.setdefault(oid)
    return where, list(rounds), spans


def assert_indexed_as_entries(
    log: MerkleLog, datas: Sequence[bytes]
) -> tuple[dict[UUID, list[int]], list[UUID], list[tuple[int, int]]]:
    """Assert that ``log``, having read the leaves ``datas`` (and no other), holds the index,
    the rounds and the spans :func:`reference_index` makes from their entries one by one;
    returns that reference for the caller's own checks."""
    where, rounds, spans = reference_index(datas)
    assert {oid: list(v) for oid, v in log._where.items()} == where
    assert log.round_ids() == rounds
    assert log._spans == spans
    return where, rounds, spans


@contextlib.contextmanager
def read_by_a_log(
    datas: Sequence[bytes],
) -> Iterator[tuple[MerkleLog, dict[UUID, list[int]], list[UUID], list[tuple[int, int]]]]:
    """A log (an in-memory application's) that has read the leaves ``datas`` together, as a
    verifier's read of the log does (``MerkleLog._add_many``), from no leaf kept parsed;
    checked by :func:`assert_indexed_as_entries`, whose reference it yields beside the log.
    The application is closed and the leaves kept parsed forgotten on leaving."""
    from domain.application import RoundAudit
    from domain.commit_leaf import LEAF_TOPIC
    from replays.log import MerkleLog

    commit_leaf.forget_parsed()
    app = RoundAudit(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    try:
        log = MerkleLog(app)
        log._add_many([(LEAF_TOPIC, data) for data in datas])
        yield (log, *assert_indexed_as_entries(log, datas))
    finally:
        app.close()
        commit_leaf.forget_parsed()


def kept_parses(datas: Sequence[bytes]) -> list[ParsedLeaf | None]:
    """The leaves ``datas`` as kept parsed by their tree hash (None: not kept)."""
    from replays.merkle import leaf_hash

    return [commit_leaf.kept_parsed(leaf_hash(data)) for data in datas]

"""The commit writer of the Merkle log: every transaction that records events appends its leaf.

:class:`MerkleLeafWriter` is the first writer of the store's commit hook (``domain.commits``):
it appends the leaf of each transaction's events (``domain.commit_leaf.leaf_bytes``, the
format ``roundaudit/leaf/v2``) to the Merkle log's table in the same transaction, numbered in
commit order. A store written before seal-at-commit is migrated first: its events no leaf
covers are sealed in ``backfill`` leaves (:func:`migrate` does that alone; ``roundaudit seal``
runs it when it starts). Where leaves go and what they say: ``domain.commit_leaf``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent

from domain.commit_leaf import (
    BACKFILL,
    BACKFILL_PAGE,
    COMMIT,
    LEAF_TOPIC,
    LEAVES_ID,
    PURPOSE,
    leaf_bytes,
)
from domain.commits import CommitHook, CommittedEvent, CommitTransaction

__all__ = ["MerkleLeafWriter", "migrate"]


def _next_index(tx: CommitTransaction, *, before: int | None) -> int:
    """The index of the next leaf, after backfilling a store that predates this format."""
    last = tx.last(PURPOSE, LEAVES_ID)
    count = 0 if last is None else last.originator_version
    if last is not None and last.topic == LEAF_TOPIC:
        return count
    after = 0
    while True:  # backfill: every event recorded before (none in a new store)
        page = tx.events(after=after, before=before, limit=BACKFILL_PAGE)
        if not page:
            return count
        tx.insert(
            PURPOSE, [StoredEvent(LEAVES_ID, count + 1, LEAF_TOPIC, leaf_bytes(BACKFILL, page))]
        )
        count += 1
        after = page[-1].notification_id


class MerkleLeafWriter:
    """Appends the leaf of every transaction that records events (see the module docstring).

    The first transaction of a process reads the last leaf row (and backfills a store that
    predates this format); after that the store is known to be migrated, and each leaf is one
    insert numbered by ``MAX(version) + 1`` in the statement itself, under the events table's
    lock, with no read before it (measured in ``benchmarks/seal_cost.py``)."""

    purposes: tuple[str, ...] = (PURPOSE,)

    def __init__(self) -> None:
        self._migrated = False

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        if not events:
            return
        data = leaf_bytes(COMMIT, events)
        if self._migrated:
            tx.append(PURPOSE, LEAVES_ID, LEAF_TOPIC, data)
            return
        index = _next_index(tx, before=events[0].notification_id)
        tx.insert(PURPOSE, [StoredEvent(LEAVES_ID, index + 1, LEAF_TOPIC, data)])
        self._migrated = True


def migrate(recorder: CommitHook) -> int:
    """Seal, in backfill leaves, every event no leaf covers yet in a store written before
    seal-at-commit; returns the number of leaves the log then holds (nothing is written when
    the store needs no migration)."""
    return recorder.transact(lambda tx: _next_index(tx, before=None))

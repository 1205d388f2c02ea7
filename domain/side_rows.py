"""Rows a new shoe or a new round writes beside its events, in the same database transaction.

This module owns :class:`SideRows`, what one ``app.save(...)`` carries besides its events, and
:class:`SideRowWriter`, the commit writer (``domain.commits``) that writes them:

* **sealed seeds** (table ``sealed_seeds``): an RNG shoe's seed, encrypted by the vault
  (``domain.vault.SeedVault.sealed_row``), at version 1 of the shoe's id; written by the save
  that records the shoe's ``Opened`` event. A :class:`SealedSeed` carries the plaintext it
  seals beside the row, never written: the process that saves the shoe keeps it as the
  shoe's opened seed once the save has committed (``AuditBase._save_new``), and a save that
  fails keeps nothing, so no seed is ever decrypted from the row its own save just wrote;
* **shoe rounds** (table ``shoe_rounds``): the index shoe -> the rounds started on it (one row a
  round, the round's id as the state, at the shoe's next version), which says which rounds of
  a shoe are in play (a shoe in use is not retired: ``domain.services.in_play``); written by
  the save that records the round's first event;
* **boundless starts** (table ``boundless_starts``): where a boundless round starts in the
  notification log (the notification id of its shared hand's first event, in decimal, at
  version 1 of the round's id), from which its index and its verifier read the round's records
  (``domain.boundless.index``); written by the save that records that event, which is the only
  one that knows the id the database gave it.

Written by the transaction that records the shoe or the round, a row commits or rolls back
with it: there is no seed without its shoe, no index row without its round, and a shoe or a
round that another writer created first makes the whole save an ``IntegrityError`` (the
events' own key), so nothing of it is recorded. (Before, the seed and the index row were each
a transaction of their own before the save: two more commits a round, and rows left behind
by a save that then failed.)

A save that carries side rows but records no event is refused (``ProgrammingError``): a row
is always written with what it belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

from eventsourcing.persistence import ProgrammingError, StoredEvent

from domain.commits import CommittedEvent, CommitTransaction

SEEDS: Final = "sealed_seeds"
SHOE_ROUNDS: Final = "shoe_rounds"
SHOE_ROUND_TOPIC: Final = "roundaudit:shoe-round"
BOUNDLESS_STARTS: Final = "boundless_starts"
BOUNDLESS_START_TOPIC: Final = "roundaudit:boundless-start-position"
#: The keyword argument of ``app.save`` that carries them.
KWARG: Final = "side_rows"

__all__ = [
    "BOUNDLESS_STARTS",
    "BOUNDLESS_START_TOPIC",
    "KWARG",
    "SEEDS",
    "SHOE_ROUNDS",
    "SHOE_ROUND_TOPIC",
    "SealedSeed",
    "SideRowWriter",
    "SideRows",
    "start_row",
]


@dataclass(frozen=True)
class SealedSeed:
    """A new RNG shoe's seed as its save carries it: the vault's sealed ``row``, written with the
    shoe, and the ``seed`` it seals, written nowhere (nor shown by ``repr``)."""

    row: StoredEvent
    seed: bytes = field(repr=False)


@dataclass(frozen=True)
class SideRows:
    """The rows one save writes beside its events."""

    sealed_seeds: tuple[SealedSeed, ...] = ()
    #: (shoe id, round id): the round was started on the shoe
    shoe_rounds: tuple[tuple[UUID, UUID], ...] = ()
    #: boundless rounds whose shared hand's first event this save records
    boundless_starts: tuple[UUID, ...] = ()

    def __add__(self, other: SideRows) -> SideRows:
        return SideRows(
            self.sealed_seeds + other.sealed_seeds,
            self.shoe_rounds + other.shoe_rounds,
            self.boundless_starts + other.boundless_starts,
        )

    def __bool__(self) -> bool:
        return bool(self.sealed_seeds or self.shoe_rounds or self.boundless_starts)

    def save_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``app.save`` that write them (none when there are none)."""
        return {KWARG: self} if self else {}


NONE: Final = SideRows()


def start_row(round_id: UUID, notification_id: int) -> StoredEvent:
    """The ``boundless_starts`` row of a round whose first event has ``notification_id``."""
    return StoredEvent(round_id, 1, BOUNDLESS_START_TOPIC, str(notification_id).encode())


class SideRowWriter:
    """Writes a save's :class:`SideRows` in its transaction (see the module docstring)."""

    purposes: tuple[str, ...] = (SEEDS, SHOE_ROUNDS, BOUNDLESS_STARTS)

    def write(
        self, tx: CommitTransaction, events: Sequence[CommittedEvent], kwargs: Mapping[str, Any]
    ) -> None:
        rows = kwargs.get(KWARG)
        if rows is None:
            return
        if not isinstance(rows, SideRows):
            raise ProgrammingError(f"{KWARG} must be SideRows, not {type(rows).__name__}")
        if not rows:
            return
        if not events:
            raise ProgrammingError("side rows are written only with the events they belong to")
        tx.insert(SEEDS, [sealed.row for sealed in rows.sealed_seeds])
        for shoe_id, round_id in rows.shoe_rounds:
            tx.append(SHOE_ROUNDS, shoe_id, SHOE_ROUND_TOPIC, round_id.bytes)
        for round_id in rows.boundless_starts:
            first = next(
                (e for e in events if e.originator_id == round_id and e.originator_version == 1),
                None,
            )
            if first is None:
                raise ProgrammingError(f"round {round_id}'s first event is not in this save")
            tx.insert(BOUNDLESS_STARTS, [start_row(round_id, first.notification_id)])

"""Projections: read models derived from the event log, never a second source of truth.

* ``hand_scores`` (:mod:`projections.hand_scores`): every hand, card by card, with totals.
* ``ledger`` (:mod:`projections.ledger`): one row per wager, wallet totals, reconciliation.
* ``feed`` (:mod:`projections.feed`): settled wagers in a gap-free order; daily aggregates.
* ``observed_rtp`` (:mod:`projections.observed_rtp`): observed RTP per day, table and bet
  type against the theory (``domain.rtp``), with its 99% and 99.9% intervals.
* ``rounds`` (:mod:`projections.round_index`): every round's table, variant, state, times
  and players, for the searches of the read side.
* the dispute timeline (:mod:`projections.dispute`) is computed at query time from a round's
  own events.

The tracked ones live in tables of the event store's database (:mod:`projections.store`) and
are kept up to date by :class:`projections.runner.ProjectionRunner`. See docs/projections.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from projections.base import Projection
from projections.feed import Feed
from projections.hand_scores import HandScores
from projections.ledger import Ledger
from projections.observed_rtp import ObservedRtp
from projections.round_index import RoundIndex

#: The tracked projections by name, in the order the CLI lists them.
PROJECTIONS: dict[str, Callable[[], Projection]] = {
    HandScores.name: HandScores,
    Ledger.name: Ledger,
    Feed.name: Feed,
    ObservedRtp.name: ObservedRtp,
    RoundIndex.name: RoundIndex,
}


def make(names: Iterable[str] | None = None) -> list[Projection]:
    """Fresh instances of the named projections (default: all)."""
    chosen = list(PROJECTIONS) if names is None else list(names)
    unknown = [n for n in chosen if n not in PROJECTIONS]
    if unknown:
        raise KeyError(
            f"unknown projection(s) {', '.join(unknown)}; known: {', '.join(PROJECTIONS)}"
        )
    return [PROJECTIONS[n]() for n in chosen]


__all__ = ["PROJECTIONS", "Projection", "make"]

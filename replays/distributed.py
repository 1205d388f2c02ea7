"""Verification fanned out over Dask distributed: rounds by position ranges, one verdict.

This module owns the fan-out of ``roundaudit verify --workers N`` (a local
``distributed.LocalCluster`` of N worker processes) and ``--scheduler tcp://HOST:8786`` (an
existing Dask cluster). What a round's verdict is stays in ``replays.verify``: every worker
runs the same :class:`~replays.verify.StoreVerifier` the single-process run uses, on its own
connection to the same store, so a verdict does not depend on where it was computed.

* The driver lists the rounds once, in log order (:meth:`StoreVerifier.round_ids`: the order of
  first appearance in the notification log), and cuts that list into **contiguous position
  ranges** (:func:`position_ranges`), a few per worker so that a slow range does not hold the
  others up. The log as a whole (``verify_log``: coverage, checkpoints, witnesses) is checked
  once, by the driver.
* Each range is one task: the worker opens the store (``CREATE_TABLE=n``; no seed key: verifying
  never opens a sealed seed), verifies the range's rounds in order and returns their verdicts
  (plain picklable dataclasses). A worker keeps its verifier between the ranges of one run (the
  shoes, wallets and the Merkle log it has read), keyed by the run's token, and drops it when
  another run starts.
* The driver gathers the ranges **in position order** (:func:`verify_distributed` yields the
  verdicts in the order of the ids it was given), so the report, the failing rounds it names
  and the summary line are those of the single-process run.

Every worker must reach the store under the same URL (a SQLite file on a shared path, or a
PostgreSQL URL: a read replica, ``ROUNDAUDIT_READ_DATABASE_URL``, is the natural target).
A worker that dies takes its range with it; Dask runs the range again on another worker
(verification only reads, so a retried range changes nothing).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

if TYPE_CHECKING:
    from replays.log import TrustPolicy
    from replays.reexecute import Verdict
    from replays.verify import StoreVerifier

__all__ = [
    "RANGES_PER_WORKER",
    "PositionRange",
    "position_ranges",
    "verify_distributed",
    "verify_range",
]

#: Ranges per worker: enough for the scheduler to balance uneven rounds (a boundless round of
#: thousands of players beside short ones), few enough that each task's fixed cost (opening
#: the store, reading the log) stays small against its rounds.
RANGES_PER_WORKER = 4


@dataclass(frozen=True, slots=True)
class PositionRange:
    """Rounds ``first`` .. ``last`` (0-based, inclusive) of the run's list, in log order."""

    first: int
    last: int
    round_ids: tuple[str, ...]


def position_ranges(round_ids: Sequence[UUID], parts: int) -> list[PositionRange]:
    """Cut ``round_ids`` into at most ``parts`` contiguous ranges of near-equal length.

    >>> from uuid import UUID
    >>> ids = [UUID(int=i) for i in range(5)]
    >>> [(r.first, r.last) for r in position_ranges(ids, 2)]
    [(0, 2), (3, 4)]
    >>> position_ranges([], 3)
    []
    """
    n = len(round_ids)
    parts = max(1, min(parts, n))
    out: list[PositionRange] = []
    start = 0
    for i in range(parts):
        end = start + (n - start) // (parts - i)
        if end > start:
            chunk = tuple(str(r) for r in round_ids[start:end])
            out.append(PositionRange(start, end - 1, chunk))
        start = end
    return out


# ------------------------------------------------------------------------------ worker side
_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], StoreVerifier] = {}


def _verifier(url: str, run: str, policy: TrustPolicy) -> StoreVerifier:
    """This worker's verifier for the run (made on its first range, dropped by the next run)."""
    from domain.application import RoundAudit
    from domain.persistence import environment_for
    from domain.vault import SeedKeyRing
    from replays.verify import StoreVerifier

    key = (url, run)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            return found
        for old in [k for k in _cache if k != key]:
            _cache.pop(old).app.close()
        app = RoundAudit(
            env=environment_for(url, create_table=False), seed_key=SeedKeyRing.locked()
        )
        made = StoreVerifier(app, policy=policy)
        _cache[key] = made
        return made


def verify_range(url: str, run: str, policy: TrustPolicy, rng: PositionRange) -> list[Verdict]:
    """The verdicts of one range, in its order (runs on a Dask worker, or anywhere)."""
    verifier = _verifier(url, run, policy)
    # one range at a time per verifier: its caches are not made for concurrent use
    with _cache_lock:
        return list(verifier.verify_many([UUID(r) for r in rng.round_ids]))


# ------------------------------------------------------------------------------ driver side
def verify_distributed(
    url: str,
    round_ids: Sequence[UUID],
    *,
    policy: TrustPolicy,
    workers: int | None = None,
    scheduler: str | None = None,
    ranges_per_worker: int = RANGES_PER_WORKER,
) -> Iterator[Verdict]:
    """Verify ``round_ids`` of the store at ``url`` on Dask; yields the verdicts in order.

    ``workers``: start a ``LocalCluster`` of that many single-threaded worker processes for
    the run (closed after it). ``scheduler``: connect to a running cluster's scheduler
    (``tcp://HOST:8786``). Exactly one of them.
    """
    from distributed import Client, LocalCluster

    if (workers is None) == (scheduler is None):
        raise ValueError("give either workers (a local cluster) or a scheduler address")
    if workers is not None and workers < 1:
        raise ValueError("workers must be 1 or more")
    cluster: Any = None
    if workers is not None:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=40,
        )
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="30s")
    try:
        n = workers or max(1, sum(client.nthreads().values()))
        ranges = position_ranges(round_ids, n * ranges_per_worker)
        run = uuid4().hex
        futures = [
            client.submit(verify_range, url, run, policy, rng, key=f"verify-{run}-{rng.first}")
            for rng in ranges
        ]
        for future in futures:  # in position order: the report reads like the local run's
            yield from future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

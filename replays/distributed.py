"""Verification fanned out over Dask distributed: rounds by position ranges, one verdict.

This module owns the fan-out of ``roundaudit verify --workers N`` (a local
``distributed.LocalCluster`` of N worker processes) and ``--scheduler tcp://HOST:8786`` (an
existing Dask cluster). What a round's verdict is stays in ``replays.verify``: every worker
runs the same :class:`~replays.verify.StoreVerifier` the single-process run uses, on its own
connection to the same store, so a verdict does not depend on where it was computed.

* The driver lists the rounds once, in log order (:meth:`StoreVerifier.round_ids`: the order of
  first appearance in the notification log), and cuts that list into **contiguous position
  ranges** (:func:`position_ranges`), a few per worker so that a slow range does not hold the
  others up, but none shorter than the verifier's read-ahead batch (:func:`range_count`: a
  range's task, its read-ahead queries and its trips through the scheduler cost the same
  whatever its length, so a few hundred rounds go out as one range a worker). The log as a
  whole (``verify_log``: coverage, checkpoints, witnesses) is checked once, by the driver.
* With a local cluster and a verifier state (``verify --state``, ``replays.logstate``) that
  holds the log the driver just read (no fork or rollback against it), each worker reads the
  log through that state (``replays.logstate.read_log``: the kept tree and index, node by
  node as its rounds need them, each leaf a round reads compared with the hash kept) and
  nothing of the log is shipped. Otherwise (no state, a remote scheduler whose workers do not
  share this machine's files, or a log with a finding against the state: it must reach every
  round) the driver sends its Merkle log to every worker once (:func:`log_state`,
  ``client.scatter(..., broadcast=True)``): re-reading and parsing every leaf on every worker
  was the largest cost the fan-out added (docs/scaling.md). It does so **after** submitting
  the ranges: each range's task is told the log is to come (:class:`LogToCome`), reads its
  first batch of rounds ahead (their records, shoes and wallets need no log: the verifier's
  ``later``), and only then takes the log (:func:`_log_to_come`): from its own memory when
  the scatter (under the run's key) has reached it, no trip through the scheduler; else it
  waits for the run's Dask ``Variable``, published once the scatter is done (through the
  worker's own client, never its process's default); the pickle and scatter are hidden
  behind those reads. A worker that joins after the scatter (one restarted) fetches the log
  from a worker that holds it.
* Each range is one task: the worker opens the store once for its lifetime (``CREATE_TABLE=n``;
  no seed key: verifying never opens a sealed seed), verifies the range's rounds in order on the
  shipped log and returns their verdicts (plain picklable dataclasses). A worker keeps its
  verifier between the ranges of one run (the shoes and wallets it has read), keyed by the
  run's token, and drops it when another run starts.
* A whole-store run (``verify --all`` or ``--since``: :func:`verify_store`) sends its ranges
  out **before the driver reads the log**: the store's rounds are listed without it
  (:meth:`StoreVerifier.store_round_ids`, one query), their ranges submitted with the log to
  come, and only then does the driver read the log (its verifier's ``deferred`` log) and ship
  it, or the path of the verifier's state that holds it; the rounds only the log knows (a
  round whose records were deleted: :meth:`StoreVerifier.log_round_ids`) go out as a last
  range, so the list and its order are :meth:`StoreVerifier.round_ids`'s; the caller checks
  the log as a whole (``on_log``) while the workers verify, before the first verdict.
* The driver gathers the ranges **in position order** (:func:`verify_distributed` yields the
  verdicts in the order of the ids it was given), so the report, the failing rounds it names
  and the summary line are those of the single-process run.

Every worker must reach the store under the same URL (a SQLite file on a shared path, or a
PostgreSQL URL: a read replica, ``ROUNDAUDIT_READ_DATABASE_URL``, is the natural target).
A worker that dies takes its range with it; Dask runs the range again on another worker
(verification only reads, so a retried range changes nothing).
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

if TYPE_CHECKING:
    from datetime import datetime

    from domain.application import RoundAudit
    from replays.log import MerkleLog, TrustPolicy
    from replays.reexecute import Verdict
    from replays.verify import StoreVerifier

__all__ = [
    "LOCAL_CLUSTER_CONFIG",
    "LOG_WAIT",
    "RANGES_PER_WORKER",
    "LogToCome",
    "PositionRange",
    "local_cluster",
    "log_from_state",
    "log_state",
    "position_ranges",
    "range_count",
    "verify_distributed",
    "verify_range",
    "verify_store",
    "warm",
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


def range_count(
    rounds: int, workers: int, per_worker: int = RANGES_PER_WORKER, least: int | None = None
) -> int:
    """How many ranges to cut ``rounds`` rounds into for ``workers`` workers: ``per_worker``
    each, fewer when a range would hold fewer than ``least`` rounds (default: one read-ahead
    batch of the verifier, ``replays.verify.AHEAD``), always a multiple of ``workers`` (every
    worker gets as many ranges) and at least one a worker.

    >>> range_count(2000, 2, least=100)
    8
    >>> range_count(320, 2, least=100)
    2
    >>> range_count(900, 2, least=100)
    8
    >>> range_count(700, 2, least=100)
    6
    >>> range_count(10, 4, least=100)
    4
    """
    if least is None:
        from replays.verify import AHEAD

        least = AHEAD
    per = min(per_worker, rounds // max(1, workers * least))
    return workers * max(1, per)


def position_ranges(round_ids: Sequence[UUID], parts: int) -> list[PositionRange]:
    """Cut ``round_ids`` into at most ``parts`` contiguous ranges of near-equal length.

    >>> from uuid import UUID
    >>> ids = [UUID(int=i) for i in range(5)]
    >>> [(r.first, r.last) for r in position_ranges(ids, 2)]
    [(0, 1), (2, 4)]
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


# ------------------------------------------------------------------------------ the log, shipped
#: Attributes of a :class:`~replays.log.MerkleLog` bound to its process (the store's
#: application and table, the lock); the rest (tree, leaf kinds, index, checkpoints) is data.
_LOG_BOUND = frozenset({"app", "table", "_lock"})


def log_state(log: MerkleLog) -> bytes:
    """The driver's log as bytes for the workers: what it read (tree, leaf index, kinds,
    checkpoints), without its store connection. Unpickling it costs a worker a few per cent of
    reading and parsing every leaf again (measured: 0.03 s against 2.4 s CPU for 23,000 leaves).
    A log read through a verifier's state is shipped as its plain copy (:meth:`MerkleLog.plain`:
    a running cluster's workers cannot read this machine's state file)."""
    return pickle.dumps(
        {k: v for k, v in vars(log.plain()).items() if k not in _LOG_BOUND},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def log_from_state(app: RoundAudit, state: bytes) -> MerkleLog:
    """A log of ``app``'s store holding what :func:`log_state` shipped (a fresh copy each call)."""
    from replays.log import PURPOSE, MerkleLog

    log = MerkleLog.__new__(MerkleLog)
    vars(log).update(pickle.loads(state))  # noqa: S301 - the driver's own bytes, sent as Dask sends every task
    log.app = app
    log.table = app.commit_table(PURPOSE)
    log._lock = threading.Lock()
    return log


# ------------------------------------------------------------------------------ worker side
_cache_lock = threading.Lock()
#: Per worker process: the store's application per URL, opened by the first range of the first
#: run and kept (it holds connections only, no data), and the verifier of the current run.
_apps: dict[str, RoundAudit] = {}
_cache: dict[tuple[str, str], StoreVerifier] = {}


def _app(url: str) -> RoundAudit:
    from domain.application import RoundAudit
    from domain.persistence import environment_for
    from domain.vault import SeedKeyRing

    found = _apps.get(url)
    if found is None:
        found = _apps[url] = RoundAudit(
            env=environment_for(url, create_table=False), seed_key=SeedKeyRing.locked()
        )
    return found


@dataclass(frozen=True, slots=True)
class LogToCome:
    """The driver's log, on its way: its :func:`log_state` (or the path of the verifier's state
    that holds it, for a local cluster's workers to read it through: ``replays.logstate``)
    scattered to every worker under the Dask key ``name`` once the ranges are out, then
    published under the Dask ``Variable`` ``name`` (the scattered future)."""

    name: str

    @classmethod
    def of_run(cls, run: str) -> LogToCome:
        """The log to come of the fan-out ``run``."""
        return cls(f"verify-log-{run}")

    def publish(self, client: Any, state: bytes | str) -> Any:
        """Ship ``state`` (the driver's :func:`log_state`, or a state file's path) to every
        worker of ``client``'s
        cluster under the key :attr:`name` (a worker finds it in its own memory by that key:
        :func:`_log_to_come`), then publish its future under the Dask ``Variable``
        :attr:`name` (for a worker the scatter missed): that variable, to delete once the
        run's verdicts are in (the log's future released with it)."""
        from distributed import Variable

        sent = client.scatter({self.name: state}, broadcast=True)[self.name]
        published = Variable(self.name, client=client)
        published.set(sent)
        return published

    def abandon(self, client: Any) -> None:
        """Tell the ranges waiting for this log that it will not come (the driver failed to
        read it): the variable set to None (:func:`_log_to_come` raises) and left so (a range
        that asks for it later, one still reading ahead, would wait :data:`LOG_WAIT` on a
        deleted variable): one name holding None on a running cluster per failed run."""
        from distributed import Variable

        Variable(self.name, client=client).set(None)


#: Seconds a worker waits for the driver's log to be published (:func:`_log_to_come`) before
#: its range fails: the driver pickles and scatters it right after submitting the ranges.
LOG_WAIT = 600.0


def _worker_client() -> Any:
    """This worker's client of its scheduler (for :func:`_log_to_come`), made on first use and
    closed with the worker: ``distributed.get_client``'s, except that it is never its process's
    default client (a worker thread in the driver's own process, ``processes=False``, would
    otherwise leave the driver a default client: see :func:`verify_distributed`)."""
    from distributed import Client, get_worker
    from distributed.worker import Worker

    worker = get_worker()
    if worker._client is None:
        worker._client = Client(
            worker.scheduler.address,
            loop=worker.loop,
            security=worker.security,
            set_as_default=False,
            direct_to_workers=True,
            name="worker",
        )
        Worker._initialized_clients.add(worker._client)  # closed with the worker
    return worker._client


def _held_here(name: str) -> bytes | str | None:
    """The driver's log (or state path) scattered under the key ``name`` when it is in this
    worker's memory
    already (None: not yet, or not on this worker, or not on a worker at all), looked up on the
    worker's event loop, the one that writes its data."""
    from distributed import get_worker
    from distributed.utils import sync

    try:
        worker = get_worker()
    except ValueError:
        return None

    async def lookup() -> Any:
        return worker.data.get(name)

    found = sync(worker.loop, lookup)
    return found if isinstance(found, bytes | str) else None


def _log_to_come(app: RoundAudit, name: str, policy: TrustPolicy | None = None) -> MerkleLog:
    """The driver's log to come under ``name`` (:class:`LogToCome`), made a log of ``app``:
    taken from this worker's own memory when the broadcast scatter (under that key) has put
    it there, no trip through the scheduler; else waited for through this worker's client (the
    variable, published once every worker of the scatter holds it), then taken from this
    worker's memory, or fetched from one that holds it (a worker that joined after the
    scatter: one restarted). A state path shipped instead is read through
    (``replays.logstate.read_log``, under ``policy``); a log abandoned
    (:meth:`LogToCome.abandon`) raises :class:`RuntimeError`."""
    from distributed import Variable

    held = _held_here(name)
    if held is None:
        shipped = Variable(name, client=_worker_client()).get(timeout=LOG_WAIT)
        if shipped is None:
            raise RuntimeError(f"the driver's log {name} will not come: its run failed")
        held = _held_here(name)
        if held is None:
            held = shipped.result(timeout=LOG_WAIT)
    if isinstance(held, str):
        from replays.logstate import read_log

        return read_log(app, held, policy)
    return log_from_state(app, held)


def _verifier(
    url: str, run: str, policy: TrustPolicy, log: bytes | str | LogToCome | None = None
) -> StoreVerifier:
    """This worker's verifier for the run (made on its first range, dropped by the next run):
    on the driver's log when one was shipped (bytes), or is on its way (:class:`LogToCome`:
    the verifier reads its first rounds ahead, then waits for it), through the verifier's
    state when its path was (str: ``replays.logstate.read_log``, never saved here), else on
    the log read here."""
    from replays.logstate import read_log
    from replays.verify import StoreVerifier

    key = (url, run)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            return found
        for old in [k for k in _cache if k != key]:
            del _cache[old]  # the application stays open for the next run
        app = _app(url)
        shipped: MerkleLog | None = None
        later: Callable[[], MerkleLog] | None = None
        if isinstance(log, LogToCome):
            later = partial(_log_to_come, app, log.name, policy)
        elif isinstance(log, str):
            shipped = read_log(app, log, policy)
        elif log is not None:
            shipped = log_from_state(app, log)
        made = StoreVerifier(app, policy=policy, log=shipped, later=later)
        _cache[key] = made
        return made


def verify_range(
    url: str,
    run: str,
    policy: TrustPolicy,
    rng: PositionRange,
    log: bytes | str | LogToCome | None = None,
) -> list[Verdict]:
    """The verdicts of one range, in its order (runs on a Dask worker, or anywhere)."""
    verifier = _verifier(url, run, policy, log)
    # one range at a time per verifier: its caches are not made for concurrent use
    with _cache_lock:
        return list(verifier.verify_many([UUID(r) for r in rng.round_ids]))


def _warm(url: str) -> None:
    """Import what a range needs and open the store's application (:func:`warm`)."""
    import replays.logstate  # what _verifier imports
    import replays.verify  # noqa: F401

    _app(url)


def warm(client: Any, url: str) -> None:
    """Ready every worker of ``client`` for runs on the store at ``url``: the verifier's modules
    imported and the store's application opened, what a worker's first range would otherwise do
    (a worker keeps both for its lifetime: a running cluster has them after its first run)."""
    client.run(_warm, url)


# ------------------------------------------------------------------------------ driver side
#: Dask settings of the local cluster (:func:`local_cluster`) that cost CPU in every process
#: of it, idle or not, for diagnostics alone: the workers' sampling profiler (a walk of the
#: running task's stack every 10 ms, for the dashboard's profile page) and the event loops'
#: health tick (every 20 ms in the scheduler, each nanny and each worker; a loop blocked for
#: ``distributed.admin.tick.limit``, 3 s, is still reported). Measured idle on 2 workers:
#: about 115 ms of CPU a second in the three processes with Dask's defaults, 32-38 without
#: these two (docs/scaling.md). Then (branch ``vfan6``) the polls of ``/proc`` through psutil:
#: every server's system monitor (the dashboard's CPU, memory, network and disk history,
#: every 500 ms: every 2 s, the disks' counters not read at all) and the memory monitor of
#: each worker and its nanny (every 100 ms: every 500 ms; a worker past its memory limit's
#: fractions is still paused, and its nanny still restarts it, half a second later at most):
#: 15-18 ms a second idle in all. A remote cluster (``--scheduler``) keeps its own settings.
LOCAL_CLUSTER_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.worker.memory.monitor-interval": "500ms",
}


def local_cluster(workers: int) -> Any:
    """A Dask ``LocalCluster`` of ``workers`` single-threaded worker processes on this machine,
    its scheduler in this process, with :data:`LOCAL_CLUSTER_CONFIG` (the nannies hand it to
    their workers): what ``verify --workers N`` starts for its run (a context manager; close
    it after)."""
    import dask
    from distributed import LocalCluster

    if workers < 1:
        raise ValueError("workers must be 1 or more")
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=40,
        )


@contextmanager
def _connected(workers: int | None, scheduler: str | None, client: Any) -> Iterator[Any]:
    """The run's client: of a local cluster of ``workers`` started here, connected to
    ``scheduler``, or ``client`` as it is (exactly one of the three); what is made here is
    closed here, a caller's client stays open. A client made here is never the process's
    default: nothing else in the process computes on it by chance, during the run or after it
    (were its close to time out)."""
    from distributed import Client

    if sum(x is not None for x in (workers, scheduler, client)) != 1:
        raise ValueError(
            "give one of workers (a local cluster), a scheduler address or a connected client"
        )
    cluster: Any = None
    own = client is None
    if workers is not None:
        cluster = local_cluster(workers)
        client = Client(cluster, set_as_default=False)
    elif scheduler is not None:
        client = Client(scheduler, timeout="30s", set_as_default=False)
    try:
        yield client
    finally:
        if own:
            client.close()
        if cluster is not None:
            cluster.close()


def _submit(
    client: Any,
    url: str,
    run: str,
    policy: TrustPolicy,
    ranges: Sequence[PositionRange],
    shipped: bytes | str | LogToCome | None,
) -> list[Any]:
    """One task a range of ``ranges`` (:func:`verify_range`), keyed by the run and its first
    position."""
    return [
        client.submit(verify_range, url, run, policy, rng, shipped, key=f"verify-{run}-{rng.first}")
        for rng in ranges
    ]


def verify_distributed(
    url: str,
    round_ids: Sequence[UUID],
    *,
    policy: TrustPolicy,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    ranges_per_worker: int = RANGES_PER_WORKER,
    least_per_range: int | None = None,
    log: MerkleLog | None = None,
    state: str | os.PathLike[str] | None = None,
) -> Iterator[Verdict]:
    """Verify ``round_ids`` of the store at ``url`` on Dask; yields the verdicts in order.

    ``workers``: start a ``LocalCluster`` of that many single-threaded worker processes for
    the run (closed after it). ``scheduler``: connect to a running cluster's scheduler
    (``tcp://HOST:8786``). ``client``: a ``distributed.Client`` already connected to a running
    cluster, used as it is and left open (a process that fans out run after run: no connection
    made and closed a run). Exactly one of the three. ``ranges_per_worker`` and
    ``least_per_range``: how the rounds are cut (:func:`range_count`). ``log``: the driver's
    log of the store (the one the log as a whole was checked on), sent once to every worker,
    which then verifies on it as the single-process verifier does on its own; without it each
    worker reads the log.
    ``state``: instead, the verifier's state file that holds the driver's log (saved by it,
    on this machine: a local cluster's workers): each worker reads the log through it, only
    the leaves its rounds need and the tail appended since, and nothing is shipped.
    A whole store's run whose driver has not read the log yet: :func:`verify_store`.
    """
    published: Any = None
    with _connected(workers, scheduler, client) as dask:
        try:
            n = workers or max(1, sum(dask.nthreads().values()))
            parts = range_count(len(round_ids), n, ranges_per_worker, least_per_range)
            run = uuid4().hex
            shipped: Any = None
            if state is not None:
                shipped = os.fspath(state)
            elif log is not None:
                shipped = LogToCome.of_run(run)
            futures = _submit(dask, url, run, policy, position_ranges(round_ids, parts), shipped)
            if isinstance(shipped, LogToCome) and log is not None:  # the workers read meanwhile
                published = shipped.publish(dask, log_state(log))
            for future in futures:  # in position order: the report reads like the local run's
                yield from future.result()
        finally:
            if published is not None:  # the log's future released with it
                published.delete()


def verify_store(
    url: str,
    verifier: StoreVerifier,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    state: str | os.PathLike[str] | None = None,
    ranges_per_worker: int = RANGES_PER_WORKER,
    least_per_range: int | None = None,
    on_log: Callable[[MerkleLog, int], None] | None = None,
) -> Iterator[Verdict]:
    """Verify every round of the store at ``url`` (with ``since``/``until``: those
    :meth:`StoreVerifier.round_ids` lists for that range) on Dask, the driver's ``verifier``
    (made ``deferred``: its log not read yet) listing them; yields the verdicts in the order of
    :meth:`StoreVerifier.round_ids`.

    In turn: the store's rounds listed (no log), their ranges submitted, the log to come; then
    the driver's log read (``verifier.log``) and shipped to every worker, or, on a local
    cluster (``workers``) whose verifier's ``state`` file holds exactly that log (no finding
    against it), that file's path (each worker reads the log through it); the rounds only the
    log knows submitted as a last range; ``on_log(log, rounds)`` called with the driver's log
    and the number of rounds listed in all (the caller checks the log as a whole while the
    workers verify); then the verdicts gathered in order. ``workers``, ``scheduler``,
    ``client``, ``ranges_per_worker``, ``least_per_range``: as :func:`verify_distributed`'s.
    An error reading the log (a ``replays.logstate.StateError``) is raised before any verdict,
    the ranges told that their log will not come (:meth:`LogToCome.abandon`)."""
    from replays.logstate import holds

    listed, seen = verifier.store_round_ids(since=since, until=until)
    published: Any = None
    with _connected(workers, scheduler, client) as dask:
        run = uuid4().hex
        to_come = LogToCome.of_run(run)
        try:
            n = workers or max(1, sum(dask.nthreads().values()))
            parts = range_count(len(listed), n, ranges_per_worker, least_per_range)
            futures = _submit(
                dask, url, run, verifier.policy, position_ranges(listed, parts), to_come
            )
            try:  # the workers read their first rounds meanwhile
                only_logged = verifier.log_round_ids(seen)
                log = verifier.log
                path = None if state is None else os.fspath(state)
                if workers is None or path is None or log.findings or not holds(path, log):
                    path = None
                published = to_come.publish(dask, log_state(log) if path is None else path)
            except BaseException:
                if futures:
                    dask.cancel(futures)
                    to_come.abandon(dask)
                raise
            if only_logged:  # the last range: their verdicts come after the store's
                last = PositionRange(
                    len(listed), len(listed) + len(only_logged) - 1, tuple(map(str, only_logged))
                )
                futures += _submit(dask, url, run, verifier.policy, [last], to_come)
            if on_log is not None:
                on_log(log, len(listed) + len(only_logged))
            for future in futures:  # in position order: the report reads like the local run's
                yield from future.result()
        finally:
            if published is not None:  # the log's future released with it
                published.delete()

"""Benchmark: one boundless round with thousands of players, on SQLite or PostgreSQL.

Run on demand (not part of the test suite)::

    python -m benchmarks.boundless --players 10000 --store sqlite
    python -m benchmarks.boundless --players 10000 --store postgres [--url postgresql://...]

Without ``--url`` the PostgreSQL run starts a throwaway cluster from the local server binaries
(``tests/pg.py``). The round: every player has a main bet, every other one side bets too; the
shared hand is a pair of eights against a six, so players split, double, hit, stand and
surrender (a deterministic mix per player, a few let their timer run out: AUTO-1). Decisions
arrive in waves, as from a game server that forwards each decision window's decisions in
batches (``decide_many``); after each wave the dealer reveals the next sequence card the hands
need (BDL-2). Then the dealer completes (D10) and every participation is settled, a batch of
participations (with their wallets) per transaction.

Printed: the decision phase's and the settlement's time, events written and events per second,
beside the raw library append rate measured in the same run on the same store (a trivial
aggregate appended in batches of the same size), their ratio, and the peak memory (max RSS),
with the recording's own peak: the max RSS right after the settlement, beside the one once the
application is open (the interpreter and imports), and the growth a player between them (the
raw append and the checkpoint that follow it are the harness's own, not the service's).
Targets (issue 5, on a 2-core machine): decisions within 15 s, settlement within 5 s, memory
under 1 GiB. With ``--verify``: the round is checkpointed, then verified by a fresh
``StoreVerifier`` (every check) that starts with no leaf parsed (the checkpoint's signer is a
process of its own in production, ``roundaudit seal``: what it parsed is forgotten first, and
so are the stable ids the recording named, ``domain.ids.forget_named``), and
the verification's wall time and CPU time
(``time.process_time``, the steadier figure on a shared machine) are printed, with the CPU in
milliseconds a player (issue 15: 0.5). ``--profile DIR`` writes a cProfile of each phase
(``decisions.prof``, ``settlement.prof``, and ``verify.prof`` with ``--verify``). With
``--verify`` the max RSS before the verification (recording, the raw append, the checkpoint) is
printed too, and ``--trace-memory`` adds the verification's traced peak (tracemalloc: the
Python allocations the verification holds at once, which max RSS, never lower than the
recording's, can hide).

Each timed phase also gives the cyclic garbage collector's CPU in it and its full
(generation 2) collections (``gc.callbacks``): CPython runs a full collection when the objects
promoted since the last one exceed a quarter of the heap's long-lived ones, so which phase
pays for one, and how long it walks the heap, moves with the number of players.

``--players 5000,20000`` (two sizes or more) prints the **per-player growth**: each size
played in a process of its own on a store of its own (``--runs N`` times, the sizes
alternated), then, from the first size to each other one and phase by phase, the CPU
milliseconds a player (the median of the runs), the events a player the phase wrote and the
CPU an event (a larger round can be another round: more players need more sequence cards,
and the dealer draws after them, so the settlement's payouts can differ), and the
collector's share. ``--report-json PATH`` writes one run's report as JSON.

``--others K`` measures something else: one round of ``--players`` recorded with K other rounds
of as many players interleaved (:func:`interleaved`, as a studio runs many tables), then the CPU
time of the service's round log of that round (``BoundlessService.round_log``), of reading its
records for the verifier (``StoreReader.shared_log``), of verifying it, and of the first
``GET /rounds/{id}`` view of it by a process that does not hold it (a fresh application on the
store: ``round_view``, its first load), each ``--repeat`` times (a round read by its own streams
should not grow with K).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eventsourcing.domain import Aggregate, event

from cli.strategy import choose
from domain.application import RoundAudit
from domain.boundless.service import Bet, Decision
from domain.persistence import environment_for
from domain.shuffle import ALGORITHM_V1, shuffled_order
from domain.wallet import Wallet

INITIAL = ("8H", "6C", "8D", "10S")  # shared 8H 8D; dealer 6C up, 10S in the hole
SIDE_KINDS = ("pair", "bust", "trio", "poker")
TARGETS = {"decisions": 15.0, "settlement": 5.0, "memory_mib": 1024.0}


@dataclass
class Report:
    players: int
    store: str
    batch: int
    setup: dict[str, float] = field(default_factory=dict)
    decisions: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    waves: int = 0
    revealed: int = 0
    decision_seconds: float = 0.0
    decision_cpu: float = 0.0
    decision_events: int = 0
    settlement_seconds: float = 0.0
    settlement_cpu: float = 0.0
    settlement_events: int = 0
    wagers: int = 0
    raw_events: int = 0
    raw_seconds: float = 0.0
    peak_mib: float = 0.0
    #: max RSS once the application is open, before any wallet (the interpreter and imports)
    start_mib: float = 0.0
    #: max RSS right after the settlement: the service's recording (wallets, bets, decisions,
    #: settlement), before the raw append and the checkpoint, which are the harness's own
    recording_mib: float = 0.0
    #: max RSS after each phase of the harness, in order (MiB)
    phases_mib: dict[str, float] = field(default_factory=dict)
    #: max RSS before the verification (recording, the raw append and the checkpoint)
    recorded_mib: float = 0.0
    #: ``--trace-memory``: tracemalloc's peak during the verification, MiB (None: not traced)
    verify_traced_mib: float | None = None
    phase: str = ""
    verified: bool | None = None
    seal_seconds: float = 0.0
    verify_seconds: float = 0.0
    verify_cpu: float = 0.0
    verify_checks: list[str] = field(default_factory=list)
    #: CPU seconds the cyclic garbage collector took in each timed phase (``gc.callbacks``),
    #: and how many of its passes were full (generation 2) collections
    collector: dict[str, float] = field(default_factory=dict)
    full_collections: dict[str, int] = field(default_factory=dict)

    @property
    def decision_rate(self) -> float:
        return self.decision_events / self.decision_seconds if self.decision_seconds else 0.0

    @property
    def settlement_rate(self) -> float:
        return self.settlement_events / self.settlement_seconds if self.settlement_seconds else 0.0

    @property
    def raw_rate(self) -> float:
        return self.raw_events / self.raw_seconds if self.raw_seconds else 0.0

    def _memory_lines(self) -> list[str]:
        out = []
        if self.verified is not None:
            out.append(
                "  of which before the verification (recording, raw append, checkpoint): "
                f"{self.recorded_mib:.0f} MiB"
            )
        if self.verify_traced_mib is not None:
            out.append(
                f"verification's traced peak (tracemalloc): {self.verify_traced_mib:.1f} MiB, "
                f"{self.verify_traced_mib * 1024 / self.players:.1f} KiB a player"
            )
        return out

    def lines(self) -> list[str]:
        head = [*self._lines(), self._collector_line()]
        return head + self._recording_lines() + self._memory_lines()

    def _collector_line(self) -> str:
        return "garbage collector (CPU s, full collections): " + ", ".join(
            f"{k} {v:.2f} ({self.full_collections.get(k, 0)})" for k, v in self.collector.items()
        )

    def cpu_ms(self) -> dict[str, tuple[float, int]]:
        """Each timed phase's CPU milliseconds a player and the events it wrote (the
        verification reads what both wrote)."""
        out = {
            "decisions": (1e3 * self.decision_cpu / self.players, self.decision_events),
            "settlement": (1e3 * self.settlement_cpu / self.players, self.settlement_events),
        }
        if self.verified is not None:
            events = self.decision_events + self.settlement_events
            out["verify"] = (1e3 * self.verify_cpu / self.players, events)
        return out

    def _recording_lines(self) -> list[str]:
        grown = self.recording_mib - self.start_mib
        return [
            f"  of which the recording (wallets, bets, decisions, settlement): "
            f"{self.recording_mib:.0f} MiB, {self.start_mib:.0f} at the start: "
            f"{grown * 1024 / self.players:.1f} KiB a player",
            "  max RSS after each phase: "
            + ", ".join(f"{k} {v:.0f}" for k, v in self.phases_mib.items())
            + " MiB",
        ]

    def _lines(self) -> list[str]:
        raw = self.raw_rate or 1.0
        played = (self.decision_seconds + self.settlement_seconds) or 1.0
        verdict = {True: "verified", False: "VERIFICATION FAILED", None: "not verified"}
        return [
            f"boundless round, {self.players} players, {self.store}, batches of {self.batch}",
            "setup: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in self.setup.items())
            + f"; wagers {self.wagers}",
            f"decision phase: {self.decisions} decisions in {self.waves} waves "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.actions.items()))}), "
            f"{self.revealed} sequence cards revealed",
            f"  {self.decision_seconds:.2f} s (target {TARGETS['decisions']:.0f} s; CPU "
            f"{self.decision_cpu:.2f} s), {self.decision_events} events, "
            f"{self.decision_rate:,.0f} events/s",
            f"settlement: {self.settlement_seconds:.2f} s (target {TARGETS['settlement']:.0f} s; "
            f"CPU {self.settlement_cpu:.2f} s), {self.settlement_events} events, "
            f"{self.settlement_rate:,.0f} events/s",
            f"raw library append (same store, same run): {self.raw_events} events in "
            f"{self.raw_seconds:.2f} s = {self.raw_rate:,.0f} events/s; ratio decisions "
            f"{self.decision_rate / raw:.2f}, settlement {self.settlement_rate / raw:.2f}",
            f"peak memory (max RSS): {self.peak_mib:.0f} MiB (target {TARGETS['memory_mib']:.0f})",
            f"round phase: {self.phase}; {verdict[self.verified]}",
        ] + (
            [
                f"checkpoint: {self.seal_seconds:.2f} s; verify (every check: "
                f"{', '.join(self.verify_checks)}): {self.verify_seconds:.2f} s (CPU "
                f"{self.verify_cpu:.2f} s, {1000 * self.verify_cpu / self.players:.2f} ms a "
                f"player); ratio verify / "
                f"(decisions + settlement) {self.verify_seconds / played:.2f}"
            ]
            if self.verified is not None
            else []
        )


class CollectorClock:
    """The CPU time (``time.process_time``) the cyclic garbage collector takes, by the
    collector's own callbacks (``gc.callbacks``), and its full collections (generation 2):
    read :attr:`seconds` and :attr:`full` before and after a phase."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.process_time()
            return
        self.seconds += time.process_time() - self._began
        if info["generation"] == 2:
            self.full += 1

    def __enter__(self) -> CollectorClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


@contextmanager
def _phase(report: Report, clock: CollectorClock, name: str) -> Iterator[None]:
    """Note the collector's CPU and full collections during one timed phase."""
    seconds, full = clock.seconds, clock.full
    try:
        yield
    finally:
        report.collector[name] = clock.seconds - seconds
        report.full_collections[name] = clock.full - full


class Ping(Aggregate):
    """A trivial aggregate for the raw append rate."""

    @event("Pinged")
    def __init__(self, n: int) -> None:
        self.n = n

    @event("Ponged")
    def pong(self, n: int, text: str) -> None:
        self.n += n


def _pick(*parts: object) -> int:
    """A deterministic number 0..999 for these parts (no ``random``: reproducible runs)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1000


def shoe_order(seed: bytes = b"roundaudit-benchmark-boundless-1") -> list[str]:
    """Eight decks: the fixed initial deal first, then a CSPRNG shuffle of the rest."""
    rest = [c.code for c in shuffled_order(seed, 8, ALGORITHM_V1)]  # the rounds of every session
    for code in INITIAL:
        rest.remove(code)
    return [*INITIAL, *rest]


def action_for(player: str, wave: int, pending: dict[str, Any], up: str) -> str:
    """A realistic mix: on the pair, split 30%, double 15%, hit 25%, stand 25%, surrender 5%;
    later, basic strategy 75% of the time, else hit or stand; 3% let the timer run out."""
    options: list[str] = pending["options"]
    roll = _pick(player, wave, pending["hand"])
    if roll < 30:
        return "timeout"
    if "no_insurance" in options:
        return "insurance" if roll < 130 else "no_insurance"
    if "split" in options:
        for action, below in (("split", 330), ("double", 480), ("hit", 730), ("surrender", 780)):
            if roll < below and action in options:
                return action
        return "stand"
    if roll < 780:
        return choose(options, pending["cards"], up, "boundless")
    return "hit" if roll < 900 and "hit" in options else "stand"


def run(
    players: int,
    store: str = "sqlite",
    *,
    url: str | None = None,
    batch: int = 1000,
    verify: bool = False,
    profile: str | None = None,
    trace_memory: bool = False,
    say: Callable[[str], None] = print,
) -> Report:
    """Play, settle and measure one round; see the module docstring."""
    with _store(store, url) as store_url, CollectorClock() as clock:
        env = environment_for(store_url)
        app = RoundAudit(env)
        app.boundless.batch_size = batch
        report = Report(players, store, batch)
        names = [f"p{i:06d}" for i in range(players)]
        report.start_mib = report.phases_mib["start"] = _max_rss_mib()

        t0 = time.perf_counter()
        open_wallets(app, names, batch)
        report.setup["wallets"] = time.perf_counter() - t0
        report.phases_mib["wallets"] = _max_rss_mib()

        order = shoe_order()
        rid = app.start_round(
            table_id="bench-boundless",
            round_number=1,
            variant="boundless",
            production=False,
            test_order=order,
        )
        t0 = time.perf_counter()
        bets: list[Bet] = []
        for i, name in enumerate(names):
            bets.append(Bet(name, "10.00"))
            if i % 2 == 0:
                kinds = [k for j, k in enumerate(SIDE_KINDS) if _pick(name, "side", j) < 400]
                bets.extend(Bet(name, "1.00", k) for k in kinds or ["pair"])
        for chunk in _chunks(bets, batch):
            refused = [e for e in app.boundless.place_bets(rid, chunk) if e is not None]
            assert not refused, refused[:3]
        report.wagers = len(bets)
        report.setup["bets"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        app.close_betting(rid)
        report.setup["close, deal, open hands"] = time.perf_counter() - t0
        report.phases_mib["bets"] = _max_rss_mib()

        shared = app.boundless.shared(rid)
        up = shared.dealer[0].code
        say(f"shared hand {[c.code for c in shared.initial]} against {up}; deciding...")
        before = _position(app)
        prof = _Profile(profile, "decisions")
        with _phase(report, clock, "decisions"):
            t0, c0 = time.perf_counter(), time.process_time()
            _decide_all(app, rid, report, up, batch)
            report.decision_seconds = time.perf_counter() - t0
            report.decision_cpu = time.process_time() - c0
        prof.done()
        report.decision_events = _position(app) - before
        report.revealed = len(app.boundless.shared(rid).sequence)
        report.phases_mib["decisions"] = _max_rss_mib()

        before = _position(app)
        prof = _Profile(profile, "settlement")
        with _phase(report, clock, "settlement"):
            t0, c0 = time.perf_counter(), time.process_time()
            view = app.boundless.advance(rid)
            report.settlement_seconds = time.perf_counter() - t0
            report.settlement_cpu = time.process_time() - c0
        prof.done()
        report.settlement_events = _position(app) - before
        report.phase = view["phase"]
        report.peak_mib = report.recording_mib = report.phases_mib["settlement"] = _max_rss_mib()

        report.raw_events, report.raw_seconds = raw_append(
            app, report.decision_events + report.settlement_events, batch
        )
        report.phases_mib["raw append"] = _max_rss_mib()
        if verify:
            from uuid import UUID

            from domain.commit_leaf import forget_parsed
            from domain.ids import forget_named
            from replays.log import make_policy
            from replays.merkle import generate_key
            from replays.note import operator_key
            from replays.signer import Signer
            from replays.verify import StoreVerifier

            key = generate_key()
            origin = "roundaudit.invalid/benchmark"
            t0 = time.perf_counter()
            Signer(app, key=key, origin=origin).run_once()  # its own log, as ``roundaudit seal``
            report.seal_seconds = time.perf_counter() - t0
            report.recorded_mib = _max_rss_mib()
            # The signer is another process in production (``roundaudit seal``): the verifier
            # starts with no leaf parsed and no stable id named, as one in a process of its
            # own would (below about 8,000 players the recording's named ids were still kept,
            # above it the verification named them all again: a growth the benchmark made).
            forget_parsed()
            forget_named()
            gc.collect()
            if trace_memory:
                tracemalloc.start()
            prof = _Profile(profile, "verify")
            with _phase(report, clock, "verify"):
                t0, c0 = time.perf_counter(), time.process_time()
                policy = make_policy(operator_key(origin, key.public_key()), origin=origin)
                verdict = StoreVerifier(app, policy=policy).verify(UUID(rid))
                report.verify_seconds = time.perf_counter() - t0
                report.verify_cpu = time.process_time() - c0
            prof.done()
            if trace_memory:
                report.verify_traced_mib = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
            report.verified = verdict.ok
            report.verify_checks = list(verdict.checks)
            report.peak_mib = _max_rss_mib()
        app.close()
        return report


def _decide_all(app: RoundAudit, rid: str, report: Report, up: str, batch: int) -> None:
    """The decision phase: a wave of every pending hand's decision (:func:`action_for`),
    ``batch`` a transaction, then the sequence cards the hands now need, until none waits."""
    while True:
        pending = app.boundless.pending(rid)
        if not pending:
            return
        report.waves += 1
        decisions = []
        for p in pending:
            action = action_for(p["player"], report.waves, p, up)
            report.actions[action] += 1
            decisions.append(Decision(p["player"], action, hand=p["hand"]))
        report.decisions += len(decisions)
        for chunk in _chunks(decisions, batch):
            errors = [e for e in app.boundless.decide_many(rid, chunk, advance=False) if e]
            assert not errors, errors[:3]
        app.boundless.advance(rid, dealer=False)  # reveal what the hands now need


class _Profile:
    """cProfile of one phase into ``DIR/<phase>.prof`` (``--profile DIR``); nothing without a
    directory. Its figures are then the profiler's, slower than the plain run's."""

    def __init__(self, directory: str | None, phase: str) -> None:
        self.path = None if directory is None else Path(directory) / f"{phase}.prof"
        self.profiler: cProfile.Profile | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.profiler = cProfile.Profile()
            self.profiler.enable()

    def done(self) -> None:
        if self.profiler is not None and self.path is not None:
            self.profiler.disable()
            self.profiler.dump_stats(self.path)


def raw_append(app: RoundAudit, events: int, batch: int) -> tuple[int, float]:
    """The library's own append rate on the same store: ``events`` events of a trivial
    aggregate (four events each), ``batch`` aggregates per transaction."""
    per = 4
    written = 0
    t0 = time.perf_counter()
    while written < events:
        chunk = []
        for i in range(min(batch, max(1, (events - written) // per))):
            p = Ping(n=i)
            for j in range(per - 1):
                p.pong(n=j, text="raw")
            chunk.append(p)
        app.save(*chunk)
        written += per * len(chunk)
    return written, time.perf_counter() - t0


def open_wallets(app: RoundAudit, names: Sequence[str], batch: int) -> None:
    """Open a funded wallet for each of ``names``, ``batch`` wallets a transaction."""
    for chunk in _chunks(names, batch):
        wallets = []
        for name in chunk:
            w = Wallet.open(name, account_type="test")  # a test table: play money
            w.deposit("1000.00", transaction_id=f"bench-{name}")
            wallets.append(w)
        app.save(*wallets)


def interleaved(
    app: RoundAudit,
    rounds: int,
    players: int,
    *,
    batch: int = 1000,
    table: str = "interleaved",
    after_bets: Callable[[list[str]], object] | None = None,
    play: bool = True,
) -> list[str]:
    """Play ``rounds`` boundless rounds of ``players`` each (their own players and wallets, the
    shoe and decisions of :func:`run`) at the same time: every step (a player's bets, the
    close of betting, a decision wave, the settlement) is taken in each round in turn, so the
    rounds' records are interleaved in the log as at a studio running many tables. Returns the
    round ids, the first round's first. ``after_bets`` is called with them once every bet is
    placed (tests record something of their own there); ``play=False``: return once betting is
    closed in every round (each waits for its players' decisions)."""
    names = [[f"r{r:03d}p{i:05d}" for i in range(players)] for r in range(rounds)]
    for group in names:
        open_wallets(app, group, batch)
    rids = [
        app.start_round(
            table_id=f"{table}-{r}",
            round_number=1,
            variant="boundless",
            production=False,
            test_order=shoe_order(),
        )
        for r in range(rounds)
    ]
    for i in range(players):
        for rid, group in zip(rids, names, strict=True):
            name = group[i]
            bets = [Bet(name, "10.00")]
            if i % 2 == 0:
                bets.append(Bet(name, "1.00", "pair"))
            refused = [e for e in app.boundless.place_bets(rid, bets) if e is not None]
            assert not refused, refused
    if after_bets is not None:
        after_bets(rids)
    for rid in rids:
        app.close_betting(rid)
    if not play:
        return rids
    up = {rid: app.boundless.shared(rid).dealer[0].code for rid in rids}
    wave = 0
    deciding = list(rids)
    while deciding:
        wave += 1
        for rid in list(deciding):
            pending = app.boundless.pending(rid)
            if not pending:
                deciding.remove(rid)
                continue
            decisions = [
                Decision(p["player"], action_for(p["player"], wave, p, up[rid]), hand=p["hand"])
                for p in pending
            ]
            for chunk in _chunks(decisions, batch):
                errors = [e for e in app.boundless.decide_many(rid, chunk, advance=False) if e]
                assert not errors, errors[:3]
            app.boundless.advance(rid, dealer=False)
    for rid in rids:
        assert app.boundless.advance(rid)["phase"] == "settled"
    return rids


def verify_among(
    players: int,
    others: int,
    store: str = "sqlite",
    *,
    url: str | None = None,
    batch: int = 1000,
    repeat: int = 1,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Record one round of ``players`` with ``others`` other rounds of as many players
    interleaved (:func:`interleaved`), checkpoint the log, then ``repeat`` times: the service's
    round log of the first round (``BoundlessService.round_log``, what ``GET
    /rounds/{id}/events`` reads), its records read by the verifier (``StoreReader.shared_log``,
    a fresh reader), its verification by a fresh ``StoreVerifier`` (every check, the whole
    Merkle log read too), and its first view by a fresh application on the store (``round_view``,
    what ``GET /rounds/{id}`` answers after a restart); returns the CPU seconds
    (``time.process_time``) of each read, each verification, each round log and each first
    view. Read by its own streams, the round's read and log should
    not grow with ``others`` (but for their ``Joined`` rows)."""
    from uuid import UUID

    from replays.bundle import StoreReader
    from replays.log import make_policy
    from replays.merkle import generate_key
    from replays.note import operator_key
    from replays.signer import Signer
    from replays.verify import StoreVerifier

    with _store(store, url) as store_url:
        app = RoundAudit(environment_for(store_url))
        app.boundless.batch_size = batch
        rid = UUID(interleaved(app, 1 + others, players, batch=batch)[0])
        key = generate_key()
        origin = "roundaudit.invalid/benchmark"
        Signer(app, key=key, origin=origin).run_once()
        policy = make_policy(operator_key(origin, key.public_key()), origin=origin)
        read: list[float] = []
        cpu: list[float] = []
        log: list[float] = []
        view: list[float] = []
        expected = app.round_view(rid)
        for _ in range(repeat):
            c0 = time.process_time()
            app.boundless.round_log(rid)
            log.append(time.process_time() - c0)
            c0 = time.process_time()
            StoreReader(app).shared_log(rid)
            read.append(time.process_time() - c0)
            c0 = time.process_time()
            verdict = StoreVerifier(app, policy=policy).verify(rid)
            cpu.append(time.process_time() - c0)
            assert verdict.ok, verdict
            other = RoundAudit(environment_for(store_url))
            c0 = time.process_time()
            seen = other.round_view(rid)
            view.append(time.process_time() - c0)
            other.close()
            assert seen == expected
        app.close()
        return read, cpu, log, view


def _max_rss_mib() -> float:
    """This process's own peak resident set (MiB): Linux's ``VmHWM``. Not ``ru_maxrss``,
    which a process started by another (``run_in_process``, the harness's subprocesses)
    inherits from it across ``fork`` and ``exec``: a round run from a harness at 146 MiB said
    146 MiB from its start. ``ru_maxrss`` only where ``/proc`` is not (another system)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _position(app: RoundAudit) -> int:
    return app.recorder.max_notification_id() or 0


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


@contextmanager
def _store(store: str, url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    if store == "sqlite":
        with tempfile.TemporaryDirectory(prefix="roundaudit-bench-") as d:
            yield "sqlite:///" + quote(str(Path(d) / "events.db"))
        return
    if store != "postgres":
        raise SystemExit(f"unknown store {store!r}: sqlite or postgres")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from pg import ThrowawayCluster, find_bindir, fresh_database  # type: ignore[import-not-found]

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries: pass --url postgresql://...")
    with ThrowawayCluster(bindir) as admin, fresh_database(admin, prefix="bench_") as db:
        yield db


def _runs(cpu: list[float]) -> str:
    return f"{' '.join(f'{c:.3f}' for c in cpu)} (median {sorted(cpu)[len(cpu) // 2]:.3f})"


def growth(
    sizes: Sequence[int],
    store: str = "sqlite",
    *,
    batch: int = 1000,
    verify: bool = False,
    runs: int = 1,
    say: Callable[[str], None] = print,
) -> list[list[Report]]:
    """Each of ``sizes`` played ``runs`` times, each run a process of its own on a store of its
    own (what one size leaves in the heap and the store does not weigh on another), the sizes
    alternated (a, b, a, b...: a machine whose load moves weighs on both alike); returns the
    reports of each size, in the order of ``sizes``."""
    out: list[list[Report]] = [[] for _ in sizes]
    for r in range(runs):
        for i, n in enumerate(sizes):
            report = run_in_process(n, store, batch=batch, verify=verify)
            say(f"run {r + 1}, {n} players: " + cpu_line(report))
            out[i].append(report)
    return out


def run_in_process(
    players: int,
    store: str = "sqlite",
    *,
    url: str | None = None,
    batch: int = 1000,
    verify: bool = False,
) -> Report:
    """:func:`run` in a process of its own (``python -m benchmarks.boundless``, its report
    read back from JSON): what it leaves in the heap weighs on nothing else, and its max RSS
    is the round's alone. ``url``: its store (else a throwaway one of ``store``'s kind)."""
    argv = ["--players", str(players), "--store", store, "--batch", str(batch)]
    argv += ["--url", url] if url is not None else []
    with tempfile.TemporaryDirectory(prefix="roundaudit-bdl-") as d:
        path = Path(d) / "report.json"
        argv += ["--verify"] * verify + ["--report-json", str(path)]
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.boundless", *argv],
            cwd=Path(__file__).resolve().parents[1],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if not path.exists():  # its exit status says whether its own targets were met
            raise SystemExit(
                f"the run of {players} players failed (exit {done.returncode}): "
                f"{done.stderr.strip()[-2000:]}"
            )
        return load_report(path)


def save_report(report: Report, path: str | Path) -> None:
    fields = asdict(report)
    fields["actions"] = dict(report.actions)  # asdict would count a Counter's items
    Path(path).write_text(json.dumps(fields))


def load_report(path: str | Path) -> Report:
    fields = json.loads(Path(path).read_text())
    fields["actions"] = Counter(fields["actions"])
    return Report(**fields)


def cpu_line(report: Report) -> str:
    return ", ".join(f"{k} {ms:.3f}" for k, (ms, _) in report.cpu_ms().items()) + " ms a player"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def growth_lines(sizes: Sequence[int], reports: Sequence[Sequence[Report]]) -> list[str]:
    """The per-player growth from the first size to each other one, phase by phase: the CPU
    milliseconds a player (``time.process_time``, the median of the runs), the events a
    player each phase wrote and the CPU an event (a larger round can be another round: its
    hands need more sequence cards, and the dealer draws after them), and the collector's
    share (its CPU a player and its full collections)."""
    first = reports[0]

    def med(rs: Sequence[Report], fn: Callable[[Report], float]) -> float:
        return _median([fn(r) for r in rs])

    out = []
    for n, rs in zip(sizes[1:], reports[1:], strict=True):
        out.append(
            f"per-player growth, {first[0].store}, {sizes[0]} -> {n} players "
            f"(CPU, median of {len(rs)} run(s) each; sequence cards revealed "
            f"{'/'.join(str(r.revealed) for r in first)} -> "
            f"{'/'.join(str(r.revealed) for r in rs)}):"
        )
        for phase in first[0].cpu_ms():

            def ms(r: Report, phase: str = phase) -> float:
                return r.cpu_ms()[phase][0]

            def per_event(r: Report, phase: str = phase) -> float:
                mspp, events = r.cpu_ms()[phase]
                return mspp * r.players / events if events else 0.0

            def events(r: Report, phase: str = phase) -> float:
                return r.cpu_ms()[phase][1] / r.players

            def collector(r: Report, phase: str = phase) -> float:
                return 1e3 * r.collector.get(phase, 0.0) / r.players

            a, b = med(first, ms), med(rs, ms)
            ea, eb = med(first, per_event), med(rs, per_event)
            full = ["/".join(str(r.full_collections.get(phase, 0)) for r in x) for x in (first, rs)]
            out.append(
                f"  {phase}: {a:.3f} -> {b:.3f} ms a player (x{b / a if a else 0:.2f}); "
                f"{med(first, events):.2f} -> {med(rs, events):.2f} events a player, "
                f"{1e3 * ea:.1f} -> {1e3 * eb:.1f} us an event (x{eb / ea if ea else 0:.2f}); "
                f"collector {med(first, collector):.3f} -> {med(rs, collector):.3f} ms a "
                f"player (full collections {full[0]} -> {full[1]})"
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--players",
        default="10000",
        help="players; two sizes or more (5000,20000): each size played in a process of its "
        "own (--runs times, alternated) and the per-player growth from the first printed",
    )
    ap.add_argument("--runs", type=int, default=1, help="runs of each size with several sizes")
    ap.add_argument("--report-json", metavar="PATH", help="also write the report as JSON")
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--url", help="an existing store instead of a throwaway one")
    ap.add_argument("--batch", type=int, default=1000, help="participations per transaction")
    ap.add_argument(
        "--verify",
        action="store_true",
        help="checkpoint and verify the round afterwards (every check, timed)",
    )
    ap.add_argument(
        "--profile",
        metavar="DIR",
        help="cProfile the decision phase, the settlement and (with --verify) the "
        "verification into DIR/decisions.prof, DIR/settlement.prof and DIR/verify.prof "
        "(their times are then the profiler's)",
    )
    ap.add_argument(
        "--others",
        type=int,
        metavar="K",
        help="instead: record one round with K other rounds of as many players interleaved, "
        "then read, verify and view (a fresh application's first round_view) the first one "
        "(--repeat times) and print the CPU time of each",
    )
    ap.add_argument("--repeat", type=int, default=3, help="verifications with --others")
    ap.add_argument(
        "--trace-memory",
        action="store_true",
        help="with --verify: trace the verification's allocations (tracemalloc) and print "
        "their peak (its CPU and wall figures are then tracemalloc's, slower)",
    )
    args = ap.parse_args(argv)
    sizes = [int(n) for n in str(args.players).split(",")]
    if len(sizes) > 1:
        if args.url is not None or args.others is not None:
            raise SystemExit("several sizes: each on a throwaway store (no --url, no --others)")
        reports = growth(sizes, args.store, batch=args.batch, verify=args.verify, runs=args.runs)
        print("\n".join(growth_lines(sizes, reports)))
        return 0
    args.players = sizes[0]
    if args.others is not None:
        read, cpu, log, view = verify_among(
            args.players,
            args.others,
            args.store,
            url=args.url,
            batch=args.batch,
            repeat=args.repeat,
        )
        print(
            f"one round of {args.players} players among {args.others} other rounds "
            f"interleaved, {args.store}; CPU s of each run: round log {_runs(log)}; "
            f"read {_runs(read)}; verify {_runs(cpu)}; first view {_runs(view)}"
        )
        return 0
    report = run(
        args.players,
        args.store,
        url=args.url,
        batch=args.batch,
        verify=args.verify,
        profile=args.profile,
        trace_memory=args.trace_memory,
    )
    print("\n".join(report.lines()))
    if args.report_json:
        save_report(report, args.report_json)
    ok = (
        report.phase == "settled"
        and report.decision_seconds <= TARGETS["decisions"]
        and report.settlement_seconds <= TARGETS["settlement"]
        and report.peak_mib <= TARGETS["memory_mib"]
        and report.verified is not False
    )
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""The HTTP figures of the benchmarks (issue 15): a real ``roundaudit serve`` on loopback under
50 concurrent keep-alive clients, and the load generator that drives it.

``python -m benchmarks`` calls :func:`bench_http` on each store (one process, and on PostgreSQL
also ``--workers 2``). Run alone, for paired measurements of two trees::

    python -m benchmarks.http_load --store sqlite --runs 3                  # this tree
    python -m benchmarks.http_load --store postgres --workers 2
    python -m benchmarks.http_load --store sqlite --pair /tmp/baseline-tree  # alternated
    python -m benchmarks.http_load --store sqlite --paced   # also at the target rates
    python -m benchmarks.http_load --store postgres --workers 2 --paced --only command \
        --commit-delays 0,500,1000      # the group commit's wait swept, alternated

``--pair TREE`` starts the service alternately from ``TREE`` (the baseline, e.g. ``git archive
main``) and from this tree, each with ``--workers`` processes (the baseline's may differ:
``--baseline-workers``), ``--runs`` times each, and prints each figure's median for both,
with the load average: the two are measured in the same minutes. ``--commit-delays US,US,...``
alternates this tree's service on stores with each group commit wait (the store URL's
``commit_delay``); ``--only ROUTE,...`` measures only those routes. On PostgreSQL each figure
also gives the CPU of the store's backends a request (``server_ms``).

What is measured, each with its own warm-up: ``GET /health`` (the baseline: the HTTP stack,
no key, one store query), ``GET /rounds/{id}`` of one round by every client (reads), and wallet
deposits, each with its own transaction id (single commands), in requests/s and p99 latency.

Two ways to load the service, both with 50 keep-alive clients: **closed loop** (:func:`load`,
each client sends its next request as soon as its answer comes: the most requests a second the
service answers, with the latency of the queue its own 50 clients make) and **open loop at a
rate** (:func:`paced_load`, ``--paced`` and ``python -m benchmarks``: requests due at the
issue's rate, 1,000 commands or 3,000 reads a second, each latency counted from the time it
was due: the p99 a client sees at that rate). ``python -m benchmarks`` prints both, each
against the issue's target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

ROOT = Path(__file__).resolve().parents[1]
Make = Callable[[int, int], tuple[str, str, Any]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve(
    url: str, admin: str, *, workers: int = 1, root: Path = ROOT
) -> Iterator[tuple[str, int]]:
    """``roundaudit serve`` (of the tree ``root``) on a free loopback port, in a folder of its
    own, with ``workers`` processes: (its base URL, its process group); stopped after."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="roundaudit-bench-http-") as d:
        env = {
            **os.environ,
            "ROUNDAUDIT_ADMIN_KEY": admin,
            "ROUNDAUDIT_SEED_KEY": str(Path(d) / "keys" / "seed.key"),
            "ROUNDAUDIT_READ_WAIT": "0",
            "PYTHONPATH": str(root),
        }
        cmd = [
            sys.executable, "-m", "cli.main", "--database-url", url, "serve",
            "--host", "127.0.0.1", "--port", str(port),
        ]  # fmt: skip
        if workers > 1:
            cmd += ["--workers", str(workers)]
        log = (Path(d) / "server.log").open("wb")
        proc = subprocess.Popen(
            cmd, cwd=d, env=env, stdout=log, stderr=log, start_new_session=True
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, proc, Path(d) / "server.log", workers)
            yield base, proc.pid
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()


#: What uvicorn logs once a process's application has started (each worker's own line).
STARTED: Final = b"Application startup complete."


def _wait_ready(base: str, proc: subprocess.Popen[bytes], logfile: Path, workers: int = 1) -> None:
    """Until the service answers ``/health`` and each of its ``workers`` processes has
    started its application: a worker still starting on a loaded machine would leave every
    connection to the other, and a run meant for two processes would measure one."""
    import httpx

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the service stopped:\n" + logfile.read_text(errors="replace"))
        with contextlib.suppress(httpx.HTTPError):
            answered = httpx.get(base + "/health", timeout=2).status_code < 500
            if answered and logfile.read_bytes().count(STARTED) >= workers:
                return
        time.sleep(0.2)
    raise RuntimeError("the service did not start:\n" + logfile.read_text(errors="replace"))


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: the load generator's client.

    Deliberately minimal (requests with a JSON body or none, answers with ``Content-Length``,
    as uvicorn sends them): ``httpx`` on asyncio spends more CPU per request than the service
    answering it, and on a 2-core machine the load generator must not be the limit measured.
    """

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self.fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, method: str, path: str, body: Any) -> int:
        await self.connect()
        assert self.reader is not None
        data = b"" if body is None else orjson.dumps(body)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.fixed}"
            + (f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n")
            + "\r\n"
        )
        self.writer.write(head.encode() + data)
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
            elif name.strip().lower() == "transfer-encoding":
                raise RuntimeError("chunked answers are not supported by the load generator")
        await self.reader.readexactly(length)
        return status

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


class AllAnswered:
    """Runs ``then`` in a thread once every one of ``clients`` connections has had its first
    answer (so the service has accepted them all), without holding up the load's loop; a
    connection is closed only after it (:meth:`settled`), so ``then`` sees them all open."""

    def __init__(self, clients: int, then: Callable[[], object] | None) -> None:
        self.waiting, self.then = clients, then
        self.done: asyncio.Future[object] | None = None
        self.ran = asyncio.Event()
        if then is None:
            self.ran.set()

    def answered(self, first: bool) -> None:
        if first and self.then is not None:
            self.waiting -= 1
            if self.waiting == 0:
                self.done = asyncio.get_running_loop().run_in_executor(None, self.then)
                self.done.add_done_callback(lambda _: self.ran.set())

    async def settled(self) -> None:
        """Return once ``then`` has run (at once without one); its error, if any, raised."""
        await self.ran.wait()
        if self.done is not None:
            await self.done


async def load(
    base: str,
    headers: dict[str, str],
    clients: int,
    requests: int,
    make: Make,
    connected: Callable[[], object] | None = None,
) -> tuple[float, list[float], int]:
    """``clients`` concurrent clients, each on its own keep-alive connection, ``requests`` in
    all; ``make(client, i)`` gives (method, path, json body). Returns seconds, latencies (each
    request's, from sending to the last byte of its answer) and the answers >= 400.
    ``connected``: run in a thread once every connection has had an answer."""
    host, _, port = base.removeprefix("http://").partition(":")
    latencies: list[float] = []
    errors = 0
    per = max(1, requests // clients)
    all_answered = AllAnswered(clients, connected)

    async def client(c: int) -> None:
        nonlocal errors
        conn = Connection(host, int(port), headers)
        try:
            for i in range(per):
                method, path, body = make(c, i)
                t0 = time.perf_counter()
                status = await conn.request(method, path, body)
                latencies.append(time.perf_counter() - t0)
                all_answered.answered(i == 0)
                if status >= 400:
                    errors += 1
            await all_answered.settled()
        finally:
            await conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return time.perf_counter() - t0, latencies, errors


async def paced_load(
    base: str,
    headers: dict[str, str],
    clients: int,
    requests: int,
    rate: float,
    make: Make,
    connected: Callable[[], object] | None = None,
) -> tuple[float, list[float], int]:
    """Open loop: ``requests`` sent at ``rate`` a second in all, spread evenly over
    ``clients`` keep-alive connections (client ``c``'s ``k``-th request is due at
    ``t0 + (k * clients + c) / rate``), each connection's requests one after the other. A
    request's latency counts from the time it was **due**, not from when its connection was
    free to send it: an answer that comes late delays the next request on its connection, and
    that wait counts against it too (no coordinated omission). Returns seconds (from the first
    due time to the last answer), latencies and the answers >= 400.

    This is the latency *at* a rate. :func:`load` (closed loop) gives the most requests a
    second the service answers, and its latency is the queue its own clients make: with
    ``clients`` requests always outstanding, Little's law puts their mean wait at
    ``clients / rate``, whatever the service's own time. ``connected`` as for :func:`load`."""
    host, _, port = base.removeprefix("http://").partition(":")
    latencies: list[float] = []
    errors = 0
    per = max(1, requests // clients)
    all_answered = AllAnswered(clients, connected)
    conns = [Connection(host, int(port), headers) for _ in range(clients)]
    try:
        await asyncio.gather(*(conn.connect() for conn in conns))
        t0 = time.perf_counter() + 0.05

        async def client(c: int) -> None:
            nonlocal errors
            conn = conns[c]
            for k in range(per):
                due = t0 + (k * clients + c) / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                method, path, body = make(c, k)
                status = await conn.request(method, path, body)
                latencies.append(time.perf_counter() - due)
                all_answered.answered(k == 0)
                if status >= 400:
                    errors += 1

        await asyncio.gather(*(client(c) for c in range(clients)))
        seconds = time.perf_counter() - t0
        await all_answered.settled()
        return seconds, latencies, errors
    finally:
        for conn in conns:
            await conn.close()


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Each process of this machine (Linux): its pid and the fields of its ``stat`` after the
    name (state, ppid, pgrp, ...)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        yield int(entry.name), fields


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) used so far by the processes of group ``pgid`` (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    return sum((int(f[11]) + int(f[12])) / tick for _, f in _processes() if int(f[2]) == pgid)


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux)."""
    return [child for child, f in _processes() if int(f[1]) == pid]


def tcp_sockets(port: int, state: str) -> set[str]:
    """The inodes of the TCP sockets on this machine whose local port is ``port`` in ``state``
    (``/proc/net/tcp``: ``01`` established, ``0A`` listening)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if int(f[1].rpartition(":")[2], 16) == port and f[3] == state:
                inodes.add(f[9])
    return inodes


def sockets_held(pid: int, inodes: set[str]) -> int:
    """How many of the sockets ``inodes`` process ``pid`` holds a descriptor of."""
    n = 0
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = fd.readlink().name
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    n += 1
    return n


def connections_by_worker(pids: Sequence[int], port: int) -> list[int]:
    """The established connections on ``port`` each of ``pids`` that listens on it holds,
    fewest first: how a service's worker processes share their clients."""
    listening, established = tcp_sockets(port, "0A"), tcp_sockets(port, "01")
    return sorted(sockets_held(p, established) for p in pids if sockets_held(p, listening))


def backends_cpu(url: str) -> dict[int, int]:
    """CPU nanoseconds so far of each PostgreSQL backend connected to ``url``'s database
    (``/proc/PID/schedstat``: a server on this machine), but the one asking; {} on SQLite.
    The URL's query (roundaudit's settings, e.g. ``commit_delay``) is left out."""
    if not url.startswith("postgres"):
        return {}
    import psycopg

    found: dict[int, int] = {}
    with psycopg.connect(url.partition("?")[0], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    for (pid,) in rows:
        with contextlib.suppress(OSError):
            found[pid] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    return found


def p99(latencies: Sequence[float]) -> float:
    ordered = sorted(latencies)
    return 1e3 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@dataclass
class Result:
    """One route's figure: requests/s, p99 in ms, answers >= 400, and the service's CPU
    milliseconds per request (all its processes: steadier than requests/s on a shared
    machine)."""

    rps: float
    p99_ms: float
    errors: int
    cpu_ms: float = 0.0
    #: CPU milliseconds a request of the store's PostgreSQL backends (0 on SQLite)
    server_ms: float = 0.0
    #: the clients' connections each worker process held during the load, fewest first
    #: (counted once every client has had an answer), when the service has more than one
    connections: tuple[int, ...] = ()


def start_test_round(http: Any, table_id: str) -> str:
    """Open test table ``table_id`` (multihand) and start its round 1 on a test shoe, through
    ``http`` (an ``httpx.Client`` with an admin key); the round's id."""
    r = http.post(
        "/tables", json={"table_id": table_id, "variant": "multihand", "production": False}
    )
    assert r.status_code in (200, 201), r.text
    order = ["10H", "9S", "6D", "KC", "8D", "2C", "5S", "4H"]
    r = http.post(
        "/rounds",
        json={"table_id": table_id, "round_number": 1, "variant": "multihand",
              "test_order": order},
    )  # fmt: skip
    assert r.status_code == 201, r.text
    rid: str = r.json()["round_id"]
    return rid


#: The issue's rates: the paced runs' offered load (requests a second), by route.
TARGET_RATES: Final = {"command": 1000.0, "read": 3000.0}
#: The issue's p99 limits (milliseconds), by route.
P99_LIMITS: Final = {"command": 50.0, "read": 20.0}


def measure(
    url: str,
    *,
    clients: int,
    requests: int,
    workers: int = 1,
    root: Path = ROOT,
    run: int = 0,
    paced: bool = False,
    only: Sequence[str] = (),
) -> dict[str, Result]:
    """Start a service on ``url`` (a fresh store), set up players, a table and a round, and
    measure ``health``, ``read`` and ``command`` (closed loop: :func:`load`; ``run`` keeps
    transaction ids of several runs on one store apart); with ``paced`` also ``read paced``
    and ``command paced``, each at its rate of :data:`TARGET_RATES` (open loop:
    :func:`paced_load`), right after the closed-loop run of the same route; ``only``: these
    routes alone (all when empty)."""
    import httpx

    from domain.keys import new_token

    admin = new_token()
    with serve(url, admin, workers=workers, root=root) as (base, pgid):
        auth = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=base, headers=auth, timeout=60) as http:
            for c in range(clients):
                r = http.post("/wallets", json={"player_id": f"h{c}", "account_type": "test"})
                assert r.status_code == 201, r.text
            rid = start_test_round(http, "H1")

        def health(_c: int, _i: int) -> tuple[str, str, Any]:
            return "GET", "/health", None

        def read(_c: int, _i: int) -> tuple[str, str, Any]:
            return "GET", f"/rounds/{rid}", None

        def deposit(c: int, i: int) -> tuple[str, str, Any]:
            return "POST", f"/wallets/h{c}/deposits", {
                "amount": "1.00", "transaction_id": f"http-{run}-{c}-{i}"
            }  # fmt: skip

        def deposit_fresh(c: int, i: int) -> tuple[str, str, Any]:
            return deposit(c, i + 10**6)  # other transaction ids than the warm-up's

        def deposit_paced(c: int, i: int) -> tuple[str, str, Any]:
            return deposit(c, i + 2 * 10**6)  # nor the closed-loop run's

        port = int(base.rpartition(":")[2])

        def timed(run: Callable[[Callable[[], object] | None], Any]) -> Result:
            """The figure of one load (``run(connected)``: its coroutine), with the service's
            CPU and, with several processes, how they shared the connections (counted once
            every client has had an answer)."""
            split: list[int] = []

            def count() -> None:  # the workers: the supervisor's (the group leader's) children
                split.extend(connections_by_worker(child_pids(pgid), port))

            cpu, server = group_cpu(pgid), backends_cpu(url)
            seconds, lat, errors = asyncio.run(run(count if workers > 1 else None))
            cpu_ms = 1e3 * (group_cpu(pgid) - cpu) / len(lat)
            spent = sum(ns - server.get(pid, 0) for pid, ns in backends_cpu(url).items())
            return Result(
                len(lat) / seconds, p99(lat), errors, cpu_ms, spent / 1e6 / len(lat), tuple(split)
            )

        results: dict[str, Result] = {}
        calls = (("health", health, health, None), ("read", read, read, read),
                 ("command", deposit, deposit_fresh, deposit_paced))  # fmt: skip
        for name, warm, closed, at_rate in calls:
            if only and name not in only:
                continue
            asyncio.run(load(base, auth, clients, max(clients, requests // 10), warm))
            results[name] = timed(functools.partial(load, base, auth, clients, requests, closed))
            if paced and at_rate is not None:
                results[f"{name} paced"] = timed(
                    functools.partial(
                        paced_load, base, auth, clients, requests, TARGET_RATES[name], at_rate
                    )
                )
        return results


def bench_http(url: str, kind: str, sizes: Any, run: Any, *, workers: int = 1) -> None:
    """The HTTP figures of ``python -m benchmarks`` (``run.add`` of ``benchmarks.Figure``)."""
    from benchmarks.__main__ import Figure

    clients = sizes.http_clients
    results = measure(
        url, clients=clients, requests=sizes.http_requests, workers=workers, paced=True
    )
    base = results["health"]
    label = "1 process" if workers == 1 else f"{workers} processes"
    suffix = "" if workers == 1 else f" ({workers} processes)"
    for name in ("command", "read"):
        floor, p99_max = TARGET_RATES[name], P99_LIMITS[name]
        r = results[name]
        run.add(
            Figure(
                kind, f"http {name}s{suffix}", r.rps, "req/s", base.rps,
                f">= {floor:,.0f}/s, p99 < {p99_max:.0f} ms",
                r.rps >= floor and r.p99_ms < p99_max and r.errors == 0, r.rps / base.rps,
                detail=f"p99 {r.p99_ms:.1f} ms (GET /health: {base.rps:,.0f}/s, p99 "
                f"{base.p99_ms:.1f} ms), {r.errors} errors, {clients} clients, {label}"
                + _shared(r),
            )
        )  # fmt: skip
        at = results[f"{name} paced"]
        run.add(
            Figure(
                kind, f"http {name}s at {floor:,.0f}/s{suffix}", at.p99_ms, "ms p99", None,
                f"p99 < {p99_max:.0f} ms at {floor:,.0f}/s",
                sustained(at, floor) and at.p99_ms < p99_max and at.errors == 0, None,
                detail=f"open loop: {at.rps:,.0f}/s answered of {floor:,.0f}/s offered, "
                f"{at.errors} errors, {clients} clients, {label}" + _shared(at),
            )
        )  # fmt: skip


def sustained(result: Result, rate: float) -> bool:
    """Whether a paced run kept up with its offered ``rate``: its answers came at 98 % of it
    or more (the last answer's latency alone takes a little off)."""
    return result.rps >= 0.98 * rate


# ------------------------------------------------------------------------------ alone
def create_schema(url: str, root: Path = ROOT) -> None:
    """Create the schema once (what an operator does before starting several processes)."""
    code = "from domain.application import RoundAudit; from domain.persistence import " \
        f"environment_for; RoundAudit(env=environment_for({url!r})).close()"  # fmt: skip
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(root)}
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.http_load")
    ap.add_argument("--store", default="sqlite", choices=("sqlite", "postgres"))
    ap.add_argument("--postgres-url", default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pair", type=Path, default=None, help="a baseline tree, alternated")
    ap.add_argument(
        "--baseline-workers", type=int, default=None, help="the baseline's processes (--workers)"
    )
    ap.add_argument(
        "--paced", action="store_true", help="also each route at its target rate (open loop)"
    )
    ap.add_argument(
        "--commit-delays", default=None,
        help="this tree on stores with each of these group commit waits (microseconds, "
        "comma-separated), alternated",
    )  # fmt: skip
    ap.add_argument(
        "--only", default="", help="only these routes (comma-separated: health, read, command)"
    )
    args = ap.parse_args(argv)
    trees = paired_trees(args.pair, args.workers, args.baseline_workers)
    trees = with_delays(trees, args.commit_delays)
    only = tuple(r for r in args.only.split(",") if r)
    got: dict[str, list[dict[str, Result]]] = {name: [] for name, _, _ in trees}
    loads: list[float] = []
    from benchmarks.__main__ import open_stores

    with open_stores(args.store, args.postgres_url) as stores:
        for i in range(args.runs):
            for name, root, workers in trees:
                with stores.fresh() as fresh:
                    url = fresh + delay_query(name)
                    if args.store == "postgres":
                        create_schema(url, root)
                    loads.append(os.getloadavg()[0])
                    r = measure(
                        url, clients=args.clients, requests=args.requests, workers=workers,
                        root=root, run=i, paced=args.paced, only=only,
                    )  # fmt: skip
                got[name].append(r)
                print(f"run {i + 1} {name} ({workers} proc): {_line(r)}", flush=True)
    load_avg = statistics.median(loads)
    print(f"medians over {args.runs} runs, {args.store}, load average {load_avg:.1f}:")
    for name, _, workers in trees:
        med = {
            k: Result(
                statistics.median(r[k].rps for r in got[name]),
                statistics.median(r[k].p99_ms for r in got[name]),
                sum(r[k].errors for r in got[name]),
                statistics.median(r[k].cpu_ms for r in got[name]),
                statistics.median(r[k].server_ms for r in got[name]),
            )
            for k in got[name][0]
        }
        print(f"  {name} ({workers} proc): {_line(med)}")
    return 0


def paired_trees(
    pair: Path | None, workers: int, baseline_workers: int | None = None
) -> list[tuple[str, Path, int]]:
    """(name, tree, processes) of each service measured: the baseline ``pair`` (with
    ``baseline_workers`` processes, else as many as this tree), then this tree."""
    trees: list[tuple[str, Path, int]] = []
    if pair is not None:
        trees.append(("baseline", pair.resolve(), baseline_workers or workers))
    trees.append(("this", ROOT, workers))
    return trees


#: The mark of a configuration's group commit wait in its name (``with_delays``).
DELAY_MARK: Final = " commit_delay="


def with_delays(
    trees: list[tuple[str, Path, int]], delays: str | None
) -> list[tuple[str, Path, int]]:
    """Each of ``trees`` once per group commit wait of ``delays`` (microseconds,
    comma-separated; None: as they are), named after it; :func:`delay_query` reads it back."""
    if delays is None:
        return trees
    values = [str(int(d)) for d in delays.split(",")]
    return [(f"{name}{DELAY_MARK}{d}", root, n) for name, root, n in trees for d in values]


def delay_query(name: str) -> str:
    """The store URL's query for the wait in a configuration's ``name`` ("" when none)."""
    _, mark, delay = name.partition(DELAY_MARK)
    return f"?commit_delay={delay}" if mark else ""


def _shared(r: Result) -> str:
    """How the processes shared the connections, for a figure's detail ("" with one)."""
    return f" (connections {'/'.join(map(str, r.connections))})" if r.connections else ""


def _line(results: dict[str, Result]) -> str:
    return ", ".join(
        f"{k} {v.rps:,.0f}/s p99 {v.p99_ms:.0f} ms cpu {v.cpu_ms:.2f} ms"
        + (f" server {v.server_ms:.2f} ms" if v.server_ms else "")
        + _shared(v)
        + (f" ({v.errors} errors)" if v.errors else "")
        for k, v in results.items()
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""The HTTP benchmark's open-loop load (``benchmarks.http_load.paced_load``): requests are sent
when they are due, and a late answer counts against every request it delays (no coordinated
omission), unlike the closed loop, which waits for the service and so never sees the queue a
stall makes."""

from __future__ import annotations

import asyncio
import time

from benchmarks.http_load import Result, load, p99, paced_load, sustained

STALL = 0.3


async def _serve(stall_first: bool) -> tuple[asyncio.AbstractServer, str, list[float]]:
    """A loopback HTTP/1.1 server answering ``200 {}``; its first answer after :data:`STALL`
    seconds when ``stall_first``. Also the times the requests arrived."""
    arrived: list[float] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                arrived.append(time.perf_counter())
                if stall_first and len(arrived) == 1:
                    await asyncio.sleep(STALL)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", arrived


def _get(_c: int, _i: int) -> tuple[str, str, None]:
    return "GET", "/", None


def test_a_paced_run_sends_at_its_rate_and_measures_its_latency() -> None:
    async def run() -> tuple[float, list[float], int, list[float]]:
        server, base, arrived = await _serve(stall_first=False)
        async with server:
            seconds, lat, errors = await paced_load(base, {}, 4, 80, 200.0, _get)
        return seconds, lat, errors, arrived

    seconds, lat, errors, arrived = asyncio.run(run())
    assert (len(lat), errors) == (80, 0)
    spread = max(arrived) - min(arrived)
    assert 0.35 < spread < 0.6  # 80 requests at 200/s: due over 0.395 s, not at once
    assert len(lat) / seconds > 150
    assert p99(lat) < 150


def test_a_run_is_sustained_at_98_percent_of_its_rate() -> None:
    assert sustained(Result(980.0, 10.0, 0), 1000.0)
    assert not sustained(Result(979.0, 10.0, 0), 1000.0)


def test_a_stall_counts_against_every_request_it_delays() -> None:
    """One client at 100/s; the first answer comes 0.3 s late: the ~30 requests due meanwhile
    are late too, and their latency says so. The closed loop, on the same server, sees one
    slow request among 80."""

    async def run() -> tuple[list[float], list[float]]:
        server, base, _ = await _serve(stall_first=True)
        async with server:
            _, paced, _ = await paced_load(base, {}, 1, 80, 100.0, _get)
        server, base, _ = await _serve(stall_first=True)
        async with server:
            _, closed, _ = await load(base, {}, 1, 80, _get)
        return paced, closed

    paced, closed = asyncio.run(run())
    late = [x for x in paced if x > 0.1]
    assert len(late) >= 20, sorted(paced)[-30:]
    assert len([x for x in closed if x > 0.1]) == 1
    assert p99(paced) > 200  # ms: the open loop's p99 holds the stall

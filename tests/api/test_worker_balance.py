"""``roundaudit serve --workers 2``: connections are spread over the worker processes
(``api.serving``: a listening socket each, ``SO_REUSEPORT``).

Keep-alive clients stay on the process that accepted them. On one shared socket the first
process awake took every connection waiting: 50 clients connecting at once were split 1/49,
3/47, 6/44 (and 25/25 only now and then), and the loaded process's queue set every latency.
Here 50 connections are opened at once, seven times, and each worker must hold a fair part of
every burst (counted from ``/proc``: the established sockets on the service's port
and the processes whose descriptors hold them).
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import time
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import pytest
from pg import fresh_database
from servicekit import service

from api import serving
from benchmarks.http_load import child_pids, connections_by_worker

CLIENTS = 50
BURSTS = 7
LEAST = 12  # of 50: the smaller process's part of every burst (a hash: 25 +- 3.5)


def test_the_reserved_socket_reaches_a_worker_as_a_socket_of_its_own() -> None:
    """The mechanism: the supervisor's socket, pickled as multiprocessing hands it to a
    spawned worker, arrives as a new socket on the same address in the ``SO_REUSEPORT``
    group; two such workers listen at once on the port the reserved socket holds."""
    reserved = serving.reserve("127.0.0.1", 0)
    address = reserved.getsockname()
    workers = [pickle.loads(bytes(ForkingPickler.dumps(reserved))) for _ in range(2)]
    try:
        for w in workers:
            assert type(w) is socket.socket
            assert w.fileno() != reserved.fileno()
            assert w.getsockname() == address
            assert w.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
            w.listen()  # both at once: each its own queue on the one port
        assert reserved.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 0  # never
        with socket.create_connection(address, timeout=5):
            pass
        # another process's socket without SO_REUSEPORT cannot take the port meanwhile, and
        # a second service (the same user, SO_REUSEPORT) is refused, not let in to share it
        with pytest.raises(OSError), socket.create_server(address):
            pass
        with pytest.raises(OSError):
            serving.reserve(*address)
    finally:
        for w in workers:
            w.close()
        reserved.close()


def _workers(pid: int, port: int) -> list[int]:
    """The connections each of the service's worker processes holds (its children that
    listen on the port, not the multiprocessing helpers beside them)."""
    return connections_by_worker(child_pids(pid), port)


async def _burst(port: int, service: int) -> list[int]:
    """``CLIENTS`` keep-alive connections opened at once, each answered once, then counted
    by process while they are all open."""
    streams = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", port) for _ in range(CLIENTS))
    )
    request = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    for _, writer in streams:
        writer.write(request)
    for reader, _ in streams:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
    counts = _workers(service, port)
    for _, writer in streams:
        writer.close()
    await asyncio.gather(*(w.wait_closed() for _, w in streams), return_exceptions=True)
    return counts


@pytest.mark.postgres
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_connections_opened_at_once_are_spread_over_the_workers(
    postgres_url: str, tmp_path: Path
) -> None:
    with (
        fresh_database(postgres_url) as url,
        service(url, tmp_path, args=["--workers", "2", "--no-access-log"]) as (proc, base),
    ):
        port = int(base.rpartition(":")[2])
        # warm-up: both workers serving (the first answers before the second starts) and
        # past their first requests, three bursts in a row
        deadline, served = time.monotonic() + 60, 0
        while served < 3:
            assert time.monotonic() < deadline, "the second worker never took connections"
            split = asyncio.run(_burst(port, proc.pid))
            served = served + 1 if len(split) == 2 and min(split) else 0
        splits = [asyncio.run(_burst(port, proc.pid)) for _ in range(BURSTS)]
        assert all(sum(s) == CLIENTS for s in splits), splits  # every connection counted
        assert all(min(s) >= LEAST for s in splits), splits  # below 12: about 1 in 30,000

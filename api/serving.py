"""How the service's worker processes share the port: a listening socket each (``SO_REUSEPORT``).

With ``serve --workers N`` uvicorn binds one socket and every worker accepts from it. When
several connections wait, the first worker awake takes them all (its loop accepts until none
waits) before the others run: 50 clients connecting at once were split 1/49, 3/47, 6/44 and
only now and then 25/25 (twenty tries). Keep-alive clients stay where they landed, so one
worker served nearly every request while the other idled, and its queue set every latency.

Here each worker listens on a socket of its own bound to the same address with
``SO_REUSEPORT``: the kernel hands each new connection to one of them by a hash of its
addresses and ports, whatever the scheduler does, so a burst is split as evenly as coin
tosses (50 connections: 25 ± 3.5). The supervisor's socket (:func:`reserve`) is bound but never
listens: it holds the port for the service's lifetime, and each worker's socket is made when
the supervisor's is handed to it (:class:`ReservedSocket` is pickled to a spawned worker as
"a new socket on this address", :func:`listening_socket`), also for a worker uvicorn starts
again. What reuse-port gives up against one shared socket: connections waiting in a worker's
own queue when it stops are reset (the clients retry), and a busy worker still gets its share
of new connections.
"""

from __future__ import annotations

import socket
from typing import Any

_REUSE_PORT: int = getattr(socket, "SO_REUSEPORT", 0)


def supported() -> bool:
    """Whether this system has ``SO_REUSEPORT`` (Linux, the BSDs, macOS)."""
    return bool(_REUSE_PORT)


class ReservedSocket(socket.socket):
    """The supervisor's socket: bound with ``SO_REUSEPORT``, never listening; handed to a
    worker process as a new socket of its own on the same address (see the module
    docstring)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return listening_socket, (self.family, self.getsockname())


def _bound(family: socket.AddressFamily, address: Any, cls: type[socket.socket]) -> socket.socket:
    sock = cls(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, _REUSE_PORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def reserve(host: str, port: int) -> ReservedSocket:
    """The supervisor's socket on ``host``:``port`` (IPv6 when ``host`` has a colon).

    ``SO_REUSEPORT`` would let a second service of the same user join this one's sockets
    and take a share of its connections unnoticed: the port is first bound without it
    (``OSError`` when anything listens there), then let go and reserved."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        port = probe.getsockname()[1]  # port 0: the one the system chose
    sock = _bound(family, (host, port), ReservedSocket)
    assert isinstance(sock, ReservedSocket)
    return sock


def listening_socket(family: socket.AddressFamily, address: Any) -> socket.socket:
    """A worker's own socket on ``address``, in the reserved socket's ``SO_REUSEPORT`` group
    (uvicorn's worker makes it listen)."""
    return _bound(family, address, socket.socket)

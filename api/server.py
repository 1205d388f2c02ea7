"""The HTTP server's connection protocol: uvicorn's httptools protocol, one socket write per
answer.

uvicorn writes an answer's status line and headers when the application sends
``http.response.start`` and the body when it sends ``http.response.body``: two ``send``
system calls, two TCP segments on loopback (each also waking the client), for an answer the
application hands over in one go. Under the HTTP benchmark those writes were the largest
single cost of a ``GET /rounds/{id}`` in the service (py-spy: about 45 % of the busy samples
in ``RequestResponseCycle.send``, nearly all of it in the two writes).

:class:`OneWriteProtocol` gives uvicorn's protocol a transport (:class:`CoalescingTransport`)
that keeps what is written during one step of the event loop and sends it with one write at
the end of that step (``loop.call_soon``), or at once before the connection is closed. The
bytes, their order and every answer are unchanged: only how many ``send`` calls carry them.
Nothing is held across an ``await`` that waits for something: the flush is the loop's next
callback. ``roundaudit serve`` runs it (``PROTOCOL``, uvicorn's ``http`` setting).

The protocol also writes uvicorn's access line through ``api.accesslog`` (the same line, made
directly and written once per step of the loop) when the access logger is configured as
uvicorn configures it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.accesslog import access_line

#: uvicorn's ``http`` setting for this protocol (a string: it reaches worker processes).
PROTOCOL: Final = "api.server:OneWriteProtocol"


class CoalescingTransport:
    """A transport that sends what is written in one loop step with one write (see the module
    docstring); everything else is the wrapped transport's."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Send what is kept, in one write (nothing when the connection is closing)."""
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a :class:`CoalescingTransport`, its access line
    written by ``api.accesslog`` where that writes the same line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.access_log:
            fast = access_line(self.access_logger)
            if fast is not None:
                self.access_logger = fast  # type: ignore[assignment]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]


__all__ = ["PROTOCOL", "CoalescingTransport", "OneWriteProtocol"]

"""The access log's line for less: uvicorn's line, formatted directly, written once per step.

uvicorn logs each answer through the ``uvicorn.access`` logger: a ``LogRecord`` made, its
formatter's copy of it, the level prefix and status phrase worked out, the handler's lock and
one write and flush of the stream per line, all on the event loop. Under the HTTP benchmark's
deposits that was a tenth of the event loop's busy samples (py-spy ``--gil``).

:class:`AccessLine` stands in for that logger in the server's protocol (``api.server``) when
the logger is configured as uvicorn configures it (:func:`access_line`: its own
``AccessFormatter`` with uvicorn's format and without colours, on one ``StreamHandler``, no
filters, no propagation): it writes **the very line** that configuration writes (the same
client address, request line and status with its phrase, the same prefix), keeps the lines of
one step of the event loop and writes them to the handler's stream with one write and one
flush at the end of that step (``loop.call_soon``), or at once when the process exits. Lines
keep their order. The logger's level, ``logging.disable`` and a logger or handler turned off
are honoured at every line. Any other configuration (a ``--log-config`` of the operator's,
colours on a terminal, a filter) keeps uvicorn's logger itself, unchanged. ``serve
--no-access-log`` still writes no line at all.
"""

from __future__ import annotations

import asyncio
import atexit
import http
import logging
import threading
import weakref
from typing import Any, Final

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter

#: uvicorn's format of the access line (``uvicorn.config.LOGGING_CONFIG``).
UVICORN_ACCESS_FORMAT: Final[str] = LOGGING_CONFIG["formatters"]["access"]["fmt"]
_PREFIX: Final = "INFO:" + " " * (8 - len("INFO")) + " "
_STATUS: dict[int, str] = {}


def status_text(status: int) -> str:
    """``200 OK``: the status and its phrase, as uvicorn's ``AccessFormatter`` writes them."""
    found = _STATUS.get(status)
    if found is None:
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        found = _STATUS[status] = f"{status} {phrase}"
    return found


def line(client_addr: str, method: str, path: str, http_version: str, status: int) -> str:
    """One access line as uvicorn's default configuration writes it (without its newline)."""
    return f'{_PREFIX}{client_addr} - "{method} {path} HTTP/{http_version}" {status_text(status)}'


class AccessLine:
    """The ``uvicorn.access`` logger's stand-in (see the module docstring): ``info`` takes
    uvicorn's arguments and keeps the line for the end of the loop's step."""

    def __init__(self, logger: logging.Logger, handler: logging.StreamHandler[Any]) -> None:
        self.logger = logger
        self.handler = handler
        self._lines: list[str] = []
        self._lock = threading.Lock()
        _OPEN.add(self)

    def info(
        self, _msg: str, client_addr: str, method: str, path: str, version: str, status: int
    ) -> None:
        """uvicorn's call: ``info('%s - "%s %s HTTP/%s" %d', client, method, path, version,
        status)``."""
        logger = self.logger
        if logger.disabled or not logger.isEnabledFor(logging.INFO):
            return
        if self.handler.level > logging.INFO:
            return
        text = line(client_addr, method, path, version, status)
        with self._lock:
            first = not self._lines
            self._lines.append(text)
        if first:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no loop: write it now
                self.flush()

    def flush(self) -> None:
        """Write the kept lines with one write and one flush of the handler's stream."""
        with self._lock:
            lines, self._lines = self._lines, []
        if not lines:
            return
        handler = self.handler
        terminator = handler.terminator
        text = terminator.join(lines) + terminator
        handler.acquire()
        try:
            handler.stream.write(text)
            handler.flush()
        except Exception:
            handler.handleError(logging.makeLogRecord({"msg": text, "levelno": logging.INFO}))
        finally:
            handler.release()


_OPEN: weakref.WeakSet[AccessLine] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for kept in list(_OPEN):
        kept.flush()


_SHARED: dict[int, AccessLine] = {}


def access_line(logger: logging.Logger) -> AccessLine | None:
    """The stand-in for ``logger`` (``uvicorn.access``) when it is configured as uvicorn
    configures it, one per handler; None otherwise (uvicorn's logger is kept)."""
    handlers = logger.handlers
    if logger.filters or logger.propagate or len(handlers) != 1:
        return None
    handler = handlers[0]
    formatter = handler.formatter
    if (
        type(handler) is not logging.StreamHandler
        or handler.filters
        or type(formatter) is not AccessFormatter
        or formatter.use_colors
        or formatter._fmt != UVICORN_ACCESS_FORMAT
    ):
        return None
    found = _SHARED.get(id(handler))
    if found is None or found.handler is not handler or found.logger is not logger:
        found = _SHARED[id(handler)] = AccessLine(logger, handler)
    return found


__all__ = ["UVICORN_ACCESS_FORMAT", "AccessLine", "access_line", "line", "status_text"]

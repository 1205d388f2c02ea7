"""Transport-level protection: the Host header check and the security headers.

:class:`HostAndHeaders` is a pure ASGI middleware (it never buffers a streamed body) that

* refuses a request whose ``Host`` header names a host not in ``ROUNDAUDIT_ALLOWED_HOSTS``
  (default: ``localhost``, ``127.0.0.1``, ``[::1]``) with a 400 problem ``invalid-host``: a
  page on another site that resolves its own name to this machine (DNS rebinding) cannot
  talk to the service; ``*`` turns the check off (behind a proxy that does it);
* adds to every response ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
  ``Referrer-Policy: no-referrer``, ``Cross-Origin-Opener-Policy`` and
  ``Cross-Origin-Resource-Policy: same-origin``, ``Cache-Control: no-store`` (answers carry
  balances and, once, API keys; the docs page's assets may be cached) and a
  ``Content-Security-Policy``: ``default-src 'none'`` for the API, and for the docs page only
  what it needs from the service itself (``script-src 'self'``, no inline script).

CORS is off unless ``ROUNDAUDIT_CORS_ORIGINS`` names origins (``api.main`` then adds
Starlette's CORS middleware for exactly those).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_CSP: Final = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
DOCS_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'"
)
DOCS_PREFIX: Final = "/docs"
#: Paths of the pages the service serves (their CSP lets them load the service's own scripts
#: and styles; everything else is the API's, ``default-src 'none'``). A page added later (the
#: investigation page at ``/ui/``) is listed here.
PAGE_PREFIXES: Final = (DOCS_PREFIX, "/ui")
COMMON: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def host_of(header: str) -> str:
    """The host part of a Host header (port removed, IPv6 in brackets), lower-cased.

    >>> host_of("LocalHost:8000"), host_of("[::1]:8000"), host_of("127.0.0.1")
    ('localhost', '[::1]', '127.0.0.1')
    """
    text = header.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        return text[: end + 1] if end != -1 else text
    return text.rpartition(":")[0] if ":" in text else text


def is_page(path: str) -> bool:
    """Whether ``path`` is one of the service's pages (:data:`PAGE_PREFIXES`)."""
    return any(path == p or path.startswith(p + "/") for p in PAGE_PREFIXES)


#: The names of the headers :func:`with_security_headers` adds only when the answer has none.
_ADDED_IF_ABSENT: Final = frozenset({k for k, _ in COMMON} | {b"cache-control"})
#: What :func:`with_security_headers` adds to an API answer (not a page) that sets none of
#: :data:`_ADDED_IF_ABSENT` itself: every hot path's answer.
_API_TAIL: Final = (
    *COMMON,
    (b"content-security-policy", API_CSP.encode()),
    (b"cache-control", b"no-store"),
)


def with_security_headers(message: Message, path: str) -> Message:
    """An ``http.response.start`` message of an answer to ``path`` with the security headers
    added (the module docstring): every answer of the service that passes the Host check gets
    them here, through :class:`HostAndHeaders` or the front (``api.front``). An API answer
    that sets none of them itself (a path no page's prefix starts, so not :func:`is_page`)
    gets :data:`_API_TAIL`, the very headers the general steps (:func:`general_headers`)
    add to it."""
    raw = list(message.get("headers") or [])
    if not path.startswith(PAGE_PREFIXES) and not any(
        k.lower() in _ADDED_IF_ABSENT for k, _ in raw
    ):
        raw += _API_TAIL
        return {**message, "headers": raw}
    return general_headers(message, path)


def general_headers(message: Message, path: str) -> Message:
    """:func:`with_security_headers`'s general steps, for any answer: the common headers the
    answer does not set, the content security policy of a page or of the API, and a
    cache-control when the answer sets none (an hour for the docs' assets, else none kept)."""
    raw = list(message.get("headers") or [])
    names = {k.lower() for k, _ in raw}
    raw += [(k, v) for k, v in COMMON if k not in names]
    raw.append((b"content-security-policy", (DOCS_CSP if is_page(path) else API_CSP).encode()))
    if b"cache-control" not in names:
        assets = path.startswith(DOCS_PREFIX + "/assets/")
        raw.append((b"cache-control", b"max-age=3600" if assets else b"no-store"))
    return {**message, "headers": raw}


class HostAndHeaders:
    """See the module docstring. :meth:`refused` (the Host check), :func:`refuse_host` (its
    answer) and :func:`with_security_headers` are also what the front (``api.front``) calls."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        hosts = {h.strip().lower() for h in allowed_hosts if h.strip()}
        self.any_host = "*" in hosts
        self.hosts = frozenset(hosts)

    def refused(self, scope: Scope) -> str | None:
        """The host a request's ``Host`` header names when this service does not answer for
        it (its last ``Host`` header, "" for none); None when the request passes."""
        headers = dict(scope.get("headers") or [])
        host = host_of(headers.get(b"host", b"").decode("latin-1"))
        if not self.any_host and host not in self.hosts:
            return host
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = self.refused(scope)
        if host is not None:
            await refuse_host(scope, send, host)
            return
        path: str = scope.get("path", "")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = with_security_headers(message, path)
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def refuse_host(scope: Scope, send: Send, host: str) -> None:
    """The answer to a request for a host this service does not answer for: 400
    ``invalid-host``, with the API's security headers."""
    body = orjson.dumps(
        {
            "type": "urn:roundaudit:problem:invalid-host",
            "title": "Invalid host",
            "status": 400,
            "detail": f"the Host header names {host or '(none)'!r}, which this service does "
            "not answer for (ROUNDAUDIT_ALLOWED_HOSTS)",
            "instance": scope.get("path", ""),
            "code": "invalid-host",
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                *COMMON,
                (b"content-security-policy", API_CSP.encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "API_CSP",
    "DOCS_CSP",
    "PAGE_PREFIXES",
    "HostAndHeaders",
    "host_of",
    "is_page",
    "refuse_host",
    "with_security_headers",
]

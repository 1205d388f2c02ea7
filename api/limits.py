"""The body gate: request bodies are bounded, read once, and exact JSON before any route sees
them.

An ASGI middleware (:class:`BodyGate`) in front of every route:

* **Size.** A body may hold at most :data:`DEFAULT_MAX_BODY` bytes (1 MiB); a route declares a
  larger limit with ``openapi_extra=max_body(N)`` (the batch routes: :data:`BATCH_MAX_BODY`,
  8 MiB), which the OpenAPI document shows as ``x-max-body-bytes``. A ``Content-Length`` above
  the limit is refused at once, unread; a body sent without one (chunked) is counted as it
  streams in and refused as soon as it passes the limit. Either way the answer is **413**
  ``payload-too-large`` and the service never holds more than the limit of any request in
  memory, whatever clients send. Nothing is recorded.
* **Exact JSON.** A body that is not UTF-8 JSON, or that repeats a key in an object
  (``{"amount": "1", "amount": "100"}``: JSON parsers disagree on which wins), or that holds
  ``NaN``/``Infinity``, is refused with 422 ``malformed-json`` naming the problem.
* **Canonical form.** The parsed body's canonical bytes (keys sorted, no spaces: what
  ``api.idempotency`` fingerprints) are left in ``request.state.canonical_body``, and the
  value a route reads from the body passed on in ``request.state.json_body`` (what the hot
  command routes validate, ``api.hotpath``, instead of parsing the body again).

The routes then read the (already bounded) body as usual.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import orjson

from api.errors import PROBLEM_MEDIA_TYPE, problem_type, title_of

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MIB: Final = 1024 * 1024
DEFAULT_MAX_BODY: Final = 1 * MIB
BATCH_MAX_BODY: Final = 8 * MIB
LIMIT_KEY: Final = "x-max-body-bytes"


def max_body(limit: int) -> dict[str, Any]:
    """``openapi_extra`` of a route whose bodies may be larger than the default."""
    return {LIMIT_KEY: limit}


class BadJson(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadJson(f"the key {key[:40]!r} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON number")


def _exact(value: Any) -> Any:
    """Numbers as their text says: an integral one (``10``, ``10.0``, ``1e2``) is that integer,
    exactly (JSON Schema's integers); any other stays a (binary) float, which money refuses."""
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return value


#: The decoder of :func:`parse_exact`: ``json.loads(text, object_pairs_hook=..., ...)`` makes
#: this very decoder for every call (its scanner included, about 2 us of a command) and,
#: after refusing a leading byte order mark (:func:`_loads`), decodes with it; it keeps no
#: state between documents, as the decoder ``json.loads`` shares for calls without options.
_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=Decimal
)


def _loads(text: str) -> Any:
    """``json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
    parse_float=Decimal)``, its refusals and their words included, by :data:`_DECODER`."""
    if text.startswith("\ufeff"):  # as json.loads refuses it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def parse_exact(body: bytes) -> Any:
    """The JSON value of ``body``; :class:`BadJson` for a repeated key, NaN/Infinity, a
    non-UTF-8 or malformed document.

    >>> parse_exact(b'{"a": 1, "b": [2]}')
    {'a': 1, 'b': [2]}
    >>> parse_exact(b'{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    api.limits.BadJson: the key 'a' appears twice in one object
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadJson("the body is not UTF-8") from None
    try:
        return _exact(_loads(text))
    except BadJson:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadJson(f"the body is not JSON ({str(exc)[:80]})") from None


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes of a parsed body (sorted keys, no spaces)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True)
class Refusal:
    """The body gate's refusal of a request: its status, problem code and detail
    (:func:`refuse` answers it)."""

    status: int
    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class Passed:
    """A body the gate passes on: the bytes the client sent (``raw``) and those the route
    reads (``body``: numbers as their text says)."""

    raw: bytes
    body: bytes


async def gate_body(scope: Scope, receive: Receive, limit: int) -> Passed | Refusal | None:
    """Read a request's body under ``limit`` bytes and check it (the module docstring): the
    body passed on, with the canonical body and the parsed value left in the scope's state; a
    :class:`Refusal`; or None when the client left before its body came. What
    :class:`BodyGate` and the front (``api.front``) do with every body they pass on."""
    declared = _content_length(scope)
    if declared is not None and declared > limit:
        return Refusal(413, "payload-too-large", _too_large(limit, declared))
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return Refusal(413, "payload-too-large", _too_large(limit, None))
        if chunk:
            chunks.append(chunk)
        more = bool(message.get("more_body", False))
    body = raw = b"".join(chunks)
    state = scope.setdefault("state", {})
    if body:
        try:
            value = parse_exact(body)
        except BadJson as exc:
            return Refusal(422, "malformed-json", f"{exc}; nothing was recorded")
        try:
            state["canonical_body"] = canonical(value)
            body = orjson.dumps(value)  # what the route reads: numbers as their text says
            state["json_body"] = orjson.loads(body)  # exactly what the route reads
        except orjson.JSONEncodeError:
            return Refusal(
                422,
                "malformed-json",
                "the body holds a string that is not Unicode text (an unpaired surrogate "
                "escape) or an integer beyond 64 bits; nothing was recorded",
            )
    else:
        state["canonical_body"] = b""
    return Passed(raw, body)


def replaying(body: bytes, receive: Receive) -> Receive:
    """The ``receive`` of the application behind the gate: the checked body once, then the
    client's own ``receive`` (its disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class BodyGate:
    """The ASGI middleware (see the module docstring): :func:`gate_body` in front of every
    route, under the route's limit (:meth:`limit_for`)."""

    def __init__(self, app: ASGIApp, *, routes: Callable[[], Any], default: int = DEFAULT_MAX_BODY):
        self.app = app
        self.routes = routes
        self.default = default
        self._table: list[tuple[re.Pattern[str], int]] | None = None

    def limit_for(self, path: str) -> int:
        if self._table is None:
            table = []
            for route in self.routes():
                extra = getattr(route, "openapi_extra", None) or {}
                regex = getattr(route, "path_regex", None)
                if LIMIT_KEY in extra and regex is not None:
                    table.append((regex, int(extra[LIMIT_KEY])))
            self._table = table
        for regex, limit in self._table:
            if regex.match(path):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gated = await gate_body(scope, receive, self.limit_for(scope.get("path", "")))
        if gated is None:
            return
        if isinstance(gated, Refusal):
            await refuse(send, scope, gated)
            return
        await self.app(scope, replaying(gated.body, receive), send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _too_large(limit: int, declared: int | None) -> str:
    size = f" ({declared} bytes)" if declared is not None else ""
    return (
        f"the request body{size} is larger than this route takes: at most {limit} bytes; "
        "nothing was read further and nothing was recorded"
    )


async def refuse(send: Send, scope: Scope, refusal: Refusal) -> None:
    """The answer to a request the gate refuses: the problem document, the connection closed
    (the rest of the body is not read)."""
    status, code, detail = refusal.status, refusal.code, refusal.detail
    body = orjson.dumps(
        {
            "type": problem_type(code),
            "title": title_of(code),
            "status": status,
            "detail": detail,
            "instance": scope.get("path", ""),
            "code": code,
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "BATCH_MAX_BODY",
    "DEFAULT_MAX_BODY",
    "BadJson",
    "BodyGate",
    "Passed",
    "Refusal",
    "canonical",
    "gate_body",
    "max_body",
    "parse_exact",
    "refuse",
    "replaying",
]

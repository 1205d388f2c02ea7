"""The hot read's own path: ``GET /rounds/{id}`` without FastAPI's routing and dependency
solving, through the very functions its route calls.

Profiled under the HTTP benchmark (50 clients reading one kept round), FastAPI's routing over
the 18 routers and its dependency solving took about 45 % of the service's busy samples of a
``GET /rounds/{id}``, the work itself (the key check, the round's version, the kept answer) a
sixth. :class:`HotReads` is an ASGI middleware, the innermost of the service's own (inside
the Host check and security headers of ``api.security`` and the body gate of ``api.limits``),
that answers a request which is exactly ``GET /rounds/{id}`` itself:

1. the path's id is checked by the route's own wire type (``api.wire.RoundId``: the same
   validator, the same canonical id); an id it refuses, any other method, path or a query
   string, and an application whose dependencies are overridden, go to FastAPI unchanged;
2. the ``Authorization`` header is read by the route's own scheme (``api.auth.bearer``), and
   the key checked by the route's own check (:func:`api.auth.authorize_here`, the body of
   :func:`api.auth.authorize`: every request reads the key's last version from the store, so
   a revocation by any process holds at once);
3. the answer is the route's own (:func:`api.routes.rounds.round_answer`), which makes the
   key check first: on the event loop on a file SQLite store (``api.offload``), else in the
   same thread-pool trip as the view, so a read on PostgreSQL takes one trip where the
   route, whose key check is its ``acting`` dependency's, takes two;
4. a refusal raised by steps 2-3 (401, 403, 404, a store error) is answered by the
   application's own exception handlers through Starlette's own ``ExceptionMiddleware``, as
   for the route; anything else propagates to the server-error handler, as from the route.

So the status, headers and body of every answer are the route's (tested byte for byte against
FastAPI's path on SQLite and PostgreSQL), and the OpenAPI document is FastAPI's: the route is
still declared there and still answers anything this path leaves to it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from fastapi import FastAPI, Request
from pydantic import TypeAdapter, ValidationError
from starlette.middleware.exceptions import ExceptionMiddleware

from api.auth import authorize_here, bearer, key_stream
from api.routes.rounds import round_answer
from api.wire import RoundId
from domain.access import Action

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX: Final = "/rounds/"
_ROUND_ID: TypeAdapter[str] = TypeAdapter(RoundId)


def round_path_id(scope: Scope) -> str | None:
    """The canonical round id of a request that is exactly ``GET /rounds/{id}`` with an id the
    route accepts; None for anything else (left to FastAPI)."""
    if scope["type"] != "http" or scope["method"] != "GET" or scope.get("query_string"):
        return None
    path: str = scope["path"]
    if scope.get("root_path") or not path.startswith(PREFIX):
        return None
    segment = path[len(PREFIX) :]
    if not segment or "/" in segment:
        return None
    try:
        return _ROUND_ID.validate_python(segment)
    except ValidationError:
        return None


class HotReads:
    """See the module docstring."""

    def __init__(self, app: ASGIApp, web: FastAPI) -> None:
        self.app = app
        self.web = web
        self._handled: ASGIApp | None = None

    def _with_handlers(self) -> ASGIApp:
        """:meth:`_read` inside Starlette's ``ExceptionMiddleware`` with the application's
        handlers, split as FastAPI splits them (500 and ``Exception`` belong to the
        server-error middleware outside)."""
        if self._handled is None:
            handlers = {
                k: v for k, v in self.web.exception_handlers.items() if k not in (500, Exception)
            }
            self._handled = ExceptionMiddleware(self._read, handlers=handlers)
        return self._handled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        round_id = None if self.web.dependency_overrides else round_path_id(scope)
        if round_id is None:
            await self.app(scope, receive, send)
            return
        scope["path_params"] = {"round_id": round_id}  # as FastAPI's route would hold it
        await self._with_handlers()(scope, receive, send)

    async def _read(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        credentials = await bearer(request)
        response = await round_answer(
            request,
            request.path_params["round_id"],
            lambda known: authorize_here(request, credentials, Action.ROUND_READ, known),
            key_stream(credentials),
        )
        await response(scope, receive, send)


__all__ = ["HotReads", "round_path_id"]

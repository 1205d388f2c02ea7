"""The service's ASGI front: the application uvicorn calls (:class:`Service`, FastAPI's own
application with a front of its own) answers the hot routes' requests in one coroutine and
hands everything else to FastAPI's whole stack unchanged.

Between uvicorn and the hot paths (``api.hotpath``) a request went through FastAPI's and
Starlette's application calls, Starlette's server-error middleware, FastAPI's exception
telemetry and body-limit middlewares, the Host check and security headers (``api.security``),
the body gate (``api.limits``) and the hot path's own dispatch and exception middleware: each
layer a coroutine, four of them a ``send`` wrapper of their own. For a request a hot path
takes, the front makes the same steps in one coroutine, **by calling the very functions those
layers call**:

1. which requests: a ``GET`` that :class:`~api.hotpath.HotReads` takes (its own test of the
   path) or a ``POST`` whose path :class:`~api.hotpath.HotCommands` serves
   (:meth:`~api.hotpath.HotCommands.route_of`); anything else (another method or path, a
   websocket, the lifespan, FastAPI's telemetry turned on) goes to FastAPI's stack
   (``FastAPI.__call__``) untouched;
2. the Host check (:meth:`api.security.HostAndHeaders.refused`, its answer
   :func:`api.security.refuse_host`);
3. the body gate (:func:`api.limits.gate_body` under :meth:`api.limits.BodyGate.limit_for`,
   its refusals answered by :func:`api.limits.refuse` with the security headers);
4. for a command, the route's own fields (:meth:`~api.hotpath.HotCommands.taken`): a request
   they would refuse goes to FastAPI's stack with the bytes the client sent (checked again
   there by the same gate from the same bytes: the same answer; the bytes the gate passes on
   would not do, their numbers being rewritten as their text says);
5. the hot path's own coroutine (``HotReads._read``, ``HotCommands._command``), its answer
   sent with the security headers (:func:`api.security.with_security_headers`): one ``send``
   wrapper instead of four.

A refusal the hot path raises (401, 403, 404, 409, 422, a store error) is answered by the very
layers that answer it in FastAPI's stack, built once around the raised exception: Starlette's
server-error middleware with FastAPI's own handler and ``debug``, the Host check's layer (its
security headers), and the hot path's exception middleware with the application's handlers;
so a handled refusal, and an unexpected error (its 500 without the security headers, then
the exception to uvicorn, which logs it), are what the whole stack makes of them. An
unexpected error in steps 2-4 (none is expected) is answered by the server-error middleware
alone, as in the stack, where those steps run outside the hot path's exception middleware.
FastAPI's exception telemetry and body-limit middlewares do nothing for these requests (the
front takes nothing while telemetry is on, and is off when FastAPI has a body limit of its
own), so they are not called. An exception raised once the answer has started (none of the
hot paths' answers raises while it is sent) goes to uvicorn as is.

The front is made from the application's own middleware list when the first request comes
(:meth:`Front.of`): the same classes with the same arguments, in the order the stack has them
(Host check, body gate, commands, reads; the hot paths each optional, one of them there). Any
other list turns the front off, every request then going to FastAPI's stack as before: CORS
configured (``ROUNDAUDIT_CORS_ORIGINS``: its middleware touches every answer, ``Vary:
Origin`` included), a middleware of another kind or in another order, a ``root_path``.
Taking ``HotCommands`` or ``HotReads`` out of the list takes its requests out of the front
too. ``create_app(front=False)`` turns it off (``tests/api/test_front.py`` compares the two).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from fastapi import FastAPI
from starlette.middleware.errors import ServerErrorMiddleware

from api.hotpath import HotCommands, HotReads
from api.limits import BodyGate, Refusal, gate_body, refuse, replaying
from api.security import HostAndHeaders, refuse_host, with_security_headers

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_RAISED: Final = "roundaudit.front.raised"
_OFF: Final = "off"


async def _raise_kept(scope: Scope, receive: Receive, send: Send) -> None:
    """The innermost app of the front's exception handling (built by :meth:`Front.of` and
    :class:`Front`): raise the exception kept in the scope."""
    raise scope.pop(_RAISED)


async def _never(scope: Scope, receive: Receive, send: Send) -> None:
    """The inner app of the front's own middleware objects, which the front never calls
    through (it calls their functions)."""
    raise AssertionError("the front calls its middlewares' functions, not the middlewares")


class Front:
    """The front of a :class:`Service` (see the module docstring)."""

    def __init__(
        self,
        web: FastAPI,
        hosts: HostAndHeaders,
        gate: BodyGate,
        commands: HotCommands | None,
        reads: HotReads | None,
        *,
        raised: ASGIApp,
    ) -> None:
        self.web = web
        self.hosts = hosts
        self.gate = gate
        self.commands = commands
        self.reads = reads
        self._raised = raised
        stack = web.middleware_stack
        assert isinstance(stack, ServerErrorMiddleware)
        self._failed = ServerErrorMiddleware(_raise_kept, handler=stack.handler, debug=stack.debug)
        self._telemetry = getattr(web, "_native_telemetry", None)

    @classmethod
    def of(cls, web: FastAPI) -> Front | None:
        """The front made from ``web``'s own middleware list and its built stack, or None
        when that list is not one the front reproduces (the module docstring)."""
        if web.root_path or getattr(web, "max_body_size", None) is not None:
            return None
        entries: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
            (m.cls, tuple(m.args), dict(m.kwargs)) for m in web.user_middleware
        ]
        order: list[Any] = [HostAndHeaders, BodyGate, HotCommands, HotReads]
        at = 0
        for kind, _, _ in entries:
            while at < len(order) and order[at] is not kind:
                at += 1
            if at == len(order):
                return None
            at += 1
        found = {kind: (args, kwargs) for kind, args, kwargs in entries}
        if HostAndHeaders not in found or BodyGate not in found:
            return None
        if web.middleware_stack is None:
            web.middleware_stack = web.build_middleware_stack()  # as Starlette's first call
        stack = web.middleware_stack
        if not isinstance(stack, ServerErrorMiddleware):
            return None
        commands = reads = None
        if HotCommands in found:
            args, kwargs = found[HotCommands]
            commands = HotCommands(_never, *args, **kwargs)
        if HotReads in found:
            args, kwargs = found[HotReads]
            reads = HotReads(_never, *args, **kwargs)
        own = commands if commands is not None else reads
        if own is None:
            return None
        host_args, host_kwargs = found[HostAndHeaders]
        handled = HostAndHeaders(own._with_handlers(_raise_kept), *host_args, **host_kwargs)
        gate_args, gate_kwargs = found[BodyGate]
        return cls(
            web,
            HostAndHeaders(_never, *host_args, **host_kwargs),
            BodyGate(_never, *gate_args, **gate_kwargs),
            commands,
            reads,
            raised=ServerErrorMiddleware(handled, handler=stack.handler, debug=stack.debug),
        )

    async def serve(self, scope: Scope, receive: Receive, send: Send, full: ASGIApp) -> None:
        """Answer an HTTP request, or hand it to ``full`` (FastAPI's stack)."""
        telemetry = self._telemetry
        if "fastapi.telemetry" in scope or (telemetry is not None and telemetry.enabled()):
            await full(scope, receive, send)
            return
        method = scope["method"]
        round_id = route = None
        if method == "GET" and self.reads is not None:
            round_id = self.reads.taken(scope)
            if round_id is None:
                await full(scope, receive, send)
                return
        elif method == "POST" and self.commands is not None:
            route = self.commands.route_of(scope)
            if route is None:
                await full(scope, receive, send)
                return
        else:
            await full(scope, receive, send)
            return
        path: str = scope["path"]
        started = False

        async def secured(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = with_security_headers(message, path)
            await send(message)

        handed = False  # the request handed on, or answered: an exception is not the front's
        inner: ASGIApp
        try:
            host = self.hosts.refused(scope)
            if host is not None:
                handed = True
                await refuse_host(scope, send, host)
                return
            gated = await gate_body(scope, receive, self.gate.limit_for(path))
            if gated is None:
                return
            if isinstance(gated, Refusal):
                handed = True
                await refuse(secured, scope, gated)
                return
            scope["app"] = self.web  # as Starlette's application call leaves it
            if route is not None:
                assert self.commands is not None
                taken = self.commands.taken(scope, route)
                if taken is None:  # a value the route refuses: FastAPI's answer, to the
                    handed = True  # body as the client sent it (gated again from its bytes)
                    await full(scope, replaying(gated.raw, receive), send)
                    return
                self.commands.take(scope, taken)
                inner = self.commands._command
            else:
                assert self.reads is not None
                assert round_id is not None
                self.reads.take(scope, round_id)
                inner = self.reads._read
        except Exception as exc:
            if handed:
                raise
            scope[_RAISED] = exc  # as the server-error middleware outside them answers it
            await self._failed(scope, receive, send)
            return
        receive = replaying(gated.body, receive)
        try:
            await inner(scope, receive, secured)
        except Exception as exc:
            if started:
                raise
            scope[_RAISED] = exc  # as the hot path's exception middleware and the rest do
            await self._raised(scope, receive, send)


class Service(FastAPI):
    """FastAPI's application with the front (see the module docstring); everything but the
    front's requests is FastAPI's own call."""

    #: False: every request through FastAPI's stack (read at the first request).
    front_on: bool = True
    _front: Front | str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            front = self._front
            if front is None:
                front = self._front = (Front.of(self) if self.front_on else None) or _OFF
            if isinstance(front, Front):
                await front.serve(scope, receive, send, super().__call__)
                return
        await super().__call__(scope, receive, send)


__all__ = ["Front", "Service"]

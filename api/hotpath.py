"""The hot routes' own path: ``GET /rounds/{id}`` (:class:`HotReads`) and the single
commands of :data:`HOT_COMMANDS` (:class:`HotCommands`: deposits, withdrawals, bets, decisions,
cards) without FastAPI's routing and dependency solving, through the very functions their
routes call.

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
   key check first: on the event loop on a file SQLite store (``api.offload``); on
   PostgreSQL the key's and the round's versions are read on the loop asynchronously
   (``api.versions.LoopVersions``) and a key kept at its version with a round kept at its
   own is answered there (:func:`api.auth.authorize_kept`, ``RoundViews.kept``: no
   thread-pool trip), anything else in one trip with the view (the route, whose key check
   is its ``acting`` dependency's, takes two);
4. a refusal raised by steps 2-3 (401, 403, 404, a store error) is answered by the
   application's own exception handlers through Starlette's own ``ExceptionMiddleware``, as
   for the route; anything else propagates to the server-error handler, as from the route.

So the status, headers and body of every answer are the route's (tested byte for byte against
FastAPI's path on SQLite and PostgreSQL), and the OpenAPI document is FastAPI's: the route is
still declared there and still answers anything this path leaves to it. The service's front
(``api.front``) calls these paths' own tests and coroutines (:meth:`HotReads.taken`,
:meth:`HotCommands.route_of` and :meth:`HotCommands.taken`, ``_read`` and ``_command``)
without the middleware stack around them; as middlewares they answer whatever reaches them
through the stack (the front off, or CORS configured).

Commands (:class:`HotCommands`, the next middleware out). Profiled under the benchmark's
deposits, a command spent about as much of the service's CPU in FastAPI's routing, dependency
solving and second parse of the body as in the command itself. A request is taken when it is a
``POST`` without a query to a path of :data:`HOT_COMMANDS` that no route declared before it may
also match, its ``Content-Type`` exactly ``application/json``, and everything FastAPI would
validate is valid **by FastAPI's own fields of that route** (its path parameters, its body
model, the ``Idempotency-Key`` header of ``api.idempotency.command``), the body taken as the
body gate left it parsed (``request.state.json_body``, the very value the route reads back):
it is parsed once. Anything else (a value any of those fields refuses, a repeated
``Idempotency-Key``, another content type, no body, dependency overrides) goes to FastAPI
unchanged, which answers its 401 or 422 in its own order. A taken request then runs the
route's own dependencies and endpoint: the key read by ``api.auth.bearer`` and checked by the
route's ``acting`` dependency (:func:`api.auth.authorize_here`, its body, in the endpoint's
own thread-pool trip on every store, so one trip does both and the event loop makes no store
read for a command: the body is already known valid, so no 422 of its can come before a 401;
on a file SQLite store the check ran on the loop before, a tenth of the loop's busy samples
under the benchmark's deposits; on PostgreSQL the key's last version is read on the event
loop instead, through ``api.versions.LoopVersions``, and a key kept at that version checked
there, :func:`api.auth.authorize_loop`, so the trip makes no round trip for the key: only a
key not kept is checked in the trip, at the version read on the loop, and a failed loop
read leaves the whole check to the trip as before), the
:class:`~api.idempotency.Command` made by the route's dependency, then the route's endpoint
with the values FastAPI would pass, in the commands' own thread pool
(:class:`api.offload.CommandWorkers`: the same limit as the routes', a cheaper hand-over than
AnyIO's), its refusals answered by the application's handlers as above. Which routes
qualify is read from FastAPI's own route table when the first request comes
(:func:`hot_commands`, which refuses a route of another shape), so a route's rules live in
the route alone.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

import fastapi.routing
from fastapi import FastAPI, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Match

from api.auth import (
    Authenticated,
    authorize_here,
    authorize_kept,
    authorize_loop,
    bearer,
    key_stream,
)
from api.deps import state_value
from api.idempotency import Command
from api.idempotency import command as command_dependency
from api.routes.rounds import round_answer
from api.versions import Known
from api.wire import RoundId
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.kept import KeptValues

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
    return _round_id(segment)


@functools.lru_cache(maxsize=4096)
def _round_id(segment: str) -> str | None:
    """The route's wire type's canonical id of a path segment (None: refused), kept for the
    segments last seen (the same rounds are read over and over; the check is a pure function
    of the text)."""
    try:
        return _ROUND_ID.validate_python(segment)
    except ValidationError:
        return None


class _OwnPath:
    """An ASGI middleware that answers some requests itself, its refusals by the
    application's own exception handlers in Starlette's own ``ExceptionMiddleware``, split as
    FastAPI splits them (500 and ``Exception`` belong to the server-error middleware
    outside)."""

    def __init__(self, app: ASGIApp, web: FastAPI) -> None:
        self.app = app
        self.web = web
        self._handled: dict[object, ASGIApp] = {}

    def _with_handlers(self, inner: ASGIApp) -> ASGIApp:
        """``inner`` inside the application's exception handlers (made once per inner path:
        kept by the method's function, a bound method being a new object each time)."""
        key = getattr(inner, "__func__", inner)
        found = self._handled.get(key)
        if found is None:
            handlers = {
                k: v for k, v in self.web.exception_handlers.items() if k not in (500, Exception)
            }
            found = self._handled[key] = ExceptionMiddleware(inner, handlers=handlers)
        return found


class HotReads(_OwnPath):
    """``GET /rounds/{id}`` (see the module docstring)."""

    def taken(self, scope: Scope) -> str | None:
        """The canonical round id of a request this path answers (None: FastAPI's)."""
        return None if self.web.dependency_overrides else round_path_id(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        round_id = self.taken(scope)
        if round_id is None:
            await self.app(scope, receive, send)
            return
        self.take(scope, round_id)
        await self._with_handlers(self._read)(scope, receive, send)

    @staticmethod
    def take(scope: Scope, round_id: str) -> None:
        """Leave in the scope what :meth:`_read` answers."""
        scope["path_params"] = {"round_id": round_id}  # as FastAPI's route would hold it

    async def _read(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        credentials = await bearer(request)
        response = await round_answer(
            request,
            request.path_params["round_id"],
            lambda known: authorize_here(request, credentials, Action.ROUND_READ, known),
            key_stream(credentials),
            lambda known: authorize_kept(request, credentials, Action.ROUND_READ, known),
        )
        await response(scope, receive, send)


#: The command routes with their own path (``POST``), as FastAPI declares them.
HOT_COMMANDS: Final = (
    "/wallets/{player_id}/deposits",
    "/wallets/{player_id}/withdrawals",
    "/rounds/{round_id}/bets",
    "/rounds/{round_id}/decisions",
    "/rounds/{round_id}/cards",
)
_TAKEN: Final = "roundaudit.hot_command"
_NO_BODY: Final = object()
_JSON: Final = b"application/json"
_log = logging.getLogger("roundaudit.api.hotpath")
_KEY_HEADER: Final = b"idempotency-key"


class NotHot(ValueError):
    """A route of :data:`HOT_COMMANDS` is not of the shape :class:`HotCommands` serves."""


@dataclass(frozen=True, slots=True)
class HotCommand:
    """One command route as FastAPI declares it: what :class:`HotCommands` needs to answer it
    through the route's own fields, dependencies and endpoint."""

    path: str
    context: Any  # FastAPI's route (its regex, parameters, dependant, endpoint)
    before: tuple[Any, ...]  # routes tried first that may match one of its paths
    endpoint: Callable[..., Response]
    path_fields: tuple[Any, ...]  # FastAPI's ModelFields
    body_field: Any
    body_name: str
    guard: Authenticated
    guard_name: str
    command_name: str
    key_field: Any
    command_request_name: str
    path_aliases: tuple[str, ...] = ()  # the path fields' aliases, in order
    path_strings: tuple[type, ...] = ()  # ``str`` for each path field
    #: the path arguments each path parameters' text gave (:meth:`path_arguments`), kept
    path_kept: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = dataclass_field(
        default_factory=dict
    )

    def match(self, scope: Scope) -> dict[str, Any] | None:
        """The path parameters of a request this route serves (and no route before it)."""
        found, child = self.context.matches(scope)
        if found is not Match.FULL:
            return None
        for route in self.before:
            if route.matches(scope)[0] is not Match.NONE:
                return None
        params: dict[str, Any] = child.get("path_params", {})
        return params

    def arguments(self, scope: Scope, params: dict[str, Any]) -> tuple[dict[str, Any], Any] | None:
        """The endpoint's path and body arguments and the ``Idempotency-Key`` value, each as
        the route's own field validates it; None when FastAPI would refuse anything (or read
        the body otherwise), so FastAPI answers."""
        content_types, keys = [], []
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_types.append(value)
            elif name == _KEY_HEADER:
                keys.append(value)
        if content_types != [_JSON] or len(keys) > 1:
            return None
        body = scope.get("state", {}).get("json_body", _NO_BODY)
        if body is _NO_BODY:
            return None
        path = self.path_arguments(params)
        if path is None:
            return None
        values: dict[str, Any] = dict(path)
        value, errors = self.body_field.validate(body, {}, loc=("body",))
        if errors:
            return None
        values[self.body_name] = value
        key = None
        if keys:
            key, errors = self.key_field.validate(
                keys[0].decode("latin-1"), {}, loc=("header", self.key_field.alias)
            )
            if errors:
                return None
        return values, key

    def path_arguments(self, params: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
        """The endpoint's path arguments (name, value), each as the route's own field
        validates its parameter; None when one refuses. A field's validation is a function of
        its parameter's text (the wire types' checks), so the arguments of parameters that
        are all strings and validate to strings (immutable: shared by every request) are kept
        by those texts (at most :data:`ROUTES_KEPT` of them a route, emptied when full): a
        wallet's deposits name the same player, validated by pydantic once, not every time."""
        raw = tuple(map(params.get, self.path_aliases))
        kept = self.path_kept
        strings = tuple(map(type, raw)) == self.path_strings
        if strings:
            found = kept.get(raw)
            if found is not None:
                return found
        made = []
        for f in self.path_fields:
            value, errors = f.validate(params.get(f.alias), {}, loc=("path", f.alias))
            if errors:
                return None
            made.append((f.name, value))
        arguments = tuple(made)
        if strings and all(type(v) is str for _, v in arguments):
            if len(kept) >= ROUTES_KEPT:
                kept.clear()
            kept[raw] = arguments
        return arguments


def hot_commands(web: FastAPI, paths: tuple[str, ...] = HOT_COMMANDS) -> tuple[HotCommand, ...]:
    """Each path's ``POST`` route read from FastAPI's route table (:class:`NotHot` for a route
    missing or of another shape, or a route table that does not read as this FastAPI's)."""
    try:
        return _read_routes(web, paths)
    except (AttributeError, TypeError) as e:  # another FastAPI's internals
        raise NotHot(f"FastAPI's route table does not read as expected: {e!r}") from e


def _read_routes(web: FastAPI, paths: tuple[str, ...]) -> tuple[HotCommand, ...]:
    routes: list[tuple[str, set[str] | None, Any]] = []
    for route in web.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:
            for ctx in contexts():
                routes.append((ctx.path, set(ctx.methods or ()) or None, ctx))
        else:
            methods = getattr(route, "methods", None)
            routes.append((getattr(route, "path", ""), set(methods) if methods else None, route))
    out = []
    for path in paths:
        at = next(
            (i for i, (p, m, _) in enumerate(routes) if p == path and m and "POST" in m), None
        )
        if at is None:
            raise NotHot(f"no POST {path}")
        before = tuple(
            r for p, m, r in routes[:at] if (m is None or "POST" in m) and _may_overlap(path, p, r)
        )
        out.append(_hot_command(path, routes[at][2], before))
    return tuple(out)


def _may_overlap(path: str, other: str, route: Any) -> bool:
    """Whether a request path may match both route templates (over-approximated)."""
    mine, theirs = path.strip("/").split("/"), other.strip("/").split("/")
    if any(":path" in s for s in theirs):
        return True
    if getattr(route, "routes", None) is not None and not hasattr(route, "endpoint"):  # a mount
        if other.strip("/") == "":
            return True
        if len(theirs) > len(mine):
            return False
    elif len(theirs) != len(mine):
        return False
    return all(a == b or "{" in a or "{" in b for a, b in zip(mine, theirs, strict=False))


def _hot_command(path: str, ctx: Any, before: tuple[Any, ...]) -> HotCommand:
    dependant = ctx.dependant
    endpoint = dependant.call
    if (
        endpoint is None
        or inspect.iscoroutinefunction(endpoint)
        or inspect.signature(endpoint).return_annotation not in (Response, "Response")
        or getattr(ctx, "_embed_body_fields", False)
        or getattr(ctx, "max_body_size", None) is not None
        or len(dependant.body_params) != 1
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.request_param_name
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or len(dependant.dependencies) != 2
    ):
        raise NotHot(f"POST {path} is not a single command of the hot shape")
    guard = next((d for d in dependant.dependencies if isinstance(d.call, Authenticated)), None)
    cmd = next((d for d in dependant.dependencies if d.call is command_dependency), None)
    if (
        guard is None
        or cmd is None
        or len(cmd.header_params) != 1
        or cmd.query_params
        or cmd.body_params
        or cmd.dependencies
        or cmd.request_param_name is None
    ):
        raise NotHot(f"POST {path} does not take exactly a key and an idempotent command")
    return HotCommand(
        path=path,
        context=ctx,
        before=before,
        endpoint=endpoint,
        path_fields=tuple(dependant.path_params),
        path_aliases=tuple(str(f.alias) for f in dependant.path_params),
        path_strings=(str,) * len(dependant.path_params),
        body_field=dependant.body_params[0],
        body_name=dependant.body_params[0].name,
        guard=guard.call,
        guard_name=str(guard.name),
        command_name=str(cmd.name),
        key_field=cmd.header_params[0],
        command_request_name=cmd.request_param_name,
    )


#: The most request paths whose route :meth:`HotCommands.route_of` keeps (a deposit's path
#: names its wallet: the benchmark's 50 clients use 50; any ``POST`` path is asked, so bounded).
ROUTES_KEPT: Final = 4096
_Route = tuple["HotCommand | None", dict[str, Any]]
#: A path no hot route takes, as kept (a kept value is never None).
_NO_ROUTE: Final[_Route] = (None, {})
_EFFECTIVE_ROUTE: Any = getattr(fastapi.routing, "_EffectiveRouteContext", None)


def _by_path_alone(route: Any) -> bool:
    """Whether FastAPI's match of ``route`` reads nothing of a request but its type, path, root
    path, method and the scope's own path parameters: FastAPI's effective route of an
    ``APIRoute`` (what :func:`hot_commands` reads from this FastAPI), whose ``matches`` is the
    effective route's own. Anything else (another FastAPI's route table, a route group with a
    frontend prefix, a subclass's own match) is matched request by request."""
    return (
        _EFFECTIVE_ROUTE is not None
        and type(route) is _EFFECTIVE_ROUTE
        and type(getattr(route, "original_route", None)) is fastapi.routing.APIRoute
    )


class HotCommands(_OwnPath):
    """The single commands of :data:`HOT_COMMANDS` (see the module docstring)."""

    def __init__(self, app: ASGIApp, web: FastAPI, paths: tuple[str, ...] = HOT_COMMANDS) -> None:
        super().__init__(app, web)
        self.paths = paths
        self._commands: tuple[HotCommand, ...] | None = None
        #: the route of a request path, kept (:meth:`route_of`); None while the routes are
        #: not read, or when a route's match may depend on more than the path
        self._routes: KeptValues[str, Scope, _Route] | None = None

    def commands(self) -> tuple[HotCommand, ...]:
        """The routes this path serves, read once. A route it cannot serve (of another shape,
        or a FastAPI whose route table reads otherwise) is left to FastAPI whole, with a
        warning: slower, never a refusal the route would not give."""
        if self._commands is None:
            found: list[HotCommand] = []
            for path in self.paths:
                try:
                    found.extend(hot_commands(self.web, (path,)))
                except NotHot as e:
                    _log.warning("POST %s is served by FastAPI alone: %s", path, e)
            if all(_by_path_alone(h.context) and not h.before for h in found):
                self._routes = KeptValues(self._matched, most=ROUTES_KEPT)
            self._commands = tuple(found)
        return self._commands

    def route_of(self, scope: Scope) -> tuple[HotCommand, dict[str, Any]] | None:
        """The route and path parameters of a request this path may answer, by what is known
        before its body (:meth:`taken` then reads the body's fields).

        FastAPI's match of a command's route (its regex, its parameters' conversion, and each
        route's before it) is a function of the request's path once the method is ``POST``
        and the query, the root path and the scope's own path parameters are empty: each
        path's answer, a route or none, is kept (at most :data:`ROUTES_KEPT` paths, the table
        emptied when full: any path may be asked), when every route is FastAPI's own effective
        route of an ``APIRoute`` and none has a route before it that may match
        (:func:`_by_path_alone`); otherwise every request is matched by FastAPI."""
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope.get("query_string")
            or scope.get("root_path")
            or self.web.dependency_overrides
        ):
            return None
        self.commands()
        routes = self._routes
        if routes is not None and "path_params" not in scope:
            hot, params = routes.kept(scope["path"], scope)
            params = dict(params)  # the caller's own, as FastAPI's match makes one each time
        else:  # not kept: FastAPI's match merges a scope's own path parameters, for one
            hot, params = self._matched(scope)
        return None if hot is None else (hot, params)

    def _matched(self, scope: Scope) -> _Route:
        """The first route whose FastAPI match takes the request (and no route before it), and
        its path parameters; :data:`_NO_ROUTE` when none does."""
        for hot in self.commands():
            params = hot.match(scope)
            if params is not None:
                return hot, params
        return _NO_ROUTE

    def taken(
        self, scope: Scope, route: tuple[HotCommand, dict[str, Any]] | None = None
    ) -> tuple[HotCommand, dict[str, Any], Any, Any] | None:
        """The route, path parameters, arguments and key of a request this path answers
        (``route``: :meth:`route_of`'s, when already known)."""
        found = self.route_of(scope) if route is None else route
        if found is None:
            return None
        hot, params = found
        arguments = hot.arguments(scope, params)
        return None if arguments is None else (hot, params, *arguments)

    def take(self, scope: Scope, taken: tuple[HotCommand, dict[str, Any], Any, Any]) -> None:
        """Leave in the scope what :meth:`_command` answers."""
        scope["path_params"] = taken[1]  # as FastAPI's route would hold them
        scope[_TAKEN] = taken

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        taken = self.taken(scope)
        if taken is None:
            await self.app(scope, receive, send)
            return
        self.take(scope, taken)
        await self._with_handlers(self._command)(scope, receive, send)

    async def _command(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot, _, values, key = scope.pop(_TAKEN)
        request = Request(scope, receive)
        credentials = await bearer(request)
        cmd = await command_dependency(
            **{hot.command_request_name: request, hot.key_field.name: key}
        )
        guard, known = await authorize_loop(request, credentials, hot.guard.action)
        to_worker = state_value(request.app.state, "command_workers").run  # their own pool
        response = await to_worker(
            _guarded_command, hot, request, credentials, values, cmd, guard, known
        )
        await response(scope, receive, send)


def _guarded_command(
    hot: HotCommand,
    request: Request,
    credentials: Any,
    values: dict[str, Any],
    cmd: Command,
    guard: GuardedAudit | None,
    known: Known,
) -> Response:
    """The key check, unless made on the loop (``guard``), and the command in one trip to the
    commands' pool (on a file SQLite store too, where the check could run on the event loop,
    the loop is left free of its read); the key's version taken from ``known`` when the loop
    read it."""
    if guard is None:
        guard = authorize_here(request, credentials, hot.guard.action, known)
    values[hot.guard_name] = guard
    values[hot.command_name] = cmd
    return hot.endpoint(**values)


__all__ = [
    "HOT_COMMANDS",
    "HotCommand",
    "HotCommands",
    "HotReads",
    "NotHot",
    "hot_commands",
    "round_path_id",
]

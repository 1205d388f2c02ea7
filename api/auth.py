"""Authentication: the bearer API key of a request, turned into the application's principal.

A route that needs a key declares the action it performs::

    def place_bet(
        round_id: str, body: BetPlace, audit: Annotated[GuardedAudit, acting(Action.ROUND_BET)]
    ) -> Json:
        return audit.place_bet(round_id, player=body.player, ...)

``acting(action)`` is a dependency that reads ``Authorization: Bearer <key>`` (FastAPI's
``HTTPBearer``, so the OpenAPI document declares the scheme and the Swagger page at ``/docs``
has its Authorize button), authenticates the key against the store on every request
(:class:`KeyCache`: one query by the key's id for its last stored version, or that version
read with others in one round trip by the hot paths' callers, ``api.versions``, so a revocation
recorded by any process holds on the very next request; the decoded key is reused only while
that version is unchanged, and its secret is checked every time; the check runs on the event
loop on a file SQLite store, in the thread pool otherwise: ``api.offload``; ``GET
/rounds/{id}``'s own path runs it in the trip that reads the view, or on the loop when the
key is kept at the version read there on PostgreSQL (:func:`authorize_kept`); the single
commands' own path in the command's trip, except on PostgreSQL, where the key's version is
read on the loop and a key kept at it checked there before the trip (:func:`authorize_loop`):
``api.hotpath``),
refuses a role that may not do ``action`` at all (403 ``forbidden``, before the body is
read), and hands the route a :class:`~domain.guarded.GuardedAudit` for that principal. The
route calls its methods, which check the permission on the resource and record the actor from
the key.

No key, a malformed, unknown or revoked one: 401 ``unauthenticated`` with
``WWW-Authenticate: Bearer`` (RFC 6750). Nothing is recorded on a refusal.

The routes without a key are only those of :data:`PUBLIC` (a test holds every other route to
its action).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Final
from uuid import UUID

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.deps import state_value
from api.offload import store_read
from api.versions import NOTHING, Known, LoopVersions, version_of
from domain.access import Action, Principal
from domain.application import RoundAudit
from domain.guarded import GuardedAudit
from domain.keys import ApiKey, parse_token

#: (method, path) of the routes anyone may call without a key.
PUBLIC: Final = frozenset(
    {
        ("GET", "/health"),
        ("GET", "/merkle/public-key"),
        ("GET", "/merkle/checkpoints/latest"),
        ("GET", "/docs"),
        ("GET", "/docs/assets/{name}"),
        ("GET", "/openapi.json"),
        # the investigation page: it signs in with a key and reads through the API
        ("GET", "/ui"),
        ("GET", "/ui/"),
        ("GET", "/ui/assets/{name}"),
        ("GET", "/ui/cards/{name}"),
    }
)

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key (`rak_...`): `Authorization: Bearer <key>`. `make run` prints a "
    "first admin key; admins create the others (`POST /api-keys`).",
)


class KeyCache:
    """The API keys of one service process as last decoded, each with its stored version.

    Every request still reads the key's last version from the store (one indexed query by its
    id; nothing decoded); only when it equals the kept one is the kept key used, and then its
    secret is checked (the constant-time hash comparison of ``domain.keys``) and its
    revocation honoured as the store's path does. Any other case (no token, a malformed one,
    a key not kept, a newer version, a wrong secret, a revoked key) goes through
    :meth:`domain.keys.KeyRing.authenticate`, which decides and words every refusal."""

    def __init__(self, maxsize: int = 4096) -> None:
        self.maxsize = maxsize
        self._kept: dict[str, tuple[int, ApiKey, Principal]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def stream(token: str | None) -> UUID | None:
        """The stored id of a well-formed token's key (None: the token is malformed or
        missing, refused without a read), for a caller reading its version along with
        others (``api.versions``)."""
        parsed = parse_token(token) if token else None
        return _stream_id(parsed[0]) if parsed is not None else None

    def authenticate(self, app: RoundAudit, token: str | None, known: Known = NOTHING) -> Principal:
        """The principal of ``token`` (see the class docstring); the key's last version taken
        from ``known`` when it holds it (read in the same round trip as others, when the
        request was served: ``api.versions``), else read here."""
        parsed = parse_token(token) if token else None
        if parsed is None:
            return app.keys.authenticate(token)
        key_id, secret = parsed
        version = version_of(app.recorder, _stream_id(key_id), known)
        found = self._kept_principal(key_id, secret, version)
        if found is not None:
            return found
        key_ = app.keys.authenticated_key(token)  # refuses, or the key is good (one load)
        principal = key_.principal()
        if key_.version == version:  # kept only as of the version read above
            with self._lock:
                if len(self._kept) >= self.maxsize:
                    self._kept.clear()
                self._kept[key_id] = (version, key_, principal)
        return principal

    def kept(self, token: str | None, known: Known) -> Principal | None:
        """The principal of ``token`` when :meth:`authenticate` would accept it with no store
        read: its key kept at the version ``known`` holds for it, its secret matching, the key
        not revoked. None for anything else, which :meth:`authenticate` decides (and words,
        when it refuses)."""
        parsed = parse_token(token) if token else None
        if parsed is None:
            return None
        key_id, secret = parsed
        stream = _stream_id(key_id)
        if stream not in known or known[stream] is None:
            return None
        return self._kept_principal(key_id, secret, known[stream])

    def _kept_principal(self, key_id: str, secret: str, version: int | None) -> Principal | None:
        """The kept key's principal (made when it was kept: a key's role, binding and label
        never change once issued, and a principal is immutable) when the key is kept at
        ``version``, ``secret`` is its own and it is not revoked."""
        kept = self._kept.get(key_id)
        if kept is not None and kept[0] == version:
            key = kept[1]
            if key.matches(secret) and not key.revoked:
                return kept[2]
        return None


@functools.lru_cache(maxsize=4096)
def _stream_id(key_id: str) -> UUID:
    """``ApiKey.create_id(key_id)`` (a uuid5, so a SHA-1), computed once per key id: every
    request needs its key's stored id, some twice."""
    return ApiKey.create_id(key_id)


def _keys(request: Request) -> KeyCache:
    state = request.app.state
    found: KeyCache | None = state_value(state, "key_cache", None)
    if found is None:
        found = state.key_cache = KeyCache()
    return found


@dataclass(frozen=True)
class Authenticated:
    """The dependency behind :func:`acting`: authenticate, pre-check the role, guard.

    Equal by action (FastAPI copies a route's dependencies when it includes a router, so a
    ``dependency_overrides`` entry must match a copy)."""

    action: Action

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> GuardedAudit:
        return await authorize(request, credentials, self.action)


async def authorize(
    request: Request, credentials: HTTPAuthorizationCredentials | None, action: Action
) -> GuardedAudit:
    """The key check of every route that needs a key (:class:`Authenticated`): authenticate
    ``credentials`` (what :data:`bearer` read) against the store (on the event loop where the
    store allows, else in the thread pool: ``api.offload``), refuse a role that may not do
    ``action``, guard the rest."""
    app: RoundAudit = request.app.state.audit
    principal = await store_read(app, _keys(request).authenticate, app, _token(credentials))
    return _guard(request, app, principal, action)


def authorize_here(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    action: Action,
    known: Known = NOTHING,
) -> GuardedAudit:
    """:func:`authorize` in the calling thread: for a caller that reads the store in the
    same thread-pool trip right after (``api.hotpath``); the key's version from ``known``
    when the caller read it with others in one round trip (``api.versions``)."""
    app: RoundAudit = state_value(request.app.state, "audit")
    principal = _keys(request).authenticate(app, _token(credentials), known)
    return _guard(request, app, principal, action)


def authorize_kept(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    action: Action,
    known: Known,
) -> GuardedAudit | None:
    """:func:`authorize_here` when its key check needs no store read (``KeyCache.kept``: the
    key's version in ``known``, read when the request was served), for a caller on the event
    loop; None when the check must read (the caller then makes it with
    :func:`authorize_here`). A role that may not do ``action`` is refused as there."""
    app: RoundAudit = request.app.state.audit
    principal = _keys(request).kept(_token(credentials), known)
    return None if principal is None else _guard(request, app, principal, action)


async def authorize_loop(
    request: Request, credentials: HTTPAuthorizationCredentials | None, action: Action
) -> tuple[GuardedAudit | None, Known]:
    """The key check of a caller on the event loop that then takes a thread-pool trip (a
    single command, ``api.hotpath``), made as far as it can be without blocking the loop: on
    PostgreSQL the key's last version read there (``api.versions.LoopVersions``, when the
    request is served: a revocation by any process holds at once) and a key kept at that
    version checked there (:func:`authorize_kept`: its secret, its revocation, the role; a
    role that may not do ``action`` refused here as in the trip). Answers the guard (None:
    the trip must check, with :func:`authorize_here`) and the versions read (empty when
    nothing was read on the loop: another store, a token without a key id, a loop read that
    failed), which the trip's check uses rather than read the key's version again."""
    reader: LoopVersions | None = state_value(request.app.state, "loop_versions", None)
    stream = key_stream(credentials) if reader is not None else None
    if reader is None or stream is None:
        return None, NOTHING
    known = await reader.read([stream])
    if known is None:  # the loop's connection failed: the trip reads for itself
        return None, NOTHING
    return authorize_kept(request, credentials, action, known), known


def key_stream(credentials: HTTPAuthorizationCredentials | None) -> UUID | None:
    """The stored id of the request's key, if its token is well formed (``KeyCache.stream``)."""
    return KeyCache.stream(_token(credentials))


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials is not None else None


def _guard(request: Request, app: RoundAudit, principal: Principal, action: Action) -> GuardedAudit:
    request.state.principal = principal
    guarded = GuardedAudit(app, principal)
    guarded.require(action)
    return guarded


def acting(action: Action) -> Any:
    """``Annotated[GuardedAudit, acting(Action.X)]``: the dependency of a route that performs
    action X (see the module docstring)."""
    return Depends(Authenticated(action))


def route_table(web: Any) -> Iterator[tuple[str, str, Action | None]]:
    """(method, path, action) of every route of a FastAPI app (``HEAD`` left out): the
    action its :func:`acting` dependency declares, None for a route without one."""
    for route in web.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        pairs = (
            [(ctx.path, ctx.original_route) for ctx in contexts()]
            if contexts is not None
            else [(getattr(route, "path", ""), route)]
        )
        for path, original in pairs:
            dependant = getattr(original, "dependant", None)
            action = action_of(dependant) if dependant is not None else None
            for method in sorted(getattr(original, "methods", None) or ()):
                if method != "HEAD":
                    yield method, path, action


def action_of(dependant: Any) -> Action | None:
    """The action a route's dependency tree declares (for the permission-table test)."""
    for dep in getattr(dependant, "dependencies", []):
        call = getattr(dep, "call", None)
        if isinstance(call, Authenticated):
            return call.action
        found = action_of(dep)
        if found is not None:
            return found
    return None


__all__ = [
    "PUBLIC",
    "Authenticated",
    "KeyCache",
    "acting",
    "action_of",
    "authorize",
    "authorize_here",
    "authorize_kept",
    "authorize_loop",
    "bearer",
    "key_stream",
    "route_table",
]

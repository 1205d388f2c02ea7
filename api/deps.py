"""Typed dependencies of the routes.

* :data:`AuditApp`: the service's :class:`~domain.application.RoundAudit`, opened by the
  application's lifespan (``api.main``). Only the public routes and the audit routes' readers
  (after ``api.auth.acting`` checked the key) use it; every other route works through the
  API key's :class:`~domain.guarded.GuardedAudit` (``api.auth``).
* The ``Idempotency-Key`` header and the idempotency of every command: ``api.idempotency``.
* :func:`state_value`: an entry of Starlette's ``State`` (``app.state``, ``request.state``)
  read by its item access, for the paths every command takes.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import Depends, Request
from starlette.datastructures import State

from api.settings import Settings
from domain.application import RoundAudit


def get_audit(request: Request) -> RoundAudit:
    audit: RoundAudit = request.app.state.audit
    return audit


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


_MISSING: Final = object()


def state_value(state: State, name: str, default: Any = _MISSING) -> Any:
    """``getattr(state, name[, default])`` by the ``State``'s item access: the same entry, or
    ``default``, or the same ``AttributeError``. An attribute read of a ``State`` first fails
    the interpreter's own lookup (on Python 3.11 an ``AttributeError`` formatted, then
    dropped) before its ``__getattr__`` finds the entry: about 2,500 instructions more a read,
    and a single command read ten (``api.hotpath``, ``api.auth``, ``api.idempotency``)."""
    try:
        return state[name]
    except KeyError:
        return getattr(state, name) if default is _MISSING else default  # State's own error


AuditApp = Annotated[RoundAudit, Depends(get_audit)]
AppSettings = Annotated[Settings, Depends(get_settings)]
__all__ = [
    "AppSettings",
    "AuditApp",
    "get_audit",
    "get_settings",
    "state_value",
]

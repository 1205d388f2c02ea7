"""Typed dependencies of the routes.

* :data:`AuditApp`: the service's :class:`~domain.application.RoundAudit`, opened by the
  application's lifespan (``api.main``). Only the public routes and the audit routes' readers
  (after ``api.auth.acting`` checked the key) use it; every other route works through the
  API key's :class:`~domain.guarded.GuardedAudit` (``api.auth``).
* The ``Idempotency-Key`` header and the idempotency of every command: ``api.idempotency``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.settings import Settings
from domain.application import RoundAudit


def get_audit(request: Request) -> RoundAudit:
    audit: RoundAudit = request.app.state.audit
    return audit


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


AuditApp = Annotated[RoundAudit, Depends(get_audit)]
AppSettings = Annotated[Settings, Depends(get_settings)]
__all__ = [
    "AppSettings",
    "AuditApp",
    "get_audit",
    "get_settings",
]

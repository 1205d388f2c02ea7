"""Typed dependencies of the routes.

* :data:`AuditApp`: the service's :class:`~domain.application.RoundAudit`, opened by the
  application's lifespan (``api.main``). Only the public routes and the audit routes' readers
  (after ``api.auth.acting`` checked the key) use it; every other route works through the
  API key's :class:`~domain.guarded.GuardedAudit` (``api.auth``).
* :data:`IdempotencyKey`: the optional ``Idempotency-Key`` header. A command that takes a
  request id accepts it in the body (``request_id``) or in this header;
  :func:`pick_request_id` reconciles the two.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from api.errors import ConflictingRequestIds
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
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Request id of this command (instead of `request_id` in the body): "
        "repeating a command with the same id records it once.",
    ),
]


def pick_request_id(body: str | None, header: str | None) -> str | None:
    """The command's request id, from the body or the ``Idempotency-Key`` header.

    >>> pick_request_id(None, "k1"), pick_request_id("k1", None), pick_request_id("k1", "k1")
    ('k1', 'k1', 'k1')
    """
    if body is not None and header is not None and body != header:
        raise ConflictingRequestIds(
            f"request_id {body!r} in the body and Idempotency-Key {header!r} differ; "
            "send one, or the same in both"
        )
    return body if body is not None else header


__all__ = [
    "AppSettings",
    "AuditApp",
    "IdempotencyKey",
    "get_audit",
    "get_settings",
    "pick_request_id",
]

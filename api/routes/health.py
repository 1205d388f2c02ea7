"""Health: is the service up and its event store reachable."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import AppSettings, AuditApp
from api.errors import StoreUnavailable
from api.openapi import problems
from api.schemas import HealthView
from domain.persistence import redact_url, sqlite_path

router = APIRouter(tags=["health"])
Json = dict[str, Any]


def store_kind(url: str) -> str:
    """``sqlite``, ``sqlite-memory`` or ``postgresql``."""
    if url.lower().startswith("sqlite"):
        return "sqlite" if sqlite_path(url) is not None else "sqlite-memory"
    return "postgresql"


@router.get(
    "/health",
    summary="Liveness and store check",
    response_model=HealthView,
    responses=problems(503),
)
def health(audit: AuditApp, settings: AppSettings) -> Json:
    kind = store_kind(settings.database_url)
    try:
        last = audit.recorder.max_notification_id()
    except Exception as e:  # each recorder raises its own exception types
        raise StoreUnavailable(f"the {kind} event store does not answer") from e
    body: Json = {"status": "ok", "store": kind, "last_notification_id": last}
    if not settings.production:
        body["database_url"] = redact_url(settings.database_url)
    return body

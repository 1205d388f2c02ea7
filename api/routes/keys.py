"""API keys (admin only): create one (its token is answered once), list them, revoke one.

Key changes are events (``domain.keys.ApiKey``); the listing never holds a secret or its hash.
A revoked key authenticates nothing from the next request on, in every process sharing the
store. The command line does the same (``roundaudit keys create|list|revoke``) with direct
store access: the operator's way back in when no admin key is left.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status

from api.auth import acting
from api.schemas import KeyCreate
from domain.access import Action
from domain.guarded import GuardedAudit

router = APIRouter(prefix="/api-keys", tags=["keys"])
Json = dict[str, Any]
Admin = Annotated[GuardedAudit, acting(Action.KEYS_MANAGE)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    summary="Create an API key (the token is in this answer only)",
)
def create_key(body: KeyCreate, audit: Admin, response: Response) -> Json:
    issued = audit.create_key(
        role=body.role, tables=body.tables, player=body.player, label=body.label
    )
    response.headers["Location"] = f"/api-keys/{issued.key['key_id']}"
    return {"token": issued.token, "key": issued.key}


@router.get("", summary="Every API key (no secrets), revoked ones included")
def list_keys(audit: Admin) -> Json:
    return {"keys": audit.list_keys()}


@router.delete("/{key_id}", summary="Revoke an API key (at once, in every process)")
def revoke_key(
    key_id: str,
    audit: Admin,
    reason: Annotated[str | None, Query(max_length=200, description="Why (recorded).")] = None,
) -> Json:
    return audit.revoke_key(key_id, reason=reason)

"""API keys (admin only): create one (its token is answered once), list them, revoke one.

Key changes are events (``domain.keys.ApiKey``); the listing never holds a secret or its hash.
A revoked key authenticates nothing from the next request on, in every process sharing the
store. The command line does the same (``roundaudit keys create|list|revoke``) with direct
store access: the operator's way back in when no admin key is left.

Both commands are idempotent (``api.idempotency``); the answer of ``POST /api-keys`` holds the
token, so its record is sealed under the sending admin key's own secret: a repeat by that key
gets the same token, the store never holds it readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response

from api.auth import acting
from api.idempotency import Idempotent
from api.openapi import problems
from api.schemas import KeyCreate, KeyIssued, KeyList, KeyView
from api.wire import ClientTime, KeyId, Text
from domain.access import Action
from domain.guarded import GuardedAudit
from domain.keys import ApiKey, new_token, parse_token

router = APIRouter(prefix="/api-keys", tags=["keys"])
Json = dict[str, Any]
Admin = Annotated[GuardedAudit, acting(Action.KEYS_MANAGE)]


def key_render(key_id: str, token: str | None = None) -> Any:
    kid = ApiKey.create_id(key_id)

    def render(aggregates: Mapping[UUID, Any]) -> Json | None:
        key = aggregates.get(kid)
        if not isinstance(key, ApiKey):
            return None
        return {"token": token, "key": key.view()} if token is not None else key.view()

    return render


@router.post(
    "",
    status_code=201,
    summary="Create an API key (the token is in this answer only)",
    response_model=KeyIssued,
    responses=problems(
        401,
        403,
        409,
        413,
        422,
        links={"RevokeKey": ("revoke_key", {"key_id": "$response.body#/key/key_id"})},
    ),
)
def create_key(body: KeyCreate, audit: Admin, command: Idempotent) -> Response:
    token = new_token()
    parsed = parse_token(token)
    assert parsed is not None

    def create() -> Json:
        issued = audit.create_key(
            role=body.role,
            tables=getattr(body, "tables", ()),
            player=getattr(body, "player", None),
            label=body.label,
            token=token,
            request_id=command.request_id(body.request_id),
            client_time=body.client_time,
        )
        return {"token": issued.token, "key": issued.key}

    return command.run(
        create,
        render=key_render(parsed[0], token),
        status=201,
        location=lambda answer: f"/api-keys/{answer['key']['key_id']}",
        secret=True,
    )


@router.get(
    "",
    summary="Every API key (no secrets), revoked ones included",
    response_model=KeyList,
    responses=problems(401, 403),
)
def list_keys(audit: Admin) -> Json:
    return {"keys": audit.list_keys()}


@router.delete(
    "/{key_id}",
    summary="Revoke an API key (at once, in every process)",
    response_model=KeyView,
    responses=problems(401, 403, 404, 409, 413, 422),
)
def revoke_key(
    key_id: Annotated[KeyId, Path(description="The key's id (16 hex digits).")],
    audit: Admin,
    command: Idempotent,
    reason: Annotated[Text | None, Query(description="Why (recorded).")] = None,
    client_time: Annotated[
        ClientTime | None, Query(description="The client's clock (RFC 3339; recorded).")
    ] = None,
) -> Response:
    return command.run(
        lambda: audit.revoke_key(
            key_id,
            reason=reason,
            request_id=command.request_id(None),
            client_time=client_time,
        ),
        render=key_render(key_id),
    )

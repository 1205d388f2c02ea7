"""``GET /session``: what the API key of the request is and may do (never its secret).

The investigation page signs in with a key and asks this first: the key's id, role, label and
binding (tables or player), and the actions its role may do (``domain.access.PERMISSIONS``),
so that the page offers only what the key may read. Any valid key may ask about itself.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from api.auth import acting
from api.params import only_parameters, problems
from api.read_schemas import SessionModel
from domain.access import PERMISSIONS, Action
from domain.guarded import GuardedAudit

router = APIRouter(tags=["keys"])


@router.get(
    "/session",
    summary="The API key of this request: role, binding, what it may do",
    response_model=SessionModel,
    responses=problems(401),
    dependencies=[Depends(only_parameters())],
)
def session(guard: Annotated[GuardedAudit, acting(Action.SESSION_READ)]) -> dict[str, Any]:
    principal = guard.principal
    may = {
        str(action): str(row[principal.role])
        for action, row in PERMISSIONS.items()
        if principal.role in row
    }
    return {**principal.as_json(), "may": may}


__all__ = ["router"]

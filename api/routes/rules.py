"""Published rule sets (RULES.md as data): every key with all its settings."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from api.auth import acting
from api.errors import RulesNotFound
from domain.access import Action
from domain.errors import UnknownRules
from domain.guarded import GuardedAudit
from domain.rules import CURRENT, PUBLISHED, get_rules

router = APIRouter(prefix="/rules", tags=["rules"])
Json = dict[str, Any]


@router.get("", summary="Every published rule set, and the current key of each variant")
def all_rules(audit: Annotated[GuardedAudit, acting(Action.RULES_READ)]) -> Json:
    return {
        "current": dict(CURRENT),
        "rules": {key: rules.describe() for key, rules in sorted(PUBLISHED.items())},
    }


@router.get("/{key:path}", summary="One rule set, by key (lucky7/1) or variant (lucky7)")
def one_rules(key: str, audit: Annotated[GuardedAudit, acting(Action.RULES_READ)]) -> Json:
    try:
        return get_rules(key).describe()
    except UnknownRules as e:
        raise RulesNotFound(e.message) from None

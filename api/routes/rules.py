"""Published rule sets (RULES.md as data): every key with all its settings."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter

from api.auth import acting
from api.deps import AppSettings
from api.errors import RulesNotFound
from api.openapi import problems
from api.schemas import RulesIndex
from domain.access import Action
from domain.errors import UnknownRules
from domain.guarded import GuardedAudit
from domain.rtp.report import load, summary
from domain.rules import CURRENT, PUBLISHED, get_rules

router = APIRouter(prefix="/rules", tags=["rules"])
Json = dict[str, Any]


@router.get(
    "",
    summary="Every published rule set, and the current key of each variant",
    response_model=RulesIndex,
    responses=problems(401, 403),
)
def all_rules(audit: Annotated[GuardedAudit, acting(Action.RULES_READ)]) -> Json:
    return {
        "current": dict(CURRENT),
        "rules": {key: rules.describe() for key, rules in sorted(PUBLISHED.items())},
    }


@router.get(
    "/{key:path}/rtp",
    summary="The exact RTP of a rule set's main game and every bet, with its findings",
    responses=problems(401, 403, 404),
    description=(
        "The theoretical return to player of the rule set (by key, `deluxe/1`, or variant): "
        "the main game under the composition-dependent optimal strategy (finite shoe), bets "
        "behind, every side bet and insurance as exact fractions with hit frequencies and "
        "variance, the sheet's published RTP, and the findings: `RTP-PUBLISHED-MISMATCH` "
        "(published figure not reproduced within 0.01 pp), `RTP-BELOW-FLOOR` (a bet below "
        "the jurisdiction's floor, `ROUNDAUDIT_RTP_FLOOR`). A published key never changes, so "
        "the figures are stored with the service (docs/rtp.md)."
    ),
)
def rules_rtp(
    key: str, audit: Annotated[GuardedAudit, acting(Action.RULES_READ)], settings: AppSettings
) -> Json:
    try:
        rules = get_rules(key)
    except UnknownRules as e:
        raise RulesNotFound(e.message) from None
    return summary(load(rules.key), floor=settings.rtp_floor)


@router.get(
    "/{key:path}",
    summary="One rule set, by key (lucky7/1) or variant (lucky7)",
    responses=problems(401, 403, 404),
)
def one_rules(key: str, audit: Annotated[GuardedAudit, acting(Action.RULES_READ)]) -> Json:
    try:
        return get_rules(key).describe()
    except UnknownRules as e:
        raise RulesNotFound(e.message) from None

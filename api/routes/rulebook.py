"""The rule book's text by rule ID (``domain.rulebook``): what every cited ``rule`` means.

``GET /rulebook`` answers every entry (``AUTO-1``, ``FUNDS-1``, ``D9``, ``PHASE-4``...) with its
section and words; ``GET /rulebook/{rule_id}`` one of them (404 ``rule-not-found``). Any key may
read them, as it may read the published rule sets (``GET /rules``). The investigation page links
every rule ID it shows to these texts.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from api.auth import acting
from api.params import only_parameters, problems
from api.read_schemas import RuleBookModel, RuleEntry
from domain.access import Action
from domain.errors import NotFound
from domain.guarded import GuardedAudit
from domain.rulebook import rule_text, shipped

router = APIRouter(prefix="/rulebook", tags=["rules"])
Json = dict[str, Any]
Readers = Annotated[GuardedAudit, acting(Action.RULES_READ)]


class RuleNotFound(NotFound):
    code = "rule-not-found"


@router.get(
    "",
    summary="The rule book: every rule ID with its text",
    response_model=RuleBookModel,
    responses=problems(401, 403),
    dependencies=[Depends(only_parameters())],
)
def rule_book(guard: Readers) -> Json:
    return shipped()


@router.get(
    "/{rule_id}",
    summary="One rule's text",
    response_model=RuleEntry,
    responses=problems(401, 403, 404),
    dependencies=[Depends(only_parameters())],
)
def one_rule(rule_id: str, guard: Readers) -> Json:
    found = rule_text(rule_id)
    if found is None:
        raise RuleNotFound(f"the rule book has no rule {rule_id[:40]!r}")
    return dict(found)


__all__ = ["RuleNotFound", "router"]

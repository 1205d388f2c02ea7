"""Batch commands of boundless rounds: many players' bets, or decisions, in one request.

A boundless round (BDL-1) has any number of players on one shared hand. A game server that
forwarded a betting countdown's or a decision window's commands one request each would spend
its time on round trips and on one store transaction per command; these routes hand the whole
list to :meth:`~domain.boundless.service.BoundlessService.place_bets` or
:meth:`~domain.boundless.service.BoundlessService.decide_many`, which record every accepted
command of the batch in one transaction (throughput comes from many events per transaction,
DESIGN.md) and check each on its own:

* items are applied in order: a player's second bet sees the balance the first one left;
* a refused item records nothing and does not stop the others; its result carries the RFC 9457
  problem object the single route would have answered (``api.errors``: same ``type``,
  ``title``, ``status``, ``detail``, ``code``, ``rule``);
* an item whose ``request_id`` that player already used in the round is refused
  (``request-id-reused``, 409): the first use stands; resend a whole batch with the same
  ``Idempotency-Key`` to get its first answer (``api.idempotency``).

The answer is 200 with one result per item, the counts and the round's view after the batch
(after a decisions batch, also after the automatic work it made due: cards an RNG or test shoe
reveals, the dealer, settlement). The whole request is refused, with nothing recorded, when the
body is malformed (422 ``validation-error``: empty, more than ``MAX_BATCH`` items, a float
amount, an unknown field), the round is unknown (404 ``round-not-found``), is not a boundless
round (422 ``batch-unsupported``) or takes no command at all (409 ``round-closed``: paused,
being cancelled, finished), or when the store kept conflicting (409 ``concurrent-update``).
As with the single ``/decisions`` route, a failure of the automatic work *after* recorded
decisions (a test shoe out of cards) is answered with its problem although the decisions stay
recorded; repeating the request with the same request ids records them once.

One edge of the service's contract is smoothed here so that every item gets its own result:
``decide_many`` raises, rather than lists, the refusal of a batch of *one* decision (its single
command form records nothing at all when refused), which is caught here and listed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response

from api.auth import acting
from api.errors import problem_type, title_of
from api.idempotency import Idempotent
from api.limits import BATCH_MAX_BODY, max_body
from api.openapi import problems
from api.schemas import MAX_BATCH, BatchAnswer, BetBatch, DecisionBatch
from api.wire import RoundId
from domain.access import Action
from domain.application import ConcurrentUpdate
from domain.boundless.service import Bet, Decision
from domain.errors import DomainError, NotFound
from domain.guarded import GuardedAudit
from domain.rules import get_rules

router = APIRouter(prefix="/rounds", tags=["rounds"])
Json = dict[str, Any]
Results = list[DomainError | None]
Feed = Annotated[GuardedAudit, acting(Action.ROUND_BATCH)]


class BatchUnsupported(DomainError):
    """A batch command for a round that is not boundless (seated variants take their bets and
    decisions one at a time): the round's kind, not the request's form, so a 409."""

    code = "batch-unsupported"
    status = 409


class OutcomeUnknown(DomainError):
    """Recovery of a batch whose process stopped before it stored the answer: an item without
    a recorded request id cannot be told apart from one never applied."""

    code = "outcome-unknown"
    status = 409


RoundIdPath = Annotated[RoundId, Path(description="The boundless round's id.")]
BATCH_PROBLEMS = problems(401, 403, 404, 409, 413, 422)


def check_boundless(audit: GuardedAudit, round_id: str) -> None:
    """Refuse the whole batch unless the key may send batches to ``round_id`` (its table's
    feed, or an admin: else 403) and it names a boundless round that takes commands:
    RoundNotFound (404) for an unknown or malformed id, as the single routes;
    :class:`BatchUnsupported` (422) for another variant's round; RoundClosed (409) when it is
    paused, being cancelled or finished."""
    facts = audit.batch_round(round_id)  # 403, or RoundNotFound: 404
    if not facts.boundless:
        variant = get_rules(facts.rules_key).variant
        raise BatchUnsupported(
            f"batch commands are for boundless rounds, where any number of players share one "
            f"hand; round {round_id} is a {variant} round: send its bets and decisions one at "
            "a time (POST /rounds/{id}/bets, /decisions)",
            rule="BDL-1",
        )
    audit.check_batch_open(round_id)


def item_problem(request: Request, error: DomainError) -> Json:
    """The RFC 9457 problem object of one refused item: what ``api.errors`` answers for the
    same refusal of a single command."""
    body: Json = {
        "type": problem_type(error.code),
        "title": title_of(error.code),
        "status": error.status,
        "detail": error.message,
        "instance": request.url.path,
        "code": error.code,
    }
    if error.rule is not None:
        body["rule"] = error.rule
    return body


def answer(
    request: Request,
    audit: GuardedAudit,
    round_id: str,
    results: Results,
    items: Sequence[Any],
) -> Json:
    """One result per item, in order, the counts, and the round's view now with the hands and
    wagers of the batch's players (``GuardedAudit.batch_view``: the whole round of thousands
    of players in every answer made a batch cost as much as the round)."""
    out: list[Json] = []
    for i, error in enumerate(results):
        if error is None:
            out.append({"index": i, "ok": True})
        else:
            out.append({"index": i, "ok": False, "problem": item_problem(request, error)})
    refused = sum(error is not None for error in results)
    return {
        "results": out,
        "accepted": len(results) - refused,
        "refused": refused,
        "round": audit.batch_view(round_id, dict.fromkeys(item.player for item in items)),
    }


def recover(
    request: Request, audit: GuardedAudit, round_id: str, items: Sequence[Any]
) -> Callable[[], Json]:
    """The answer of a batch whose process stopped after recording it, before answering: the
    round's automatic work finished, each item ``ok`` when its request id is recorded for its
    player, else ``outcome-unknown`` (check the round before sending it again)."""

    def run() -> Json:
        audit.catch_up(round_id)
        results: Results = []
        for item in items:
            seen = item.request_id is not None and audit.seen_request(
                round_id, item.player, item.request_id
            )
            results.append(
                None
                if seen
                else OutcomeUnknown(
                    "the service stopped before it stored this batch's answer and this item's "
                    "request id is not recorded (or it had none): read the round before sending "
                    "it again"
                )
            )
        return answer(request, audit, round_id, results, items)

    return run


@router.post(
    "/{round_id}/bets/batch",
    summary=f"Boundless: many players' bets in one request (at most {MAX_BATCH})",
    response_model=BatchAnswer,
    responses=BATCH_PROBLEMS,
    openapi_extra=max_body(BATCH_MAX_BODY),
)
def place_bets(
    round_id: RoundIdPath, body: BetBatch, request: Request, audit: Feed, cmd: Idempotent
) -> Response:
    """Each bet is checked on its own, in order, and all accepted ones are recorded in one
    transaction; `results[i]` says whether bet `i` was accepted or carries the problem that
    refused it, which recorded nothing."""

    def run() -> Json:
        check_boundless(audit, round_id)
        bets = [
            Bet(b.player, b.amount, b.kind, request_id=b.request_id, client_time=b.client_time)
            for b in body.bets
        ]
        results = audit.place_bets(round_id, bets)
        return answer(request, audit, round_id, results, bets)

    return cmd.run(run, recover=recover(request, audit, round_id, body.bets))


@router.post(
    "/{round_id}/decisions/batch",
    summary=f"Boundless: many players' decisions in one request (at most {MAX_BATCH})",
    response_model=BatchAnswer,
    responses=BATCH_PROBLEMS,
    openapi_extra=max_body(BATCH_MAX_BODY),
)
def decide_many(
    round_id: RoundIdPath, body: DecisionBatch, request: Request, audit: Feed, cmd: Idempotent
) -> Response:
    return cmd.run(
        lambda: _decide_many(round_id, body, request, audit),
        recover=recover(request, audit, round_id, body.decisions),
    )


def _decide_many(round_id: str, body: DecisionBatch, request: Request, audit: Feed) -> Json:
    """Each decision (or expired timer, `timeout`, or disconnection, `disconnect`) is checked
    on its own, in order, and all accepted ones are recorded in one transaction; then the
    round moves on as far as it can (cards an RNG or test shoe reveals, dealer, settlement).
    `results[i]` says whether decision `i` was accepted or carries the problem that refused
    it, which recorded nothing."""
    check_boundless(audit, round_id)
    decisions = [
        Decision(
            d.player,
            d.action,
            hand=d.hand,
            amount=d.amount,
            request_id=d.request_id,
            client_time=d.client_time,
        )
        for d in body.decisions
    ]

    try:
        results = audit.decide_many(round_id, decisions, advance=False)
    except DomainError as e:
        # a lone decision's refusal is raised, not listed (see the module docstring); a
        # whole-batch failure is raised for any size and stays a problem of the request
        if len(decisions) != 1 or isinstance(e, NotFound | ConcurrentUpdate):
            raise
        results = [e]
    audit.advance(round_id)
    return answer(request, audit, round_id, results, decisions)


__all__ = ["BatchUnsupported", "OutcomeUnknown", "check_boundless", "router"]

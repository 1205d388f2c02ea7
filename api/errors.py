"""Error responses: every failure leaves the service as an RFC 9457 problem document.

``application/problem+json`` with the members ``type``, ``title``, ``status``, ``detail`` and
``instance`` (the request path), and the extensions:

* ``code``: the stable code of the refusal (``DomainError.code``, or ``validation-error``,
  ``http-<status>``, ``internal-error``);
* ``rule``: the RULES.md rule ID behind a domain refusal, when there is one;
* ``setting``: the setting behind a refusal (``rules-key:setting``, D18 table limits);
* ``errors``: for a malformed request, one ``{"loc": [...], "msg": ...}`` per bad field;
* ``incident``: for an unexpected failure, an id to look up in the server log.

A problem ``type`` is ``urn:roundaudit:problem:<code>``: a stable identifier that does not
pretend to be a web page (RFC 9457 section 3.1.1 allows non-resolvable URIs). Its ``title`` is
derived from the code, so every occurrence of a type has the same title; ``detail`` is the
domain's message, which names the problem in words. Plain HTTP errors (unknown path, wrong
method) are ``about:blank`` with the status phrase as title (RFC 9457 section 4.2.1).

A domain refusal has recorded nothing (``domain.errors``), so none of these responses follows
a partial write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any
from uuid import uuid4

import psycopg
from eventsourcing.persistence import InterfaceError as EsInterfaceError
from eventsourcing.persistence import OperationalError as EsOperationalError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from api.responses import OrjsonResponse
from api.wire import ID_ERROR, VALUE_ERROR
from domain.errors import DomainError, NotFound

log = logging.getLogger("roundaudit.api")

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_PREFIX = "urn:roundaudit:problem:"
VALIDATION_CODE = "validation-error"
INTERNAL_CODE = "internal-error"


class ProblemResponse(OrjsonResponse):
    media_type = PROBLEM_MEDIA_TYPE


class RulesNotFound(NotFound):
    """No published rule set has this key (and no variant this name)."""

    code = "rules-not-found"


class StoreUnavailable(DomainError):
    """The event store does not answer (health check)."""

    code = "store-unavailable"
    status = 503


class BadReportPeriod(DomainError):
    """A report's period is reversed or too long."""

    code = "bad-report-period"


class UnknownVariant(DomainError):
    """No variant has this name."""

    code = "unknown-variant"


def problem_type(code: str) -> str:
    """The problem type URI of a code.

    >>> problem_type("round-not-found")
    'urn:roundaudit:problem:round-not-found'
    """
    return PROBLEM_TYPE_PREFIX + code


def title_of(code: str) -> str:
    """A short, fixed human title for a code.

    >>> title_of("out-of-turn")
    'Out of turn'
    """
    return code.replace("-", " ").capitalize()


def problem(
    request: Request,
    *,
    status: int,
    code: str,
    detail: str,
    headers: dict[str, str] | None = None,
    type_: str | None = None,
    title: str | None = None,
    **extensions: Any,
) -> ProblemResponse:
    body: dict[str, Any] = {
        "type": type_ or problem_type(code),
        "title": title or title_of(code),
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        "code": code,
    }
    body.update({k: v for k, v in extensions.items() if v is not None})
    return ProblemResponse(_text_only(body), status_code=status, headers=headers)


def _text_only(value: Any) -> Any:
    """The problem with every string made encodable (a request can carry unpaired surrogates
    in its keys, which a validation error repeats)."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_text_only(k): _text_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_text_only(v) for v in value]
    return value


async def domain_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    headers = None
    if exc.status == 401:  # RFC 6750 section 3: name the scheme the client must use
        given = request.headers.get("authorization", "")
        error = ', error="invalid_token"' if given.lower().startswith("bearer ") else ""
        headers = {"WWW-Authenticate": f'Bearer realm="roundaudit"{error}'}
    elif exc.code == "request-in-progress":
        headers = {"Retry-After": "1"}
    return problem(
        request,
        status=exc.status,
        code=exc.code,
        detail=exc.message,
        rule=exc.rule,
        setting=getattr(exc, "setting", None),
        headers=headers,
        **exc.extensions(),
    )


def _loc(loc: Sequence[object]) -> str:
    return ".".join(str(part) for part in loc)


async def validation_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in exc.errors()
    ]
    detail = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in errors) or "invalid request"
    rule = "MONEY-1" if "MONEY-1" in detail else None
    ids = [e for e in errors if e["type"] == ID_ERROR]
    if ids:  # an id outside the grammar (domain.ids): invalid-id, naming the field(s)
        field = _field(ids[0]["loc"])
        return problem(
            request,
            status=422,
            code="invalid-id",
            detail=f"{detail} (nothing was recorded)",
            errors=errors,
            field=field,
        )
    values = [e for e in errors if e["type"] == VALUE_ERROR]
    if values and len(values) == len(errors):
        return problem(
            request,
            status=422,
            code="invalid-value",
            detail=f"{detail} (nothing was recorded)",
            errors=errors,
            field=_field(values[0]["loc"]),
            rule="CARD-1" if "CARD-1" in detail else None,
        )
    return problem(
        request,
        status=422,
        code=VALIDATION_CODE,
        detail=f"the request is malformed: {detail}",
        errors=errors,
        rule=rule,
    )


def _field(loc: Sequence[object]) -> str:
    """The field a validation error names: its location without ``body``/``path``/``query``."""
    parts = [str(p) for p in loc if p not in ("body", "path", "query", "header")]
    return ".".join(parts) or _loc(loc)


async def http_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        phrase = "HTTP error"
    detail = exc.detail if isinstance(exc.detail, str) else phrase
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:  # RFC 9110 15.5.6: every method the resource takes
        headers = {**(headers or {}), "Allow": ", ".join(_allowed(request))}
    return problem(
        request,
        status=exc.status_code,
        code=f"http-{exc.status_code}",
        detail=detail,
        type_="about:blank",  # RFC 9457 4.2.1: no semantics beyond the status code
        title=phrase,
        headers=headers,
    )


def _allowed(request: Request) -> list[str]:
    """The methods the routes of this path take (HEAD, implied by GET, left out)."""
    path = request.scope.get("path", "")
    methods: set[str] = set()
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods - {"HEAD"})


async def internal_error_handler(request: Request, exc: Exception) -> Response:
    incident = uuid4().hex
    log.exception(
        "unexpected error on %s %s (incident %s)", request.method, request.url.path, incident
    )
    return problem(
        request,
        status=500,
        code=INTERNAL_CODE,
        detail=f"an unexpected error occurred; nothing more is disclosed (incident {incident})",
        incident=incident,
    )


#: What the store's driver raises when the database does not answer (down, failing over).
STORE_ERRORS: tuple[type[Exception], ...] = (
    EsOperationalError,
    EsInterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)


async def store_error_handler(request: Request, exc: Exception) -> Response:
    """503 ``store-unavailable`` when the database cannot be reached: the outcome of a command
    is unknown to the client (it may have committed just before the connection died), and the
    way to learn it is to send it again with the same ``Idempotency-Key`` (docs/scaling.md)."""
    log.warning(
        "the event store cannot be reached on %s %s: %s", request.method, request.url.path, exc
    )
    return problem(
        request,
        status=503,
        code=StoreUnavailable.code,
        detail="the event store cannot be reached now (it may be failing over); the outcome "
        "of a command is unknown: send it again with the same Idempotency-Key",
        headers={"Retry-After": "1"},
    )


def install(app: FastAPI) -> None:
    """Register the problem handlers on ``app``."""
    app.add_exception_handler(DomainError, domain_error_handler)
    for error in STORE_ERRORS:
        app.add_exception_handler(error, store_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)
    app.add_exception_handler(Exception, internal_error_handler)


__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "ProblemResponse",
    "RulesNotFound",
    "StoreUnavailable",
    "install",
    "problem",
    "problem_type",
    "title_of",
]

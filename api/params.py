"""Query and path parameters of the read routes, checked strictly.

* **Ids** (tables, players) follow one grammar: ASCII letters, digits and ``._:-``, 1 to 64
  characters (:data:`ID_PATTERN`); anything else is a 422 ``invalid-id`` naming the parameter.
* **Unknown query parameters** are refused (422 ``unknown-parameter``): a misspelt filter
  (``?tabel=T1``) must not silently widen a search to everything.
* **Cursors** are opaque to the client (base64url text); one that was not made by the service
  is a 422 ``invalid-cursor``.
* :func:`problems` declares a route's problem answers in the OpenAPI document.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Final

from fastapi import Path, Request
from pydantic import AwareDatetime, BeforeValidator, WithJsonSchema

from api.errors import PROBLEM_MEDIA_TYPE
from api.wire import PlayerId, RoundId
from domain.errors import DomainError
from domain.rules import VARIANTS
from domain.times import is_client_time

ID_PATTERN: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")

# The OpenAPI document states what a read route takes, so that a request its schema allows is
# one the service answers (the contract run, .ci/schemathesis): a variant is one of the
# registry's, a round id and a player id follow the id grammar (``api.wire``).
Variant = Annotated[str, WithJsonSchema({"type": "string", "enum": list(VARIANTS)})]
RoundPath = Annotated[RoundId, Path(description="A UUID, or TABLE#NUMBER ('#' as %23).")]
PlayerPath = Annotated[PlayerId, Path(description="The player's id.")]
PREFIX_PATTERN: Final = r"^[A-Za-z0-9._:-]{0,64}$"


def _rfc3339(value: object) -> object:
    """Only RFC 3339 text with its offset is a time (not a number of seconds)."""
    if not isinstance(value, str) or not is_client_time(value):
        raise ValueError("not an RFC 3339 time with its offset (2024-05-01T12:00:00Z)")
    return value


Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_rfc3339),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class InvalidId(DomainError):
    code = "invalid-id"
    status = 422


class UnknownParameter(DomainError):
    code = "unknown-parameter"
    status = 422


class InvalidCursor(DomainError):
    code = "invalid-cursor"
    status = 422


class InvalidQuery(DomainError):
    code = "invalid-query"
    status = 422


def check_id(value: str, what: str) -> str:
    """``value`` when it is an id (see the module docstring), else :class:`InvalidId`.

    >>> check_id("sim-deluxe", "table")
    'sim-deluxe'
    >>> check_id("a b", "table")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    InvalidId: ...
    """
    if not ID_PATTERN.fullmatch(value):
        raise InvalidId(
            f"{what} {value[:80]!r} is not an id: 1 to 64 ASCII letters, digits or ._:-"
        )
    return value


def check_ids(values: Iterable[str], what: str) -> tuple[str, ...]:
    return tuple(check_id(v, what) for v in values)


def only_parameters(*names: str) -> Callable[[Request], None]:
    """A dependency refusing any query parameter not in ``names``."""
    allowed = frozenset(names)

    def check(request: Request) -> None:
        unknown = sorted({k for k in request.query_params if k not in allowed})
        if unknown:
            raise UnknownParameter(
                f"unknown query parameter(s) {', '.join(unknown)}; this route takes "
                + (", ".join(sorted(allowed)) or "none")
            )

    return check


def encode_cursor(*parts: object) -> str:
    """An opaque cursor of ``parts`` (text joined by a tab).

    >>> decode_cursor(encode_cursor(12, "r1"), 2)
    ['12', 'r1']
    """
    raw = "\t".join(str(p) for p in parts).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, parts: int) -> list[str]:
    """The parts of a cursor made by :func:`encode_cursor`, or :class:`InvalidCursor`."""
    if len(cursor) > 400:
        raise InvalidCursor("the cursor is too long: pass back the `next` of a page as it is")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        found = raw.decode("utf-8").split("\t")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        found = []
    if len(found) != parts:
        raise InvalidCursor("the cursor was not made by this service: pass back a page's `next`")
    return found


_DESCRIBED = {
    401: "No API key, or an unknown or revoked one",
    403: "This key may not read this (role, table or player)",
    404: "Not found: an unknown round, a player not in the round, an unknown rule",
    406: "None of the accepted media types can be given",
    422: "Malformed id, query parameter or cursor",
    503: "The projection cannot be read now (outdated schema, store unavailable)",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the RFC 9457 problem answers a route gives."""
    return {
        s: {"description": _DESCRIBED[s], "content": {PROBLEM_MEDIA_TYPE: {}}} for s in statuses
    }


__all__ = [
    "ID_PATTERN",
    "InvalidCursor",
    "InvalidId",
    "InvalidQuery",
    "UnknownParameter",
    "check_id",
    "check_ids",
    "decode_cursor",
    "encode_cursor",
    "only_parameters",
    "problems",
]

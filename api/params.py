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
from typing import Any, Final

from fastapi import Request

from api.errors import PROBLEM_MEDIA_TYPE
from domain.errors import DomainError

ID_PATTERN: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")


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

"""Schemathesis hooks for the contract run (``.ci/schemathesis``).

An idempotency key names one request of an API key (docs/api.md, "Idempotency"): a client
makes a fresh one for every command. Generated requests would otherwise reuse the same few
short strings ("0", "A") for different bodies, which the service rightly refuses (422
``idempotency-key-reused``). So, just before each call, a *valid* idempotency key and the body
ids that stand for one (``request_id``, ``transaction_id``) are made unique; an invalid one
is left as generated (negative tests stay negative), and nothing else is touched.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import schemathesis

_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_QUOTED = re.compile(r'"[A-Za-z0-9._:-]{1,64}"')


def _fresh() -> str:
    return uuid4().hex


def _unique_ids(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("request_id", "transaction_id") and isinstance(v, str) and _ID.fullmatch(v):
                out[k] = _fresh()
            else:
                out[k] = _unique_ids(v)
        return out
    if isinstance(value, list):
        return [_unique_ids(v) for v in value]
    return value


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    headers = case.headers
    if headers:
        for name in list(headers):
            if name.lower() == "idempotency-key":
                value = headers[name]
                if isinstance(value, str) and (_ID.fullmatch(value) or _QUOTED.fullmatch(value)):
                    headers[name] = _fresh()
    if isinstance(case.body, dict | list):
        case.body = _unique_ids(case.body)

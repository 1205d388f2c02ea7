"""Schemathesis hooks for the contract run (``.ci/schemathesis``).

An idempotency key names one request of an API key (docs/api.md, "Idempotency"): a client
makes a fresh one for every command. Generated requests would otherwise reuse the same few
short strings ("0", "A") for different bodies, which the service rightly refuses (422
``idempotency-key-reused``). So, just before each call, a *valid* idempotency key and the body
ids that stand for one (``request_id``, ``transaction_id``) are made unique; an invalid one
is left as generated (negative tests stay negative).

A page's ``cursor`` is the service's own opaque token (a client passes back a page's
``next``): no schema can tell a made-up one from a real one, so a positive case goes without
it (the first page); negative cases keep theirs, and ``tests/api`` tests the refusal of a
cursor the service did not make (422 ``invalid-cursor``). Likewise ``GET /feed``'s
``limit`` has one range in the schema for both answers, but a JSON page holds at most 5,000
entries (more is a 422 ``invalid-query``, tested in ``tests/api``): a positive case asking for
more asks for the NDJSON stream, which takes it. And a report's period (``from``, ``to``)
is at most 366 days, ``to`` not before ``from``, and a round search's ``to`` is after its
``from``: rules across two parameters that no schema states, so a positive case's report covers
one day and its search has no ``to`` (a longer or reversed period is refused, tested in
``tests/api``).

A negative body must be invalid: schemathesis negates one branch of a ``oneOf`` (the key
bindings of ``POST /api-keys``: a role outside one branch's enum) and can draw a body that
another branch accepts (``{"role": "table-feed", "tables": [...]}``), then reports the
service for accepting a valid request (ST201). So a negative body that the operation's
whole body schema accepts (checked with formats, by the validator schemathesis itself ships)
gets a property no schema allows, which makes it the negative case it was meant to be; a
body the schema refuses is left as generated.

A negative query must be invalid too, as sent: a query carries strings only, so a generated
``player: [true]`` or ``table: false`` reaches the service as ``player=true&table=false``,
valid ids (ST201 reported their acceptance). A negative query whose every parameter, as the
text sent, the operation's parameter schema accepts gets a parameter no operation declares
(every route refuses an unknown parameter: 422 ``unknown-parameter``); a query the schemas
refuse is left as generated.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import jsonschema_rs
import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode

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


#: The property added to a "negative" body that the whole schema accepts (no schema has it).
NOT_IN_THE_CONTRACT = "not_in_the_contract"


#: The body validators of the operations seen: (document, path, method) -> validator or None.
_VALIDATORS: dict[tuple[int, str, str], Any] = {}


def _body_validator(raw: Any, path: str, method: str) -> Any:
    """A validator of the operation's whole JSON body schema (every ``oneOf`` branch, with the
    document's components), or None when it takes no JSON body."""
    key = (id(raw), path, method.lower())
    if key not in _VALIDATORS:
        operation = raw["paths"].get(path, {}).get(method.lower(), {})
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        _VALIDATORS[key] = (
            None
            if content is None or "schema" not in content
            else jsonschema_rs.validator_for(
                {**content["schema"], "components": raw.get("components", {})},
                validate_formats=True,
            )
        )
    return _VALIDATORS[key]


def _really_negative(case: Any) -> None:
    validator = _body_validator(
        case.operation.schema.raw_schema, case.operation.path, case.operation.method
    )
    if validator is not None and validator.is_valid(case.body):
        case.body = {**case.body, NOT_IN_THE_CONTRACT: True}


#: The query parameters' validators of the operations seen: (document, path, method) ->
#: name -> (validator, is an array).
_QUERY: dict[tuple[int, str, str], dict[str, tuple[Any, bool]]] = {}


def _query_validators(raw: Any, path: str, method: str) -> dict[str, tuple[Any, bool]]:
    key = (id(raw), path, method.lower())
    if key not in _QUERY:
        operation = raw["paths"].get(path, {}).get(method.lower(), {})
        found: dict[str, tuple[Any, bool]] = {}
        for p in operation.get("parameters", []):
            if p.get("in") == "query" and "schema" in p:
                schema = p["schema"]
                array = schema.get("type") == "array"
                found[p["name"]] = (
                    jsonschema_rs.validator_for(
                        {
                            **(schema.get("items", {}) if array else schema),
                            "components": raw.get("components", {}),
                        },
                        validate_formats=True,
                    ),
                    array,
                )
        _QUERY[key] = found
    return _QUERY[key]


def _as_sent(value: Any) -> list[str]:
    """The texts a query value is sent as (None: not sent; booleans in lower case)."""
    items = value if isinstance(value, list) else [value]
    return [
        ("true" if v else "false") if isinstance(v, bool) else str(v)
        for v in items
        if v is not None
    ]


def _readings(text: str) -> list[Any]:
    """What a query text may stand for: itself, and the integer or boolean it spells."""
    out: list[Any] = [text]
    if re.fullmatch(r"-?[0-9]+", text):
        out.append(int(text))
    if text in ("true", "false"):
        out.append(text == "true")
    return out


def _query_accepted(case: Any) -> bool:
    validators = _query_validators(
        case.operation.schema.raw_schema, case.operation.path, case.operation.method
    )
    for name, value in case.query.items():
        if name not in validators:
            return False
        validator, array = validators[name]
        texts = _as_sent(value)
        if not array and len(texts) > 1:
            return False
        if not all(any(validator.is_valid(r) for r in _readings(t)) for t in texts):
            return False
    return True


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
    meta = getattr(case, "meta", None)
    positive = meta is not None and meta.generation.mode == GenerationMode.POSITIVE
    body = meta.components.get(ParameterLocation.BODY) if meta is not None else None
    if body is not None and body.mode.is_negative and isinstance(case.body, dict):
        _really_negative(case)
    query = meta.components.get(ParameterLocation.QUERY) if meta is not None else None
    if (
        query is not None
        and query.mode.is_negative
        and isinstance(case.query, dict)
        and _query_accepted(case)
    ):
        case.query[NOT_IN_THE_CONTRACT] = "1"
    if positive and isinstance(case.query, dict):
        case.query.pop("cursor", None)
        limit = str(case.query.get("limit", ""))
        if case.path == "/feed" and limit.isdigit() and int(limit) > 5000:
            case.headers = {**(case.headers or {}), "Accept": "application/x-ndjson"}
        if case.path in ("/reports/daily", "/reports/rtp") and "from" in case.query:
            case.query["to"] = case.query["from"]
        if case.path == "/rounds" and "from" in case.query:
            case.query.pop("to", None)

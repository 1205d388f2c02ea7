"""The OpenAPI document, truthful: every route's problem answers, the problem schema, links.

* :func:`problems` declares, for a route, the problem statuses it answers (each an RFC 9457
  ``application/problem+json`` document of the :class:`~api.schemas.Problem` schema) and,
  optionally, the OpenAPI links from its success answer to the routes that read or act on what
  it made (for stateful testing)::

      @router.post("", status_code=201, response_model=WalletView,
                   responses=problems(401, 403, 409, 413, 422,
                                      links={"GetWallet": ("get_wallet",
                                             {"player_id": "$response.body#/player_id"})}))

* :func:`install` makes the document's operation ids the route functions' names (links name
  them), puts the problem schema in the components, and replaces FastAPI's default 422
  (``HTTPValidationError``, ``application/json``) by the service's problem document.

A new route declares ``response_model=`` for its 2xx body and ``responses=problems(...)`` for
its refusals; :func:`install` does the rest.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from api.errors import PROBLEM_MEDIA_TYPE

PROBLEM_REF = "#/components/schemas/Problem"
WHY: dict[int, str] = {
    400: "The request cannot be served (the Host header is not one of the service's)",
    401: "No API key, or an unknown, malformed or revoked one (unauthenticated)",
    403: "The key's role may not do this, or not here (forbidden)",
    404: "No such resource (the problem's code names it)",
    409: "The command does not fit the resource's state (the code names why: out of turn, "
    "betting closed, insufficient funds, request-id-reused, request-in-progress...)",
    413: "The body is larger than the route takes (payload-too-large)",
    422: "Malformed input: invalid-id, invalid-value, malformed-json, validation-error, "
    "idempotency-key-reused, or a value the domain refuses (invalid-amount, invalid-card...)",
    503: "The service cannot do it now (its store, or its seed key)",
}


def _problem_content() -> dict[str, Any]:
    return {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": PROBLEM_REF}}}


def _plain_schema(media: str) -> dict[str, Any]:
    """The schema of a 2xx body a route declares no model for: a JSON object, text, bytes."""
    if media.endswith("json"):
        return {"type": "object"}
    if media.startswith("text/") or media.endswith("ndjson"):
        return {"type": "string"}
    return {"type": "string", "format": "binary"}


def problems(
    *statuses: int,
    links: dict[str, tuple[str, dict[str, str]]] | None = None,
    success: int = 201,
) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a route: its problem statuses, and links from its success answer."""
    out: dict[int | str, dict[str, Any]] = {
        s: {"description": WHY[s], "content": _problem_content()} for s in statuses
    }
    if links:
        out[success] = {
            "links": {
                name: {"operationId": op, "parameters": params}
                for name, (op, params) in links.items()
            }
        }
    return out


def install(web: FastAPI) -> None:
    """Operation ids from the route names; the problem schema everywhere a route refuses."""
    from api.schemas import Problem

    def openapi() -> dict[str, Any]:
        if web.openapi_schema is not None:
            return web.openapi_schema
        doc = get_openapi(
            title=web.title,
            version=web.version,
            summary=web.summary,
            description=web.description,
            routes=web.routes,
            tags=web.openapi_tags,
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        for path_item in doc.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.get("responses", {})
                for status, response in responses.items():
                    if status.startswith("2"):
                        for media, body in response.get("content", {}).items():
                            if not body.get("schema"):
                                body["schema"] = _plain_schema(media)
                    if status.isdigit() and int(status) >= 400:
                        response["content"] = _problem_content()
                        response["description"] = WHY.get(
                            int(status), response.get("description", "")
                        )
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        web.openapi_schema = doc
        return doc

    web.openapi = openapi  # type: ignore[method-assign]


__all__ = ["PROBLEM_REF", "install", "problems"]

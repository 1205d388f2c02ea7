"""The service's JSON response class, encoded by orjson.

FastAPI 0.165 still ships ``ORJSONResponse`` but marks it deprecated (it emits a
``FastAPIDeprecationWarning`` when used), so the service keeps this small subclass instead.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse


class OrjsonResponse(JSONResponse):
    """``application/json`` rendered by orjson (non-string dict keys allowed, as ints become
    strings in JSON anyway)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


__all__ = ["OrjsonResponse"]

"""The interactive API page at ``/docs``: Swagger UI, every asset served by the service.

FastAPI's own docs page loads Swagger UI from a CDN with an inline script; a closed network
cannot reach the CDN and the service's Content-Security-Policy (``api.security``) refuses both.
This page loads the Swagger UI files of the ``swagger-ui-bundle-v2`` package (Swagger UI 5,
which reads OpenAPI 3.1) and a small start script (``api/static/docs-init.js``), all from
``/docs/assets/``. Its Authorize button takes an API key (the ``ApiKey`` bearer scheme of the
OpenAPI document); the key stays in the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from domain.errors import NotFound

router = APIRouter(include_in_schema=False)

_SWAGGER = Path(str(swagger_ui_path))
_STATIC = Path(__file__).resolve().parent.parent / "static"
#: The only files served under /docs/assets/ (name -> file, media type).
ASSETS: Final = {
    "swagger-ui.css": (_SWAGGER / "swagger-ui.css", "text/css"),
    "swagger-ui-bundle.js": (_SWAGGER / "swagger-ui-bundle.js", "text/javascript"),
    "favicon-32x32.png": (_SWAGGER / "favicon-32x32.png", "image/png"),
    "docs-init.js": (_STATIC / "docs-init.js", "text/javascript"),
}

PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>roundaudit API</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/docs-init.js"></script>
</body>
</html>
"""


class AssetNotFound(NotFound):
    code = "asset-not-found"


@router.get("/docs")
def docs_page() -> HTMLResponse:
    return HTMLResponse(PAGE)


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    found = ASSETS.get(name)
    if found is None:
        raise AssetNotFound(f"no asset {name!r}")
    path, media_type = found
    return FileResponse(path, media_type=media_type)

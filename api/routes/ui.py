"""The investigation page at ``/ui/``: plain HTML, CSS and JavaScript modules, all served here.

``GET /ui/`` is the page (``api/static/ui/index.html``), ``GET /ui/assets/<name>`` its scripts
and styles (only the files of that folder), ``GET /ui/cards/<code>.svg`` the card images drawn
by ``api.cards``. No CDN, no build step, no inline script: the page's Content-Security-Policy
(``api.security``) allows the service's own files only. The page itself needs no key; it signs
in with one (kept in the tab's ``sessionStorage``) and reads everything else through the API,
so it shows only what that key may read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse, Response

from api.cards import CODES, card_svg
from domain.errors import NotFound

router = APIRouter(include_in_schema=False)

UI_FOLDER: Final = Path(__file__).resolve().parent.parent / "static" / "ui"
_TYPES: Final = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
#: The page's assets, by name: every file of ``api/static/ui`` but the page itself.
ASSETS: Final = {
    p.name: p for p in sorted(UI_FOLDER.iterdir()) if p.suffix in _TYPES and p.name != "index.html"
}
CACHE: Final = {"Cache-Control": "max-age=300"}


class UiAssetNotFound(NotFound):
    code = "asset-not-found"


@router.get("/ui")
def ui_redirect() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=308)


@router.get("/ui/")
def ui_page() -> FileResponse:
    return FileResponse(UI_FOLDER / "index.html", media_type=_TYPES[".html"])


@router.get("/ui/assets/{name}")
def ui_asset(name: str) -> FileResponse:
    path = ASSETS.get(name)
    if path is None:
        raise UiAssetNotFound(f"the page has no asset {name[:80]!r}")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=CACHE)


@router.get("/ui/cards/{name}")
def ui_card(name: str) -> Response:
    code = name.removesuffix(".svg")
    if not name.endswith(".svg") or code not in CODES:
        raise UiAssetNotFound(f"no card image {name[:80]!r} (AS.svg, 10H.svg, ..., back.svg)")
    return Response(card_svg(code), media_type="image/svg+xml", headers=CACHE)


__all__ = ["ASSETS", "UI_FOLDER", "router"]

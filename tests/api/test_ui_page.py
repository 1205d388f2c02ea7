"""The investigation page's files: served by the service itself, under its page CSP, with no
reference to anything elsewhere; the card faces (52 and a back) drawn by ``api.cards``."""

from __future__ import annotations

import re
import xml.dom.minidom

import pytest
from apikit import Api, check_problem

from api.cards import CODES, RANKS, SUITS, card_name, card_svg
from api.routes.ui import ASSETS


def test_the_page_and_its_assets_need_no_key_and_no_other_site(api: Api) -> None:
    page = api.raw.get("/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert api.raw.get("/ui", follow_redirects=False).headers["location"] == "/ui/"
    referenced = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert referenced
    for url in referenced:
        assert url.startswith(("/ui/", "#")), url
    assert "<script>" not in page.text  # no inline script: the CSP would refuse it
    assert {"app.js", "api.js", "steps.js", "table.js", "cards.js", "money.js", "ui.css"} <= set(
        ASSETS
    )
    for name in ASSETS:
        r = api.raw.get(f"/ui/assets/{name}")
        assert r.status_code == 200, name
        assert "max-age" in r.headers["cache-control"]
        # nothing loaded from elsewhere: every URL a script or style names is the service's
        for url in re.findall(r"https?://[^\s\"')]+", r.text):
            pytest.fail(f"{name} names {url}")
        for imported in re.findall(r'from "([^"]+)"', r.text):
            assert imported.startswith("./"), (name, imported)
    check_problem(api.raw.get("/ui/assets/nope.js"), 404, "asset-not-found")
    assert api.raw.get("/ui/assets/..%2F..%2Froutes%2Fui.py").status_code == 404


def test_the_session_route_names_the_key_and_what_it_may_do(api: Api) -> None:
    token = api.key("player", player="p1")
    doc = api.ok("GET", "/session", key=token)
    assert (doc["role"], doc["player"], doc["tables"]) == ("player", "p1", [])
    assert doc["may"]["dispute.read"] == "self"
    assert "audit.read" not in doc["may"]
    assert "token" not in doc
    check_problem(api.raw.get("/session"), 401, "unauthenticated")


def test_every_card_face_and_the_back_are_drawn_and_served(api: Api) -> None:
    assert len(CODES) == 53
    assert len({card_svg(c) for c in CODES}) == 53
    for code in CODES:
        svg = card_svg(code)
        dom = xml.dom.minidom.parseString(svg)
        title = dom.getElementsByTagName("title")[0].firstChild
        assert title is not None
        assert title.nodeValue == card_name(code)
        assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")
    for rank in RANKS:
        for suit in SUITS:
            svg = card_svg(rank + suit)
            red = suit in ("H", "D")
            assert ("#b3001b" in svg) == red
            if rank not in ("A", "J", "Q", "K"):
                assert svg.count('href="#pip"') == int(rank) + 2  # the pips and two corners
    r = api.raw.get("/ui/cards/10H.svg")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("image/svg+xml")
    assert "10 of hearts" in r.text
    for bad in ("1H.svg", "10H.png", "back", "AS.svg.svg"):
        check_problem(api.raw.get(f"/ui/cards/{bad}"), 404, "asset-not-found")
    assert api.raw.get("/ui/cards/..%2F..%2Fcards.py").status_code == 404

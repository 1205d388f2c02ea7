"""Playing-card faces as SVG, drawn by this code: the 52 faces of CARD-1 and a back.

The investigation page (``/ui/``) draws every card with these images, served by the service at
``/ui/cards/<code>.svg`` (``AS``, ``10H``, ``QD``... and ``back``): no file comes from elsewhere,
so their origin is this module (the project's own work, under the project's terms). Each face is
a rounded card with its rank and suit in two corners and the standard pip layout (2-10), one
large pip (ace) or a framed initial (J, Q, K: no figure artwork); hearts and diamonds red,
spades and clubs black (CARD-1). Every SVG carries a ``<title>`` naming the card ("queen of
hearts") for assistive technology.

>>> svg = card_svg("QH")
>>> "<title>queen of hearts</title>" in svg and svg.startswith("<svg")
True
>>> len(CODES)
53
"""

from __future__ import annotations

from functools import cache
from typing import Final

RANKS: Final = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: Final = ("S", "H", "D", "C")
BACK: Final = "back"
#: Every image this module draws: the 52 faces (rank then suit, as the events write cards) and
#: the back.
CODES: Final = (*(r + s for s in SUITS for r in RANKS), BACK)

RANK_NAMES: Final = {
    "A": "ace",
    "J": "jack",
    "Q": "queen",
    "K": "king",
    **{str(n): str(n) for n in range(2, 11)},
}
SUIT_NAMES: Final = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
RED: Final = "#b3001b"
BLACK: Final = "#111111"
W, H = 200, 280

#: Suit shapes on a 100 x 100 box.
_SHAPES: Final = {
    "H": '<path d="M50 90C22 68 4 50 10 30C15 13 40 9 50 28C60 9 85 13 90 30C96 50 78 68 50 90Z"/>',
    "D": '<path d="M50 4L86 50L50 96L14 50Z"/>',
    "S": (
        '<path d="M50 6C78 32 97 50 89 69C83 83 64 83 55 71C57 81 61 90 69 95H31C39 90 43 81 '
        '45 71C36 83 17 83 11 69C3 50 22 32 50 6Z"/>'
    ),
    "C": (
        '<circle cx="50" cy="27" r="19"/><circle cx="27" cy="57" r="19"/>'
        '<circle cx="73" cy="57" r="19"/>'
        '<path d="M45 50H55C56 72 60 87 69 95H31C40 87 44 72 45 50Z"/>'
    ),
}

# Pip rows (0 = top, 1 = bottom of the pip area) and columns (L, M, R) per rank.
_L, _M, _R = 66, 100, 134
_TOP, _BOTTOM = 58, 222
_LAYOUTS: Final[dict[str, tuple[tuple[int, float], ...]]] = {
    "2": ((_M, 0), (_M, 1)),
    "3": ((_M, 0), (_M, 0.5), (_M, 1)),
    "4": ((_L, 0), (_R, 0), (_L, 1), (_R, 1)),
    "5": ((_L, 0), (_R, 0), (_M, 0.5), (_L, 1), (_R, 1)),
    "6": ((_L, 0), (_R, 0), (_L, 0.5), (_R, 0.5), (_L, 1), (_R, 1)),
    "7": ((_L, 0), (_R, 0), (_M, 0.25), (_L, 0.5), (_R, 0.5), (_L, 1), (_R, 1)),
    "8": ((_L, 0), (_R, 0), (_M, 0.25), (_L, 0.5), (_R, 0.5), (_M, 0.75), (_L, 1), (_R, 1)),
    "9": (
        (_L, 0), (_R, 0), (_L, 1 / 3), (_R, 1 / 3), (_M, 0.5),
        (_L, 2 / 3), (_R, 2 / 3), (_L, 1), (_R, 1),
    ),
    "10": (
        (_L, 0), (_R, 0), (_M, 1 / 6), (_L, 1 / 3), (_R, 1 / 3),
        (_L, 2 / 3), (_R, 2 / 3), (_M, 5 / 6), (_L, 1), (_R, 1),
    ),
}  # fmt: skip


def card_name(code: str) -> str:
    """The card in words (``"10D"`` -> ``"10 of diamonds"``; ``"back"`` -> a face-down card).

    >>> card_name("AS"), card_name("back")
    ('ace of spades', 'a face-down card')
    """
    if code == BACK:
        return "a face-down card"
    return f"{RANK_NAMES[code[:-1]]} of {SUIT_NAMES[code[-1]]}"


def _use(x: float, y: float, size: float, *, flip: bool = False) -> str:
    at = f'x="{x - size / 2:.1f}" y="{y - size / 2:.1f}" width="{size}" height="{size}"'
    if flip:
        return f'<use href="#pip" {at} transform="rotate(180 {x:.1f} {y:.1f})"/>'
    return f'<use href="#pip" {at}/>'


def _corner(rank: str) -> str:
    size = 30 if rank == "10" else 34
    return f'<text x="22" y="40" font-size="{size}" text-anchor="middle">{rank}</text>' + _use(
        22, 60, 24
    )


def _face(rank: str) -> str:
    if rank == "A":
        return _use(100, 140, 96)
    if rank in ("J", "Q", "K"):
        return (
            '<rect x="44" y="48" width="112" height="184" rx="8" fill="none" '
            'stroke="currentColor" stroke-width="3"/>'
            '<rect x="52" y="56" width="96" height="168" rx="5" fill="none" '
            'stroke="currentColor" stroke-width="1.2"/>'
            f'<text x="100" y="160" font-size="84" text-anchor="middle">{rank}</text>'
            + _use(100, 76, 30)
            + _use(100, 204, 30, flip=True)
        )
    pips = []
    for x, row in _LAYOUTS[rank]:
        y = _TOP + row * (_BOTTOM - _TOP)
        pips.append(_use(x, y, 38, flip=row > 0.5))
    return "".join(pips)


@cache
def card_svg(code: str) -> str:
    """The SVG document of one card (a code of :data:`CODES`); KeyError for anything else."""
    if code not in CODES:
        raise KeyError(code)
    if code == BACK:
        return _back()
    rank, suit = code[:-1], code[-1]
    colour = RED if suit in ("H", "D") else BLACK
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" '
        f'height="{H}" role="img">'
        f"<title>{card_name(code)}</title>"
        f'<defs><symbol id="pip" viewBox="0 0 100 100">{_SHAPES[suit]}</symbol></defs>'
        f'<rect x="2" y="2" width="{W - 4}" height="{H - 4}" rx="14" fill="#ffffff" '
        'stroke="#555555" stroke-width="3"/>'
        f'<g fill="{colour}" color="{colour}" font-family="DejaVu Sans, Liberation Sans, '
        'Arial, sans-serif" font-weight="bold">'
        + _corner(rank)
        + f'<g transform="rotate(180 {W / 2} {H / 2})">{_corner(rank)}</g>'
        + _face(rank)
        + "</g></svg>"
    )


def _back() -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" '
        f'height="{H}" role="img"><title>{card_name(BACK)}</title>'
        '<defs><pattern id="lattice" width="16" height="16" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="16" height="16" fill="#1d3f8f"/>'
        '<path d="M0 8H16M8 0V16" stroke="#6f8fd6" stroke-width="2"/></pattern></defs>'
        f'<rect x="2" y="2" width="{W - 4}" height="{H - 4}" rx="14" fill="#ffffff" '
        'stroke="#555555" stroke-width="3"/>'
        f'<rect x="14" y="14" width="{W - 28}" height="{H - 28}" rx="8" fill="url(#lattice)" '
        'stroke="#1d3f8f" stroke-width="3"/>'
        "</svg>"
    )


__all__ = ["BACK", "CODES", "RANKS", "SUITS", "card_name", "card_svg"]

"""Deterministic identifiers (DESIGN.md: a re-executed shoe or round gets the same id).

Every stable id is a UUID version 5 in the roundaudit namespace, named by its parts joined with
``":"``, for example ``shoe:<table id>:<shoe number>``. A part that itself contains ``":"`` is
refused: it would make two different part lists name the same id.

>>> stable_id("shoe", "T1", 3) == uuid.uuid5(ROUNDAUDIT_NAMESPACE, "shoe:T1:3")
True
>>> stable_id("shoe", "T1", 3) == stable_id("shoe", "T1", 4)
False
"""

from __future__ import annotations

import uuid
from typing import Final

ROUNDAUDIT_NAMESPACE: Final = uuid.UUID("6f1d2b1e-5b0a-4c43-9d7e-2d1c6e0b8a11")


def stable_id(*parts: object) -> uuid.UUID:
    """uuid5 in :data:`ROUNDAUDIT_NAMESPACE` of ``str(part)`` for each part, joined by ``":"``.

    >>> stable_id("a:b")
    Traceback (most recent call last):
    ...
    ValueError: id part 'a:b' contains ':' and would make the id ambiguous
    """
    if not parts:
        raise ValueError("a stable id needs at least one part")
    texts = [str(part) for part in parts]
    for text in texts:
        if ":" in text:
            raise ValueError(f"id part {text!r} contains ':' and would make the id ambiguous")
    return uuid.uuid5(ROUNDAUDIT_NAMESPACE, ":".join(texts))

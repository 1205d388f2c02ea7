"""The rules registry: published rule sets by key, and the current key of each variant.

A round stores the key it was played under (``"deluxe/1"``); verification re-executes it under
that same key, so a published key is never edited in place: a change is a new key.
"""

from __future__ import annotations

from types import MappingProxyType

from domain.errors import UnknownRules
from domain.rules import boundless, deluxe, european, lucky7, multihand
from domain.rules.base import Rules

PUBLISHED: MappingProxyType[str, Rules] = MappingProxyType(
    {r.key: r for r in (m.RULES for m in (deluxe, multihand, lucky7, european, boundless))}
)
CURRENT: MappingProxyType[str, str] = MappingProxyType(
    {r.variant: r.key for r in PUBLISHED.values()}
)
VARIANTS = tuple(CURRENT)


def get_rules(key_or_variant: str) -> Rules:
    """Rules by published key (``"lucky7/1"``) or by variant name (its current key)."""
    key = CURRENT.get(key_or_variant, key_or_variant)
    try:
        return PUBLISHED[key]
    except KeyError:
        known = ", ".join(sorted(PUBLISHED))
        raise UnknownRules(f"unknown rules {key_or_variant!r}; published: {known}") from None


__all__ = ["CURRENT", "PUBLISHED", "VARIANTS", "Rules", "get_rules"]

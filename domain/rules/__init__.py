"""The rules registry: published rule sets by key, and the current key of each variant.

A round stores the key it was played under (``"deluxe/1"``); verification re-executes it under
that same key, so a published key is never edited in place: a change is a new key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import MappingProxyType

from domain.errors import UnknownRules
from domain.rules import boundless, deluxe, european, lucky7, multihand
from domain.rules.base import Rules

_PUBLISHED = {r.key: r for r in (m.RULES for m in (deluxe, multihand, lucky7, european, boundless))}
_CURRENT = {r.variant: r.key for r in _PUBLISHED.values()}
PUBLISHED: MappingProxyType[str, Rules] = MappingProxyType(_PUBLISHED)
CURRENT: MappingProxyType[str, str] = MappingProxyType(_CURRENT)
VARIANTS = tuple(CURRENT)  # the variants this service publishes


def get_rules(key_or_variant: str) -> Rules:
    """Rules by published key (``"lucky7/1"``) or by variant name (its current key)."""
    key = CURRENT.get(key_or_variant, key_or_variant)
    try:
        return PUBLISHED[key]
    except KeyError:
        known = ", ".join(sorted(PUBLISHED))
        raise UnknownRules(f"unknown rules {key_or_variant!r}; published: {known}") from None


@contextmanager
def registered(rules: Rules) -> Iterator[Rules]:
    """Publish ``rules`` (a new key of a new variant) for the duration of the block: a variant
    defined purely as a rules object is played, settled and verified like the others (the
    engine reads nothing else). A published key is never replaced."""
    if rules.key in _PUBLISHED or rules.variant in _CURRENT:
        raise ValueError(f"{rules.key} ({rules.variant}) is published already: publish a new key")
    _PUBLISHED[rules.key] = rules
    _CURRENT[rules.variant] = rules.key
    try:
        yield rules
    finally:
        del _PUBLISHED[rules.key]
        del _CURRENT[rules.variant]


__all__ = ["CURRENT", "PUBLISHED", "VARIANTS", "Rules", "get_rules", "registered"]

"""Deterministic ids (``domain.ids.stable_id``): the uuid5 of their parts' name, the same
whether computed afresh or kept (the ids a process names again are kept, ``NAMED_KEPT``)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from domain.ids import NAMED_KEPT, ROUNDAUDIT_NAMESPACE, stable_id


def by_definition(*parts: object) -> uuid.UUID:
    """The definition, computed afresh: uuid5 of the parts joined by ':' (':' in a part
    written '%3A')."""
    return uuid.uuid5(ROUNDAUDIT_NAMESPACE, ":".join(str(p).replace(":", "%3A") for p in parts))


@given(st.lists(st.one_of(st.text(max_size=20), st.integers(), st.booleans()), min_size=1))
def test_a_stable_id_is_its_definition_each_time(parts: list[object]) -> None:
    first = stable_id(*parts)
    assert first == by_definition(*parts)
    assert stable_id(*parts) == first  # kept: the same id again
    assert first.version == 5


def test_ids_kept_and_forgotten_are_the_same_ids() -> None:
    named = [("wallet", f"p{i}") for i in range(NAMED_KEPT + 100)]  # more than are kept
    assert [stable_id(*n) for n in named] == [by_definition(*n) for n in named]
    assert [stable_id(*n) for n in named[:200]] == [by_definition(*n) for n in named[:200]]
    assert stable_id(True) != stable_id(1)  # named "True" and "1": not one key


def test_forget_named_forgets_every_kept_id_and_names_the_same_ones_again() -> None:
    from domain.ids import _named, forget_named

    named = [("wallet", f"q{i}") for i in range(50)]
    first = [stable_id(*n) for n in named]
    assert _named.cache_info().currsize >= 50
    forget_named()
    assert _named.cache_info().currsize == 0  # what a new process starts with
    assert [stable_id(*n) for n in named] == first == [by_definition(*n) for n in named]

"""``domain.kept.KeptValues``: the bounded table of shared values every memo of the domain and
the projections uses (a wallet's actors and amount texts, a fact's amounts, a round id's
text, the projections' id texts). Whatever the keys asked for: each answer is what ``make``
makes of its source, the same object again while its key is kept, the table never holds more
than its bound, and emptying it changes nothing handed out."""

from __future__ import annotations

import doctest
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import kept
from domain.kept import KeptValues


@given(st.lists(st.sampled_from(["0.50", "1.00", "1.50", "2.00", "10.00", "25"]), max_size=60),
       st.integers(min_value=1, max_value=4))  # fmt: skip
def test_answers_are_made_values_shared_while_kept_and_bounded(texts: list[str], most: int) -> None:
    made: list[str] = []

    def make(text: str) -> Decimal:
        made.append(text)
        return Decimal(text)

    amounts: KeptValues[str, str, Decimal] = KeptValues(make, most=most)
    handed: list[tuple[str, Decimal]] = []
    for text in texts:
        before = len(made)
        value = amounts.kept(text, text)
        assert value == Decimal(text)
        assert str(value) == str(Decimal(text))  # the same exponent
        if len(made) == before:  # kept: the very object handed out last for this text
            assert value is next(v for t, v in reversed(handed) if t == text)
        assert 1 <= len(amounts) <= most
        handed.append((text, value))
    amounts.clear()
    assert len(amounts) == 0
    assert all(v == Decimal(t) for t, v in handed)  # nothing handed out changed


def test_a_full_table_starts_again_and_shares_from_then_on() -> None:
    texts: KeptValues[int, int, str] = KeptValues(str, most=2)
    one, two = texts.kept(1, 1), texts.kept(2, 2)
    assert texts.kept(1, 1) is one
    three = texts.kept(3, 3)  # full: emptied, then 3 kept
    assert len(texts) == 1
    assert texts.kept(3, 3) is three
    assert texts.kept(2, 2) == two  # made again: equal, and kept from now on
    assert texts.kept(2, 2) is texts.kept(2, 2)


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="most must be at least 1"):
        KeptValues(str, most=0)


def test_doctests_pass() -> None:
    assert doctest.testmod(kept).failed == 0

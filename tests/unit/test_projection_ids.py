"""``projections.base.id_text``: the text of an id is ``str(id)``, whether remembered or not,
also once its memo filled up and started again; ``projections.base.cents``: the minor units
of an amount text are the exact ``Decimal`` ones, whether remembered or not, and an amount
that is not a whole number of cents is refused every time."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from domain.kept import KeptValues
from projections import base
from projections.base import cents, id_text


def test_the_text_of_an_id_is_its_str_whether_remembered_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a memo of 5: it fills and starts again often
    monkeypatch.setattr(base, "_ID_TEXTS", KeptValues(str, most=5))
    ids = [uuid.uuid4() for _ in range(12)] + [uuid.uuid5(uuid.NAMESPACE_URL, "table/1")]
    for _ in range(3):
        for u in ids:
            assert id_text(u) == str(u)
            assert id_text(uuid.UUID(str(u))) == str(u)  # an equal id, another object
    assert len(base._ID_TEXTS) <= 5


def test_ids_that_are_not_uuids_are_their_str() -> None:
    assert id_text("table-1") == "table-1"
    assert id_text(7) == "7"


class Shown(uuid.UUID):
    def __str__(self) -> str:
        return "shown"


def test_a_uuid_subclass_is_not_remembered_as_a_uuid() -> None:
    assert id_text(Shown(int=1)) == "shown"


def test_the_cents_of_an_amount_are_exact_whether_remembered_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base, "_CENTS", {})
    monkeypatch.setattr(base, "_CENTS_MAX", 5)  # the memo fills and starts again often
    texts = ["0.00", "5.00", "10.50", "-3.07", "0.01", "1000000.00", "7", "2.5", "-0.10"]
    for _ in range(3):
        for text in texts:
            assert cents(text) == int(Decimal(text) * 100)
            assert cents(Decimal(text)) == cents(text)
    assert len(base._CENTS) <= 5
    for _ in range(2):  # refused every time, never remembered
        with pytest.raises(ValueError, match="whole number of cents"):
            cents("0.005")
    assert "0.005" not in base._CENTS

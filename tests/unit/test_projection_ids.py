"""``projections.base.id_text``: the text of an id is ``str(id)``, whether remembered or not,
also once its memo filled up and started again."""

from __future__ import annotations

import uuid

import pytest

from projections import base
from projections.base import id_text


def test_the_text_of_an_id_is_its_str_whether_remembered_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(base, "_ID_TEXTS", {})
    monkeypatch.setattr(base, "_ID_TEXTS_MAX", 5)  # the memo fills and starts again often
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

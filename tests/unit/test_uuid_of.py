"""``domain.services.base.uuid_of``: the id a command names as text parsed once while kept, to
the same UUID ``UUID(text)`` gives, in every form ``UUID`` reads; text that is no UUID still
refused with the caller's error and its message, and never kept."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

import domain.services.base as base
from domain.errors import RoundNotFound, ShoeNotFound
from domain.services.base import uuid_of


def test_text_is_parsed_once_to_the_uuid_it_names() -> None:
    ident = uuid4()
    for text in (str(ident), str(ident).upper(), "{" + str(ident) + "}", ident.hex):
        first = uuid_of(text, RoundNotFound)
        assert first == UUID(text) == ident
        assert uuid_of(text, ShoeNotFound) is first  # kept: not parsed again
    assert uuid_of(ident, RoundNotFound) is ident


@pytest.mark.parametrize("bad", ["", "round-1", "1234", str(uuid4())[:-1]])
def test_text_that_is_no_uuid_is_refused_every_time_and_never_kept(bad: str) -> None:
    for missing in (RoundNotFound, ShoeNotFound, RoundNotFound):
        with pytest.raises(missing) as refused:
            uuid_of(bad, missing)
        assert str(refused.value) == f"{bad!r} is not a valid id (a UUID)"
    assert bad not in base._PARSED


def test_the_kept_ids_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_PARSED", {})
    monkeypatch.setattr(base, "UUIDS_KEPT", 3)
    texts = [str(uuid4()) for _ in range(7)]
    for text in texts:
        assert uuid_of(text, RoundNotFound) == UUID(text)
        assert len(base._PARSED) <= 3
    assert uuid_of(texts[-1], RoundNotFound) is base._PARSED[texts[-1]]

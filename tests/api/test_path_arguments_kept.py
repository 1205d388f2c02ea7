"""A hot command's path arguments kept by their parameters' text
(``api.hotpath.HotCommand.path_arguments``, branch `hdep4`): for every hot route and
parameters the route's fields accept or refuse, asked once (validated, then kept) and again
(from the table), the arguments are what the route's own fields give (FastAPI's
``ModelField.validate``), or none; a refusal is never kept; only strings are kept; the
table holds at most ``ROUTES_KEPT`` texts a route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apikit import service_settings
from fastapi import FastAPI

from api.hotpath import ROUTES_KEPT, HotCommand, HotCommands
from api.main import create_app


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not called")


@pytest.fixture
def hot(tmp_path: Path) -> tuple[HotCommand, ...]:
    web: FastAPI = create_app(service_settings(f"sqlite:///{tmp_path}/events.db"))
    return HotCommands(_never, web).commands()


def _fields(hot: HotCommand, params: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """The route's own fields' validation, field by field (what ``arguments`` did before)."""
    out = []
    for f in hot.path_fields:
        value, errors = f.validate(params.get(f.alias), {}, loc=("path", f.alias))
        if errors:
            return None
        out.append((f.name, value))
    return tuple(out)


TEXTS = [
    "h1",
    "alice",
    "a.b",
    "a:b",
    "a b",
    "",
    "ü",
    "x" * 200,
    "r-1",
    "00000000-0000-0000-0000-000000000001",
    "00000000000000000000000000000001",
    "T1#7",
    "T1%237",
]


def test_the_kept_arguments_are_the_fields_own(hot: tuple[HotCommand, ...]) -> None:
    assert len(hot) == 5
    for command in hot:
        (alias,) = [f.alias for f in command.path_fields]
        for rounds in range(3):  # validated and kept, then from the table
            for text in TEXTS:
                params = {alias: text}
                assert command.path_arguments(params) == _fields(command, params), (
                    command.path,
                    text,
                    rounds,
                )
        refused = [t for t in TEXTS if _fields(command, {alias: t}) is None]
        assert refused  # some texts are refused by every route
        assert all((t,) not in command.path_kept for t in refused)
        assert len(command.path_kept) == len(TEXTS) - len(refused)


def test_a_value_that_is_not_a_string_is_not_kept(hot: tuple[HotCommand, ...]) -> None:
    command = hot[0]
    (alias,) = [f.alias for f in command.path_fields]
    for value in (None, 7, b"h1"):
        assert command.path_arguments({alias: value}) == _fields(command, {alias: value})
    assert command.path_arguments({}) == _fields(command, {})
    assert command.path_kept == {}


def test_the_table_is_bounded(hot: tuple[HotCommand, ...]) -> None:
    command = hot[0]
    (alias,) = [f.alias for f in command.path_fields]
    for i in range(ROUTES_KEPT + 10):
        assert command.path_arguments({alias: f"p{i}"}) == ((alias, f"p{i}"),)
    assert 0 < len(command.path_kept) <= ROUTES_KEPT

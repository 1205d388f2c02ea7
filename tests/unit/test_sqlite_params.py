"""The process's ``sqlite3`` adapters for ``None`` and ``bytes`` (``domain.sqlite_params``):
the same values stored, and installed by the modules that bind parameters on SQLite."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import sqlite_params

ROOT = Path(__file__).resolve().parents[2]


class Blob(bytes):
    """A subclass of bytes: not an exact ``bytes``, so it goes the driver's own way."""


def _stored(values: list[object]) -> list[tuple[str, object]]:
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, v)")
        db.executemany("INSERT INTO t (v) VALUES (?)", [(v,) for v in values])
        db.execute("INSERT INTO t (v) VALUES (?)", (values[0],))  # execute binds the same way
        return db.execute("SELECT typeof(v), v FROM t ORDER BY n").fetchall()
    finally:
        db.close()


def test_install_registers_exactly_the_two_adapters() -> None:
    sqlite_params.install()
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    assert sqlite3.adapters[(bytes, sqlite3.PrepareProtocol)] is bytes
    # an adapter for any of these would make the driver adapt every parameter
    for base in (int, float, str, bytearray):
        assert (base, sqlite3.PrepareProtocol) not in sqlite3.adapters


@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=20))
def test_none_and_bytes_are_stored_as_null_and_the_same_blob(values: list[bytes | None]) -> None:
    sqlite_params.install()
    stored = _stored(list(values))
    expected = [("null", None) if v is None else ("blob", v) for v in [*values, values[0]]]
    assert stored == expected
    for (_kind, back), sent in zip(stored, values, strict=False):
        assert back is None or (type(back) is bytes and back == sent)


def test_other_values_are_bound_as_before() -> None:
    sqlite_params.install()
    values: list[object] = [Blob(b"\x00sub"), bytearray(b"ba"), 7, 2.5, "text", True, b""]
    stored = _stored(values)
    assert stored == [
        ("blob", b"\x00sub"),
        ("blob", b"ba"),
        ("integer", 7),
        ("real", 2.5),
        ("text", "text"),
        ("integer", 1),
        ("blob", b""),
        ("blob", b"\x00sub"),
    ]


@pytest.mark.parametrize("module", ["domain.sqlite_reads", "projections.store"])
def test_importing_a_module_that_binds_on_sqlite_installs_them(module: str) -> None:
    code = (
        "import sqlite3, importlib\n"
        "key = (bytes, sqlite3.PrepareProtocol)\n"
        "assert key not in sqlite3.adapters\n"
        f"importlib.import_module({module!r})\n"
        "print(sqlite3.adapters.get(key) is bytes,"
        " (type(None), sqlite3.PrepareProtocol) in sqlite3.adapters)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "True"]

"""How ``sqlite3`` binds ``None`` and ``bytes`` parameters: the same values, bound without the
driver's failed attribute look-ups.

This module owns the process's two ``sqlite3`` adapters (:func:`install`). CPython's driver
(``Modules/_sqlite/cursor.c``, 3.11-3.13) binds an exact ``int``, ``float``, ``str`` or
``bytearray`` parameter directly; any other value, ``None`` and ``bytes`` included, first goes
through ``pysqlite_microprotocols_adapt``, which looks in the adapters' table, then asks the
prepare protocol for ``__adapt__`` and the value for ``__conform__``. With no adapter, the
first of those raises and formats an ``AttributeError`` that is thrown away: about 1,600
instructions a parameter (callgrind, issue 15), 4.5 % of a projection catch-up (its ``NULL``
columns) and the state of every event a SQLite store inserts (``bytes``).

With an adapter registered for the exact type, the table's look-up finds it and the driver
binds what it returns, the value itself: ``bytes`` through ``bytes`` (which returns an exact
``bytes`` object unchanged, no copy) and ``None`` through ``{}.get`` (``None`` again, bound as
``NULL``). Both are C functions: no Python frame a parameter. What is stored is byte for byte
what the driver stored without them (``tests/unit/test_sqlite_params.py``). A subclass of
``bytes`` is not an exact ``bytes`` and goes the driver's way as before. Adapters for ``int``,
``float``, ``str`` or ``bytearray`` would make the driver adapt **every** parameter
(``BaseTypeAdapted``): none is registered here.

The adapters are the ``sqlite3`` module's, for the whole process: :func:`install` is called
when a module that binds parameters on SQLite is imported (``domain.sqlite_reads``, which
inserts the events; ``projections.store``), and installing twice changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

#: The adapter a ``None`` parameter goes through: ``{}.get(None)`` is ``None`` (bound ``NULL``).
_NONE_ADAPTER: Final[Callable[[object], None]] = dict[object, None]().get


def install() -> None:
    """Register the adapters for ``type(None)`` and ``bytes`` (registering them again
    replaces them with the same)."""
    sqlite3.register_adapter(type(None), _NONE_ADAPTER)
    sqlite3.register_adapter(bytes, bytes)


__all__ = ["install"]

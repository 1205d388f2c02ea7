"""Identifiers: the one grammar of every id a client gives, and deterministic ids.

**The grammar** (:data:`ID_PATTERN`): ASCII letters, digits and ``. _ : -``, 1 to
:data:`MAX_ID_LENGTH` (64) characters. It is the grammar of every identifier a command
brings: player, table, shoe, wallet, request, transaction, API key id and label, supervisor.
Nothing else can be recorded: no space, no ``/`` (an id is a URL path segment), no ``#``
(round ids are ``TABLE#NUMBER``), no control, zero-width or non-ASCII character (an id must
survive a ``Location`` header, a log line and a regulator's spreadsheet unchanged). Two kinds
narrow it by a rule of the model: **player ids** have no ``.`` or ``:`` (:data:`PLAYER_PATTERN`;
hand ids ``p1.1`` and wager ids ``1:behind:p1`` are built from them). :func:`check_id` and
:func:`check_player_id` refuse anything else with :class:`InvalidId` (``invalid-id``, naming the
field), before anything is recorded; the web layer's wire types (``api.ids``) use the same
patterns, so the OpenAPI document states them.

**Round ids** are a UUID or ``TABLE#NUMBER`` (:data:`ROUND_ID_PATTERN`, :func:`round_uuid`).

**Deterministic ids** (DESIGN.md: a re-executed shoe or round gets the same id). Every stable id
is a UUID version 5 in the roundaudit namespace, named by its parts joined with ``":"``, for
example ``shoe:<table id>:<shoe number>``. A ``":"`` inside a part (the grammar allows it) is
written ``%3A`` so that two different part lists never name the same id; a part without one is
named as it always was (stored ids do not change).

>>> stable_id("shoe", "T1", 3) == uuid.uuid5(ROUNDAUDIT_NAMESPACE, "shoe:T1:3")
True
>>> stable_id("shoe", "T1", 3) == stable_id("shoe", "T1", 4)
False
>>> stable_id("a:b") == stable_id("a", "b")
False
"""

from __future__ import annotations

import functools
import re
import uuid
from typing import Final

from domain.errors import InvalidId

ROUNDAUDIT_NAMESPACE: Final = uuid.UUID("6f1d2b1e-5b0a-4c43-9d7e-2d1c6e0b8a11")

MAX_ID_LENGTH: Final = 64
ID_CHARS: Final = "A-Za-z0-9._:-"
#: Every identifier a client gives (a regular expression, as in the OpenAPI document).
ID_PATTERN: Final = rf"^[{ID_CHARS}]{{1,{MAX_ID_LENGTH}}}$"
#: Player ids: the grammar without ``.`` and ``:``.
PLAYER_PATTERN: Final = rf"^[A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}}$"
UUID_PATTERN: Final = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
#: A round id: its UUID, or ``TABLE#NUMBER`` (percent-encode the ``#`` in a URL: ``%23``).
ROUND_ID_PATTERN: Final = (
    rf"^({UUID_PATTERN}|[{ID_CHARS}]{{1,{MAX_ID_LENGTH}}}#[1-9][0-9]{{0,17}})$"
)
#: A shoe id (or a wallet id): the UUID the service gave it.
SHOE_ID_PATTERN: Final = rf"^{UUID_PATTERN}$"

_ID = re.compile(ID_PATTERN, re.ASCII)
_PLAYER = re.compile(PLAYER_PATTERN, re.ASCII)
_ROUND = re.compile(ROUND_ID_PATTERN, re.ASCII)


def is_id(value: object) -> bool:
    """Whether ``value`` is an identifier of the grammar.

    >>> is_id("table-1.a:b_2"), is_id("a/b"), is_id("é"), is_id("x" * 65), is_id("a\\n")
    (True, False, False, False, False)
    """
    return isinstance(value, str) and _ID.fullmatch(value) is not None and value.isascii()


def _describe(value: object) -> str:
    if not isinstance(value, str):
        return f"a {type(value).__name__}, not a string"
    if not value:
        return "empty"
    if len(value) > MAX_ID_LENGTH:
        return f"{len(value)} characters long"
    bad = next((c for c in value if not (c.isascii() and (c.isalnum() or c in "._:-"))), None)
    return f"it contains {bad!r} (U+{ord(bad):04X})" if bad is not None else "not usable"


def check_id(value: object, field: str) -> str:
    """``value`` when it is an identifier of the grammar; else :class:`InvalidId` naming
    ``field``.

    >>> check_id("T1", "table_id")
    'T1'
    >>> check_id("T 1", "table_id")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    domain.errors.InvalidId: table_id 'T 1' is not an id (it contains ' ' (U+0020)): ...
    """
    if not is_id(value):
        raise InvalidId(
            f"{field} {_shown(value)} is not an id ({_describe(value)}): ids are 1 to "
            f"{MAX_ID_LENGTH} ASCII letters, digits and . _ : -",
            field=field,
        )
    assert isinstance(value, str)
    return value


def check_optional_id(value: object, field: str) -> str | None:
    """None, or :func:`check_id`."""
    return None if value is None else check_id(value, field)


def check_player_id(value: object, field: str = "player") -> str:
    """A player id: the grammar, without ``.`` or ``:`` (hand and wager ids are built from
    player ids).

    >>> check_player_id("p1.1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    domain.errors.InvalidId: player 'p1.1' is not a player id: ...
    """
    check_id(value, field)
    assert isinstance(value, str)
    if _PLAYER.fullmatch(value) is None:
        raise InvalidId(
            f"{field} {_shown(value)} is not a player id: player ids are 1 to {MAX_ID_LENGTH} "
            "ASCII letters, digits, _ and - (no '.' or ':', which hand and wager ids use)",
            field=field,
        )
    return value


def is_round_id(value: object) -> bool:
    """Whether ``value`` is a round id (a UUID or ``TABLE#NUMBER``)."""
    return isinstance(value, str) and value.isascii() and _ROUND.fullmatch(value) is not None


def round_uuid(value: str | uuid.UUID, field: str = "round_id") -> uuid.UUID:
    """The UUID a round id names (``TABLE#NUMBER`` is the round's deterministic id);
    :class:`InvalidId` for anything else.

    >>> round_uuid("T1#42") == stable_id("round", "T1", 42)
    True
    """
    if isinstance(value, uuid.UUID):
        return value
    if not is_round_id(value):
        raise InvalidId(
            f"{field} {_shown(value)} is not a round id: a UUID, or TABLE#NUMBER (send the "
            "'#' as %23 in a URL)",
            field=field,
        )
    if "#" in value:
        table, _, number = value.rpartition("#")
        return stable_id("round", table, int(number))
    return uuid.UUID(value)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def stable_id(*parts: object) -> uuid.UUID:
    """uuid5 in :data:`ROUNDAUDIT_NAMESPACE` of ``str(part)`` for each part, joined by ``":"``
    (a ``":"`` inside a part written ``%3A``).

    >>> stable_id("wallet", "a:b") == uuid.uuid5(ROUNDAUDIT_NAMESPACE, "wallet:a%3Ab")
    True
    """
    if not parts:
        raise ValueError("a stable id needs at least one part")
    texts = [str(part).replace(":", "%3A") for part in parts]
    return _named(":".join(texts))


#: How many names' ids :func:`stable_id` keeps (a UUID is immutable: the same one is shared).
NAMED_KEPT: Final = 16_384


@functools.lru_cache(maxsize=NAMED_KEPT)
def _named(name: str) -> uuid.UUID:
    """uuid5 of ``name`` in the roundaudit namespace, computed once per name while kept: the
    same wallets', round's, shoe's and table's ids are named by every command (uuid5's SHA-1
    and UUID construction, about 5 us each, were 2 % of a recorded round's CPU)."""
    return uuid.uuid5(ROUNDAUDIT_NAMESPACE, name)


def forget_named() -> None:
    """Forget every id :func:`stable_id` kept (what a new process starts with: the boundless
    benchmark's verifier, which verifies in the process that recorded the round, starts
    without the names the recording kept, as a verifier in a process of its own would)."""
    _named.cache_clear()


__all__ = [
    "ID_PATTERN",
    "MAX_ID_LENGTH",
    "PLAYER_PATTERN",
    "ROUNDAUDIT_NAMESPACE",
    "ROUND_ID_PATTERN",
    "SHOE_ID_PATTERN",
    "check_id",
    "check_optional_id",
    "check_player_id",
    "forget_named",
    "is_id",
    "is_round_id",
    "round_uuid",
    "stable_id",
]

"""Wire types: the exact values a request may carry, one definition each, with their patterns.

Every model (``api.schemas``) and every path or query parameter uses these types, so that the
OpenAPI document states the same grammar the service enforces (and schemathesis can check both
ways). The grammars themselves live in the domain (``domain.ids``, ``domain.money``,
``domain.cards``, ``domain.errors.check_text``, ``domain.times``), which checks them again for
callers that do not come through HTTP (the command line).

* :data:`Id` (player, table, request, transaction, key label, supervisor...):
  ``^[A-Za-z0-9._:-]{1,64}$``; :data:`PlayerId` without ``.`` and ``:``; refused with 422
  ``invalid-id`` naming the field (``api.errors``).
* :data:`RoundId` (a UUID or ``TABLE#NUMBER``), :data:`ShoeId` (a UUID), :data:`KeyId` (16 hex).
* :data:`Money`: a string of ASCII digits with at most two decimals (``"10.50"``), or a JSON
  integer; never a float, a sign, a space, ``_`` or an exponent (MONEY-1).
* :data:`CardCode`: ``AS``, ``10H``... in capitals (CARD-1).
* :data:`ClientTime`: RFC 3339 with its offset (``2024-05-01T12:00:00.120Z``).
* :data:`Text` / :data:`Reason`: at most 1,000 characters, no control character (a reason has
  one that is not a space).

A new route takes ids as ``player: PlayerId`` in its model or ``table_id: Annotated[Id,
Path()]`` in its signature, and gets the grammar, the pattern in the OpenAPI document and the
``invalid-id`` problem with nothing else to write.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from domain.cards import CARD_CODE, CARD_PATTERN
from domain.errors import MAX_TEXT
from domain.ids import (
    ID_PATTERN,
    MAX_ID_LENGTH,
    PLAYER_PATTERN,
    ROUND_ID_PATTERN,
    SHOE_ID_PATTERN,
    is_id,
    is_round_id,
    round_uuid,
)
from domain.money import AMOUNT_PATTERN, MAX_AMOUNT
from domain.times import TIME_PATTERN, is_client_time

#: Whole numbers on the wire (bodies, query and path parameters, cursors) stay within JSON's
#: exact integers, well inside every store's integer (SQLite and PostgreSQL: 2**63 - 1).
MAX_WIRE_NUMBER = 2**53 - 1
ID_ERROR = "invalid_id"
VALUE_ERROR = "invalid_value"
KEY_ID_PATTERN = "^[0-9a-f]{16}$"
TEXT_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
_NO_CONTROL = "[^\\u0000-\\u001f\\u007f-\\u009f]"
REASON_PATTERN = f"^{_NO_CONTROL}*[^\\s\\u0000-\\u001f\\u007f-\\u009f]{_NO_CONTROL}*$"


def _fullmatch(pattern: str) -> Any:
    import re

    return re.compile(pattern)


_PLAYER = _fullmatch(PLAYER_PATTERN)
_SHOE = _fullmatch(SHOE_ID_PATTERN)
_KEY = _fullmatch(KEY_ID_PATTERN)
_AMOUNT = _fullmatch(AMOUNT_PATTERN)
_TEXT = _fullmatch(TEXT_PATTERN)
_REASON = _fullmatch(REASON_PATTERN)


def _string(value: object, kind: str, error: str = ID_ERROR) -> str:
    if not isinstance(value, str):
        raise PydanticCustomError(error, f"{kind} must be a JSON string")
    return value


def _id(value: object) -> str:
    text = _string(value, "an id")
    if not is_id(text):
        raise PydanticCustomError(
            ID_ERROR, f"not an id: 1 to {MAX_ID_LENGTH} ASCII letters, digits and . _ : -"
        )
    return text


def _player(value: object) -> str:
    text = _id(value)
    if _PLAYER.fullmatch(text) is None:
        raise PydanticCustomError(
            ID_ERROR, "not a player id: ASCII letters, digits, _ and - (no '.' or ':')"
        )
    return text


def _round(value: object) -> str:
    text = _string(value, "a round id")
    if not is_round_id(text):
        raise PydanticCustomError(ID_ERROR, "not a round id: a UUID, or TABLE#NUMBER")
    return str(round_uuid(text))  # TABLE#NUMBER names the round's deterministic id


def _shoe(value: object) -> str:
    text = _string(value, "a shoe id")
    if not text.isascii() or _SHOE.fullmatch(text) is None:
        raise PydanticCustomError(ID_ERROR, "not a shoe id: the UUID the service gave it")
    return text


def _key(value: object) -> str:
    text = _string(value, "a key id")
    if not text.isascii() or _KEY.fullmatch(text) is None:
        raise PydanticCustomError(ID_ERROR, "not a key id: 16 lower-case hex digits")
    return text


def _money(value: object) -> str | int:
    if isinstance(value, bool | float):
        kind = "a boolean" if isinstance(value, bool) else f"the JSON number {value!r}"
        raise PydanticCustomError(
            "money_float",
            f'money must be an exact decimal string such as "10.50" or an integer, not {kind} '
            "(MONEY-1)",
        )
    if isinstance(value, int):
        if not 1 <= value <= MAX_AMOUNT:
            raise PydanticCustomError(
                "money_range", f"an integer amount is 1 to {MAX_AMOUNT} (MONEY-1)"
            )
        return value
    if not isinstance(value, str) or not value.isascii() or _AMOUNT.fullmatch(value) is None:
        raise PydanticCustomError(
            "money_text",
            "an amount is ASCII digits with at most 2 decimals, no sign, space, '_', exponent "
            "or leading zero, and more than zero (MONEY-1)",
        )
    return value


def _card(value: object) -> str:
    text = _string(value, "a card code", VALUE_ERROR)
    if not text.isascii() or CARD_CODE.fullmatch(text) is None:
        raise PydanticCustomError(
            VALUE_ERROR, "not a canonical card code: A, 2-10, J, Q, K then S, H, D, C (CARD-1)"
        )
    return text


def _time(value: object) -> str:
    text = _string(value, "a time", VALUE_ERROR)
    if not is_client_time(text):
        raise PydanticCustomError(
            VALUE_ERROR, "not an RFC 3339 time with its offset (2024-05-01T12:00:00.120Z)"
        )
    return text


def _text(value: object) -> str:
    text = _string(value, "text", VALUE_ERROR)
    if len(text) > MAX_TEXT or _TEXT.fullmatch(text) is None:
        raise PydanticCustomError(
            VALUE_ERROR, f"text is at most {MAX_TEXT} characters without control characters"
        )
    return text


def _reason(value: object) -> str:
    text = _text(value)
    if _REASON.fullmatch(text) is None:
        raise PydanticCustomError(VALUE_ERROR, "a reason code is required (ERR-1)")
    return text


def _schema(**schema: Any) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", **schema})


def _label(value: object) -> str:
    return "" if value == "" else _id(value)


LabelId = Annotated[
    str,
    PlainValidator(_label),
    _schema(pattern=f"^$|{ID_PATTERN}", maxLength=MAX_ID_LENGTH, examples=["studio-1"]),
]
Id = Annotated[
    str,
    PlainValidator(_id),
    _schema(pattern=ID_PATTERN, minLength=1, maxLength=MAX_ID_LENGTH, examples=["T1"]),
]
PlayerId = Annotated[
    str,
    PlainValidator(_player),
    _schema(pattern=PLAYER_PATTERN, minLength=1, maxLength=MAX_ID_LENGTH, examples=["alice"]),
]
RoundId = Annotated[
    str,
    PlainValidator(_round),
    _schema(
        pattern=ROUND_ID_PATTERN,
        description="A round id: its UUID, or TABLE#NUMBER ('#' sent as %23 in a URL).",
    ),
]
ShoeId = Annotated[str, PlainValidator(_shoe), _schema(pattern=SHOE_ID_PATTERN, format="uuid")]
KeyId = Annotated[str, PlainValidator(_key), _schema(pattern=KEY_ID_PATTERN)]
Money = Annotated[
    str | int,
    PlainValidator(_money),
    WithJsonSchema(
        {
            "oneOf": [
                {"type": "string", "pattern": AMOUNT_PATTERN},
                {"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT},
            ],
            "description": "An exact amount: a string of ASCII digits with at most two decimals "
            '("10.50"), or an integer. JSON floats are refused (MONEY-1).',
            "examples": ["10.00"],
        }
    ),
]
CardCode = Annotated[
    str, PlainValidator(_card), _schema(pattern=CARD_PATTERN, examples=["AS", "10H"])
]
ClientTime = Annotated[
    str,
    PlainValidator(_time),
    _schema(
        pattern=TIME_PATTERN,
        format="date-time",
        description="The client's clock: RFC 3339 with its offset.",
        examples=["2024-05-01T12:00:00.120Z"],
    ),
]
Text = Annotated[str, PlainValidator(_text), _schema(pattern=TEXT_PATTERN, maxLength=MAX_TEXT)]
Reason = Annotated[
    str,
    PlainValidator(_reason),
    _schema(pattern=REASON_PATTERN, minLength=1, maxLength=MAX_TEXT, examples=["dealer-error"]),
]


def one_of(values: Any) -> Any:
    """The validator of a string among ``values`` (``Annotated[str, PlainValidator(...),
    enum_schema(...)]``)."""
    choices = tuple(sorted(values))

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise PydanticCustomError("literal_error", f"one of {', '.join(choices)}")
        return value

    return PlainValidator(check)


def enum_schema(values: Any, description: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": sorted(values), "description": description})


__all__ = [
    "ID_ERROR",
    "VALUE_ERROR",
    "CardCode",
    "ClientTime",
    "Id",
    "KeyId",
    "Money",
    "PlayerId",
    "Reason",
    "RoundId",
    "ShoeId",
    "Text",
]

"""Times a client gives (``client_time``): RFC 3339 with its offset, nothing else; and the
text of a stored time (:func:`iso_text`, the transcoder's ``datetime_iso``).

>>> is_client_time("2024-05-01T12:00:00.120Z"), is_client_time("2024-05-01T14:00:00+02:00")
(True, True)
>>> is_client_time("2024-05-01 12:00"), is_client_time("yesterday")
(False, False)
>>> is_client_time("2024-02-30T00:00:00Z")
False
>>> is_client_time("2016-12-31T23:59:60Z"), is_client_time("2017-01-01T00:59:60+01:00")
(True, True)
>>> is_client_time("2024-05-01T23:27:60+21:56")  # a leap second is 23:59:60 UTC only
False
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

import orjson

from domain.errors import InvalidValue

#: RFC 3339 ``date-time`` (section 5.6): a date, ``T``, a time with optional fraction, and an
#: offset (``Z`` or ``+hh:mm``).
TIME_PATTERN: Final = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:"
    r"([0-5][0-9]|60)(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
_TIME = re.compile(TIME_PATTERN, re.ASCII)


def is_client_time(value: object) -> bool:
    """Whether ``value`` is an RFC 3339 time with its offset (and a real date)."""
    if not isinstance(value, str) or _TIME.fullmatch(value) is None:
        return False
    text = value.replace("Z", "+00:00")
    leap = value[17:19] == "60"  # YYYY-MM-DDThh:mm:60
    text = re.sub(r"(\.[0-9]{6})[0-9]+", r"\1", text)
    if leap:
        text = text[:17] + "59" + text[19:]
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return False
    if leap:  # RFC 3339 5.7: a leap second is the last second of a UTC day (23:59:60Z)
        try:
            utc = when.astimezone(UTC)
        except OverflowError:  # before year 1 or after 9999 in UTC
            return False
        return (utc.hour, utc.minute) == (23, 59)
    return True


def check_client_time(value: object, field: str = "client_time") -> str | None:
    """None, or an RFC 3339 time with its offset; :class:`InvalidValue` otherwise."""
    if value is None:
        return None
    if not is_client_time(value):
        raise InvalidValue(
            f"{field} {str(value)[:40]!r} is not an RFC 3339 time with its offset "
            "(e.g. 2024-05-01T12:00:00.120Z)",
            field=field,
        )
    assert isinstance(value, str)
    return value


def iso_text(when: datetime) -> str:
    """``when.isoformat()``, the text of every stored event's timestamp (``domain.
    persistence.OrjsonTranscoder``), the same characters, written by orjson for a
    ``datetime`` in UTC (``datetime.UTC``: the library's events' timezone): ``isoformat``
    formats through C ``printf`` and the offset's ``timedelta``, 2-3x orjson's time
    (about 370 ns an event). orjson's RFC 3339 text of a UTC ``datetime`` is
    ``isoformat``'s (``+00:00``, the microseconds left out when zero, four digits of year);
    any other time (naive, another zone, a subclass) is written by ``isoformat`` itself.

    >>> t = datetime(2024, 5, 1, 12, 0, 0, 120, tzinfo=UTC)
    >>> iso_text(t), iso_text(t.replace(microsecond=0)), iso_text(t.replace(tzinfo=None))
    ('2024-05-01T12:00:00.000120+00:00', '2024-05-01T12:00:00+00:00', '2024-05-01T12:00:00.000120')
    """
    if when.tzinfo is UTC and type(when) is datetime:
        return orjson.dumps(when).decode()[1:-1]
    return when.isoformat()


__all__ = ["TIME_PATTERN", "check_client_time", "is_client_time", "iso_text"]

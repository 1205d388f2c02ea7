"""``domain.times.iso_text``: a stored time's text is ``datetime.isoformat``'s, character for
character, whatever the time (orjson writes a UTC one; every other goes to ``isoformat``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from domain.persistence import OrjsonTranscoder
from domain.times import iso_text

ZONES = st.sampled_from(
    [
        None,
        UTC,
        timezone(timedelta(0)),  # UTC by value, not the object: isoformat's way
        timezone(timedelta(hours=2)),
        timezone(-timedelta(hours=5, minutes=30)),
        timezone(timedelta(hours=1, seconds=15, microseconds=7)),
    ]
)


@given(st.datetimes(timezones=ZONES))
def test_iso_text_is_isoformats(when: datetime) -> None:
    assert iso_text(when) == when.isoformat()


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_utc_time_round_trips_through_the_transcoder(when: datetime) -> None:
    t = OrjsonTranscoder()
    data = t.encode({"timestamp": when, "amount": Decimal("1.50")})
    assert data == (
        b'{"amount":{"_data_":"1.50","_type_":"decimal_str"},'
        b'"timestamp":{"_data_":"' + when.isoformat().encode() + b'","_type_":"datetime_iso"}}'
    )
    back = t.decode(data)["timestamp"]
    assert back == when
    assert back.utcoffset() == timedelta(0)


def test_edges() -> None:
    for when in (
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
        datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=UTC),
        datetime(2024, 5, 1, 12, 0, 0, 100_000, tzinfo=UTC),
    ):
        assert iso_text(when) == when.isoformat()

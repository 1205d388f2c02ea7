"""The idempotency record's own shortcuts, each against what it replaces:
``domain.idempotency.now_text`` is ``strftime``'s very text of ``TIME_FORMAT`` (the records'
times and the prune's cutoff sort and compare as text, so a record written before the
``%`` formatting and one after must read alike), at the edges of its range and anywhere;
``Record.answered`` is ``dataclasses.replace``'s record, whatever each field holds."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from uuid import uuid4

from hypothesis import given
from hypothesis import strategies as st

from domain.idempotency import TIME_FORMAT, Answer, Record, now_text

ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-11))]


def _strftime(at: datetime) -> str:
    return at.astimezone(UTC).strftime(TIME_FORMAT)


def test_the_edges_are_strftimes_text() -> None:
    edges = [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9, 2, 3, 4, 5, 6, 7, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(1000, 1, 1, tzinfo=UTC),
        datetime(1000, 1, 1, 4, tzinfo=timezone(timedelta(hours=5))),  # 999 in UTC
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=ZONES[1]),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2024, 5, 1, 12, 0),  # noqa: DTZ001 (naive: local time, as astimezone reads it)
    ]
    for at in edges:
        assert now_text(at) == _strftime(at), at
    assert now_text(datetime(1, 1, 1, tzinfo=UTC)) == "1-01-01T00:00:00.000000Z"  # glibc's %Y
    assert len(now_text()) == 27


#: hypothesis takes naive bounds (a day inside datetime's range each side, for the zones)
LOW, HIGH = datetime(1, 1, 2), datetime(9999, 12, 30)  # noqa: DTZ001


@given(st.datetimes(min_value=LOW, max_value=HIGH, timezones=st.sampled_from(ZONES)))
def test_any_instant_is_strftimes_text(at: datetime) -> None:
    assert now_text(at) == _strftime(at)


def test_answered_is_replace() -> None:
    """Every field given a value other than its default (a field added to ``Record`` and not
    to ``answered`` would keep its default there: this fails)."""
    values = {
        "record_id": uuid4(),
        "key_id": "kid",
        "key": "k-1",
        "fingerprint": "ab" * 32,
        "method": "POST",
        "path": "/wallets/p1/deposits",
        "created": now_text(),
        "version": 2,
        "answer": Answer(201, b"{}", (("location", "/x"),)),
        "sealed": True,
        "check_first": True,
    }
    assert set(values) == {f.name for f in dataclasses.fields(Record)}
    record = Record(**values)  # type: ignore[arg-type]
    for answer in (None, Answer(200, b"[]", (("content-type", "application/json"),))):
        for check_first in (False, True):
            got = record.answered(answer, check_first=check_first)
            assert got == dataclasses.replace(record, answer=answer, check_first=check_first)

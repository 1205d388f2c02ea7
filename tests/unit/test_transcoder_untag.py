"""The orjson transcoder's decoding restores every tagged value at any depth, as the library's
own ``JSONTranscoder`` does: its walk of a dict takes every item (no test of the item types
first), of a list only one that holds containers, so a tagged value inside dicts and lists
inside dicts and lists, a dict of scalars and a list of scalars all come back as the
library's decoding gives them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.persistence import JSONTranscoder
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.persistence import OrjsonTranscoder

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=5),
    st.decimals(allow_nan=False, allow_infinity=False, places=2),
    st.uuids(),
    st.datetimes(timezones=st.just(UTC)),
)
_KEYS = st.text(alphabet="abcdefxyz_", min_size=1, max_size=4)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=25,
)


def _library() -> JSONTranscoder:
    from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, UUIDAsHex

    t = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        t.register(transcoding)
    return t


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8))
def test_every_tagged_value_is_restored_at_any_depth(state: dict[str, Any]) -> None:
    library = _library()
    stored = OrjsonTranscoder().encode(state)
    assert (
        OrjsonTranscoder().decode(stored)
        == library.decode(stored)
        == library.decode(library.encode(state))
    )


def test_a_stored_events_shape() -> None:
    when = datetime(2026, 12, 6, 5, 16, 9, 941740, tzinfo=UTC) + timedelta(0)
    state = {
        "actor": {"id": "roundaudit", "kind": "system"},
        "card": "3D",
        "dealer": ["5D", "QS"],
        "hands": [{"stake": Decimal("5.00"), "id": UUID(int=7)}, ["x", {"at": when}]],
        "seats": {},
        "timestamp": when,
        "total": 3,
    }
    decoded = OrjsonTranscoder().decode(OrjsonTranscoder().encode(state))
    assert decoded == {**state, "hands": [state["hands"][0], ["x", {"at": when}]]}
    assert type(decoded["timestamp"]) is datetime
    assert type(decoded["hands"][0]["id"]) is UUID
    assert type(decoded["hands"][1][1]["at"]) is datetime

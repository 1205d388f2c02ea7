"""A wallet's movements' JSON array (``domain.movement_json.RenderedMovements.array``): byte
for byte ``orjson.dumps`` of the same movements as a list, whatever their number, the kept
movements' own bytes left unchanged by the brackets put on the first and last."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from domain.movement_json import RenderedMovements

AMOUNTS = st.decimals(min_value=0, max_value=10**6, places=2).map(str)
MOVEMENT = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["deposit", "withdrawal", "stake", "payout"]),
        "amount": AMOUNTS,
        "transaction_id": st.text(max_size=12),
        "rule": st.none() | st.text(max_size=5),
    }
)


def _movement(i: int) -> dict[str, Any]:
    return {"kind": "deposit", "amount": f"{i}.00", "transaction_id": f"t-{i}", "rule": None}


@given(st.lists(MOVEMENT, max_size=60))
def test_the_array_is_orjsons_list(movements: list[dict[str, Any]]) -> None:
    rendered = RenderedMovements()
    assert rendered.array(movements) == orjson.dumps(movements)
    assert rendered.array(movements) == orjson.dumps(movements)  # every one kept now


def test_every_length_and_the_kept_bytes_untouched() -> None:
    rendered = RenderedMovements()
    movements = [_movement(i) for i in range(50)]
    for n in (0, 1, 2, 3, 50):
        assert rendered.array(movements[:n]) == orjson.dumps(movements[:n])
    assert rendered.array([]) == b"[]"
    # the kept bytes of each movement are its own, without a bracket or a comma
    for m in movements:
        assert rendered.one(m) == orjson.dumps(m)
    # the same movements in another order, and one alone, after being first and last
    assert rendered.array(movements[::-1]) == orjson.dumps(movements[::-1])
    assert rendered.array(movements[49:]) == b"[" + orjson.dumps(movements[49]) + b"]"

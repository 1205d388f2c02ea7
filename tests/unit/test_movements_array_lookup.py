"""``domain.movement_json.RenderedMovements.array`` (its kept movements found in one list
comprehension): every one kept, some kept, none kept, and an entry kept under a movement's
id for another object (an id reused after the kept movement went: its bytes are not this
movement's) each give ``orjson.dumps`` of the list, and the table keeps what ``one``
keeps."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from domain.movement_json import RenderedMovements


def _movement(i: int) -> dict[str, Any]:
    return {"kind": "deposit", "amount": f"{i}.00", "transaction_id": f"t-{i}", "rule": None}


def test_every_some_and_none_kept() -> None:
    rendered = RenderedMovements()
    movements = [_movement(i) for i in range(50)]
    assert rendered.array(movements[:20]) == orjson.dumps(movements[:20])  # none kept
    assert len(rendered) == 20
    assert rendered.array(movements) == orjson.dumps(movements)  # 20 kept, 30 not
    assert len(rendered) == 50
    assert rendered.array(movements) == orjson.dumps(movements)  # every one kept
    assert rendered.array(movements[10:40]) == orjson.dumps(movements[10:40])


def test_an_entry_of_another_object_under_the_id_is_not_taken() -> None:
    """An entry whose movement is not the one asked for (its id reused) is never its bytes,
    wherever it stands in the list, and the movement's own bytes are kept instead."""
    for at in (0, 1, 25, 49):
        rendered = RenderedMovements()
        movements = [_movement(i) for i in range(50)]
        rendered.array(movements)
        stranger = _movement(1000)
        rendered._kept[id(movements[at])] = (stranger, orjson.dumps(stranger))
        assert rendered.array(movements) == orjson.dumps(movements)
        assert rendered._kept[id(movements[at])][0] is movements[at]
        assert rendered.array(movements) == orjson.dumps(movements)


@given(st.lists(st.integers(0, 30), max_size=60), st.sets(st.integers(0, 30)))
def test_any_mix_of_kept_and_new(picks: list[int], stale: set[int]) -> None:
    rendered = RenderedMovements(limit=16)
    pool = [_movement(i) for i in range(31)]
    rendered.array(pool[:16])
    for i in stale:  # entries that name another object under these movements' ids
        other = _movement(-i - 1)
        rendered._kept[id(pool[i])] = (other, orjson.dumps(other))
    movements = [pool[i] for i in picks]
    assert rendered.array(movements) == orjson.dumps(movements)
    assert rendered.array(movements) == orjson.dumps(movements)

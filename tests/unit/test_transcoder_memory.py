"""The orjson transcoder's encoded states, and the kept renderings of wallet movements, hold
their own bytes only.

``orjson.dumps`` returns bytes that keep the whole buffer it wrote them in (4 KiB and more,
whatever their length; ``sys.getsizeof`` does not show it), so every stored event's state
held until its transaction commits (a boundless batch: thousands) cost that much memory.
``OrjsonTranscoder.encode`` returns an exact copy: the same bytes, holding only themselves.
"""

from __future__ import annotations

import tracemalloc
from decimal import Decimal
from uuid import UUID

import orjson

from domain.persistence import _DUMPS_OPTIONS, OrjsonTranscoder


def _state(i: int) -> dict[str, object]:
    return {
        "originator_id": UUID(int=i),
        "player": f"p{i:06d}",
        "stake": Decimal("10.00"),
        "wager_id": f"p{i:06d}:main",
        "actor": {"kind": "system", "id": "roundaudit"},
    }


def test_encoded_state_holds_only_its_bytes() -> None:
    t = OrjsonTranscoder()
    states = [_state(i) for i in range(500)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        encoded = [t.encode(s) for s in states]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    longest = max(map(len, encoded))
    assert longest < 300
    # each encoded state: its bytes, the bytes object's header, the list's slot; not 4 KiB
    assert held / len(encoded) < longest + 200, held / len(encoded)


def test_encoded_state_is_orjsons_bytes() -> None:
    """The copy is byte for byte what orjson wrote (what is stored and sealed)."""
    t = OrjsonTranscoder()
    for i in range(20):
        data = t.encode(_state(i))
        assert type(data) is bytes
        assert data == orjson.dumps(t._tag(_state(i)), default=t._default, option=_DUMPS_OPTIONS)
        assert t.decode(data) == _state(i)


def test_rendered_movements_hold_only_their_bytes() -> None:
    """A wallet view's kept movement renderings (``domain.movement_json``): each its own
    bytes, not orjson's buffer (up to 32,768 of them are kept)."""
    from domain.movement_json import RenderedMovements

    movements = [
        {
            "kind": "stake",
            "transaction_id": f"r/p{i:06d}:main/stake",
            "amount": "10.00",
            "actor": {"kind": "system", "id": "roundaudit"},
        }
        for i in range(500)
    ]
    rendered = RenderedMovements()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for m in movements:
            rendered.one(m)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert rendered.array(movements) == orjson.dumps(movements)
    # each kept entry: its bytes (about 110), the tuple and the table's slot; not 4 KiB
    assert held / len(movements) < 600, held / len(movements)

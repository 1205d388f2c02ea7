"""``domain.movement_json.RenderedMovements.array`` made from the kept array before it
(``_next``): a window that slides by one movement, or grows by one, is the kept array's bytes
from its first movement kept and the new one's, byte for byte ``orjson.dumps`` of the list;
anything else (another movement in the window, two new ones, an array never kept) is made
movement by movement, as before; the kept arrays are bounded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.movement_json import RenderedMovements
from domain.wallet import Wallet


def _movement(i: int) -> dict[str, Any]:
    return {"kind": "deposit", "amount": f"{i}.00", "transaction_id": f"t-{i}", "rule": None}


class _Counted(RenderedMovements):
    """A table that counts the arrays made movement by movement."""

    __slots__ = ("rendered",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rendered = 0

    def _parts(self, movements: Any) -> list[bytes]:
        self.rendered += 1
        return super()._parts(movements)


def test_a_sliding_window_is_made_from_the_array_before() -> None:
    """A wallet's answers: the window grows to 50, then slides by one a movement; only the
    first array is made movement by movement."""
    table = _Counted()
    pool = [_movement(i) for i in range(120)]
    for stop in range(1, len(pool) + 1):
        window = pool[max(0, stop - 50) : stop]
        assert table.array(window) == orjson.dumps(window)
    assert table.rendered == 1
    assert len(table._arrays) == 1  # the array before is replaced, not kept beside


@pytest.mark.parametrize("n", [2, 3, 50])
def test_only_a_tail_and_one_new_is_made_from_the_array_before(n: int) -> None:
    pool = [_movement(i) for i in range(n + 2)]
    for window, made_again in (
        (pool[1 : n + 1], False),  # slid by one
        (pool[2 : n + 2], True),  # two new movements: the one before the last was never last
        (pool[:n], True),  # the same array again
        ([_movement(-1), *pool[1:n]], True),  # another object first, the same last
    ):
        table = _Counted()
        assert table.array(pool[:n]) == orjson.dumps(pool[:n])
        assert table.array(window) == orjson.dumps(window)
        assert table.rendered == 1 + made_again, window


def test_a_middle_movement_of_another_object_is_not_taken() -> None:
    """The kept array ends with the movement before the last, but a movement inside is
    another object (equal or not): made movement by movement."""
    pool = [_movement(i) for i in range(60)]
    for at in (0, 1, 25, 48):
        table = _Counted()
        table.array(pool[:50])
        changed = list(pool[1:51])
        changed[at] = {**changed[at], "amount": "999.00"}
        assert table.array(changed) == orjson.dumps(changed)
        assert table.rendered == 2


def test_the_kept_arrays_are_bounded() -> None:
    table = RenderedMovements(arrays=8)
    wallets = [[_movement(w * 1000 + i) for i in range(5)] for w in range(30)]
    for step in range(1, 6):
        for movements in wallets:
            window = movements[:step]
            assert table.array(window) == orjson.dumps(window)
            assert len(table._arrays) <= 8


def test_a_wallets_answers_through_its_query() -> None:
    """``Wallet.recent_movements_json`` after each deposit of a wallet: the JSON of its
    latest movements, byte for byte, as the window grows and slides."""
    w = Wallet.open(
        "p-next", currency="EUR", account_type="real", actor={"kind": "system", "id": "s"}
    )
    for i in range(70):
        w.deposit(f"{i + 1}.25", transaction_id=f"dep-{i}", actor={"kind": "system", "id": "s"})
        for n in (50, 3):
            assert w.recent_movements_json(n) == orjson.dumps(w.recent_movements(n))


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(1, 6), st.booleans()), min_size=1, max_size=40
    )
)
def test_any_sequence_of_windows(steps: list[tuple[int, int, bool]]) -> None:
    """Windows over a few growing logs (a new movement or not, any size), each the JSON of
    its list."""
    table = RenderedMovements(arrays=4)
    logs: list[list[dict[str, Any]]] = [[_movement(w * 1000)] for w in range(4)]
    for w, size, append in steps:
        log = logs[w]
        if append:
            log.append(_movement(w * 1000 + len(log)))
        window = log[-size:]
        assert table.array(window) == orjson.dumps(window)

"""``domain.wallet_checks.check_actor``: an actor whose fields are in the order it returns
them is copied as it is, any other order is put in that order, and a refusal is the same
whatever the order: every subset of the fields with ``kind`` and ``id``, in every order,
as a dict and as a dict subclass."""

from __future__ import annotations

from collections import OrderedDict
from itertools import combinations, permutations

import pytest

from domain.errors import InvalidWalletRequest
from domain.wallet_checks import check_actor

VALUES = {"kind": "system", "id": "cashier", "key": "k9", "role": "cashier"}
ORDER = ("kind", "id", "key", "role")


def _orders() -> list[tuple[str, ...]]:
    out = []
    for extra in range(3):
        for more in combinations(("key", "role"), extra):
            out.extend(permutations(("kind", "id", *more)))
    return out


@pytest.mark.parametrize("fields", _orders())
@pytest.mark.parametrize("kind", [dict, OrderedDict])
def test_any_order_gives_the_fields_in_order_as_a_new_dict(
    fields: tuple[str, ...], kind: type[dict[str, str]]
) -> None:
    actor = kind((f, VALUES[f]) for f in fields)
    checked = check_actor(actor)
    assert type(checked) is dict
    assert list(checked.items()) == [(f, VALUES[f]) for f in ORDER if f in fields]
    assert checked is not actor
    checked["id"] = "changed"
    assert actor["id"] == "cashier"


@pytest.mark.parametrize(
    "actor",
    [
        {"kind": "system"},
        {"id": "x", "kind": "nobody"},
        {"kind": "system", "id": "x", "other": "y"},
        {"kind": "system", "id": 3},
        {"kind": "system", "id": "x", "role": None},
        {"role": "cashier", "key": 1, "id": "x", "kind": "system"},
        [("kind", "system"), ("id", "x")],
        "system",
    ],
)
def test_refusals_whatever_the_order(actor: object) -> None:
    with pytest.raises(InvalidWalletRequest, match="actor must be"):
        check_actor(actor)


class _Read(dict[str, str]):
    """A dict whose items are read through its own ``__getitem__``."""

    def __getitem__(self, key: str) -> str:
        return "read-" + super().__getitem__(key) if key == "id" else super().__getitem__(key)


def test_a_dict_subclass_is_read_item_by_item() -> None:
    checked = check_actor(_Read(VALUES))
    assert checked == {**VALUES, "id": "read-cashier"}

"""``domain.store.fork`` of an aggregate that is not flat: one whose class copies itself
(``Wallet.__deepcopy__``) is that copy, made by its own ``__deepcopy__`` with a new memo as
``copy.deepcopy`` makes it; any other is ``copy.deepcopy``'s; either way a change of the copy
never reaches the original."""

from __future__ import annotations

import copy
from typing import Any

from domain.store import _copies_itself, fork
from domain.wallet import Wallet


class _Flat:
    pass


class _CopiesItself:
    def __init__(self) -> None:
        self.items = [[1], [2]]
        self.memos: list[dict[int, Any]] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> _CopiesItself:
        self.memos.append(memo)
        clone = object.__new__(_CopiesItself)
        clone.items = [list(i) for i in self.items]
        clone.memos = []
        return clone


class _Plain:
    def __init__(self) -> None:
        self.items = [[1], [2]]


def test_a_wallet_is_its_own_copy_as_deepcopy_makes_it() -> None:
    wallet = Wallet.open("alice")
    wallet.deposit("10.00", "dep-0")
    forked, deep = fork(wallet, (_Flat,)), copy.deepcopy(wallet)
    assert type(forked) is Wallet
    assert forked is not wallet
    assert forked.__dict__.keys() == deep.__dict__.keys()
    for name, value in deep.__dict__.items():
        if name != "_pending_events":
            assert forked.__dict__[name] is value or forked.__dict__[name] == value, name
    assert forked._pending_events == wallet._pending_events  # type: ignore[attr-defined]
    assert forked._pending_events is not wallet._pending_events  # type: ignore[attr-defined]
    forked.deposit("5.00", "dep-1")
    assert wallet.balance == 10
    assert forked.balance == 15
    assert len(wallet._pending_events) == 2  # type: ignore[attr-defined]


def test_a_class_that_copies_itself_is_called_with_a_new_memo() -> None:
    original = _CopiesItself()
    first, second = fork(original, (_Flat,)), fork(original, (_Flat,))
    assert first is not original
    assert second is not first
    assert first.items == original.items
    assert first.items[0] is not original.items[0]
    assert original.memos == [{}, {}]
    assert original.memos[0] is not original.memos[1]


def test_any_other_is_deep_copied() -> None:
    original = _Plain()
    forked = fork(original, (_Flat,))
    assert type(forked) is _Plain
    assert forked.items == original.items
    assert forked.items is not original.items
    assert forked.items[0] is not original.items[0]


def test_which_classes_copy_themselves() -> None:
    assert _copies_itself(Wallet)
    assert _copies_itself(_CopiesItself)
    assert not _copies_itself(_Plain)
    assert not _copies_itself(type)
    assert not _copies_itself(list)  # copy's own copier, though lists have no __deepcopy__

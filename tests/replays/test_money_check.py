"""The money check (``replays.verify._check_money``) compares each movement of a round's
wallets with the round's event without building its list of checks unless one differs
(``_movement_checks``): for every movement, the fields found to differ are those the whole list
finds (``quick=False``), for a boundless round untouched and with each field of a wallet
movement changed (amount, one that is no number, round, wager, rule, the rule of a payout, no
rule, the balance after, the wallet the movement is in, the movement's kind), and a movement
removed or added; and the check names each change."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from domain.application import RoundAudit
from domain.wallet import Wallet
from replays.bundle import Decoded, RoundBundle, StoreReader, wallet_id
from replays.record import SCRIPTS, play
from replays.reexecute import Verdict
from replays.verify import _check_money, _movement_checks, expected_movements


def _bundle() -> RoundBundle:
    """A scripted boundless round whose dealer busts: stakes and payouts in every wallet."""
    app = RoundAudit()
    rid = play(app, PAID)
    b = StoreReader(app).round_bundle(UUID(rid))
    assert b.shared
    assert b.money
    return b


PAID = next(s for s in SCRIPTS if s.name == "boundless-side-bets-dealer-busts")


def _event(d: Decoded, **changes: Any) -> Decoded:
    """``d`` with its event's fields changed (a copy: the bundle's own is left alone)."""
    e = d.event
    other = object.__new__(type(e))
    other.__dict__.update(e.__dict__, **changes)
    return Decoded(d.record, other, d.error, d.at)


def _first(b: RoundBundle, cls: type) -> int:
    return next(i for i, d in enumerate(b.money) if isinstance(d.event, cls))


def _changed(
    field: str, value: Any, cls: type = Wallet.StakeDebited
) -> Callable[[RoundBundle], None]:
    def change(b: RoundBundle) -> None:
        i = _first(b, cls)
        b.money[i] = _event(b.money[i], **{field: value})

    return change


def _wallet(b: RoundBundle) -> None:
    i = _first(b, Wallet.StakeDebited)
    d = b.money[i]
    record = dataclasses.replace(d.record, originator_id=wallet_id("somebody else"))
    b.money[i] = Decoded(record, d.event, d.error, d.at)


def _kind(b: RoundBundle) -> None:
    i = _first(b, Wallet.PayoutCredited)
    d = b.money[i]
    other = object.__new__(Wallet.RefundCredited)
    other.__dict__.update(d.event.__dict__)
    b.money[i] = Decoded(d.record, other, d.error, d.at)


def _removed(b: RoundBundle) -> None:
    del b.money[_first(b, Wallet.StakeDebited)]


def _added(b: RoundBundle) -> None:
    d = b.money[_first(b, Wallet.StakeDebited)]
    b.money.append(_event(d, transaction_id=f"{d.event.transaction_id}/again"))


CHANGES: dict[str, Callable[[RoundBundle], None]] = {
    "untouched": lambda b: None,
    "amount": _changed("amount", "999.99"),
    "an amount that is no number": _changed("amount", "lots"),
    "round": _changed("round_id", str(UUID(int=7))),
    "wager": _changed("wager_id", "nobody:main"),
    "rule": _changed("rule", "XX-1"),
    "no rule": _changed("rule", None),
    "a payout's rule": _changed("rule", "XX-2", Wallet.PayoutCredited),
    "balance after": _changed("balance_after", "0.01"),
    "the wallet": _wallet,
    "the kind": _kind,
    "removed": _removed,
    "added": _added,
}


EXPECTED = {
    "amount": ["wallet.amount", "balance_seen"],  # a stake: the balance before it moves too
    "an amount that is no number": ["wallet.amount"],
    "round": ["wallet.round_id"],
    "wager": ["wallet.wager_id"],
    "rule": ["wallet.rule"],
    "a payout's rule": ["wallet.rule"],
    "balance after": ["balance_seen"],
    "the wallet": ["wallet.wallet"],
    "the kind": ["wallet.(movement)"],
    "removed": ["wallet"],
    "added": ["transaction_id"],
}


def _differing(checks: list[tuple[str, Any, Any]]) -> list[tuple[str, Any, Any]]:
    return [(field, exp, rec) for field, exp, rec in checks if exp != rec]


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_each_movement_differs_where_the_whole_list_says(change: str) -> None:
    b = _bundle()
    CHANGES[change](b)
    held = {str(d.event.transaction_id): d for d in b.money}
    compared = 0
    for x in expected_movements(b.round_id, b.round):
        found = held.get(x.transaction_id)
        if found is None:
            continue
        rid = str(b.round_id)
        quick = _movement_checks(x, found, rid)
        whole = _movement_checks(x, found, rid, quick=False)
        assert _differing(quick) == _differing(whole)
        assert quick == [] or quick == whole
        compared += 1
    assert compared >= 4
    v = Verdict(str(b.round_id), len(b.round))
    v.discrepancies += _check_money(b)
    # a movement that cites no rule was booked before movements cited one: read as booked
    assert [d.field for d in v.discrepancies] == EXPECTED.get(change, [])

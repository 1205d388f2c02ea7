"""The shoe and money checks read a round's records found in **one walk** (branch ``vcpu8``:
``replays.verify._walk``): its cards dealt, its events that move money and the balance each bet
saw are, for every recorded script (classic and boundless, each record decodable or not, plain
or read without its property's call), those the three walks before it found, in the same
order; a tampered bet, card or movement is still found through it, with the check's finding."""

from __future__ import annotations

from typing import Any, cast
from uuid import UUID

import pytest

from domain.application import RoundAudit
from domain.round import Round
from replays.bundle import MOVING_EVENTS, Decoded, Deferred, RoundBundle, StoreReader
from replays.record import SCRIPTS, play
from replays.verify import CARD_DEALT, _check_money, _walk, verify_bundle

_APP = RoundAudit()
_IDS = {s.name: UUID(play(_APP, s)) for s in SCRIPTS}


def _bundle(name: str) -> RoundBundle:
    return StoreReader(_APP).round_bundle(_IDS[name])


def _event(d: Decoded, **changes: Any) -> Decoded:
    """``d`` with its event's fields changed (a copy: the bundle's own is left alone)."""
    e = d.event
    other = object.__new__(type(e))
    other.__dict__.update(e.__dict__, **changes)
    return Decoded(d.record, other, d.error, d.at)


def _before(records: list[Decoded]) -> tuple[list[Decoded], list[Decoded], dict[int, Any]]:
    """The three walks before the branch: ``_check_shoe``'s cards, ``_expected``'s records
    (those that move money) and ``_check_money``'s balances seen."""
    cards = [d for d in records if d.cls is not None and issubclass(d.cls, CARD_DEALT)]
    moving = [d for d in records if d.cls is not None and d.cls.__name__ in MOVING_EVENTS]
    seen = {
        d.position: d.event.balance_seen
        for d in records
        if d.name.endswith("BetPlaced") and hasattr(d.event, "balance_seen")
    }
    return cards, moving, seen


@pytest.mark.parametrize("read", ["plain", "deferred", "held"])
@pytest.mark.parametrize("name", sorted(_IDS))
def test_one_walk_finds_what_the_three_walks_found(name: str, read: str) -> None:
    # deferred: as the verifier reads a round (a boundless round's consequences deferred, their
    # class a slot); held: each participation record held decoded by a deferred one, as the
    # verifier's digesting read holds them (bets and settlements among them)
    records = StoreReader(_APP, defer=read == "deferred").round_bundle(_IDS[name]).round
    if read == "held":
        records = [Deferred.holding(cast(Any, None), d) for d in records]
        if name.startswith("boundless"):
            assert any(type(d) is Deferred and _walk([d]).moving for d in records)
    undecodable = [Decoded(d.record, None, "broken") for d in records[::3]]
    for each in (records, [*records, *undecodable], undecodable + records[::-1]):
        cards, moving, seen = _before(each)
        walked = _walk(each)
        assert walked.cards == cards
        assert all(a is b for a, b in zip(walked.cards, cards, strict=True))
        assert walked.moving == moving
        assert all(a is b for a, b in zip(walked.moving, moving, strict=True))
        assert walked.balance_seen == seen
        assert list(walked.balance_seen) == list(seen)
        quiet = _walk(each, bets=False)  # the shoe check's walk reads no bet's event
        assert (quiet.cards, quiet.moving, quiet.balance_seen) == (cards, moving, {})
    assert _walk(records).cards, "every script deals cards"


def _classic() -> RoundBundle:
    b = _bundle("deluxe-two-seats-surrender-split-double")
    assert b.started is not None
    assert not b.shared
    assert not b.deferring
    return b


def _findings(b: RoundBundle) -> list[tuple[Any, ...]]:
    return [
        (x.check, x.position, x.field, x.expected, x.recorded)
        for x in verify_bundle(b).discrepancies
    ]


def test_an_untouched_round_passes() -> None:
    assert verify_bundle(_classic()).ok


def test_a_tampered_balance_seen_is_found() -> None:
    b = _classic()
    at = next(i for i, d in enumerate(b.round) if isinstance(d.event, Round.BetPlaced))
    b.round[at] = _event(b.round[at], balance_seen="123456.00")
    found = [f for f in _findings(b) if f[0] == "money"]
    assert ("money", at + 1, "balance_seen") in [f[:3] for f in found]
    assert _check_money(b) == _check_money(b, _walk(b.round))


def test_a_tampered_card_is_found_by_the_shoe_check() -> None:
    b = _classic()
    at = next(i for i, d in enumerate(b.round) if isinstance(d.event, Round.CardDealt))
    b.round[at] = _event(b.round[at], shoe_position=10_000)
    found = [f for f in _findings(b) if f[0] == "shoe"]
    assert (at + 1, "shoe_position", "a card the shoe drew", 10_000) in [f[1:] for f in found]


def test_a_missing_movement_is_found_by_the_money_check() -> None:
    b = _classic()
    del b.money[0]
    assert any(f[0] == "money" and f[2] == "wallet" for f in _findings(b))

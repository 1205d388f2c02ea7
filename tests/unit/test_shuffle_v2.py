"""The shuffle's version 2 (``hmac-sha256-ctr-fisher-yates-v2``, ``domain.shuffle``): SHOE-3
for the RNG shoes opened since session 26.

Its order is a permutation of exactly its decks, reproducible from the seed, equal to an
implementation written from the module docstring alone, read lazily (``ForwardOrder``: the
first cards cost their own draws, not the whole shoe's) with the same answer in any order of
reading and from several threads; a shoe keeps the algorithm it opened with, so a version 1
shoe still deals and verifies as before, and an algorithm no shoe may name is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.shuffle
from domain.cards import RANKS, Card, decks
from domain.errors import InvalidShoe
from domain.shoe import Shoe
from domain.shuffle import (
    ALGORITHM,
    ALGORITHM_V1,
    ALGORITHM_V2,
    ALGORITHMS,
    ForwardOrder,
    commitment,
    new_seed,
    reference_order,
    shuffled_order,
    verify_order,
)

seeds = st.binary(min_size=16, max_size=64)


def docstring_order(seed: bytes, n_decks: int) -> list[str]:
    """An independent implementation of steps 7'-8' written from the module docstring."""
    cards = [rank + suit for _ in range(n_decks) for suit in "DCHS" for rank in RANKS]
    stream, counter = b"", 0

    def word() -> int:
        nonlocal stream, counter
        if len(stream) < 4:
            msg = b"roundaudit/shuffle/v2" + counter.to_bytes(8, "big")
            stream += hmac.new(seed, msg, hashlib.sha256).digest()
            counter += 1
        w, stream = int.from_bytes(stream[:4], "big"), stream[4:]
        return w

    size = len(cards)
    for i in range(size - 1):
        n = size - i
        limit = (2**32 // n) * n
        w = word()
        while w >= limit:
            w = word()
        j = i + w % n
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def test_new_shoes_open_with_version_2_and_both_versions_are_named() -> None:
    assert ALGORITHM == ALGORITHM_V2 == "hmac-sha256-ctr-fisher-yates-v2"
    assert ALGORITHMS == (ALGORITHM_V1, ALGORITHM_V2)
    seed = new_seed()
    shoe = Shoe.open_rng(
        table_id="T2", shoe_number=1, decks=8, commitment=commitment(seed), production=True
    )
    assert shoe.algorithm == ALGORITHM_V2


def test_known_answer_vector_pins_version_2() -> None:
    order = [c.code for c in shuffled_order(bytes(32), 1, ALGORITHM_V2)]
    assert order[:5] == ["9S", "2C", "2H", "JH", "3S"]
    assert order == docstring_order(bytes(32), 1)
    assert order != [c.code for c in shuffled_order(bytes(32), 1, ALGORITHM_V1)]


@settings(max_examples=60, deadline=None)
@given(seed=seeds, n_decks=st.integers(min_value=1, max_value=8))
def test_v2_order_is_the_docstring_s_and_the_reference_s_and_a_permutation(
    seed: bytes, n_decks: int
) -> None:
    domain.shuffle._cached_order.cache_clear()
    order = shuffled_order(seed, n_decks, ALGORITHM_V2)
    codes = [c.code for c in order]
    assert codes == docstring_order(seed, n_decks)
    assert tuple(order) == reference_order(seed, n_decks, ALGORITHM_V2)
    assert Counter(order) == Counter(decks(n_decks))


@settings(max_examples=40, deadline=None)
@given(
    seed=seeds,
    n_decks=st.integers(min_value=1, max_value=8),
    reads=st.lists(st.integers(min_value=-416, max_value=415), min_size=1, max_size=30),
)
def test_a_lazy_order_read_in_any_order_gives_the_whole_order_s_cards(
    seed: bytes, n_decks: int, reads: list[int]
) -> None:
    whole = reference_order(seed, n_decks, ALGORITHM_V2)
    lazy = ForwardOrder(seed, n_decks)
    size = len(whole)
    for position in reads:
        if -size <= position < size:
            assert lazy[position] == whole[position]
        else:
            with pytest.raises(IndexError):
                lazy[position]
    assert lazy[2:7] == whole[2:7]
    assert tuple(lazy) == whole
    assert len(lazy) == size
    assert lazy == whole == ForwardOrder(seed, n_decks) == list(whole)  # compared whole
    assert lazy != whole[::-1]


def test_the_first_cards_cost_their_own_draws_not_the_whole_shoe_s() -> None:
    """An RNG round's dozen cards of an 8-deck shoe (D3): a dozen steps and 2 HMAC blocks,
    where version 1 settles the whole shoe (415 steps, 52 blocks) before its first card."""
    lazy = ForwardOrder(new_seed(), 8)
    cards = [lazy[p] for p in range(12)]
    assert lazy._done == 12
    assert lazy._draws.blocks == ForwardOrder.FETCH_BLOCKS
    assert all(isinstance(c, Card) for c in cards)
    lazy[415]
    assert lazy._done == 416  # the last position is final with the step before it


def test_threads_reading_one_lazy_order_see_the_same_cards() -> None:
    seed = new_seed()
    whole = reference_order(seed, 8, ALGORITHM_V2)
    lazy = ForwardOrder(seed, 8)
    seen: list[list[Card]] = []
    start = threading.Barrier(8)

    def read(step: int) -> None:
        start.wait()
        seen.append([lazy[p] for p in range(0, 416, step)] + [lazy[p] for p in range(416)])

    threads = [threading.Thread(target=read, args=(step,)) for step in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8
    for step, cards in zip(range(1, 9), sorted(seen, key=len, reverse=True), strict=True):
        assert cards == [whole[p] for p in range(0, 416, step)] + list(whole)


def test_a_v2_shoe_deals_and_verifies_its_own_order_and_fails_under_v1() -> None:
    seed = new_seed()
    shoe = Shoe.open_rng(
        table_id="T2", shoe_number=1, decks=8, commitment=commitment(seed), production=True
    )
    cards = [shoe.draw(seed=seed, round_id="r1") for _ in range(12)]
    assert cards == list(reference_order(seed, 8, ALGORITHM_V2)[:12])
    shoe.retire(seed=seed)
    assert shoe.verify() == []
    drawn = [(d.position, d.card) for d in shoe.drawn]
    assert verify_order(commitment(seed), seed, 8, drawn, ALGORITHM_V2) == []
    wrong = verify_order(commitment(seed), seed, 8, drawn, ALGORITHM_V1)
    assert wrong
    assert all(d.rule == "SHOE-3" for d in wrong)


def test_a_shoe_opened_with_version_1_still_deals_and_verifies_version_1() -> None:
    seed = new_seed()
    shoe = Shoe.open_rng(
        table_id="T1",
        shoe_number=1,
        decks=6,
        commitment=commitment(seed),
        production=True,
        algorithm=ALGORITHM_V1,
    )
    cards = [shoe.draw(seed=seed, round_id="r1") for _ in range(10)]
    assert cards == list(reference_order(seed, 6, ALGORITHM_V1)[:10])
    assert cards != list(reference_order(seed, 6, ALGORITHM_V2)[:10])
    shoe.retire(seed=seed)
    assert shoe.algorithm == ALGORITHM_V1
    assert shoe.verify() == []


def test_an_algorithm_no_shoe_may_name_is_refused() -> None:
    seed = new_seed()
    with pytest.raises(InvalidShoe, match="unknown shuffle algorithm 'fisher-yates-v3'"):
        Shoe.open_rng(
            table_id="T1",
            shoe_number=1,
            decks=1,
            commitment=commitment(seed),
            production=True,
            algorithm="fisher-yates-v3",
        )
    with pytest.raises(ValueError, match="unknown shuffle algorithm"):
        shuffled_order(seed, 1, "fisher-yates-v3")
    with pytest.raises(ValueError, match="unknown shuffle algorithm"):
        verify_order(commitment(seed), seed, 1, [(0, "AS")], "fisher-yates-v3")

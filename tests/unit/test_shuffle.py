"""The documented RNG shuffle (domain.shuffle): SHOE-3 for RNG shoes.

An RNG shoe's order is a permutation of exactly its decks, reproducible from the seed, committed
to before play, and verifiable from the revealed seed card by card.
"""

from __future__ import annotations

import ast
import doctest
import hashlib
import hmac
import inspect
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.cards
import domain.ids
import domain.shuffle
from domain.cards import RANKS, SUITS, Card, decks
from domain.errors import InvalidCard
from domain.shuffle import (
    ALGORITHM,
    ALGORITHM_V1,
    ALGORITHM_V2,
    ByteStream,
    Discrepancy,
    block,
    commitment,
    matches_commitment,
    new_seed,
    shuffled_order,
    uniform,
    verify_order,
)

seeds = st.binary(min_size=16, max_size=64)


class Words:
    """A scripted byte source: the given 32-bit words, big-endian, in order."""

    def __init__(self, *words: int) -> None:
        self.data = b"".join(w.to_bytes(4, "big") for w in words)

    def read(self, size: int) -> bytes:
        if size > len(self.data):
            raise AssertionError("the sampler read more words than scripted")
        out, self.data = self.data[:size], self.data[size:]
        return out


def reference_order(seed: bytes, n_decks: int) -> list[str]:
    """An independent implementation written from the module docstring alone."""
    start = [rank + suit for _ in range(n_decks) for suit in "DCHS" for rank in RANKS]
    stream = b""
    counter = 0
    offset = 0

    def word() -> int:
        nonlocal stream, counter, offset
        if offset + 4 > len(stream):
            msg = b"roundaudit/shuffle/v1" + counter.to_bytes(8, "big")
            stream += hmac.new(seed, msg, hashlib.sha256).digest()
            counter += 1
        w = int.from_bytes(stream[offset : offset + 4], "big")
        offset += 4
        return w

    for i in range(len(start) - 1, 0, -1):
        n = i + 1
        limit = (2**32 // n) * n
        w = word()
        while w >= limit:
            w = word()
        j = w % n
        start[i], start[j] = start[j], start[i]
    return start


def test_doctests_pass() -> None:
    for module in (domain.shuffle, domain.ids):
        result = doctest.testmod(module)
        assert result.attempted > 0
        assert result.failed == 0


def test_algorithm_name_is_versioned() -> None:
    """This file pins version 1 (the shoes opened before session 26); new shoes open with
    version 2 (``tests/unit/test_shuffle_v2.py``)."""
    assert ALGORITHM_V1 == "hmac-sha256-ctr-fisher-yates-v1"
    assert ALGORITHM == ALGORITHM_V2 == "hmac-sha256-ctr-fisher-yates-v2"


def test_shuffle_module_never_imports_random() -> None:
    tree = ast.parse(inspect.getsource(domain.shuffle))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "random" not in imported
    assert "secrets" in imported


def test_new_seed_is_32_fresh_bytes() -> None:
    a, b = new_seed(), new_seed()
    assert isinstance(a, bytes)
    assert len(a) == 32
    assert a != b


def test_commitment_is_sha256_hex_of_the_seed() -> None:
    seed = bytes(range(32))
    assert commitment(seed) == hashlib.sha256(seed).hexdigest()
    assert matches_commitment(commitment(seed).upper(), seed)
    assert not matches_commitment(commitment(seed), seed[::-1])


def test_stream_blocks_are_hmac_sha256_of_tag_and_counter() -> None:
    seed = b"k" * 32
    for i in (0, 1, 7):
        expected = hmac.new(
            seed, b"roundaudit/shuffle/v1" + i.to_bytes(8, "big"), hashlib.sha256
        ).digest()
        assert block(seed, i) == expected
    stream = ByteStream(seed)
    assert stream.read(4) + stream.read(60) + stream.read(1) == (
        block(seed, 0) + block(seed, 1) + block(seed, 2)[:1]
    )


def test_uniform_rejects_words_at_or_above_the_limit() -> None:
    limit = (2**32 // 6) * 6
    # limit itself and above are rejected; the first word below the limit decides
    assert uniform(Words(limit, 2**32 - 1, 13), 6) == 13 % 6
    assert uniform(Words(limit - 1), 6) == (limit - 1) % 6
    assert uniform(Words(0), 1) == 0


@pytest.mark.parametrize("n", [0, -1, 2**32 + 1])
def test_uniform_refuses_an_empty_or_too_wide_range(n: int) -> None:
    with pytest.raises(ValueError, match="n must be in"):
        uniform(Words(1), n)


@given(seed=seeds, n=st.integers(min_value=1, max_value=2**32))
def test_uniform_stays_in_range(seed: bytes, n: int) -> None:
    stream = ByteStream(seed)
    for _ in range(20):
        assert 0 <= uniform(stream, n) < n


def test_uniform_is_roughly_uniform() -> None:
    stream = ByteStream(b"\x01" * 32)
    draws = Counter(uniform(stream, 6) for _ in range(60_000))
    assert set(draws) == set(range(6))
    assert all(9_500 < count < 10_500 for count in draws.values())


@pytest.mark.parametrize("n_decks", [1, 2, 4, 6, 8])
def test_shoe_3_rng_order_is_a_permutation_of_exactly_n_decks(n_decks: int) -> None:
    order = shuffled_order(new_seed(), n_decks, ALGORITHM_V1)
    assert len(order) == 52 * n_decks
    assert Counter(order) == Counter(decks(n_decks))
    assert all(count == n_decks for count in Counter(c.code for c in order).values())
    assert {c.code for c in order} == {r + s for r in RANKS for s in SUITS}
    assert list(order) != list(decks(n_decks))


def test_same_seed_same_order_and_different_seed_different_order() -> None:
    seed = new_seed()
    assert shuffled_order(seed, 6, ALGORITHM_V1) == shuffled_order(seed, 6, ALGORITHM_V1)
    other = bytes([seed[0] ^ 1]) + seed[1:]
    assert shuffled_order(other, 6, ALGORITHM_V1) != shuffled_order(seed, 6, ALGORITHM_V1)


def test_known_answer_vector_pins_version_1() -> None:
    order = [c.code for c in shuffled_order(bytes(32), 1, ALGORITHM_V1)]
    assert order[:5] == ["4S", "4C", "3H", "6H", "9C"]
    assert order == reference_order(bytes(32), 1)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, n_decks=st.sampled_from([1, 2, 8]))
def test_order_matches_an_independent_implementation_of_the_docstring(
    seed: bytes, n_decks: int
) -> None:
    assert [c.code for c in shuffled_order(seed, n_decks, ALGORITHM_V1)] == reference_order(
        seed, n_decks
    )


def test_short_seed_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        shuffled_order(b"short", 1, ALGORITHM_V1)


# ----------------------------------------------------------------------------- verify_order


def recorded(seed: bytes, n_decks: int, count: int) -> list[tuple[int, str]]:
    return [(p, c.code) for p, c in enumerate(shuffled_order(seed, n_decks, ALGORITHM_V1)[:count])]


def test_shoe_3_revealed_seed_verifies_a_clean_record() -> None:
    seed = new_seed()
    assert verify_order(commitment(seed), seed, 8, recorded(seed, 8, 120), ALGORITHM_V1) == []
    assert verify_order(commitment(seed), seed, 8, [], ALGORITHM_V1) == []


def test_shoe_3_tampered_recorded_card_fails_naming_the_position() -> None:
    seed = new_seed()
    record = recorded(seed, 2, 30)
    true_card = record[17][1]
    fake = next(c.code for c in decks(1) if c.code != true_card)
    record[17] = (17, fake)

    found = verify_order(commitment(seed), seed, 2, record, ALGORITHM_V1)

    assert found == [
        Discrepancy(
            position=17,
            expected=true_card,
            recorded=fake,
            rule="SHOE-3",
            message=f"position 17: recorded {fake} but the shuffle gives {true_card}",
        )
    ]


def test_shoe_3_tampered_seed_fails_on_the_commitment_and_the_positions() -> None:
    seed = new_seed()
    record = recorded(seed, 1, 10)
    tampered = bytes([seed[0] ^ 0xFF]) + seed[1:]

    found = verify_order(commitment(seed), tampered, 1, record, ALGORITHM_V1)

    assert found[0].position is None
    assert found[0].expected == commitment(seed)
    assert found[0].recorded == commitment(tampered)
    assert "commitment" in found[0].message
    # the tampered seed's order disagrees with the record at (almost every) position
    assert len(found) > 1
    assert {d.position for d in found[1:]} <= set(range(10))


def test_shoe_3_missing_duplicate_and_out_of_range_positions_are_reported() -> None:
    seed = new_seed()
    order = [c.code for c in shuffled_order(seed, 1, ALGORITHM_V1)]
    record = [(0, order[0]), (2, order[2]), (2, order[2]), (52, "AS"), (3, "XX")]

    found = verify_order(commitment(seed), seed, 1, record, ALGORITHM_V1)

    by_position = {d.position: d for d in found}
    assert set(by_position) == {1, 2, 3, 52}
    assert by_position[1].recorded == ""
    assert by_position[1].expected == order[1]
    assert "unaccounted" in by_position[1].message
    assert "more than once" in by_position[2].message
    assert by_position[3].recorded == "XX"
    assert "outside the shoe" in by_position[52].message


def test_verify_refuses_a_card_recorded_in_another_spelling() -> None:
    """CARD-1: a recorded card has one spelling; a lower-case code is not the shuffle's card."""
    seed = new_seed()
    record = [(p, code.lower()) for p, code in recorded(seed, 1, 5)]
    found = verify_order(commitment(seed), seed, 1, record, ALGORITHM_V1)
    assert [d.position for d in found] == [p for p, _ in record]
    with pytest.raises(InvalidCard):
        Card.parse(record[0][1])


# -- the fast, cached order (issue 15) is the documented algorithm, not a new one -------------
@settings(max_examples=60, deadline=None)
@given(seed=seeds, n_decks=st.integers(min_value=1, max_value=8))
def test_fast_cached_order_equals_the_reference_definition(seed: bytes, n_decks: int) -> None:
    assert shuffled_order(seed, n_decks, ALGORITHM_V1) == domain.shuffle.reference_order(
        seed, n_decks, ALGORITHM_V1
    )


def test_order_is_computed_once_per_seed_and_decks_and_keyed_by_algorithm() -> None:
    domain.shuffle._cached_order.cache_clear()
    seed = b"issue-15-cache-key-" + bytes(13)
    first = shuffled_order(seed, 8, ALGORITHM_V1)
    again = shuffled_order(seed, 8, ALGORITHM_V1)
    other_decks = shuffled_order(seed, 6, ALGORITHM_V1)
    info = domain.shuffle._cached_order.cache_info()
    assert again is first  # the same immutable tuple: no recomputation, nothing to copy
    assert len(other_decks) == 6 * 52  # decks are part of the key
    assert (info.hits, info.misses) == (1, 2)
    assert isinstance(first, tuple)
    assert all(isinstance(c, Card) for c in first)


def test_order_cache_is_bounded() -> None:
    domain.shuffle._cached_order.cache_clear()
    for i in range(domain.shuffle.ORDER_CACHE_SIZE + 10):
        shuffled_order(i.to_bytes(16, "big"), 1, ALGORITHM_V1)
    info = domain.shuffle._cached_order.cache_info()
    assert info.currsize == domain.shuffle.ORDER_CACHE_SIZE


@pytest.mark.parametrize("n_decks", [1, 2, 8])
def test_fast_order_with_rejected_words_takes_more_blocks_as_the_reference(
    monkeypatch: pytest.MonkeyPatch, n_decks: int
) -> None:
    """The fast order makes the blocks a shuffle needs with no rejected word at once, and one
    more block whenever the words run out: with a narrower word range (about half the words
    rejected) both definitions read the same extra blocks and deal the same order."""
    monkeypatch.setattr(domain.shuffle, "WORD_RANGE", 2**31)
    for seed in (bytes(32), b"issue-15-rejections-" + bytes(12)):
        fast = domain.shuffle._fast_order(seed, n_decks)
        assert fast == domain.shuffle.reference_order(seed, n_decks, ALGORITHM_V1)
        assert Counter(fast) == Counter(decks(n_decks))
    monkeypatch.undo()
    assert domain.shuffle._fast_order(seed, n_decks) != fast  # the narrower range mattered


def test_fast_order_words_are_the_stream_blocks() -> None:
    seed = b"issue-15-words-" + bytes(17)
    words = domain.shuffle._words(seed, 3, 2)
    assert words == tuple(
        int.from_bytes(chunk[k : k + 4], "big")
        for chunk in (block(seed, 3), block(seed, 4))
        for k in range(0, 32, 4)
    )


def test_decks_share_one_made_deck_in_the_documented_order() -> None:
    """The starting order (step 6) from the deck made once: the documented order, canonical
    cards (what ``Card.parse`` returns), the same 52 objects in every deck of every shoe."""
    deck = domain.cards.full_deck()
    assert [c.code for c in deck] == [rank + suit for suit in "DCHS" for rank in RANKS]
    assert all(c is Card.parse(c.code) for c in deck)
    assert domain.cards.full_deck() is deck
    three = decks(3)
    assert [c.code for c in three] == [c.code for c in deck] * 3
    assert all(three[52 * k + i] is deck[i] for k in range(3) for i in range(52))

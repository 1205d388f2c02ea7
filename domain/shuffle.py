"""The shuffle of an RNG shoe: documented, versioned, reproducible from a secret seed (SHOE-3).

This module owns the algorithm that turns a secret seed into the order in which cards leave an
RNG shoe, the commitment published before play, and the check that a revealed seed reproduces
every recorded card. Everything here is a pure function of its arguments; the only source of
randomness is :func:`new_seed` (the operating system's CSPRNG via :mod:`secrets`). The
:mod:`random` module is never used.

Algorithm ``hmac-sha256-ctr-fisher-yates-v1``, precisely enough to reimplement it elsewhere (the
same, for third parties, in ``docs/spec/shuffle.md``, with vectors in ``docs/spec/vectors``):

1. **Seed.** 32 bytes from a CSPRNG (:func:`new_seed`). Any byte string of at least 16 bytes is
   accepted as a seed.
2. **Commitment.** The lowercase hexadecimal SHA-256 digest of the seed bytes
   (:func:`commitment`). It is recorded when the shoe opens; the seed itself is recorded only when
   the shoe retires, so anyone can then check that it is the seed that was committed to.
3. **Byte stream.** The concatenation ``B0 || B1 || B2 || ...`` of 32-byte blocks, where
   ``Bi = HMAC-SHA256(key=seed, msg=b"roundaudit/shuffle/v1" || I)`` and ``I`` is the block index
   ``i = 0, 1, 2, ...`` as an 8-byte big-endian unsigned integer (:func:`block`).
4. **Words.** The stream is consumed 4 bytes at a time, in order, each 4 bytes read as a
   big-endian unsigned 32-bit integer ``w`` (so each block yields 8 words; no byte is skipped or
   reused).
5. **Uniform integer in [0, n)**, for ``1 <= n <= 2**32`` (:func:`uniform`): let
   ``limit = (2**32 // n) * n``; read words until one has ``w < limit`` (rejection sampling, which
   removes modulo bias); the result is ``w mod n``.
6. **Starting order.** ``n_decks`` decks one after the other, each deck in the fixed order of
   :func:`domain.cards.full_deck`: suits D, C, H, S and within each suit ranks
   A, 2, 3, 4, 5, 6, 7, 8, 9, 10, J, Q, K. Position ``k`` of the starting order is the card with
   suit ``SUITS[(k mod 52) // 13]`` and rank ``RANKS[k mod 13]``.
7. **Fisher-Yates.** With ``a`` the starting order of length ``L = 52 * n_decks``: for ``i`` from
   ``L - 1`` down to ``1``, draw ``j = uniform(i + 1)`` from the one stream and swap ``a[i]`` and
   ``a[j]`` (``i == j`` leaves ``a`` unchanged, but still consumes its draw).
8. **Result.** ``a[0]`` is the first card out of the shoe, ``a[1]`` the second, and so on.

Known-answer vector (seed = 32 zero bytes, one deck): the first five cards are
``4S 4C 3H 6H 9C``.

>>> commitment(bytes(32))
'66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925'
>>> [c.code for c in shuffled_order(bytes(32), 1)[:5]]
['4S', '4C', '3H', '6H', '9C']
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from domain.cards import Card, decks
from domain.errors import InvalidCard

ALGORITHM: Final = "hmac-sha256-ctr-fisher-yates-v1"
DOMAIN_TAG: Final = b"roundaudit/shuffle/v1"
SEED_BYTES: Final = 32
MIN_SEED_BYTES: Final = 16
BLOCK_BYTES: Final = 32
WORD_BYTES: Final = 4
WORD_RANGE: Final = 2**32
RULE: Final = "SHOE-3"


def new_seed() -> bytes:
    """A fresh secret seed: 32 bytes from the operating system's CSPRNG."""
    return secrets.token_bytes(SEED_BYTES)


def _check_seed(seed: bytes) -> None:
    if not isinstance(seed, bytes):
        raise TypeError(f"a seed is bytes, got {type(seed).__name__}")
    if len(seed) < MIN_SEED_BYTES:
        raise ValueError(f"a seed needs at least {MIN_SEED_BYTES} bytes, got {len(seed)}")


def commitment(seed: bytes) -> str:
    """The public commitment to a seed: lowercase hex SHA-256 of the seed bytes.

    >>> commitment(b"")
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    """
    return hashlib.sha256(seed).hexdigest()


def matches_commitment(commitment_hex: str, seed: bytes) -> bool:
    """Whether ``seed`` is the seed committed to by ``commitment_hex`` (case-insensitive).

    >>> matches_commitment(commitment(b"x" * 16), b"x" * 16)
    True
    >>> matches_commitment(commitment(b"x" * 16), b"y" * 16)
    False
    """
    return hmac.compare_digest(commitment(seed), commitment_hex.strip().lower())


def block(seed: bytes, index: int) -> bytes:
    """Block ``index`` of the byte stream: HMAC-SHA256(seed, DOMAIN_TAG || index as 8 bytes BE).

    >>> len(block(bytes(32), 0))
    32
    >>> block(bytes(32), 0) == block(bytes(32), 1)
    False
    """
    if index < 0:
        raise ValueError("block index must be >= 0")
    return hmac.new(seed, DOMAIN_TAG + index.to_bytes(8, "big"), hashlib.sha256).digest()


class ByteSource(Protocol):
    """Anything :func:`uniform` can read bytes from (a :class:`ByteStream`, or a test double)."""

    def read(self, size: int) -> bytes: ...


class ByteStream:
    """The byte stream ``block(seed, 0) || block(seed, 1) || ...``, read front to back.

    >>> s = ByteStream(bytes(32))
    >>> s.read(40) == block(bytes(32), 0) + block(bytes(32), 1)[:8]
    True
    """

    __slots__ = ("_buffer", "_next_block", "_seed")

    def __init__(self, seed: bytes) -> None:
        _check_seed(seed)
        self._seed = seed
        self._next_block = 0
        self._buffer = b""

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes of the stream."""
        if size < 0:
            raise ValueError("size must be >= 0")
        while len(self._buffer) < size:
            self._buffer += block(self._seed, self._next_block)
            self._next_block += 1
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


def uniform(stream: ByteSource, n: int) -> int:
    """A uniform integer in ``[0, n)``: rejection sampling on 4-byte big-endian words.

    Words ``>= (2**32 // n) * n`` are rejected and the next word is read.

    >>> class Words:
    ...     def __init__(self, *words: int) -> None:
    ...         self.data = b"".join(w.to_bytes(4, "big") for w in words)
    ...     def read(self, size: int) -> bytes:
    ...         out, self.data = self.data[:size], self.data[size:]
    ...         return out
    >>> uniform(Words(7), 5)
    2
    >>> uniform(Words(2**32 - 1, 7), 3)  # 2**32 - 1 is rejected for n = 3
    1
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if not 1 <= n <= WORD_RANGE:
        raise ValueError(f"n must be in 1..2**32, got {n}")
    limit = (WORD_RANGE // n) * n
    while True:
        word = int.from_bytes(stream.read(WORD_BYTES), "big")
        if word < limit:
            return word % n


def shuffled_order(seed: bytes, n_decks: int) -> tuple[Card, ...]:
    """The order in which an RNG shoe of ``n_decks`` decks deals its cards (position 0 first).

    The order is computed once per ``(algorithm, seed, decks)`` and kept in a small
    least-recently-used cache (:data:`ORDER_CACHE_SIZE` shoes): a shoe draws hundreds of cards
    over many rounds, and every draw checks its position against this order (issue 15: the
    8-deck shuffle was recomputed for every card). The result is an immutable tuple of
    immutable cards, so sharing it is safe; :func:`reference_order` is the step-by-step
    definition it is tested against.

    >>> from collections import Counter
    >>> order = shuffled_order(bytes(32), 2)
    >>> len(order), Counter(order) == Counter(decks(2))
    (104, True)
    >>> shuffled_order(bytes(32), 2) is order
    True
    """
    _check_seed(seed)
    if isinstance(n_decks, bool) or not isinstance(n_decks, int):
        raise TypeError(f"n_decks must be an int, got {type(n_decks).__name__}")
    return _cached_order(ALGORITHM, bytes(seed), n_decks)


#: How many shoes' orders :func:`shuffled_order` keeps (a live studio: one open shoe a table).
ORDER_CACHE_SIZE: Final = 512


@functools.lru_cache(maxsize=ORDER_CACHE_SIZE)
def _cached_order(algorithm: str, seed: bytes, n_decks: int) -> tuple[Card, ...]:
    assert algorithm == ALGORITHM  # the key names the algorithm: a new one gets its own entry
    return _fast_order(seed, n_decks)


def _words(seed: bytes, start: int, count: int) -> tuple[int, ...]:
    """The stream's 32-bit big-endian words of blocks ``start`` to ``start + count - 1``
    (steps 3-4): each block's HMAC from one keyed state copied (what :func:`block` computes
    with a new key each time), all unpacked at once."""
    keyed = hmac.new(seed, DOMAIN_TAG, hashlib.sha256)
    out = []
    for index in range(start, start + count):
        h = keyed.copy()
        h.update(index.to_bytes(8, "big"))
        out.append(h.digest())
    return struct.unpack(f">{8 * count}I", b"".join(out))


def _fast_order(seed: bytes, n_decks: int) -> tuple[Card, ...]:
    """Steps 5-8 over :func:`_words`: the same draws as :func:`reference_order`, without
    slicing a byte buffer for every word. The blocks a shuffle needs when no word is rejected
    are made at once; a rejected word (rare: ``n / 2**32`` a draw) takes one more block when
    the words run out."""
    cards = list(decks(n_decks))
    blocks = (len(cards) + 6) // 8  # len(cards) - 1 draws, 8 words a block
    words = _words(seed, 0, blocks)
    at = 0
    for i in range(len(cards) - 1, 0, -1):
        n = i + 1
        limit = (WORD_RANGE // n) * n
        while True:
            if at == len(words):
                words += _words(seed, blocks, 1)
                blocks += 1
            word = words[at]
            at += 1
            if word < limit:
                break
        j = word % n
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


def reference_order(seed: bytes, n_decks: int) -> tuple[Card, ...]:
    """The shuffle exactly as the module docstring defines it (:class:`ByteStream` and
    :func:`uniform`, one word at a time); :func:`shuffled_order` must always equal it.

    >>> reference_order(bytes(32), 2) == shuffled_order(bytes(32), 2)
    True
    """
    _check_seed(seed)
    cards = list(decks(n_decks))
    stream = ByteStream(seed)
    for i in range(len(cards) - 1, 0, -1):
        j = uniform(stream, i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


@dataclass(frozen=True, slots=True)
class Discrepancy:
    """One way a record disagrees with the committed shuffle.

    ``position`` is ``None`` for a seed that does not match the commitment; ``expected`` and
    ``recorded`` are card codes ("" where there is none) or, for the seed, commitments.
    """

    position: int | None
    expected: str
    recorded: str
    rule: str
    message: str


def verify_order(
    commitment_hex: str,
    seed: bytes,
    n_decks: int,
    drawn: Sequence[tuple[int, str]],
) -> list[Discrepancy]:
    """Check recorded ``(position, card code)`` pairs against the order ``seed`` produces.

    Returns an empty list when the seed matches the commitment and every recorded card is the
    card at its position. Otherwise one :class:`Discrepancy` for a seed that does not match the
    commitment (listed first; the positions are still compared with the order this seed gives),
    and one for each position whose recorded card differs, that is out of range, that is recorded
    twice, or that is missing below the highest recorded position (a card left unaccounted).

    >>> seed = bytes(32)
    >>> order = shuffled_order(seed, 1)
    >>> verify_order(commitment(seed), seed, 1, [(0, order[0].code), (1, order[1].code)])
    []
    >>> [d.position for d in verify_order(commitment(seed), seed, 1, [(0, order[1].code)])]
    [0]
    """
    found: list[Discrepancy] = []
    _check_seed(seed)
    recorded_commitment = commitment(seed)
    if not matches_commitment(commitment_hex, seed):
        found.append(
            Discrepancy(
                position=None,
                expected=commitment_hex,
                recorded=recorded_commitment,
                rule=RULE,
                message=(
                    f"the seed's SHA-256 is {recorded_commitment}, not the commitment "
                    f"{commitment_hex} recorded when the shoe opened"
                ),
            )
        )
    # the cards, read only at the positions asked (a shoe of 8 decks has 416, an RNG round's
    # own shoe draws a dozen of them)
    order = shuffled_order(seed, n_decks)
    seen: dict[int, str] = {}
    for position, code in sorted(drawn, key=lambda pair: pair[0]):
        if not 0 <= position < len(order):
            found.append(
                Discrepancy(
                    position,
                    "",
                    code,
                    RULE,
                    f"position {position} is outside the shoe (0..{len(order) - 1})",
                )
            )
            continue
        expected = order[position].code
        try:
            normalised = Card.parse(code).code
        except InvalidCard:
            normalised = None
        if position in seen:
            found.append(
                Discrepancy(
                    position,
                    expected,
                    code,
                    RULE,
                    f"position {position} is recorded more than once ({seen[position]} and {code})",
                )
            )
        elif normalised != expected:
            found.append(
                Discrepancy(
                    position,
                    expected,
                    code,
                    RULE,
                    f"position {position}: recorded {code} but the shuffle gives {expected}",
                )
            )
        seen.setdefault(position, code)
    if seen:
        for position in range(max(seen)):
            if position not in seen:
                found.append(
                    Discrepancy(
                        position,
                        order[position].code,
                        "",
                        RULE,
                        f"position {position} ({order[position].code}) has no record although "
                        "later positions do: a card left the shoe unaccounted",
                    )
                )
    found.sort(key=lambda d: -1 if d.position is None else d.position)
    return found

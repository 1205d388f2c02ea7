"""The shuffle of an RNG shoe: documented, versioned, reproducible from a secret seed (SHOE-3).

This module owns the algorithms that turn a secret seed into the order in which cards leave an
RNG shoe, the commitment published before play, and the check that a revealed seed reproduces
every recorded card. A shoe records the algorithm it was opened with (``Shoe.Opened``'s
``algorithm``) and is dealt and verified by that one: :data:`ALGORITHM_V1` for the shoes opened
before session 26, :data:`ALGORITHM_V2` (:data:`ALGORITHM`) for the shoes opened since.
Everything here is a pure function of its arguments; the only source of randomness is
:func:`new_seed` (the operating system's CSPRNG via :mod:`secrets`). The :mod:`random` module is
never used.

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

Algorithm ``hmac-sha256-ctr-fisher-yates-v2`` (:data:`ALGORITHM_V2`): steps 1, 2 and 4-6 as
v1; the byte stream of step 3 with the tag ``b"roundaudit/shuffle/v2"`` (the same seed gives
v1 and v2 unrelated streams); and Fisher-Yates **from the bottom up**:

7'. With ``a`` the starting order of length ``L``: for ``i`` from ``0`` up to ``L - 2``, draw
    ``j = i + uniform(L - i)`` and swap ``a[i]`` and ``a[j]``.
8'. ``a[0]`` is the first card out, as in v1. Position ``p`` is final once step ``p`` is done,
    so the first ``k`` cards need ``k`` draws (:class:`ForwardOrder`), where v1's first card is
    the last one its shuffle settles: an RNG variant's shoe of 8 decks deals a dozen cards a
    round (D3) and v1 drew 415 words and 52 HMAC blocks for them, v2 about a dozen and 2.

Known-answer vector (seed = 32 zero bytes, one deck): the first five cards are
``9S 2C 2H JH 3S``.

>>> commitment(bytes(32))
'66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925'
>>> [c.code for c in shuffled_order(bytes(32), 1, ALGORITHM_V1)[:5]]
['4S', '4C', '3H', '6H', '9C']
>>> [c.code for c in shuffled_order(bytes(32), 1, ALGORITHM_V2)[:5]]
['9S', '2C', '2H', 'JH', '3S']
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, overload

from domain.cards import Card, decks
from domain.errors import InvalidCard

ALGORITHM_V1: Final = "hmac-sha256-ctr-fisher-yates-v1"
ALGORITHM_V2: Final = "hmac-sha256-ctr-fisher-yates-v2"
#: The algorithm new RNG shoes are opened with (a shoe keeps the one it was opened with).
ALGORITHM: Final = ALGORITHM_V2
#: Every algorithm a recorded shoe may name, each with its byte stream's tag (step 3).
TAGS: Final = {ALGORITHM_V1: b"roundaudit/shuffle/v1", ALGORITHM_V2: b"roundaudit/shuffle/v2"}
ALGORITHMS: Final = tuple(TAGS)
DOMAIN_TAG: Final = TAGS[ALGORITHM_V1]
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


def block(seed: bytes, index: int, tag: bytes = DOMAIN_TAG) -> bytes:
    """Block ``index`` of the byte stream: HMAC-SHA256(seed, tag || index as 8 bytes BE), the
    tag v1's unless given (:data:`TAGS`).

    >>> len(block(bytes(32), 0))
    32
    >>> block(bytes(32), 0) == block(bytes(32), 1)
    False
    >>> block(bytes(32), 0) == block(bytes(32), 0, TAGS[ALGORITHM_V2])
    False
    """
    if index < 0:
        raise ValueError("block index must be >= 0")
    return hmac.new(seed, tag + index.to_bytes(8, "big"), hashlib.sha256).digest()


def tag_of(algorithm: str) -> bytes:
    """The byte stream's tag of ``algorithm``; an algorithm no shoe may name is refused."""
    try:
        return TAGS[algorithm]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown shuffle algorithm {algorithm!r}; supported: {', '.join(ALGORITHMS)}"
        ) from None


class ByteSource(Protocol):
    """Anything :func:`uniform` can read bytes from (a :class:`ByteStream`, or a test double)."""

    def read(self, size: int) -> bytes: ...


class ByteStream:
    """The byte stream ``block(seed, 0) || block(seed, 1) || ...``, read front to back.

    >>> s = ByteStream(bytes(32))
    >>> s.read(40) == block(bytes(32), 0) + block(bytes(32), 1)[:8]
    True
    """

    __slots__ = ("_buffer", "_next_block", "_seed", "_tag")

    def __init__(self, seed: bytes, tag: bytes = DOMAIN_TAG) -> None:
        _check_seed(seed)
        self._seed = seed
        self._tag = tag
        self._next_block = 0
        self._buffer = b""

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes of the stream."""
        if size < 0:
            raise ValueError("size must be >= 0")
        while len(self._buffer) < size:
            self._buffer += block(self._seed, self._next_block, self._tag)
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


def shuffled_order(seed: bytes, n_decks: int, algorithm: str = ALGORITHM) -> Sequence[Card]:
    """The order in which an RNG shoe of ``n_decks`` decks, opened with ``algorithm``, deals its
    cards (position 0 first): v1's a tuple, v2's a :class:`ForwardOrder` that shuffles only as
    far as it is read.

    The order is computed once per ``(algorithm, seed, decks)`` and kept in a small
    least-recently-used cache (:data:`ORDER_CACHE_SIZE` shoes): a shoe draws hundreds of cards
    over many rounds, and every draw checks its position against this order (issue 15: the
    8-deck shuffle was recomputed for every card). The result is an immutable tuple of
    immutable cards, so sharing it is safe; :func:`reference_order` is the step-by-step
    definition it is tested against.

    >>> from collections import Counter
    >>> order = shuffled_order(bytes(32), 2, ALGORITHM_V1)
    >>> len(order), Counter(order) == Counter(decks(2))
    (104, True)
    >>> shuffled_order(bytes(32), 2, ALGORITHM_V1) is order
    True
    >>> Counter(shuffled_order(bytes(32), 2)) == Counter(decks(2))
    True
    """
    _check_seed(seed)
    if isinstance(n_decks, bool) or not isinstance(n_decks, int):
        raise TypeError(f"n_decks must be an int, got {type(n_decks).__name__}")
    tag_of(algorithm)
    return _cached_order(algorithm, bytes(seed), n_decks)


#: How many shoes' orders :func:`shuffled_order` keeps (a live studio: one open shoe a table).
ORDER_CACHE_SIZE: Final = 512


@functools.lru_cache(maxsize=ORDER_CACHE_SIZE)
def _cached_order(algorithm: str, seed: bytes, n_decks: int) -> Sequence[Card]:
    if algorithm == ALGORITHM_V1:  # the key names the algorithm: each its own entries
        return _fast_order(seed, n_decks)
    return ForwardOrder(seed, n_decks)


def _words(seed: bytes, start: int, count: int, keyed: hmac.HMAC | None = None) -> tuple[int, ...]:
    """The stream's 32-bit big-endian words of blocks ``start`` to ``start + count - 1``
    (steps 3-4): each block's HMAC from one keyed state copied (what :func:`block` computes
    with a new key each time; ``keyed``: the seed and a tag's state, v1's unless given), all
    unpacked at once."""
    if keyed is None:
        keyed = hmac.new(seed, DOMAIN_TAG, hashlib.sha256)
    out = []
    for index in range(start, start + count):
        h = keyed.copy()
        h.update(index.to_bytes(8, "big"))
        out.append(h.digest())
    return struct.unpack(f">{8 * count}I", b"".join(out))


class _Draws:
    """Step 5's uniform draws, over :func:`_words` fetched ``fetch`` blocks at a time (the
    first fetch ``first`` blocks): the one home of the rejection loop for the fast paths
    (:func:`uniform` is the definition, one word at a time, that they are tested against).
    ``blocks`` counts the blocks fetched."""

    __slots__ = ("_at", "_fetch", "_keyed", "_seed", "_words", "blocks")

    def __init__(self, seed: bytes, tag: bytes, first: int, fetch: int) -> None:
        self._seed = seed
        self._keyed = hmac.new(seed, tag, hashlib.sha256)
        self._fetch = fetch
        self._words = _words(seed, 0, first, self._keyed) if first else ()
        self._at = 0  # the next word's index in _words
        self.blocks = first

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (step 5): words ``>= (2**32 // n) * n`` are
        rejected, and a rejected word, or words run out, takes the next blocks."""
        limit = (WORD_RANGE // n) * n
        words, at = self._words, self._at
        while True:
            if at == len(words):
                words = self._words = _words(self._seed, self.blocks, self._fetch, self._keyed)
                self.blocks += self._fetch
                at = 0
            word = words[at]
            at += 1
            if word < limit:
                self._at = at
                return word % n


def _fast_order(seed: bytes, n_decks: int) -> tuple[Card, ...]:
    """Steps 5-8 over :class:`_Draws`: the same draws as :func:`reference_order`, without
    slicing a byte buffer for every word. The blocks a shuffle needs when no word is rejected
    are made at once; a rejected word (rare: ``n / 2**32`` a draw) takes one more block when
    the words run out."""
    cards = list(decks(n_decks))
    draws = _Draws(
        seed, DOMAIN_TAG, (len(cards) + 6) // 8, 1
    )  # len(cards) - 1 draws, 8 words a block
    below = draws.below
    for i in range(len(cards) - 1, 0, -1):
        j = below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


class ForwardOrder(Sequence[Card]):
    """A v2 shoe's order (steps 7'-8'), shuffled only as far as it is read: reading position
    ``p`` does the steps up to ``p`` not done yet (the words of the stream fetched a few blocks
    at a time), and a position once final is never moved again, so it is read without the
    lock the steps take (threads of one process may deal from the same shoe's order)."""

    __slots__ = ("_cards", "_done", "_draws", "_lock")

    #: Blocks fetched at a time: a round's dozen cards (and a rare rejected word) in one call.
    FETCH_BLOCKS: Final = 2

    def __init__(self, seed: bytes, n_decks: int) -> None:
        _check_seed(seed)
        self._cards = list(decks(n_decks))
        self._done = 0  # positions below it are final
        self._draws = _Draws(seed, TAGS[ALGORITHM_V2], 0, self.FETCH_BLOCKS)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cards)

    @overload
    def __getitem__(self, position: int) -> Card: ...

    @overload
    def __getitem__(self, position: slice) -> tuple[Card, ...]: ...

    def __getitem__(self, position: int | slice) -> Card | tuple[Card, ...]:
        if isinstance(position, slice):
            return tuple(self[i] for i in range(*position.indices(len(self))))
        size = len(self._cards)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError(f"position {position} is outside the shoe (0..{size - 1})")
        if position >= self._done:
            self._settle(position + 1)
        return self._cards[position]

    def __iter__(self) -> Iterator[Card]:
        self._settle(len(self._cards))
        return iter(self._cards)

    def __eq__(self, other: object) -> bool:
        """Equal to any order of the same cards in the same positions (a tuple, a list, another
        shoe's order): compared whole, as version 1's tuples are."""
        if isinstance(other, ForwardOrder | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # its cards are settled as it is read

    def _settle(self, count: int) -> None:
        """Do the steps that make the first ``count`` positions final."""
        with self._lock:
            cards, size = self._cards, len(self._cards)
            below = self._draws.below
            i = self._done
            while i < count and i < size - 1:
                j = i + below(size - i)
                cards[i], cards[j] = cards[j], cards[i]
                i += 1
            self._done = size if i >= size - 1 else i  # the last position is final with L - 2


def reference_order(seed: bytes, n_decks: int, algorithm: str = ALGORITHM) -> tuple[Card, ...]:
    """The shuffle exactly as the module docstring defines it (:class:`ByteStream` and
    :func:`uniform`, one word at a time); :func:`shuffled_order` must always equal it.

    >>> reference_order(bytes(32), 2, ALGORITHM_V1) == shuffled_order(bytes(32), 2, ALGORITHM_V1)
    True
    >>> reference_order(bytes(32), 2) == tuple(shuffled_order(bytes(32), 2))
    True
    """
    _check_seed(seed)
    cards = list(decks(n_decks))
    stream = ByteStream(seed, tag_of(algorithm))
    size = len(cards)
    if algorithm == ALGORITHM_V1:  # step 7: from the top down
        for i in range(size - 1, 0, -1):
            j = uniform(stream, i + 1)
            cards[i], cards[j] = cards[j], cards[i]
    else:  # step 7': from the bottom up
        for i in range(size - 1):
            j = i + uniform(stream, size - i)
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
    algorithm: str = ALGORITHM,
) -> list[Discrepancy]:
    """Check recorded ``(position, card code)`` pairs against the order ``seed`` produces under
    ``algorithm`` (the one the shoe was opened with; an unknown one: ``ValueError``).

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
    order = shuffled_order(seed, n_decks, algorithm)
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

"""The Merkle leaf of every transaction: written by the transaction that records the events.

This module owns the leaf format ``roundaudit/leaf/v2`` (the bytes a transaction's leaf holds,
and their parsing, with the process's bounded store of leaves kept parsed by their tree hash,
no text held: :func:`parse_leaf`, :func:`parse_leaves`, :func:`kept_first`,
:func:`kept_parsed`); the commit writer that appends one leaf per transaction to the Merkle
log's table is ``domain.leaf_writer``. Both are in ``domain/`` because the recorder writes the
leaves at commit time; the log's reading, its checkpoints and proofs are ``replays.log``'s.
The format is specified for third parties in ``docs/spec/leaf.md``.

**Leaf** (UTF-8 text, every line ending with a newline, no other whitespace than the single
spaces shown)::

    roundaudit/leaf/v2 <kind>
    <notification id> <originator id> <version> <sha256> <topic>
    ...

``kind`` is ``commit`` (the events of one transaction, in insertion order) or ``backfill``
(events recorded before this format existed, sealed once by the migration, up to
:data:`BACKFILL_PAGE` per leaf). Each event line: the event's notification id (its position
in the application's log), its originator id (the UUID, lower case with hyphens), its version,
the lowercase hex SHA-256 of its state **exactly as stored**, and its topic (the rest of the
line). Integers are decimal without leading zeros.

**Where leaves go.** Table ``merkle_log`` (``stored_merkle_log`` / ``roundaudit_merkle_log``),
originator :data:`LEAVES_ID`, version ``i + 1`` for leaf ``i``, topic :data:`LEAF_TOPIC`. The
writer reads the last leaf row under the events table's write lock and appends the next, so
leaves are numbered 0, 1, 2... in commit order; the primary key refuses a second leaf ``i``.

**Migration.** A store written before seal-at-commit holds events no leaf covers (and maybe
the per-round leaves of the old seal, topic :data:`ROUND_LEAF_TOPIC`, which stay in the log
and keep verifying). The first transaction that finds the last leaf row not of this format
(or no leaf at all while events exist) first appends ``backfill`` leaves for every event
recorded before it, then its own leaf; :func:`migrate` does the same on its own, in a
transaction with no events (``roundaudit seal`` runs it when it starts).

>>> from uuid import UUID
>>> e = CommittedEvent(7, UUID(int=1), 1, "domain.shoe:Shoe.Opened", b'{"a":1}')
>>> print(leaf_bytes(COMMIT, [e]).decode().replace(state_digest(b'{"a":1}'), "<sha256>"), end="")
roundaudit/leaf/v2 commit
7 00000000-0000-0000-0000-000000000001 1 <sha256> domain.shoe:Shoe.Opened
>>> parse_leaf(leaf_bytes(COMMIT, [e])).entries[0].notification_id
7
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Final, Literal, NamedTuple, TypeVar
from uuid import UUID, SafeUUID

from domain.commits import CommittedEvent
from domain.ids import stable_id

__all__ = [
    "BACKFILL",
    "BACKFILL_PAGE",
    "COMMIT",
    "FORMAT",
    "LEAF_TOPIC",
    "LEAVES_ID",
    "PARSED_MAX",
    "PARSED_MAX_BYTES",
    "PURPOSE",
    "ROUND_LEAF_TOPIC",
    "LeafEntry",
    "LeafFormatError",
    "ParsedLeaf",
    "forget_parsed",
    "kept_first",
    "kept_parsed",
    "leaf_bytes",
    "parse_leaf",
    "parse_leaves",
    "state_digest",
]

FORMAT: Final = "roundaudit/leaf/v2"
COMMIT: Final = "commit"
BACKFILL: Final = "backfill"
KINDS: Final = (COMMIT, BACKFILL)
#: The Merkle log's table (a commit table of the hook) and the originator of its leaf rows.
PURPOSE: Final = "merkle_log"
LEAVES_ID: Final = stable_id("merkle-log", "leaves")
LEAF_TOPIC: Final = "roundaudit:merkle-leaf/v2"
#: The per-round leaves of the seal before seal-at-commit (``replays.chain``: JSON, v1).
ROUND_LEAF_TOPIC: Final = "roundaudit:merkle-leaf"
#: Events per backfill leaf.
BACKFILL_PAGE: Final = 1000


class LeafFormatError(ValueError):
    """Bytes that are not a ``roundaudit/leaf/v2`` leaf."""


class LeafEntry(NamedTuple):
    """One event a leaf commits to (immutable; a tuple: made by the thousand per log read)."""

    notification_id: int
    originator_id: UUID
    version: int
    sha256: str  # lowercase hex of SHA-256(state as stored)
    topic: str

    @property
    def key(self) -> tuple[UUID, int]:
        return (self.originator_id, self.version)


class ParsedLeaf:
    """A parsed leaf: its kind and its entries (:class:`LeafEntry`, in the leaf's order).

    The parser gives its fields as columns; the entries are made from them
    the first time they are read, then kept instead of the columns. A verifier reads the whole
    log to locate any event (``replays.log``: the streams, versions and topics alone) but
    compares entry by entry only the leaves of the round it checks: the others' entries are
    never made (a tuple each, and the notification id's integer); what the log indexes, the
    entries' runs (:meth:`runs`) and the span (:meth:`span`), is found once and kept with the
    leaf. Immutable as far as its readers can tell (made twice by two threads at once, the
    entries, runs and span are equal)."""

    __slots__ = ("_columns", "_entries", "_runs", "_span", "kind", "size")

    def __init__(
        self,
        kind: str,
        entries: Sequence[LeafEntry] | None = None,
        *,
        columns: _Columns | None = None,
        size: int = 0,
    ) -> None:
        self.kind = kind
        #: the length of the leaf's text (what the bounds of those keeping parsed leaves count)
        self.size = size
        self._columns = columns
        self._entries: tuple[LeafEntry, ...] | None = None
        self._runs: _Runs | None = None
        self._span: tuple[int, int] | Literal[False] | None = False  # False: not found yet
        if columns is None:
            self._entries = tuple(map(tuple.__new__, repeat(LeafEntry), entries or ()))

    @property
    def entries(self) -> tuple[LeafEntry, ...]:
        made = self._entries
        if made is None:
            columns = self._columns
            if columns is None:  # another thread made them meanwhile (set before this)
                made = self._entries
                assert made is not None
                return made
            numbers, oids, versions, digests, topics = columns
            hexes = [digests[at : at + _DIGEST].hex() for at in range(0, len(digests), _DIGEST)]
            values = zip(map(int, numbers.split()), oids, versions, hexes, topics, strict=True)
            made = self._entries = tuple(map(tuple.__new__, repeat(LeafEntry), values))
            self._columns = None  # the entries hold it all (and take less memory than both)
        return made

    def committed(self, position: int, topic: str, sha256: bytes) -> bool:
        """Whether the entry at ``position`` commits to an event of ``topic`` whose stored
        bytes' SHA-256 is ``sha256`` (32 bytes): ``entries[position]``'s topic and digest
        compared, from the columns while the entries are not made (a verification compares
        every record of its round with its entry: the entries of its leaves, a tuple and a
        hex string each, are then never made).

        >>> e = CommittedEvent(1, UUID(int=1), 1, "t", b"x")
        >>> leaf = _parse_leaf(leaf_bytes(COMMIT, [e]))
        >>> good = hashlib.sha256(b"x").digest()
        >>> leaf.committed(0, "t", good), leaf.committed(0, "u", good)
        (True, False)
        >>> leaf.committed(0, "t", hashlib.sha256(b"y").digest()), leaf.entries is not None
        (False, True)
        >>> leaf.committed(0, "t", good), leaf.committed(0, "t", good[:31])
        (True, False)
        """
        if len(sha256) != _DIGEST:
            return False
        columns = self._columns
        if columns is not None:
            return columns[4][position] == topic and columns[3].startswith(
                sha256, position * _DIGEST
            )
        entry = self.entries[position]
        return entry.topic == topic and entry.sha256 == sha256.hex()

    def located(self) -> Iterator[tuple[UUID, int, str]]:
        """Each entry's originator id, version and topic, in the leaf's order: what the log
        indexes (``replays.log``), from the columns while the entries are not made, from the
        entries once they are (no column list made for them: a warm verifier's read of the
        whole log finds most leaves' entries made by the checks of the verifier before it)."""
        columns = self._columns
        if columns is not None:
            return zip(columns[1], columns[2], columns[4], strict=True)
        return map(_LOCATED, self.entries)

    def runs(self) -> _Runs:
        """The leaf's entries as runs, what the log indexes (``replays.log``), made once and
        kept with the leaf: each run is (originator id, first version, count, topic of its
        first entry) for consecutive entries of one id whose versions rise by one from the
        first (``count`` versions from ``first``), in the leaf's order; an entry whose version
        is below 1 (no stored record has one: only a forged line) is in no run, and ends the
        run before it. A transaction lists a stream's new records one after the other, so a
        leaf of 7 entries is about 2 runs: a verifier's read of the whole log indexes a run at
        a time, and a warm read (the leaf kept parsed) finds its runs made.

        >>> a, b = UUID(int=1), UUID(int=2)
        >>> leaf = [CommittedEvent(n, o, v, t, b"") for n, (o, v, t) in enumerate(
        ...     [(a, 1, "s"), (a, 2, "x"), (b, 4, "y"), (b, 6, "z"), (a, 3, "w")], start=1)]
        >>> [(o.int, f, c, t) for o, f, c, t in parse_leaf(leaf_bytes(COMMIT, leaf)).runs()]
        [(1, 1, 2, 's'), (2, 4, 1, 'y'), (2, 6, 1, 'z'), (1, 3, 1, 'w')]
        """
        made = self._runs
        if made is None:
            runs: list[tuple[UUID, int, int, str]] = []
            last: UUID | None = None
            first = follows = count = 0
            topic = ""
            for oid, version, entry_topic in self.located():
                if oid is last and version == follows:
                    count += 1
                    follows += 1
                    continue
                if last is not None:
                    runs.append((last, first, count, topic))
                if version < 1:
                    last = None
                    continue
                last, first, follows, count, topic = oid, version, version + 1, 1, entry_topic
            if last is not None:
                runs.append((last, first, count, topic))
            made = self._runs = tuple(runs)
        return made

    def count(self) -> int:
        """How many entries the leaf holds (from the columns while the entries are not made).

        >>> parse_leaf(leaf_bytes(COMMIT, [CommittedEvent(1, UUID(int=1), 1, "t", b"")])).count()
        1
        """
        columns = self._columns
        if columns is not None:
            return len(columns[1])
        return len(self.entries)

    def whole_runs(self) -> _Runs | None:
        """:meth:`runs` when they hold every entry, in the leaf's order (walking them walks
        the whole leaf, a run at a time); None for a leaf with an entry in no run (a version
        below 1: only a forged line), which is walked an entry at a time.

        >>> a = UUID(int=1)
        >>> leaf = [CommittedEvent(n, a, v, "t", b"") for n, v in [(1, 1), (2, 0)]]
        >>> parse_leaf(leaf_bytes(COMMIT, leaf)).whole_runs() is None
        True
        """
        runs = self.runs()
        return runs if sum(count for _, _, count, _ in runs) == self.count() else None

    def span(self) -> tuple[int, int] | None:
        """The notification ids of the first and the last entry (None: the leaf has none),
        found once and kept with the leaf (a verifier's read of the whole log asks each leaf)."""
        found = self._span
        if found is False:
            columns = self._columns
            if columns is None:
                made = self.entries
                found = (made[0][0], made[-1][0]) if made else None
            else:
                numbers = columns[0]  # "n n n": the first and the last read alone
                found = (
                    (int(numbers.partition(" ")[0]), int(numbers.rpartition(" ")[2]))
                    if numbers
                    else None
                )
            self._span = found
        return found

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedLeaf):
            return NotImplemented
        return self.kind == other.kind and self.entries == other.entries

    def __hash__(self) -> int:
        return hash((self.kind, self.entries))

    def __repr__(self) -> str:
        return f"ParsedLeaf(kind={self.kind!r}, entries={self.entries!r})"


#: :meth:`ParsedLeaf.located`'s fields of an entry: its originator id, version and topic.
_LOCATED: Final = itemgetter(1, 2, 4)

#: A parsed leaf's columns (``ParsedLeaf._columns``, until its entries are made): the
#: notification ids (their text as written, separated by single spaces: one string), the
#: originator ids, the versions, the digests (each entry's 32 bytes one after the other: one
#: bytes object) and the topics. A verifier keeps tens of thousands of leaves parsed: a string
#: a number and a 64-character string a digest took about 170 bytes an entry, these about 40.
_Columns = tuple[str, list[UUID], list[int], bytes, list[str]]
#: The bytes of a SHA-256 digest (an entry's place in the digests' column).
_DIGEST: Final = 32
#: :meth:`ParsedLeaf.runs`: (originator id, first version, count, topic of the first entry) each.
_Runs = tuple[tuple[UUID, int, int, str], ...]


def state_digest(state: bytes) -> str:
    """Lowercase hex SHA-256 of a stored state."""
    return hashlib.sha256(state).hexdigest()


def leaf_bytes(kind: str, events: Sequence[CommittedEvent]) -> bytes:
    """The leaf of ``events`` (see the module docstring). Each state's digest is
    :func:`state_digest` written inline, and each topic is tested once while remembered
    (``_SEALABLE``): a frame and three tests an event fewer (34 events a european round)."""
    if kind not in KINDS:
        raise LeafFormatError(f"leaf kind {kind!r}: commit or backfill")
    lines = [f"{FORMAT} {kind}\n"]
    texts = _TEXTS
    if len(texts) >= _IDS_MAX:
        texts.clear()
    sealable = _SEALABLE
    sha256 = hashlib.sha256
    for notification_id, oid, version, topic, state in events:
        if topic not in sealable:
            if not topic or "\n" in topic or "\r" in topic:
                raise LeafFormatError(f"topic {topic!r} cannot be sealed (empty or a line break)")
            if len(sealable) >= _IDS_MAX:
                sealable.clear()
            sealable.add(topic)
        text = texts.get(oid)
        if text is None:
            text = texts[oid] = str(oid)
        lines.append(f"{notification_id} {text} {version} {sha256(state).hexdigest()} {topic}\n")
    return "".join(lines).encode("utf-8")


#: One entry line (without its newline); every line of a leaf after the first must match it
#: exactly.
_LINE: Final = (
    r"(0|[1-9][0-9]*) ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) "
    r"(0|[1-9][0-9]*) ([0-9a-f]{64}) ([^\n]+)"
)
_ENTRY: Final = re.compile(_LINE)
#: ... with its newline: split by it, the entry lines of a leaf leave nothing between the
#: lines (a topic holds no newline, so a match is exactly one line), and its five fields each.
_EACH: Final = re.compile(_LINE + "\n")
#: Originator ids already built, by their text: a shoe's, a wallet's or a round's stream is
#: named by many leaves, and a ``UUID`` costs more than the rest of its entry. Emptied when it
#: reaches :data:`_IDS_MAX` entries (a bounded cache: a few MiB at most).
_IDS: dict[str, UUID] = {}
_IDS_MAX: Final = 1 << 16
#: The other way, for :func:`leaf_bytes`: the text of each originator id a leaf named, by the
#: id (a transaction's events name a few streams, each again and again, and ``UUID.__str__``
#: costs 0.6 us), emptied at the same bound.
_TEXTS: dict[UUID, str] = {}
#: The topics :func:`leaf_bytes` has found sealable (not empty, no line break), emptied at the
#: same bound.
_SEALABLE: set[str] = set()
#: The topics the parsed leaves name, each text once (emptied at the same bound).
_TOPICS: dict[str, str] = {}


#: The leaves kept parsed: at most this many, and at most this many bytes of leaf text (a
#: boundless round's leaf holds a thousand entries: a count alone let a long-running verifier
#: keep gigabytes).
PARSED_MAX: Final = 4096
PARSED_MAX_BYTES: Final = 64 << 20


class _KeptLeaves:
    """The leaves kept parsed, least recently used first, by the leaf's tree hash (32 bytes:
    ``replays.merkle.leaf_hash`` of its text, which the log's read computes anyway), under a
    lock. No leaf's text is kept: a boundless round's leaves are about 250 kB each, most of a
    verifier's memory when they were the keys."""

    def __init__(self) -> None:
        self.leaves: OrderedDict[bytes, ParsedLeaf] = OrderedDict()
        self.size = 0  # the kept leaves' text's length
        self.lock = threading.Lock()

    def get(self, key: bytes) -> ParsedLeaf | None:
        with self.lock:
            found = self.leaves.get(key)
            if found is not None:
                self.leaves.move_to_end(key)
            return found

    def holds(self, key: bytes) -> bool:
        """Whether the leaf of ``key`` is kept parsed (its place among the kept unchanged)."""
        with self.lock:
            return key in self.leaves

    def keep(self, key: bytes, parsed: ParsedLeaf) -> None:
        if parsed.size > PARSED_MAX_BYTES:
            return
        with self.lock:
            if key in self.leaves:
                return
            self.leaves[key] = parsed
            self.size += parsed.size
            while len(self.leaves) > PARSED_MAX or self.size > PARSED_MAX_BYTES:
                self.size -= self.leaves.popitem(last=False)[1].size

    def clear(self) -> None:
        with self.lock:
            self.leaves.clear()
            self.size = 0


_KEPT = _KeptLeaves()
_K = TypeVar("_K")


def parse_leaf(data: bytes, key: bytes | None = None) -> ParsedLeaf:
    """The kind and entries of a v2 leaf; :class:`LeafFormatError` for anything else (a v1
    round leaf, or bytes that were altered out of shape). ``key``: the leaf's tree hash
    (``replays.merkle.leaf_hash`` of ``data``, which the caller has computed or checked; the
    keys are opaque here): recent leaves are kept parsed by it (a live shoe's leaves serve
    many rounds' verification), the least recently used forgotten beyond :data:`PARSED_MAX`
    leaves or :data:`PARSED_MAX_BYTES` of their text (a leaf larger than that is parsed each
    time). Without a key, the leaf is parsed and not kept. Safe to call from several threads.

    >>> forget_parsed()
    >>> leaf = leaf_bytes(COMMIT, [CommittedEvent(1, UUID(int=1), 1, "t", b"")])
    >>> key = hashlib.sha256(leaf).digest()
    >>> parse_leaf(leaf, key) is parse_leaf(b"", key), parse_leaf(leaf) is parse_leaf(leaf, key)
    (True, False)
    """
    if key is None:
        return _parse_leaf(data)
    found = _KEPT.get(key)
    if found is None:
        found = _parse_leaf(data)  # outside the lock: parsing is most of the cost
        _KEPT.keep(key, found)
    return found


def kept_parsed(key: bytes) -> ParsedLeaf | None:
    """The leaf kept parsed under ``key`` (its tree hash: :func:`parse_leaf`), None when none
    is: found without its text (the log's parsed leaf of an index: ``replays.log``)."""
    return _KEPT.get(key)


def parse_leaves(datas: Sequence[bytes], keys: Sequence[bytes]) -> list[ParsedLeaf | None]:
    """:func:`parse_leaf` of each leaf of ``datas`` with its key of ``keys`` in turn (None for
    one it refuses with :class:`LeafFormatError`), with the same effect on the kept leaves as
    those calls one by one (the same leaves parsed, kept and forgotten, in the same order),
    the kept leaves' lock taken once for each run of leaves found kept instead of once a
    leaf: a verifier's read of the whole log asks for every leaf, most of them kept by a read
    before it (the log's read gives the tree hashes it computed for its tree).

    >>> forget_parsed()
    >>> leaf = leaf_bytes(COMMIT, [CommittedEvent(1, UUID(int=1), 1, "t", b"")])
    >>> keys = [hashlib.sha256(d).digest() for d in (leaf, b"no leaf", leaf)]
    >>> [p is None or p.kind for p in parse_leaves([leaf, b"no leaf", leaf], keys)]
    ['commit', True, 'commit']
    >>> parse_leaves([leaf], keys[:1])[0] is parse_leaf(leaf, keys[0])
    True
    """
    out: list[ParsedLeaf | None] = []
    kept, leaves, at, end = _KEPT, _KEPT.leaves, 0, len(datas)
    while at < end:
        with kept.lock:  # the run of kept leaves from ``at``
            get, to_end = leaves.get, leaves.move_to_end
            while at < end:
                found = get(keys[at])
                if found is None:
                    break
                to_end(keys[at])
                out.append(found)
                at += 1
        if at < end:  # one leaf not kept: parsed (outside the lock) and kept
            try:
                made = _parse_leaf(datas[at])
            except LeafFormatError:
                out.append(None)
            else:
                kept.keep(keys[at], made)
                out.append(made)
            at += 1
    return out


def kept_first(leaves: Iterable[tuple[_K, bytes]]) -> list[tuple[_K, bytes]]:
    """``leaves`` (a key and a leaf's tree hash each: :func:`parse_leaf`'s key), those kept
    parsed first, then the others (each part in the given order): parsed in this order
    (:func:`parse_leaf`), none of those kept is parsed again, whatever the others push out
    (the least recently used go first: the kept leaves not asked for, then those already
    answered). Asked in another order, a batch of leaves larger than what is kept parses
    every one of them again: a verifier's read of the whole log parses each leaf, keeps the
    last ones, and a round's older leaves, parsed and kept in their turn, would push out the
    round's newer ones before they were asked for.

    >>> forget_parsed()
    >>> leaf = [CommittedEvent(n, UUID(int=n), 1, "t", b"") for n in (1, 2)]
    >>> one, two = leaf_bytes(COMMIT, leaf[:1]), leaf_bytes(COMMIT, leaf[1:])
    >>> _ = parse_leaf(two, b"two's hash")
    >>> [key for key, _ in kept_first([("one", b"one's hash"), ("two", b"two's hash")])]
    ['two', 'one']
    """
    kept: list[tuple[_K, bytes]] = []
    others: list[tuple[_K, bytes]] = []
    for leaf in leaves:
        (kept if _KEPT.holds(leaf[1]) else others).append(leaf)
    return kept + others


def _parse_leaf(data: bytes) -> ParsedLeaf:
    """:func:`parse_leaf` without the kept leaves.

    Every entry line is checked exactly as :data:`_ENTRY` says (decimal integers without
    leading zeros, a canonical lower-case UUID, a 64-hex lower-case digest, single spaces, a
    non-empty topic) by one pass of :data:`_EACH` over all of them: split by it, a leaf whose
    lines all match leaves only empty text between the matches; the first line that does
    not is named in the error."""
    text, kind, end = _leaf_text(data)
    # [between, n, oid, version, digest, topic] per line, then what follows the last line
    parts = _EACH.split(text[end + 1 :])
    if any(parts[::6]):
        raise _malformed(text)
    ids = _IDS
    if len(ids) >= _IDS_MAX:
        ids.clear()
    get = ids.get
    oids = [get(o) or ids.setdefault(o, _uuid(o)) for o in parts[2::6]]
    # one string a topic (a few dozen in a log): the kept leaves' entries otherwise hold a
    # string of their own each, about 100 bytes, a third of a parsed entry
    topics = _TOPICS
    if len(topics) >= _IDS_MAX:
        topics.clear()
    same = topics.setdefault
    columns = (
        " ".join(parts[1::6]),
        oids,
        list(map(int, parts[3::6])),
        bytes.fromhex("".join(parts[4::6])),
        [same(t, t) for t in parts[5::6]],
    )
    return ParsedLeaf(kind, columns=columns, size=len(data))


def _uuid(text: str) -> UUID:
    """``UUID(text)`` for the canonical text of a UUID (lower-case hex with its four hyphens,
    as :data:`_LINE` checked it), made without ``UUID.__init__``'s parsing of the other
    forms it accepts: its integer set as ``__init__`` sets it (``is_safe`` unknown).

    >>> text = "12345678-9abc-def0-1234-56789abcdef0"
    >>> made = _uuid(text)
    >>> made == UUID(text), str(made) == text, hash(made) == hash(UUID(text))
    (True, True, True)
    """
    made = object.__new__(UUID)
    object.__setattr__(made, "int", int(text.replace("-", ""), 16))
    object.__setattr__(made, "is_safe", SafeUUID.unknown)
    return made


def forget_parsed() -> None:
    """Forget every leaf parsed and every originator id built by this process (what a new
    process starts with: benchmarks measure a verifier that has parsed nothing yet)."""
    _KEPT.clear()
    _IDS.clear()
    _TEXTS.clear()
    _TOPICS.clear()


def _leaf_text(data: bytes) -> tuple[str, str, int]:
    """A leaf's text, its kind and where its first line ends, once its first line is checked
    (:class:`LeafFormatError` if it is not UTF-8 text ending with a newline whose first line
    is a v2 leaf's)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LeafFormatError(f"not UTF-8 ({exc})") from None
    if not text.endswith("\n"):
        raise LeafFormatError("a leaf ends with a newline")
    end = text.find("\n")
    head = text[:end].split(" ")
    if len(head) != 2 or head[0] != FORMAT or head[1] not in KINDS:
        raise LeafFormatError(f"not a {FORMAT} leaf")
    return text, head[1], end


def _malformed(text: str) -> LeafFormatError:
    """The error naming the first entry line of ``text`` (a leaf whose lines do not all
    match) that is not an entry line."""
    for number, line in enumerate(text[:-1].split("\n")[1:], start=2):
        if _ENTRY.fullmatch(line) is None:
            return LeafFormatError(f"line {number} is malformed")
    raise AssertionError("every line matches")  # pragma: no cover (_EACH matched every line)

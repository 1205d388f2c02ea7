"""The leaf parser (``domain.commit_leaf.parse_leaf``) against the line-by-line parser it
replaced: on valid leaves and on leaves mutated out of shape, the same entries or the same
``LeafFormatError`` message, whatever is cached; and the log's index of a leaf whose entries
skip, repeat or go back in a stream's versions."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import commit_leaf
from domain.application import RoundAudit
from domain.commit_leaf import (
    BACKFILL,
    COMMIT,
    FORMAT,
    LEAF_TOPIC,
    LeafEntry,
    LeafFormatError,
    parse_leaf,
)
from domain.persistence import environment_for
from replays.log import ROUND_STARTED_TOPICS, MerkleLog

# ------------------------------------------------------------------ the reference parser
#: The parser as it was before it read a leaf's lines in one pass: one regex match a line.
_REFERENCE_ENTRY = re.compile(
    r"(0|[1-9][0-9]*) ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) "
    r"(0|[1-9][0-9]*) ([0-9a-f]{64}) ([^\n]+)"
)


def reference_parse(data: bytes) -> tuple[str, list[tuple[Any, ...]]]:
    """The old parser's entry lines (its first line checked as before: ``_leaf_text``)."""
    text, kind, _ = commit_leaf._leaf_text(data)
    entries = []
    for number, line in enumerate(text[:-1].split("\n")[1:], start=2):
        m = _REFERENCE_ENTRY.fullmatch(line)
        if m is None:
            raise LeafFormatError(f"line {number} is malformed")
        n, oid, version, digest, topic = m.groups()
        entries.append((int(n), UUID(oid), int(version), digest, topic))
    return kind, entries


def outcome(parse: Any, data: bytes) -> tuple[Any, ...]:
    try:
        kind, entries = parse(data)
    except LeafFormatError as exc:
        return ("refused", str(exc))
    return ("parsed", kind, [tuple(e) for e in entries])


def new_parse(data: bytes) -> tuple[str, tuple[LeafEntry, ...]]:
    parsed = commit_leaf._parse_leaf(data)  # the parser itself, not its kept leaves
    # the columns the log indexes from (read before any entry is made) are the entries'
    # fields: the notification ids as written, the very id objects, the same span
    numbers, oids, versions, digests, topics = (list(c) for c in parsed.columns())
    located = list(parsed.located())  # what the log indexes, from the columns
    span = parsed.span()
    for e in parsed.entries:
        assert type(e) is LeafEntry
        assert type(e.originator_id) is UUID
        assert type(e.notification_id) is int
        assert type(e.version) is int
        assert e.key == (e.originator_id, e.version)
        # an id made without ``UUID.__init__`` is the UUID it would make, in every respect
        made = UUID(str(e.originator_id))
        assert (e.originator_id, hash(e.originator_id)) == (made, hash(made))
        assert (e.originator_id.int, e.originator_id.is_safe) == (made.int, made.is_safe)
    assert numbers == [str(e.notification_id) for e in parsed.entries]
    assert all(a is e.originator_id for a, e in zip(oids, parsed.entries, strict=True))
    assert versions == [e.version for e in parsed.entries]
    assert digests == [e.sha256 for e in parsed.entries]
    assert topics == [e.topic for e in parsed.entries]
    entries = parsed.entries
    assert span == ((entries[0][0], entries[-1][0]) if entries else None)
    # once the entries are made they are kept instead of the columns: the columns and the
    # span read after them are the same
    again = parsed.columns()
    assert [list(c) for c in again] == [numbers, oids, versions, digests, topics]
    assert all(a is b for a, b in zip(again[1], oids, strict=True))
    assert parsed.span() == span
    # the ids, versions and topics the log indexes: the same from the columns and the entries
    assert located == [(e.originator_id, e.version, e.topic) for e in entries]
    assert list(parsed.located()) == located
    assert parsed.entries is entries
    assert parsed == commit_leaf.ParsedLeaf(parsed.kind, parsed.entries)
    return parsed.kind, parsed.entries


def cached_parse(data: bytes) -> tuple[str, tuple[LeafEntry, ...]]:
    parsed = parse_leaf(data)
    return parsed.kind, parsed.entries


# ------------------------------------------------------------------ leaves and mutations
#: A few streams, so that the leaves name the same stream several times (the parser keeps
#: the ids it built).
_STREAMS = [UUID(int=i * 0x1234_5678_9ABC_DEF0_1357) for i in range(1, 6)]

numbers = st.one_of(st.integers(0, 20), st.integers(0, 10**12))
topics = st.one_of(
    st.sampled_from(["domain.shoe:Shoe.Opened", "domain.round:Round.Started", "t", "a b  c"]),
    st.text(
        st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=12,
    ),
)
streams = st.one_of(st.sampled_from(_STREAMS), st.uuids())
digests = st.binary(min_size=32, max_size=32).map(bytes.hex)
lines = st.builds(
    lambda n, oid, v, d, t: f"{n} {oid} {v} {d} {t}\n", numbers, streams, numbers, digests, topics
)


@st.composite
def leaves(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from([COMMIT, BACKFILL]))
    body = "".join(draw(st.lists(lines, max_size=8)))
    return f"{FORMAT} {kind}\n{body}".encode()


#: What an alteration may put in a leaf: digits (leading zeros), upper case, spaces, line
#: breaks, hyphens, a non-hex letter, bytes that are not UTF-8, a carriage return, a tab.
_PIECES = [b"0", b"00", b"1", b"A", b"F", b"a", b"g", b" ", b"  ", b"\n", b"\n\n", b"-", b"\r"]
_PIECES += [b"\t", b"\xff", b"\xc3\xa9", b"", b"x" * 3, b"0-", b"commit", b"backfill"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(leaves()))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 3))
        data[at : at + cut] = draw(st.sampled_from(_PIECES))
    return bytes(data)


def _valid_line(oid: UUID = _STREAMS[0], topic: str = "t") -> str:
    return f"7 {oid} 1 {'ab' * 32} {topic}\n"


#: Alterations a tamperer would try, each refused with the message the old parser gave.
HANDMADE = [
    f"{FORMAT} commit\n",
    f"{FORMAT} backfill\n{_valid_line()}{_valid_line(_STREAMS[1], 'x y')}",
    f"{FORMAT} commit\n{_valid_line()}".replace("\n7 ", "\n07 "),
    f"{FORMAT} commit\n{_valid_line()}".replace(" 1 ", " 01 "),
    f"{FORMAT} commit\n{_valid_line()}".replace(str(_STREAMS[0]), str(_STREAMS[0]).upper()),
    f"{FORMAT} commit\n{_valid_line()}".replace(str(_STREAMS[0]), _STREAMS[0].hex),
    f"{FORMAT} commit\n{_valid_line()}".replace("ab" * 32, "ab" * 31 + "a"),
    f"{FORMAT} commit\n{_valid_line()}".replace("ab" * 32, "AB" * 32),
    f"{FORMAT} commit\n{_valid_line()}".replace(" t\n", " \n"),
    f"{FORMAT} commit\n{_valid_line()}".replace("7 ", "7  ", 1),
    f"{FORMAT} commit\n{_valid_line()}\n",
    f"{FORMAT} commit\n\n{_valid_line()}",
    f"{FORMAT} commit\n{_valid_line()}x{_valid_line()}",
    f"{FORMAT} commit\n{_valid_line()}{_valid_line()}"[:-1],
    f"{FORMAT} commit\n{_valid_line()} {_valid_line()}",
    f"{FORMAT}  commit\n{_valid_line()}",
    f"{FORMAT} other\n{_valid_line()}",
    f"roundaudit/leaf/v1 commit\n{_valid_line()}",
    "\n",
    "",
    '{"round_id": "x"}',
]


# ------------------------------------------------------------------ the properties
@settings(max_examples=300, deadline=None)
@given(leaves())
def test_a_valid_leaf_parses_as_before(data: bytes) -> None:
    assert outcome(new_parse, data) == outcome(reference_parse, data)
    assert outcome(new_parse, data)[0] == "parsed"


@settings(max_examples=600, deadline=None)
@given(mutated())
def test_a_mutated_leaf_parses_or_is_refused_as_before(data: bytes) -> None:
    assert outcome(new_parse, data) == outcome(reference_parse, data)


@pytest.mark.parametrize("text", HANDMADE)
def test_handmade_alterations_are_refused_with_the_same_message(text: str) -> None:
    data = text.encode()
    assert outcome(new_parse, data) == outcome(reference_parse, data)
    assert outcome(cached_parse, data) == outcome(reference_parse, data)


def test_bytes_that_are_not_utf8_are_refused_with_the_same_message() -> None:
    data = f"{FORMAT} commit\n{_valid_line(topic='caf')}".encode().replace(b"caf", b"caf\xe9")
    assert outcome(new_parse, data) == outcome(reference_parse, data)
    assert outcome(new_parse, data)[1].startswith("not UTF-8")


@settings(max_examples=100, deadline=None)
@given(st.lists(leaves(), min_size=1, max_size=6))
def test_the_ids_kept_between_leaves_change_no_parse(data: list[bytes]) -> None:
    # twice over the same leaves, with the ids kept from before, then with none kept
    first = [outcome(new_parse, d) for d in data]
    again = [outcome(new_parse, d) for d in data]
    commit_leaf._IDS.clear()
    assert first == again == [outcome(new_parse, d) for d in data]
    assert first == [outcome(reference_parse, d) for d in data]


@settings(max_examples=50, deadline=None)
@given(st.lists(leaves(), min_size=1, max_size=6))
def test_a_full_cache_of_ids_is_emptied_and_changes_no_parse(data: list[bytes]) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(commit_leaf, "_IDS_MAX", 2)
        commit_leaf._IDS.clear()
        for d in data:
            assert outcome(new_parse, d) == outcome(reference_parse, d)
            # emptied when it holds 2, then at most one leaf's streams (8 lines) added
            assert len(commit_leaf._IDS) <= 2 + 8
    commit_leaf._IDS.clear()


def _leaf_of(n: int) -> bytes:
    return f"{FORMAT} commit\n{_entry(n, _STREAMS[0], 1)}".encode()


def test_the_kept_leaves_are_bounded_by_count_and_by_bytes_least_recently_used_first() -> None:
    """A long-running verifier keeps at most PARSED_MAX leaves and PARSED_MAX_BYTES of their
    bytes (a boundless round's leaves are large), forgets the least recently used first, and
    keeps none larger than the bound; what it answers is the parse, kept or not."""
    kept = commit_leaf._KEPT
    data = [_leaf_of(n) for n in range(1, 9)]
    size = len(data[0])
    assert all(len(d) == size for d in data)
    with pytest.MonkeyPatch.context() as m:
        commit_leaf.forget_parsed()
        m.setattr(commit_leaf, "PARSED_MAX", 5)
        m.setattr(commit_leaf, "PARSED_MAX_BYTES", 3 * size)
        for d in data[:4]:
            assert parse_leaf(d) == commit_leaf._parse_leaf(d)
        assert list(kept.leaves) == data[1:4]  # three leaves' bytes at most
        assert kept.size == 3 * size
        assert parse_leaf(data[1]) is kept.leaves[data[1]]  # a hit: kept, used last
        parse_leaf(data[4])
        assert list(kept.leaves) == [data[3], data[1], data[4]]  # data[2] was the oldest
        m.setattr(commit_leaf, "PARSED_MAX_BYTES", 10 * size)
        for d in data:
            parse_leaf(d)
        assert len(kept.leaves) == 5  # the count's bound
        assert kept.size == 5 * size
        big = f"{FORMAT} commit\n" + "".join(_entry(n, _STREAMS[0], n) for n in range(1, 200))
        assert len(big) > 10 * size
        before = list(kept.leaves)
        assert parse_leaf(big.encode()).entries[-1].version == 199
        assert list(kept.leaves) == before  # too large to keep: parsed, not kept
        commit_leaf.forget_parsed()
        assert not kept.leaves
        assert kept.size == 0


# ------------------------------------------------------------------ the log's index
def _entry(n: int, oid: UUID, version: int, topic: str = "t") -> str:
    return f"{n} {oid} {version} {'cd' * 32} {topic}\n"


def test_the_index_keeps_the_first_leaf_of_each_version_and_skips_none(tmp_path: Any) -> None:
    """A stream whose versions skip (3 before 2), repeat in a later leaf, or go back: each
    version is located in the first leaf that lists it, a version no leaf lists in none; the
    rounds are those whose version 1 is a round's first record."""
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/x.db"))
    try:
        a, b = UUID(int=10), UUID(int=11)
        started = sorted(ROUND_STARTED_TOPICS)[0]
        texts = [
            _entry(1, a, 1, started) + _entry(2, a, 3),
            _entry(3, a, 2) + _entry(4, a, 3) + _entry(5, b, 1, "domain.round:Other"),
            _entry(6, a, 1) + _entry(7, b, 5) + _entry(8, b, 2),
        ]
        log = MerkleLog(app)
        for text in texts:
            log._add(LEAF_TOPIC, f"{FORMAT} commit\n{text}".encode())
        assert [log.locate(a, v) for v in (1, 2, 3, 4)] == [0, 1, 0, None]
        assert [log.locate(b, v) for v in (1, 2, 3, 4, 5)] == [1, 2, None, None, 2]
        assert log.versions_logged(a) == 3
        assert log.versions_logged(b) == 5
        assert log.leaves_of(a) == {0, 1}
        assert log.leaves_of(b) == {1, 2}
        assert log.round_ids() == [a]
        assert log.kinds == ["commit"] * 3
        assert log._spans == [(1, 2), (3, 5), (6, 8)]
    finally:
        app.close()


def _reference_index(
    datas: list[bytes],
) -> tuple[dict[UUID, list[int]], list[UUID], list[tuple[int, int]]]:
    """The log's index as it was made from each leaf's entries (before it read the parser's
    columns): per stream the first leaf of each version (-1: none), the rounds, the spans."""
    where: dict[UUID, list[int]] = {}
    rounds: dict[UUID, None] = {}
    spans: list[tuple[int, int]] = []
    for index, data in enumerate(datas):
        entries = parse_leaf(data).entries
        spans.append((entries[0][0], entries[-1][0]) if entries else (-1, -1))
        for _, oid, version, _, topic in entries:
            if version < 1:
                continue
            versions = where.setdefault(oid, [])
            versions.extend([-1] * (version - len(versions)))
            if versions[version - 1] == -1:
                versions[version - 1] = index
            if version == 1 and topic in ROUND_STARTED_TOPICS:
                rounds.setdefault(oid)
    return where, list(rounds), spans


_STARTED = sorted(ROUND_STARTED_TOPICS)[0]
indexed_lines = st.builds(
    _entry,
    numbers,
    st.sampled_from(_STREAMS),
    st.integers(0, 6),
    st.sampled_from([_STARTED, "t", "domain.round:Other"]),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(indexed_lines, max_size=8), min_size=1, max_size=6))
def test_the_index_made_from_the_columns_is_the_one_made_from_the_entries(
    bodies: list[list[str]],
) -> None:
    """The log indexes a leaf from the parser's columns, without making its entries: the same
    index, rounds and spans as from the entries, whatever the streams' versions do."""
    datas = [f"{FORMAT} commit\n{''.join(lines)}".encode() for lines in bodies]
    commit_leaf.forget_parsed()
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    try:
        log = MerkleLog(app)
        for data in datas:
            log._add(LEAF_TOPIC, data)
        where, rounds, spans = _reference_index(datas)
        assert {oid: list(v) for oid, v in log._where.items()} == where
        assert log.round_ids() == rounds
        assert log._spans == spans
    finally:
        app.close()

"""The leaf parser (``domain.commit_leaf.parse_leaf``) against the line-by-line parser it
replaced: on valid leaves and on leaves mutated out of shape, the same entries or the same
``LeafFormatError`` message, whatever is cached; the leaves parsed together
(``parse_leaves``) as one by one, kept leaves included; a leaf's runs (``ParsedLeaf.runs``)
as its entries; and the log's index of a leaf whose entries skip, repeat or go back in a
stream's versions, made from the runs as from the entries, the leaf's entries made or not."""

from __future__ import annotations

import contextlib
import re
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leafkit import assert_indexed_as_entries
from leafkit import leaf_entry as _entry

from domain import commit_leaf
from domain.application import RoundAudit
from domain.commit_leaf import (
    BACKFILL,
    COMMIT,
    FORMAT,
    LEAF_TOPIC,
    LeafEntry,
    LeafFormatError,
    ParsedLeaf,
    parse_leaf,
    parse_leaves,
)
from domain.persistence import environment_for
from replays.log import ROUND_STARTED_TOPICS, MerkleLog
from replays.merkle import leaf_hash

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
    columns = parsed._columns
    assert columns is not None  # a new leaf holds its columns until its entries are made
    numbers_text, oids, versions, digests_blob, topics = (
        columns[0],
        list(columns[1]),
        list(columns[2]),
        columns[3],
        list(columns[4]),
    )
    # the numbers one string (as written, single spaces), the digests one bytes object
    numbers = numbers_text.split(" ") if numbers_text else []
    assert len(digests_blob) == 32 * len(oids)
    digests = [digests_blob[at : at + 32].hex() for at in range(0, len(digests_blob), 32)]
    # each entry's topic and digest as the verifier compares them, from the columns
    committed = [
        parsed.committed(i, t, digests_blob[32 * i : 32 * i + 32]) for i, t in enumerate(topics)
    ]
    assert all(committed)
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
    # once the entries are made they are kept instead of the columns: the span read after
    # them is the same
    assert parsed._columns is None
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


def test_the_leaves_parsed_share_one_string_a_topic() -> None:
    """The kept leaves hold each topic once (a verifier keeps tens of thousands of entries
    parsed, most of a few dozen topics), in entries equal to those parsed with none shared."""
    topic = "domain.boundless.participation:Participation.WagerSettled"
    one, two = (
        f"{FORMAT} commit\n{_entry(n, _STREAMS[n], 1, topic)}{_entry(n + 1, _STREAMS[n], 2, topic)}"
        .encode()
        for n in (1, 2)
    )  # fmt: skip
    commit_leaf._TOPICS.clear()
    commit_leaf.forget_parsed()
    parsed = [e.topic for d in (one, two) for e in parse_leaf(d).entries]
    assert parsed == [topic] * 4
    assert len({id(t) for t in parsed}) == 1
    assert [tuple(e) for d in (one, two) for e in parse_leaf(d).entries] == [
        e for d in (one, two) for e in reference_parse(d)[1]
    ]
    commit_leaf.forget_parsed()


def _leaf_of(n: int) -> bytes:
    return f"{FORMAT} commit\n{_entry(n, _STREAMS[0], 1)}".encode()


def test_the_kept_leaves_are_bounded_by_count_and_by_bytes_least_recently_used_first() -> None:
    """A long-running verifier keeps at most PARSED_MAX leaves and PARSED_MAX_BYTES of their
    bytes (a boundless round's leaves are large), by their tree hash (no text kept), forgets
    the least recently used first, and keeps none larger than the bound; what it answers is
    the parse, kept or not; a leaf parsed without its hash is not kept."""
    kept = commit_leaf._KEPT
    data = [_leaf_of(n) for n in range(1, 9)]
    keys = [leaf_hash(d) for d in data]
    size = len(data[0])
    assert all(len(d) == size for d in data)
    with pytest.MonkeyPatch.context() as m:
        commit_leaf.forget_parsed()
        m.setattr(commit_leaf, "PARSED_MAX", 5)
        m.setattr(commit_leaf, "PARSED_MAX_BYTES", 3 * size)
        for d, key in zip(data[:4], keys, strict=False):
            assert parse_leaf(d, key) == commit_leaf._parse_leaf(d)
        assert list(kept.leaves) == keys[1:4]  # three leaves' bytes at most
        assert kept.size == 3 * size
        assert parse_leaf(data[1], keys[1]) is kept.leaves[keys[1]]  # a hit: kept, used last
        assert commit_leaf.kept_parsed(keys[1]) is kept.leaves[keys[1]]  # found by hash alone
        parse_leaf(data[4], keys[4])
        assert list(kept.leaves) == [keys[3], keys[1], keys[4]]  # data[2] was the oldest
        assert parse_leaf(data[5]) is not parse_leaf(data[5])  # no key: not kept
        assert list(kept.leaves) == [keys[3], keys[1], keys[4]]
        m.setattr(commit_leaf, "PARSED_MAX_BYTES", 10 * size)
        for d, key in zip(data, keys, strict=True):
            parse_leaf(d, key)
        assert len(kept.leaves) == 5  # the count's bound
        assert kept.size == 5 * size
        big = f"{FORMAT} commit\n" + "".join(_entry(n, _STREAMS[0], n) for n in range(1, 200))
        assert len(big) > 10 * size
        before = list(kept.leaves)
        big_leaf = big.encode()
        assert parse_leaf(big_leaf, leaf_hash(big_leaf)).entries[-1].version == 199
        assert list(kept.leaves) == before  # too large to keep: parsed, not kept
        commit_leaf.forget_parsed()
        assert not kept.leaves
        assert kept.size == 0


# ------------------------------------------------------------------ the log's index
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
        assert_indexed_as_entries(log, datas)
    finally:
        app.close()


# ------------------------------------------------------------------ runs and leaves parsed together
def _run(oid: UUID, first: int, count: int, topic: str) -> list[str]:
    """``count`` consecutive versions of one stream from ``first`` (a transaction's records)."""
    return [_entry(first + i, oid, first + i, topic if i == 0 else "t") for i in range(count)]


#: Leaves made mostly of runs (what transactions write), with single lines among them whose
#: versions skip, repeat, go back or are 0.
run_lines = st.one_of(
    st.builds(
        _run,
        st.sampled_from(_STREAMS[:3]),
        st.integers(0, 6),
        st.integers(1, 4),
        st.sampled_from([_STARTED, "t"]),
    ),
    indexed_lines.map(lambda line: [line]),
)
run_bodies = st.lists(st.lists(run_lines, max_size=5), min_size=1, max_size=6)


def _expanded(parsed: ParsedLeaf) -> list[tuple[UUID, int, str | None]]:
    """The runs as the entries they stand for (the topic of a run's first entry only)."""
    return [
        (oid, first + i, topic if i == 0 else None)
        for oid, first, count, topic in parsed.runs()
        for i in range(count)
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(run_lines, max_size=6), st.booleans())
def test_a_leaf_s_runs_are_its_entries_of_a_version_from_1(
    groups: list[list[str]], made: bool
) -> None:
    """The runs stand for the entries of a version from 1, in order, each run as long as the
    stream's versions rise by one (two runs one after the other never continue each other),
    from the columns or from the entries; kept with the leaf."""
    data = f"{FORMAT} commit\n{''.join(line for lines in groups for line in lines)}".encode()
    parsed = commit_leaf._parse_leaf(data)
    if made:
        parsed.entries  # noqa: B018 (the entries made: the runs from them)
    entries = [(oid, v, t) for oid, v, t in parsed.located() if v >= 1]
    expanded = _expanded(parsed)
    assert [(oid, v) for oid, v, _ in expanded] == [(oid, v) for oid, v, _ in entries]
    assert [t for _, _, t in expanded if t is not None] == [
        t for (_, _, t), (_, _, first) in zip(entries, expanded, strict=True) if first is not None
    ]
    runs = parsed.runs()
    assert parsed.runs() is runs  # made once
    # each run as long as it goes: an entry continues the run before it when it is of the same
    # stream with the next version (an entry of version 0 is in none and ends the one before)
    longest: list[list[Any]] = []
    follows: tuple[UUID, int] | None = None
    for oid, version, topic in parsed.located():
        if version < 1:
            follows = None
        elif follows == (oid, version):
            longest[-1][2] += 1
        else:
            longest.append([oid, version, 1, topic])
        follows = None if version < 1 else (oid, version + 1)
    assert [list(run) for run in runs] == longest


@settings(max_examples=100, deadline=None)
@given(run_bodies, st.lists(st.booleans(), min_size=6, max_size=6))
def test_the_index_made_from_runs_is_the_one_made_from_the_entries(
    bodies: list[list[list[str]]], made: list[bool]
) -> None:
    """The log indexes a run at a time (``ParsedLeaf.runs``): the same index, rounds and spans
    as the entries give one by one, in a new process (nothing kept parsed), again from the
    leaves kept parsed (their runs made), and with some leaves' entries made first (as a
    round's check makes them)."""
    datas = [
        f"{FORMAT} commit\n{''.join(line for lines in body for line in lines)}".encode()
        for body in bodies
    ]
    commit_leaf.forget_parsed()
    app = RoundAudit(env=environment_for("sqlite:///:memory:"))
    try:
        for read in range(3):
            if read == 2:
                for data, make in zip(datas, made, strict=False):
                    if make:
                        parse_leaf(data).entries  # noqa: B018
            log = MerkleLog(app)
            log._add_many([(LEAF_TOPIC, data) for data in datas])
            assert_indexed_as_entries(log, datas)
    finally:
        app.close()


mixed_leaves = st.lists(
    st.one_of(st.builds(_leaf_of, st.integers(1, 9)), mutated(), st.sampled_from([b"x"])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(mixed_leaves, st.lists(st.integers(0, 20), max_size=30), st.integers(1, 6))
def test_leaves_parsed_together_are_the_leaves_parsed_one_by_one(
    pool: list[bytes], picks: list[int], bound: int
) -> None:
    """``parse_leaves`` gives what ``parse_leaf`` of each in turn gives (None where it refuses
    the leaf) and leaves the same leaves kept, in the same order, from the same kept leaves
    before, under a small bound (leaves pushed out and parsed again meanwhile)."""
    asked = [pool[i % len(pool)] for i in picks]
    before = [pool[i % len(pool)] for i in picks[::3]]

    def one_by_one() -> list[Any]:
        out: list[Any] = []
        for data in asked:
            try:
                out.append(parse_leaf(data, leaf_hash(data)))
            except LeafFormatError:
                out.append(None)
        return out

    def kept_after(parse: Any) -> tuple[list[Any], list[bytes], int]:
        commit_leaf.forget_parsed()
        for data in before:
            with contextlib.suppress(LeafFormatError):
                parse_leaf(data, leaf_hash(data))
        got = [None if p is None else (p.kind, p.entries) for p in parse()]
        return got, list(commit_leaf._KEPT.leaves), commit_leaf._KEPT.size

    with pytest.MonkeyPatch.context() as m:
        m.setattr(commit_leaf, "PARSED_MAX", bound)
        keys = [leaf_hash(data) for data in asked]
        assert kept_after(lambda: parse_leaves(asked, keys)) == kept_after(one_by_one)
    commit_leaf.forget_parsed()

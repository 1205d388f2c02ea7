"""``replays.bundle.decode_stored`` (how reading ahead decodes the rows of many rounds) gives the
very ``Decoded`` that ``decode(mapper, to_record(mapper, row))`` gives for each row: the same
record, event and error, for a plain store, a compressed one (whose rows are decoded from the
record's plaintext, not as stored), rows whose id is text, and rows altered to be unreadable
(bytes that are not JSON, an unknown topic, a field removed), whether the events decoded
together share their equal strings or not (``share``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import Mapper, StoredEvent
from storekit import same_decoded

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.bundle import (
    Deferred,
    StoreReader,
    decode,
    decode_stored,
    deferrable,
    originator_uuid,
    plain_record,
    to_record,
)
from replays.chain import Record

LIBRARY = ("originator_id", "originator_version", "timestamp", "originator_topic")


def _rows(app: RoundAudit) -> list[StoredEvent]:
    rows: list[StoredEvent] = list(app.recorder.select_notifications(0, 10_000))
    return rows


def _altered(app: RoundAudit, rows: list[StoredEvent]) -> list[StoredEvent]:
    """Rows that do not decode, and rows keyed by the id's text."""
    plain = [r for r in rows if not app.mapper.compressor]
    out = [
        StoredEvent(str(r.originator_id), r.originator_version, r.topic, r.state) for r in rows[:5]
    ]
    for r in plain[:5]:
        out.append(StoredEvent(r.originator_id, r.originator_version, r.topic, b"{not json"))
        out.append(StoredEvent(r.originator_id, r.originator_version, "domain.round:Nope", r.state))
        fields = orjson.loads(r.state)
        del fields[next(k for k in fields if k not in LIBRARY)]
        out.append(
            StoredEvent(r.originator_id, r.originator_version, r.topic, orjson.dumps(fields))
        )
    return out


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize(
    "extra", [{}, {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}]
)
def test_decode_stored_gives_what_decode_of_each_record_gives(
    tmp_path: Path, extra: dict[str, str], share: bool
) -> None:
    app = RoundAudit(env={**environment_for(f"sqlite:///{tmp_path}/events.db"), **extra})
    try:
        simulate(app, variant="deluxe", rounds=2, players=2)
        rows = _rows(app)
        rows += _altered(app, rows)
        fast = decode_stored(app.mapper, rows, share=share)
        slow = [decode(app.mapper, to_record(app.mapper, r)) for r in rows]
    finally:
        app.close()
    assert len(fast) == len(slow) == len(rows) > 50
    assert all(all(same_decoded(a, b)) for a, b in zip(fast, slow, strict=True))
    assert sum(d.error is not None for d in fast) == (0 if extra else 15)
    assert all(d.event is not None for d in fast[:-15] if not extra)


@pytest.mark.parametrize(
    "extra", [{}, {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}]
)
def test_decode_stored_shares_equal_strings_and_deferred_records_decode_the_same(
    tmp_path: Path, extra: dict[str, str]
) -> None:
    """Each topic is one string for every record ``decode_stored`` makes (a row's own topic
    string is not kept, by the record nor by a deferred record), and a deferred record, which
    no longer keeps its row, decodes to what ``decode`` of the record gives."""
    app = RoundAudit(env={**environment_for(f"sqlite:///{tmp_path}/events.db"), **extra})
    try:
        simulate(app, variant="boundless", rounds=2, players=4)
        rows = _rows(app)
        rows = [StoredEvent(r.originator_id, r.originator_version, "".join(r.topic), r.state)
                for r in rows]  # fmt: skip
        assert len({id(r.topic) for r in rows}) == len(rows)  # a string of its own a row
        slow = [decode(app.mapper, to_record(app.mapper, r)) for r in rows]
        fast = decode_stored(app.mapper, rows, defer=deferrable)
    finally:
        app.close()
    topics = {d.record.topic for d in fast}
    assert len({id(d.record.topic) for d in fast}) == len(topics) < len(rows) / 3
    deferred = [d for d in fast if isinstance(d, Deferred)]
    assert len(deferred) > 20
    assert all(d._stored is None for d in deferred)
    assert all(all(same_decoded(a, b)) for a, b in zip(fast, slow, strict=True))
    # equal text fields of the events decoded together (deferred ones are decoded later, each
    # on its own) are one string (a player's name, a wager's id, a stake), where each decoding
    # of its own makes its own
    decoded = [d for d in fast if not isinstance(d, Deferred)]
    names = [d.event.player for d in decoded if isinstance(getattr(d.event, "player", None), str)]
    assert len(names) > 30
    assert len({id(n) for n in names}) == len(set(names)) < len(names) / 3
    slow_names = [d.event.player for d in slow if isinstance(getattr(d.event, "player", None), str)]
    assert len({id(n) for n in slow_names}) > len(set(slow_names))
    # and equal actors one dict (the system's, each player's), equal to each decoding's own
    actors = [d.event.actor for d in decoded]
    assert all(type(a) is dict for a in actors)
    assert len({id(a) for a in actors}) == len({tuple(a.items()) for a in actors}) < len(actors) / 3
    slow_actors = [b.event.actor for a, b in zip(fast, slow, strict=True) if a in decoded]
    assert slow_actors == actors
    assert len({id(a) for a in slow_actors}) == len(slow_actors)
    # unshared (``share=False``, a classic round's records read ahead): each keeps its own
    own = decode_stored(app.mapper, rows, defer=deferrable, share=False)
    assert all(all(same_decoded(a, b)) for a, b in zip(own, slow, strict=True))
    own_names = [
        d.event.player
        for d in own
        if not isinstance(d, Deferred) and isinstance(getattr(d.event, "player", None), str)
    ]
    assert own_names == names
    assert len({id(n) for n in own_names}) > len(set(own_names))


def test_an_actor_whose_items_do_not_hash_keeps_its_own_dict() -> None:
    """Equal actors are one dict by their items; one whose items cannot be a key (a value
    that is no text) is left as decoded, and nothing else is shared with it."""
    from replays.bundle import _decoded

    shared: dict[object, object] = {}
    states = [{"actor": {"id": ["x"], "kind": "player"}} for _ in range(2)]
    states += [{"actor": {"id": "p", "kind": "player"}} for _ in range(2)]
    kept = [s["actor"] for s in states]
    for state in states:
        _decoded(Record(UUID(int=1), 1, "t", b""), object(), state, shared)
    assert [s["actor"] for s in states] == kept
    assert states[0]["actor"] is kept[0]
    assert states[1]["actor"] is kept[1]
    assert states[2]["actor"] is states[3]["actor"] is kept[2]


def _variants(app: RoundAudit, rows: list[StoredEvent]) -> list[StoredEvent]:
    """Rows of each stored topic altered the ways a known topic's decoding must still read as
    the library does: a consequence stored at version 1 (upcast), a version above the class's,
    a version as text, a state that is no object, an id and a version inside the state, a
    field removed, bytes that are no JSON."""
    out: list[StoredEvent] = []
    for r in {r.topic: r for r in rows}.values():
        state = orjson.loads(r.state)
        oid, v, topic = r.originator_id, r.originator_version, r.topic

        def row(fields: object, oid: Any = oid, v: int = v, topic: str = topic) -> StoredEvent:
            return StoredEvent(oid, v, topic, orjson.dumps(fields))

        old = {k: x for k, x in state.items() if k not in ("class_version", "actor")}
        out += [
            row(old),
            row({**state, "class_version": 3}),
            row({**state, "class_version": "2"}),
            row({**state, "class_version": True}),
            row([state]),
            row({**state, "originator_id": "x", "originator_version": 99}),
            row({k: x for k, x in state.items() if k != next(iter(state))}),
            StoredEvent(oid, v, topic, b"[1, 2"),
            row(state, str(oid)),
        ]
    return out


@pytest.mark.parametrize("digest", [False, True])
def test_a_known_topic_decodes_as_the_library_decodes_it(tmp_path: Path, digest: bool) -> None:
    """After the library decoded a record of a topic, ``decode_stored`` decodes the next ones
    of that topic without ``Mapper.to_domain_event`` (``replays.bundle._KNOWN``), to what the
    library gives: the same class and fields, or the same error; records of every topic of the
    five variants, and each altered the ways that must fall back to the library (an upcast,
    other versions, a state that is no object, a field missing, bytes that are no JSON). So
    too with ``digest`` (the verifier's read of a boundless round: the records keep their
    bytes' digest, ``Digested``, and are decoded from the stored event's bytes; before branch
    ``bread`` every one of them went to the library)."""
    import replays.bundle

    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        for variant in ("deluxe", "multihand", "lucky7", "european", "boundless"):
            simulate(app, variant=variant, rounds=2, players=2, table=f"t-{variant}")
        rows = _rows(app)
        rows += _variants(app, rows)
        library = app.mapper
        expected: list[tuple[Any, Any, str | None]] = []
        for r in rows:
            try:
                event = library.to_domain_event(r)
                replays.bundle._check_fields(type(event), event.__dict__)
                expected.append((type(event), event.__dict__, None))
            except Exception as exc:
                cause = exc.__cause__ or exc
                expected.append((None, None, f"unreadable: {type(cause).__name__}: {cause}"))
        decode_stored(app.mapper, rows[:1])  # the first topic known
        calls = 0
        real = Mapper.to_domain_event

        def counted(self: Mapper[UUID], stored: StoredEvent) -> Any:
            nonlocal calls
            calls += 1
            return real(self, stored)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(Mapper, "to_domain_event", counted)
            fast = decode_stored(app.mapper, rows, share=False, digest=digest)
    finally:
        app.close()
    got = [
        (type(d.event) if d.event is not None else None, d.event and d.event.__dict__, d.error)
        for d in fast
    ]
    assert got == expected
    assert sum(e is None for _, _, e in expected) > 500
    # the library decoded only a first record of a topic and the altered ones (at most 9 a
    # topic): not the hundreds of others
    topics = len({r.topic for r in rows})
    assert calls <= 10 * topics < len(rows)


@pytest.mark.parametrize("defer", [None, deferrable])
@pytest.mark.parametrize(
    "extra", [{}, {"COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}]
)
def test_rows_read_as_records_decode_as_their_stored_events(
    tmp_path: Path, extra: dict[str, str], defer: Any
) -> None:
    """``StoreReader._select_many(..., records=True)`` (how a verifier reads ahead) gives, for a
    store that neither encrypts nor compresses, each row as the very record ``to_record`` makes
    of its stored event (a compressed store's rows stay stored events), and ``decode_stored``
    of those records is what it gives for the stored events: every record, event, error and
    deferral, rows altered to be unreadable included (``plain_record`` of their values)."""
    app = RoundAudit(env={**environment_for(f"sqlite:///{tmp_path}/events.db"), **extra})
    try:
        simulate(app, variant="deluxe", rounds=2, players=2)
        simulate(app, variant="boundless", rounds=1, players=3)
        rows = _rows(app)
        reader = StoreReader(app)
        ids = list(dict.fromkeys(originator_uuid(r) for r in rows))
        as_records = reader._select_many(ids, records=True)
        as_stored = reader._select_many(ids)
        assert as_records is not None
        assert as_stored is not None
        for oid in ids:
            kept = as_records[oid]
            made = [to_record(app.mapper, e) for e in as_stored[oid]]
            assert all(type(r) is (StoredEvent if extra else Record) for r in kept)
            assert [to_record(app.mapper, r) if extra else r for r in kept] == made
        if extra:
            return
        stored = rows + [r for r in _altered(app, rows) if type(r.originator_id) is UUID]
        records = [
            plain_record(r.originator_id, r.originator_version, r.topic, r.state) for r in stored
        ]
        assert records == [to_record(app.mapper, r) for r in stored]
        fast = decode_stored(app.mapper, records, defer=defer, share=False)
        slow = decode_stored(app.mapper, stored, defer=defer, share=False)
    finally:
        app.close()
    assert len(fast) == len(slow) == len(stored) > 50
    assert [type(d) for d in fast] == [type(d) for d in slow]
    assert all(all(same_decoded(a, b)) for a, b in zip(fast, slow, strict=True))
    assert sum(d.error is not None for d in fast) == 15
    assert (defer is None) == (not any(isinstance(d, Deferred) for d in fast))


@pytest.mark.parametrize("digest", [False, True])
def test_a_record_decoded_before_is_taken_only_for_the_very_same_bytes(
    tmp_path: Path, digest: bool
) -> None:
    """``decode_stored(..., decoded=...)`` (a boundless round's ``Participation.Joined`` rows,
    which the round index decoded to find its participations: ``RoundRead.joined``) gives a
    record the event decoded before only when it was decoded from the same stream, version,
    topic and stored bytes: a record whose stored bytes differ from those decoded before (the
    bytes the commit check compares with the leaf) is decoded from its own bytes, so what it
    says is what is reported."""
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        simulate(app, variant="boundless", rounds=1, players=3)
        rows = _rows(app)
        joins = [r for r in rows if r.topic.endswith(":Participation.Joined")]
        assert len(joins) >= 2

        def altered(r: StoredEvent) -> StoredEvent:
            fields = orjson.loads(r.state)
            fields["player"] = fields["player"] + "-not"
            return StoredEvent(r.originator_id, r.originator_version, r.topic, orjson.dumps(fields))

        same = {  # the same bytes, read by another query (another object)
            r.originator_id: (
                StoredEvent(r.originator_id, r.originator_version, r.topic, bytes(r.state)),
                app.mapper.to_domain_event(r),
            )
            for r in joins
        }
        other_bytes = {
            r.originator_id: (altered(r), app.mapper.to_domain_event(altered(r))) for r in joins
        }
        other_version = {
            r.originator_id: (
                StoredEvent(r.originator_id, r.originator_version + 1, r.topic, r.state),
                app.mapper.to_domain_event(altered(r)),
            )
            for r in joins
        }
        slow = [decode(app.mapper, to_record(app.mapper, r)) for r in rows]
        taken = decode_stored(app.mapper, rows, defer=deferrable, digest=digest, decoded=same)
        mine = decode_stored(app.mapper, rows, defer=deferrable, digest=digest, decoded=other_bytes)
        moved = decode_stored(
            app.mapper, rows, defer=deferrable, digest=digest, decoded=other_version
        )
    finally:
        app.close()
    at = [i for i, r in enumerate(rows) if r in joins]
    for out in (taken, mine, moved):
        assert [d.event.__dict__ for d in out if not isinstance(d, Deferred)] == [
            d.event.__dict__ for d, o in zip(slow, out, strict=True) if not isinstance(o, Deferred)
        ]
        assert all(out[i].event.player == slow[i].event.player for i in at)
        assert all(not out[i].event.player.endswith("-not") for i in at)
    # the same bytes: the very event decoded before is taken
    assert all(taken[i].event is same[rows[i].originator_id][1] for i in at)
    assert all(mine[i].event is not other_bytes[rows[i].originator_id][1] for i in at)

"""The recording path's shortcuts give what the library's own path gives.

* ``HookedSQLiteApplicationRecorder.select_events`` (one autocommit statement, without the
  library's ``BEGIN``/``ROLLBACK``): the same stored events as the library's query, for every
  combination of its arguments, on a file database and the in-memory one, and the library's
  exceptions for SQLite's.
* The same rounds (of each variant, from fixed seeds) store the same records with the
  shortcuts of the recording path (these two, ``domain.store.keep_saved``, the cache kept
  current with the log, ``domain.store.Watched``, and a recorder's events built as the
  library rebuilds stored ones, ``Recorder.record`` and ``domain.recorder.trigger``) as
  with the library's own path; with the clock fixed too, the very same bytes.
* ``AuditBase.save`` collects a save's events with ``Collected``: the same events, in the same
  order, and the same aggregates as the library's ``ProcessingEvent.collect_events``, for
  aggregates, ``None`` and bare events mixed, and the same records stored.
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import eventsourcing.domain as domain_module
import pytest
from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.persistence import OperationalError
from eventsourcing.sqlite import SQLiteApplicationRecorder

import domain.recorder as recorder
import domain.services.base as base
import domain.services.shoes as shoes
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.service import BoundlessService
from domain.commits import HookedSQLiteApplicationRecorder
from domain.errors import ShoeInUse
from domain.persistence import environment_for
from domain.rules import VARIANTS
from domain.services.base import AuditBase, Collected
from domain.services.in_play import InPlay
from domain.shoe import Shoe
from domain.wallet import Wallet
from replays.verify import StoreVerifier

FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@pytest.fixture(params=["file", "memory"])
def sqlite_app(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = f"sqlite:///{tmp_path}/events.db" if request.param == "file" else "sqlite:///:memory:"
    app = RoundAudit(env=environment_for(url))
    yield app
    app.close()


def test_select_events_gives_what_the_library_query_gives(sqlite_app: RoundAudit) -> None:
    app = sqlite_app
    recorder = app.recorder
    assert isinstance(recorder, HookedSQLiteApplicationRecorder)
    app.open_wallet("p", account_type="test")
    for i in range(6):
        app.deposit("p", f"{i + 1}.00", transaction_id=f"d{i}")
    wid = app.wallet("p").id
    library = SQLiteApplicationRecorder.select_events
    for gt, lte, desc, limit in itertools.product(
        (None, 0, 3, 7), (None, 2, 5, 9), (False, True), (None, 1, 3)
    ):
        for ident in (wid, wid.hex, uuid4()):
            ours = recorder.select_events(ident, gt=gt, lte=lte, desc=desc, limit=limit)
            theirs = library(recorder, ident, gt=gt, lte=lte, desc=desc, limit=limit)
            assert ours == theirs, (gt, lte, desc, limit)
    assert [e.originator_version for e in recorder.select_events(wid)] == list(range(1, 8))
    assert recorder.select_events(wid, gt=2, lte=4) != []


def test_select_events_raises_the_library_errors(tmp_path: Path) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    recorder = app.recorder
    assert isinstance(recorder, HookedSQLiteApplicationRecorder)
    recorder.select_events_statement = "SELECT * FROM no_such_table WHERE originator_id=? "
    with pytest.raises(OperationalError) as caught:
        recorder.select_events(uuid4())
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    app.close()


def _wallets(n: int) -> list[Wallet]:
    out = []
    for i in range(n):
        w = Wallet.open(f"w{i}", account_type="test")
        w.deposit(f"{i + 1}.00", transaction_id=f"t{i}")
        out.append(w)
    return out


def _collections(objs: tuple[Any, ...]) -> tuple[Collected, ProcessingEvent[Any]]:
    """What ``Collected`` and the library make of ``objs`` (their aggregates' pending
    events restored between the two, since collecting takes them)."""
    pending = {id(o): list(o.pending_events) for o in objs if isinstance(o, Wallet)}
    got = Collected(objs, {"x": 1})
    for o in objs:
        if isinstance(o, Wallet):
            o._pending_events.extend(pending[id(o)])
    want: ProcessingEvent[Any] = ProcessingEvent()
    want.collect_events(*objs, x=1)
    return got, want


def test_collected_equals_the_library_collection() -> None:
    a, b, c = _wallets(3)
    bare = c.collect_events()  # bare events, given on their own
    objs = (a, None, bare[0], b, bare[1])
    expected = [*a.pending_events, bare[0], *b.pending_events, bare[1]]
    got, want = _collections(objs)
    assert [id(e) for e in got.events] == [id(e) for e in want.events] == [id(e) for e in expected]
    assert got.aggregates == want.aggregates == {a.id: a, b.id: b}
    assert got.saved_kwargs == want.saved_kwargs == {"x": 1}
    assert a.pending_events == []
    assert b.pending_events == []


def test_save_records_every_event_of_the_aggregates_given(tmp_path: Path) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    a, b = _wallets(2)
    recordings = app.save(a, None, b)
    assert [
        (r.domain_event.originator_id, r.domain_event.originator_version) for r in recordings
    ] == [
        (a.id, 1),
        (a.id, 2),
        (b.id, 1),
        (b.id, 2),
    ]
    assert [n.originator_id for n in app.recorder.select_notifications(1, 10)] == [
        a.id,
        a.id,
        b.id,
        b.id,
    ]
    app.close()


def _stored_rounds(
    env: dict[str, str], variant: str, *, raw: bool = False
) -> list[tuple[Any, ...]]:
    """Every stored event of rounds of ``variant`` recorded with the shoes' seeds fixed (so
    the same cards and choices come): id, version, topic and the state (without the time it
    was recorded; ``raw``: the stored bytes as they are)."""
    app = RoundAudit(env=env)
    simulate(app, variant=variant, rounds=4, players=3, table=f"same-{variant}")
    out = []
    for n in app.recorder.select_notifications(1, 100_000):
        if raw:
            out.append((n.originator_id, n.originator_version, n.topic, bytes(n.state)))
            continue
        state = app.mapper.transcoder.decode(n.state)
        state.pop("timestamp", None)
        out.append((n.originator_id, n.originator_version, n.topic, state))
    app.close()
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_same_rounds_store_the_same_records_as_the_library_path(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcuts (the SQLite read, ``Collected``, the saved copies kept in the cache, the
    cache caught up once a command) on, then off (the library's own query, collection and
    repository: a cache that reads every save back, a query per get):
    the same rounds, recorded from the same seeds, store the same records."""
    counter = itertools.count()

    def fixed_seed() -> bytes:
        return hashlib.sha256(f"seed-{next(counter)}".encode()).digest()

    monkeypatch.setattr(shoes, "new_seed", fixed_seed)
    ours = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/ours.db"), variant)
    counter = itertools.count()
    monkeypatch.setattr(base, "keep_saved", lambda *_: None)
    # the library's repository: every get fast-forwarded by a query of its own
    monkeypatch.setattr(AuditBase, "construct_repository", Application.construct_repository)
    monkeypatch.setattr(AuditBase, "save", Application.save)
    monkeypatch.setattr(
        HookedSQLiteApplicationRecorder, "select_events", SQLiteApplicationRecorder.select_events
    )
    monkeypatch.setattr(recorder, "_built_as_stored", lambda cls: None)  # trigger_event's
    theirs = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/theirs.db"), variant)
    assert len(ours) > 40
    assert ours == theirs


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shortcut", ["_built_as_stored", "_decorated_as_stored"])
def test_events_built_as_stored_are_stored_byte_for_byte_as_the_library_makes_them(
    tmp_path: Path, variant: str, shortcut: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Recorder.record`` builds a decision's events as the library rebuilds stored ones
    (their ``__dict__`` set), not by ``trigger_event`` (``_built_as_stored``), and
    ``domain.recorder.trigger`` builds a shoe's draws and retirement and a table's events
    so, not by calling their ``@event`` methods (``_decorated_as_stored``): with the clock
    and the seeds fixed, the same rounds store the very same bytes (state, topic, id,
    version) with the shortcut and without it, the short way taken (every event class of the
    rounds' recorders, none with a default or a hook of its own; every shoe's draws)."""
    counter = itertools.count()
    monkeypatch.setattr(shoes, "new_seed", lambda: bytes([next(counter) % 256]) * 32)
    monkeypatch.setattr(domain_module, "datetime_now_with_tzinfo", lambda: FIXED_TIME)
    taken: list[tuple[Any, ...]] = []
    real = getattr(recorder, shortcut)

    def seen(*args: Any) -> Any:
        found = real(*args)
        if found is not None:
            taken.append(args)
        return found

    monkeypatch.setattr(recorder, shortcut, seen)
    ours = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/ours.db"), variant, raw=True)
    assert taken  # the short way was taken
    if shortcut == "_decorated_as_stored":
        assert (Shoe, "_card_drawn") in taken
    counter = itertools.count()
    monkeypatch.setattr(recorder, shortcut, lambda *args: None)
    theirs = _stored_rounds(environment_for(f"sqlite:///{tmp_path}/theirs.db"), variant, raw=True)
    assert len(ours) > 40
    assert ours == theirs


def test_a_new_shoes_seed_is_opened_from_its_committed_row_not_read_back(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round's new RNG shoe keeps the seed its save sealed: the seed the vault opens, and no
    vault read while its round draws and reveals it; the rounds verify."""
    app = app_on_every_store
    opened: list[UUID] = []
    real = app.vault.open

    def counted(shoe_id: UUID) -> bytes | None:
        opened.append(shoe_id)
        return real(shoe_id)

    monkeypatch.setattr(app.vault, "open", counted)
    report = simulate(app, variant="european", rounds=3, players=2, table="seeds")
    assert opened == []
    verifier = StoreVerifier(app)
    for rid in report.round_ids:
        shoe = app.shoe(app.round(rid).shoe_id)
        assert shoe.retired  # revealed with the seed it was sealed with
        assert app._opened_seeds[shoe.id] == real(shoe.id)
        assert verifier.verify(UUID(rid)).ok


def test_a_round_this_process_finished_is_not_read_again_to_retire_its_shoe(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds a command finished are known finished once it committed: retiring their live shoe
    reads none of them again, and a fresh process (which reads them) finds the same rounds in
    play; a round still in play still blocks the retirement."""
    app = app_on_every_store
    report = simulate(app, variant="deluxe", rounds=3, players=2, table="done")
    shoe = app.shoe(app.round(report.round_ids[0]).shoe_id)
    reads: list[UUID] = []
    real = InPlay._round_stream

    def counted(self: InPlay, rid: UUID) -> list[Any]:
        reads.append(rid)
        return real(self, rid)

    monkeypatch.setattr(InPlay, "_round_stream", counted)
    assert app.rounds_in_play(shoe) == []
    assert reads == []
    app._finished.clear()  # what a process that did not record them knows
    assert app.rounds_in_play(shoe) == []
    assert len(reads) == 3
    rid = app.start_round(table_id="done", round_number=99, variant="deluxe", shoe_id=str(shoe.id))
    assert app.rounds_in_play(shoe) == [UUID(rid)]
    with pytest.raises(ShoeInUse):
        app.retire_shoe(str(shoe.id))


def test_a_round_this_process_started_is_known_classic_without_a_read(
    app_on_every_store: RoundAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands of a classic round this process started do not read its first event to
    tell it from a boundless one; a process that did not start it still reads it, and both
    send the command to the classic round."""
    app = app_on_every_store
    app.open_wallet("p", account_type="test")
    app.deposit("p", "50.00", transaction_id="d1")
    rid = app.start_round(table_id="kinds", round_number=1, variant="european", production=False)
    reads: list[Any] = []
    real = app.recorder.select_events

    def counted(originator_id: Any, **kwargs: Any) -> Any:
        reads.append(originator_id)
        return real(originator_id, **kwargs)

    monkeypatch.setattr(app.recorder, "select_events", counted)
    app.place_bet(rid, player="p", amount="5.00", spot=1)
    assert UUID(rid) not in reads
    assert app.boundless.owns(rid) is False
    fresh = BoundlessService(app)  # what another process knows: nothing yet
    assert fresh.owns(rid) is False
    assert reads.count(UUID(rid)) == 1

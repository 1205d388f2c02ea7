"""Every recording in replays/recordings/ re-executes to byte-identical events, verifies from the
file alone, imports into an empty store (SQLite and PostgreSQL) and verifies there, and replays
step by step; an altered recording is refused."""

from __future__ import annotations

import base64
import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import Mapper

from cli.main import main
from domain.application import RoundAudit
from domain.events import Consequence, Derived
from domain.persistence import OrjsonTranscoder, environment_for
from replays.boundless import reexecute as reexecute_shared
from replays.bundle import RoundBundle, current_bytes, stored_version
from replays.export import ExportError, import_round, read_export, verify_export
from replays.record import SCRIPTS, Script, record
from replays.reexecute import reexecute
from replays.steps import replay_bundle, replay_text
from replays.verify import StoreVerifier

RECORDINGS = sorted(
    (Path(__file__).resolve().parents[2] / "replays" / "recordings").glob("*.jsonl")
)
VARIANTS = ("deluxe", "multihand", "lucky7", "european", "boundless")


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def one_per_variant() -> list[Path]:
    seen: dict[str, Path] = {}
    for p in RECORDINGS:
        seen.setdefault(p.name.split("-")[0], p)
    return list(seen.values())


def test_at_least_three_recordings_per_variant() -> None:
    variants = Counter(read_export(lines(p)).header["variant"] for p in RECORDINGS)
    assert len(RECORDINGS) >= 15
    assert all(variants[v] >= 3 for v in VARIANTS), variants


def reexecuted(bundle: RoundBundle) -> list[Any]:
    """Every event the rules derive from the recording's inputs, in the recording's order: a
    Round's by version; a boundless round's per stream (shared hand, participations), put back
    in the merged log order so that they line up with the recorded lines."""
    events = [d.event for d in bundle.round]
    if not bundle.shared:
        produced, refused = reexecute(events)
        assert not refused
        return produced
    streams, refused_shared = reexecute_shared(events)
    assert not refused_shared
    assert len(streams) == len(bundle.participations()) + 1
    return [streams[d.record.originator_id][d.version - 1] for d in bundle.round]


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recording_reexecutes_to_byte_identical_events(path: Path) -> None:
    exported = read_export(lines(path))
    assert exported.header["transcoder"] == "domain.persistence:OrjsonTranscoder"
    stored = exported.bundle.round
    produced = reexecuted(exported.bundle)
    assert len(produced) == len(stored)
    assert_byte_identical(produced, stored)


def assert_byte_identical(produced: list[Any], stored: list[Any]) -> int:
    """Each re-executed event is stored as exactly the recorded bytes. A recorded event of an
    older stored format (``class_version``: the consequences before they recorded their actor)
    is compared as the library reads it: its upcast event, stored as today, must be the
    re-executed event's bytes (and the recorded bytes stay what they were: the seal covers
    them). Returns how many were compared through their upcast."""
    mapper: Mapper[UUID] = Mapper(transcoder=OrjsonTranscoder())
    consequences = upcast = 0
    for exp, rec in zip(produced, stored, strict=True):
        again = mapper.to_stored_event(dataclasses.replace(exp, timestamp=rec.event.timestamp))
        recorded = rec.record.state
        if stored_version(recorded) < getattr(type(exp), "class_version", 1):
            recorded = current_bytes(mapper, rec.event)
            upcast += 1
        assert (again.originator_id, again.originator_version, again.topic, again.state) == (
            rec.record.originator_id,
            rec.record.version,
            rec.record.topic,
            recorded,
        ), f"position {rec.position} ({rec.name})"
        consequences += isinstance(exp, Consequence)
    assert consequences > 5
    return upcast


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recordings_made_before_the_actor_are_compared_through_their_upcast(path: Path) -> None:
    """The recordings were made before consequences recorded their actor (stored format 1):
    every consequence goes through the upcast comparison, every input compares as stored."""
    exported = read_export(lines(path))
    stored = exported.bundle.round
    produced = reexecuted(exported.bundle)
    upcast = assert_byte_identical(produced, stored)
    assert upcast == sum(isinstance(d.event, Derived) for d in stored) > 5
    assert all(b'"actor"' not in d.record.state for d in stored if isinstance(d.event, Derived))


@pytest.fixture(scope="module")
def recorded_now(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """One script per variant recorded by this code (stored format 2: consequences with
    their actor), with ``python -m replays.record``'s own function."""
    first: dict[str, Script] = {}
    for s in SCRIPTS:
        first.setdefault(s.variant, s)
    return record(list(first.values()), out=tmp_path_factory.mktemp("recorded"))


def test_recordings_made_now_reexecute_to_their_stored_bytes(recorded_now: list[Path]) -> None:
    assert len(recorded_now) == len(VARIANTS)
    for path in recorded_now:
        exported = read_export(lines(path))
        stored = exported.bundle.round
        assert assert_byte_identical(reexecuted(exported.bundle), stored) == 0, path.name
        for d in stored:
            if isinstance(d.event, Derived):
                data = orjson.loads(d.record.state)
                assert data["actor"] == {"kind": "system", "id": "roundaudit"}, d.name
                assert data["class_version"] == 2, d.name
        verdict = verify_export(exported)
        assert verdict.ok, verdict.as_json()


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recording_verifies_from_the_file_alone(path: Path) -> None:
    exported = read_export(lines(path))
    verdict = verify_export(exported)
    assert verdict.ok, verdict.as_json()
    assert verdict.checks == ["storage", "reexecution", "shoe", "money", "seal"]
    assert exported.bundle.seal is not None
    assert exported.bundle.seal.checkpoint is not None


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recording_replays_step_by_step_to_its_end(path: Path) -> None:
    bundle = read_export(lines(path)).bundle
    replay = replay_bundle(bundle)
    assert replay.stopped is None
    assert [s.position for s in replay.steps] == list(range(1, len(bundle.round) + 1))
    assert replay.steps[-1].view["phase"] in ("settled", "cancelled")
    assert any(s.movements for s in replay.steps)
    text = replay_text(replay)
    assert f"#{len(bundle.round)} " in text


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_recording_imports_into_an_empty_sqlite_store_and_verifies_there(
    path: Path, tmp_path: Path
) -> None:
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/imported.db"))
    try:
        check_import(app, path)
    finally:
        app.close()


@pytest.mark.parametrize("path", one_per_variant(), ids=[p.stem for p in one_per_variant()])
def test_recording_imports_into_the_test_stores(path: Path, store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    try:
        check_import(app, path)
    finally:
        app.close()


def check_import(app: RoundAudit, path: Path) -> None:
    exported = read_export(lines(path))
    result = import_round(app, lines(path))
    rid = exported.bundle.round_id
    assert result.written == len(exported.records)
    assert result.skipped == 0
    # the same records, same ids and versions, same bytes
    streams = dict.fromkeys(d.record.originator_id for d in exported.bundle.round)
    held = [
        (s.originator_id, s.originator_version, s.topic, s.state)
        for oid in streams
        for s in app.recorder.select_events(oid)
    ]
    assert sorted(held) == sorted(
        (d.record.originator_id, d.version, d.record.topic, d.record.state)
        for d in exported.bundle.round
    )
    # the round and its shoe load as aggregates; the round verifies in the store
    assert app.round_view(str(rid))["phase"] in ("settled", "cancelled")
    assert exported.bundle.shoe_id is not None
    assert app.shoe(exported.bundle.shoe_id).position == len(exported.bundle.card_records())
    verdict = StoreVerifier(app).verify(rid)
    assert verdict.ok, verdict.as_json()
    assert "commit" in verdict.checks  # the import is a transaction of this store: sealed
    assert any("not yet covered by a checkpoint" in n for n in verdict.notes)
    again = import_round(app, lines(path))
    assert again.written == 0


def test_an_altered_recording_is_refused_and_nothing_is_imported(tmp_path: Path) -> None:
    path = next(p for p in RECORDINGS if "funds1" in p.name)
    raw = lines(path)
    for i, line in enumerate(raw):
        obj = orjson.loads(line)
        if obj.get("class") == "Round.WagerSettled" and obj["payload"]["payout"] != "0.00":
            state = base64.b64decode(obj["state"]).replace(b'"payout":"', b'"payout":"9', 1)
            obj["state"] = base64.b64encode(state).decode()
            raw[i] = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
            position = obj["position"]
            break
    verdict = verify_export(read_export(raw))
    found = {(d.check, d.position, d.field) for d in verdict.discrepancies}
    assert ("reexecution", position, "payout") in found
    assert ("seal", position, "(bytes)") in found
    assert ("export", position, f"(line {i + 1}).payload") in found  # the readable part lies
    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/imported.db"))
    try:
        with pytest.raises(ExportError, match="does not verify"):
            import_round(app, raw)
        assert not app.recorder.select_events(verdict_round(raw))
    finally:
        app.close()


def verdict_round(raw: list[bytes]) -> UUID:
    return UUID(orjson.loads(raw[0])["round_id"])


def test_verify_file_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = RECORDINGS[0]
    assert main(["verify", "--file", str(path), "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"
    bad = tmp_path / "bad.jsonl"
    raw = lines(path)
    obj = orjson.loads(raw[3])
    state = bytearray(base64.b64decode(obj["state"]))
    state[-3] ^= 1  # one bit of the timestamp of the event
    obj["state"] = base64.b64encode(bytes(state)).decode()
    raw[3] = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    bad.write_bytes(b"\n".join(raw) + b"\n")
    assert main(["verify", "--file", str(bad), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "0 passed, 1 failed"
    assert "position 3" in out

"""The web service's verifier keeps its own state of the Merkle log (``ROUNDAUDIT_VERIFIER_STATE``,
``Settings.verifier_state``, ``replays.logstate.long_lived_log``), on SQLite and PostgreSQL.

A service process started on a state reads only the log's new leaves, and gives the verdicts a
service without state gives; a log cut back or forked since a service process saved the state
fails every round's verification through HTTP (a 200 whose verdict says so, as for any other
finding), in a service process started after the attack, and the state is not reset by it. The
setting: a file per store under the state directory by default, ``none`` for none, a file that
is not a verifier state refused at start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from apikit import Api, check_problem, service_settings
from fastapi.testclient import TestClient
from storekit import Store

from api.main import create_app
from api.settings import Settings, SettingsError, load_settings
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import LEAF_TOPIC, LEAVES_ID, PURPOSE
from domain.persistence import environment_for
from replays.logstate import StatefulLog, VerifierState, default_state_path


@contextmanager
def service(settings: Settings) -> Iterator[Api]:
    """One service process (its own application and Merkle log)."""
    with TestClient(create_app(settings)) as client:
        yield Api(client)


def _record(url: str, table: str) -> list[str]:
    app = RoundAudit(env=environment_for(url))
    try:
        return simulate(app, variant="european", rounds=3, players=2, table=table).round_ids
    finally:
        app.close()


def verdict(api: Api, rid: str) -> Any:
    r = api.client.get(f"/rounds/{rid}/verification")
    assert r.status_code == 200, r.text
    return r.json()


def shared_log(api: Api) -> Any:
    return api.client.app.state.merkle_log  # type: ignore[attr-defined]


@pytest.fixture
def kept(store_url: str, tmp_path: Path) -> tuple[Settings, Path, list[str]]:
    """A store whose service verified a round through its state, then grew."""
    state = tmp_path / "verifier.sqlite"
    settings = service_settings(store_url, verifier_state=state)
    first = _record(store_url, "EU1")
    with service(settings) as api:
        assert verdict(api, first[0])["ok"] is True
        assert isinstance(shared_log(api), StatefulLog)
    assert VerifierState(state).size > 0
    return settings, state, first + _record(store_url, "EU2")


def test_a_service_on_a_state_reads_only_the_new_leaves_and_gives_the_same_verdicts(
    kept: tuple[Settings, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, state, rounds = kept
    added: list[int] = []
    add_many = StatefulLog._add_many

    def counted(log: StatefulLog, rows: Sequence[tuple[str, bytes]]) -> None:
        added.extend(range(log.size, log.size + len(rows)))  # the indexes of the leaves read
        add_many(log, rows)

    monkeypatch.setattr(StatefulLog, "_add_many", counted)
    saved = VerifierState(state).size
    without = service_settings(settings.database_url)
    with service(without) as api:
        expected = [verdict(api, rid) for rid in rounds]
        size = shared_log(api).size
    assert size > saved  # the store grew after the state was saved
    with service(settings) as api:
        assert [verdict(api, rid) for rid in rounds] == expected
        log = shared_log(api)
        assert isinstance(log, StatefulLog)
        # the leaves kept were not read again (the service's start may add a leaf)
        assert added == list(range(saved, log.size))
        assert log.size >= size
    assert all(v["ok"] for v in expected)
    assert VerifierState(state).size == log.size  # the new tail saved at opening


def _cut_back(store: Store, above: int) -> None:
    store.delete(LEAVES_ID, above=above, purpose=PURPOSE)


def test_a_log_cut_back_fails_verification_over_http_and_the_state_is_kept(
    kept: tuple[Settings, Path, list[str]], tmp_path: Path
) -> None:
    settings, state, rounds = kept
    with service(settings) as api:  # the state now holds the grown log
        assert verdict(api, rounds[-1])["ok"] is True
    saved = VerifierState(state).size
    store = Store(settings.database_url, tmp_path / "operator.pem", None)  # type: ignore[arg-type]
    _cut_back(store, saved - 3)  # the insider cuts the log back
    for _ in range(2):  # a service process started after the attack, twice: never reset
        with service(settings) as api:
            for rid in (rounds[0], rounds[-1]):  # an old round and a recent one
                body = verdict(api, rid)
                assert body["ok"] is False
                texts = [d["message"] for d in body["discrepancies"]]
                assert any("it was cut back" in t and "rollback" in t for t in texts), texts
        assert VerifierState(state).size == saved


def test_a_forked_log_fails_verification_over_http(
    kept: tuple[Settings, Path, list[str]], tmp_path: Path
) -> None:
    settings, state, rounds = kept
    with service(settings) as api:
        assert verdict(api, rounds[0])["ok"] is True
    size = VerifierState(state).size
    store = Store(settings.database_url, tmp_path / "operator.pem", None)  # type: ignore[arg-type]
    last = store.execute(
        f"SELECT state FROM {store.table(PURPOSE)} WHERE originator_id = %s "
        "AND originator_version = %s",
        (store._id(LEAVES_ID), size),
    )[0][0]
    store.execute(
        f"UPDATE {store.table(PURPOSE)} SET state = %s WHERE originator_id = %s "
        "AND originator_version = %s AND topic = %s",
        (
            bytes(last).replace(b"roundaudit/leaf/v2", b"roundaudit/leaf/v2 "),
            store._id(LEAVES_ID),
            size,
            LEAF_TOPIC,
        ),
    )
    with service(settings) as api:
        body = verdict(api, rounds[0])
    assert body["ok"] is False
    texts = [d["message"] for d in body["discrepancies"]]
    assert any(f"the store's leaf {size - 1} is not the one" in t for t in texts), texts
    assert any("(fork)" in t for t in texts), texts
    # the same store verified without state: the forked leaf is the log as it is now
    with service(service_settings(settings.database_url)) as api:
        assert verdict(api, rounds[0])["ok"] is True


def test_a_state_damaged_under_the_service_is_a_503_problem_that_names_no_file(
    kept: tuple[Settings, Path, list[str]],
) -> None:
    """A state file damaged after the service checked it at start (its tree's nodes deleted)
    is refused at the first audit read as an RFC 9457 problem, not an internal error: nothing
    is verified against it, the answer names the setting but not the server's path, and the
    file is not reset."""
    settings, state, rounds = kept
    with service(settings) as api:
        with sqlite3.connect(state) as db:
            db.execute("DELETE FROM nodes")
        for _ in range(2):  # refused each time, never reset
            r = api.client.get(f"/rounds/{rounds[0]}/verification")
            body = check_problem(r, 503, "verifier-state-refused")
            assert "ROUNDAUDIT_VERIFIER_STATE" in body["detail"]
            assert "is missing" in body["detail"]
            assert str(state.parent) not in r.text
    with sqlite3.connect(state) as db:
        assert db.execute("SELECT COUNT(*) FROM nodes").fetchone() == (0,)


# ------------------------------------------------------------------------------ the setting
def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "ROUNDAUDIT_DATABASE_URL": f"sqlite:///{tmp_path}/api.db",
        "ROUNDAUDIT_SEED_KEY": str(tmp_path / "seed.key"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **extra,
    }


def test_the_setting_defaults_to_a_file_per_store_and_none_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from api.settings import write_seed_key
    from domain.vault import SeedKeyRing

    write_seed_key(tmp_path / "seed.key", SeedKeyRing.generate())
    url = f"sqlite:///{tmp_path}/api.db"
    default = load_settings(_env(tmp_path)).verifier_state
    assert default == default_state_path(url, str(tmp_path / "state"))
    assert not (tmp_path / "state").exists()  # made at the first audit read, not before
    given = tmp_path / "mine.sqlite"
    assert load_settings(_env(tmp_path, ROUNDAUDIT_VERIFIER_STATE=str(given))).verifier_state == (
        given
    )
    assert load_settings(_env(tmp_path, ROUNDAUDIT_VERIFIER_STATE="none")).verifier_state is None
    assert Settings().verifier_state is None  # tests build Settings: no state unless given
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"not a state file")
    with pytest.raises(SettingsError, match="ROUNDAUDIT_VERIFIER_STATE"):
        load_settings(_env(tmp_path, ROUNDAUDIT_VERIFIER_STATE=str(corrupt)))


def test_two_service_processes_on_one_state_file_keep_it_whole_under_concurrent_reads(
    store_url: str, tmp_path: Path
) -> None:
    """Two service processes (``serve --workers 2``) share the state file; rounds are recorded
    while both answer verifications from several threads at once, each saving what it read
    (every refresh here: ``keep_every`` 0); the file then holds the store's log exactly."""
    from concurrent.futures import ThreadPoolExecutor

    from replays.log import MerkleLog
    from replays.logstate import open_log

    state = tmp_path / "verifier.sqlite"
    settings = service_settings(store_url, verifier_state=state)
    rounds = _record(store_url, "EU0")
    with service(settings) as one, service(settings) as two:
        for api in (one, two):
            assert verdict(api, rounds[0])["ok"] is True
            shared_log(api).keep_every = 0.0
        for n in range(3):
            rounds += _record(store_url, f"EU{n + 1}")
            with ThreadPoolExecutor(4) as pool:
                jobs = [(api, rid) for rid in rounds[-4:] for api in (one, two)]
                bodies = list(pool.map(lambda job: verdict(*job), jobs))
            assert all(b["ok"] for b in bodies), bodies
        assert not shared_log(one).findings
        assert not shared_log(two).findings
    app = RoundAudit(env=environment_for(store_url))
    try:
        kept = open_log(app, state)
        assert isinstance(kept, StatefulLog)
        assert not kept.findings
        fresh = MerkleLog(app).refresh()
        assert (kept.size, kept.tree.root()) == (fresh.size, fresh.tree.root())
        assert list(kept.kinds) == list(fresh.kinds)
        assert kept.round_ids() == fresh.round_ids()
        for _index, e in fresh.iter_entries():
            assert kept.locate(*e.key) == fresh.locate(*e.key)
    finally:
        app.close()

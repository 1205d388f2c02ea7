"""Audit reads over HTTP (``api/routes/audit.py``): replay, verification, export and inclusion
proof of a round; the Merkle log's latest checkpoint, consistency proofs and public key; the
key settings.

Rounds are played over HTTP (european, from a test shoe) or, for boundless rounds, which the
API does not play, by the simulator on the service's own application; every transaction seals
its events at commit, and the checkpoint signer (``replays.signer``) then signs the log with a
fresh key whose public half the service is configured with. Proofs are checked by
``tests/replays/rfc9162.py``, the independent RFC 9162 and C2SP verifier.
"""

from __future__ import annotations

import base64
import sqlite3
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from apikit import TEST_HOSTS, Api, Json, check_problem, service_settings
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replays"))  # the RFC 9162 checker

import rfc9162

from api.main import create_app, get_app
from api.settings import (
    ALLOWED_HOSTS_ENV,
    DATABASE_URL_ENV,
    PUBLIC_KEY_ENV,
    SEED_KEY_ENV,
    SIGNING_KEY_ENV,
    Settings,
    SettingsError,
    load_settings,
    write_seed_key,
)
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.boundless.shared import SharedHand
from domain.persistence import sqlite_path
from domain.round import Round
from domain.vault import SeedKeyRing
from domain.wallet import Wallet
from replays.bundle import StoreReader
from replays.chain import canonical
from replays.export import export_round, read_export, verify_export
from replays.log import LEAVES_ID, make_policy
from replays.merkle import generate_key, key_id, load_private_key, public_pem, raw_public
from replays.note import operator_key
from replays.signer import Signer, SignReport
from replays.steps import replay_bundle

NDJSON = "application/x-ndjson"
ORIGIN = "casino.example/roundaudit/api-test"
#: A european round, one box: 10H 8C = 18 stands against the dealer's 9S KD = 19.
ORDER = ["10H", "9S", "8C", "KD"]


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return generate_key()


@pytest.fixture
def raw(key: Ed25519PrivateKey) -> bytes:
    return raw_public(key.public_key())


@pytest.fixture
def settings(tmp_path: Path, key: Ed25519PrivateKey) -> Settings:
    """The service checks checkpoints with the public half of the key the tests seal with."""
    return service_settings(
        f"sqlite:///{tmp_path}/api.db", public_key=key.public_key(), origin=ORIGIN
    )


def seal(audit: RoundAudit, *, key: Ed25519PrivateKey) -> SignReport:
    """A checkpoint of the log as it is (``roundaudit seal``)."""
    return Signer(audit, key=key, origin=ORIGIN).run_once()


@pytest.fixture
def audit(client: TestClient) -> RoundAudit:
    """The service's own application (open while the client is)."""
    app: RoundAudit = client.app.state.audit  # type: ignore[attr-defined]
    return app


def play_european(api: Api, number: int = 1, *, table: str = "EU1") -> str:
    """A settled european round over HTTP; alice is funded on the first call."""
    if api.client.get("/wallets/alice").status_code == 404:
        api.wallet("alice", deposit="100.00")
    rid = api.start(table, "european", ORDER, number)
    api.bet(rid, "alice", "10.00", 1)
    api.close(rid)
    view = api.decide(rid, "alice", "stand")
    assert view["phase"] == "settled"
    return rid


def play_boundless(audit: RoundAudit, table: str = "BX1") -> str:
    report = simulate(audit, variant="boundless", rounds=1, players=3, table=table)
    (rid,) = report.round_ids
    return rid


def get(api: Api, url: str) -> Any:
    r = api.client.get(url)
    assert r.status_code == 200, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def stored_rows(settings: Settings, rid: str) -> list[tuple[int, str, bytes]]:
    path = sqlite_path(settings.database_url)
    assert path is not None
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT originator_version, topic, state FROM stored_events "
            "WHERE originator_id = ? ORDER BY originator_version",
            (UUID(rid).hex,),
        ).fetchall()
    finally:
        conn.close()
    return [(int(v), str(t), bytes(s)) for v, t, s in rows]


def execute(settings: Settings, sql: str, *args: Any) -> None:
    path = sqlite_path(settings.database_url)
    assert path is not None
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


# ------------------------------------------------------------------------------ replay
def test_replay_of_a_settled_european_round_by_uuid_and_by_table_and_number(
    api: Api, audit: RoundAudit
) -> None:
    rid = play_european(api)
    body = get(api, f"/rounds/{rid}/replay")
    assert body["round_id"] == rid
    assert body["stopped"] is None
    steps = body["steps"]
    assert [s["position"] for s in steps] == list(range(1, len(steps) + 1))
    assert len(steps) == len(api.events(rid))
    assert steps[0]["event"] == "Round.Started"
    assert steps[-1]["event"] == "Round.RoundSettled"
    assert steps[-1]["view"]["phase"] == "settled"
    assert steps[-1]["view"]["dealer"]["cards"] == ["9S", "KD"]
    assert "alice" in steps[-1]["balances"]
    # the same document as `roundaudit replay --json` (replays.steps, whole)
    whole = replay_bundle(StoreReader(audit).round_bundle(UUID(rid))).as_json()
    assert body == orjson.loads(orjson.dumps(whole, default=str))
    # TABLE#NUMBER, with the # sent as %23
    assert get(api, "/rounds/EU1%231/replay") == body


def test_replay_of_a_boundless_round(api: Api, audit: RoundAudit) -> None:
    rid = play_boundless(audit)
    body = get(api, f"/rounds/{rid}/replay")
    assert body["round_id"] == rid
    assert body["stopped"] is None
    steps = body["steps"]
    assert steps[0]["event"] == "SharedHand.Started"
    assert steps[0]["owner"] == "shared"
    assert steps[-1]["view"]["phase"] == "settled"
    players = {s["owner"] for s in steps} - {"shared"}  # the bots that joined (some sit out)
    assert players
    assert {h["player"] for h in steps[-1]["view"]["hands"]} <= players
    assert get(api, "/rounds/BX1%231/replay") == body


# ------------------------------------------------------------------------------ verification
def test_verification_of_sealed_rounds_is_ok_with_every_check(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey
) -> None:
    european = play_european(api)
    boundless = play_boundless(audit)
    report = seal(audit, key=key)
    assert report.checkpoint is not None
    for rid in (european, boundless):
        verdict = get(api, f"/rounds/{rid}/verification")
        assert verdict["round_id"] == rid
        assert verdict["ok"] is True, verdict
        assert set(verdict["checks"]) >= {
            "storage", "reexecution", "shoe", "money", "commit", "checkpoint"
        }  # fmt: skip
        assert verdict["discrepancies"] == []
        assert not any("not checked" in n for n in verdict["notes"]), verdict["notes"]
    assert get(api, "/rounds/EU1%231/verification")["label"] == "EU1#1"


def test_verification_before_a_checkpoint_says_so_in_a_note(api: Api) -> None:
    rid = play_european(api)
    verdict = get(api, f"/rounds/{rid}/verification")
    assert verdict["ok"] is True
    assert "commit" in verdict["checks"]  # sealed at commit
    assert "checkpoint" not in verdict["checks"]
    assert any("not yet covered by a checkpoint" in n for n in verdict["notes"])


def test_verification_of_a_tampered_round_is_a_200_naming_the_commit_check(
    api: Api, audit: RoundAudit, settings: Settings, key: Ed25519PrivateKey
) -> None:
    rid = play_european(api)
    seal(audit, key=key)
    rows = stored_rows(settings, rid)
    version, _, state = next(r for r in rows if r[1].endswith("Round.BetPlaced"))
    assert b'"client_time":null' in state
    execute(
        settings,
        "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
        state.replace(b'"client_time":null', b'"client_time":"2020-01-01T00:00:00Z"'),
        UUID(rid).hex,
        version,
    )
    r = api.client.get(f"/rounds/{rid}/verification")
    assert r.status_code == 200
    verdict = r.json()
    assert verdict["ok"] is False
    found = [d for d in verdict["discrepancies"] if d["check"] == "commit"]
    assert found, verdict
    assert found[0]["position"] == version
    assert found[0]["event"] == "Round.BetPlaced"
    assert "changed after commit" in found[0]["message"]
    # the replay shows what is stored now (it checks no seal)
    assert get(api, f"/rounds/{rid}/replay")["stopped"] is None


def test_a_sealed_round_whose_events_are_gone_fails_verification(
    api: Api, audit: RoundAudit, settings: Settings, key: Ed25519PrivateKey
) -> None:
    rid = play_european(api)
    seal(audit, key=key)
    execute(settings, "DELETE FROM stored_events WHERE originator_id = ?", UUID(rid).hex)
    verdict = get(api, f"/rounds/{rid}/verification")
    assert verdict["ok"] is False
    assert {d["check"] for d in verdict["discrepancies"]} >= {"storage", "commit"}
    body = api.problem("GET", f"/rounds/{rid}/replay", 404, "round-not-found")
    assert "Merkle log" in body["detail"]
    api.problem("GET", f"/rounds/{rid}/export", 404, "round-not-found")
    # the inclusion proofs still stand: they are the log's, not the store's
    assert get(api, f"/rounds/{rid}/proof")["round_id"] == rid


@pytest.mark.parametrize("topic", ["domain.wallet:Wallet.Opened", "nowhere:Gone"])
def test_a_relabelled_first_record_does_not_hide_a_round_from_verification(
    api: Api, audit: RoundAudit, settings: Settings, key: Ed25519PrivateKey, topic: str
) -> None:
    """A round's Started record relabelled as another aggregate's event (or as nothing): the
    sealed round is still verified, and fails."""
    rid = play_european(api)
    seal(audit, key=key)
    execute(
        settings,
        "UPDATE stored_events SET topic = ? WHERE originator_id = ? AND originator_version = 1",
        topic,
        UUID(rid).hex,
    )
    verdict = get(api, f"/rounds/{rid}/verification")
    assert verdict["ok"] is False
    assert "commit" in {d["check"] for d in verdict["discrepancies"]}


# ------------------------------------------------------------------------------ export
@pytest.mark.parametrize("boundless", [False, True], ids=["european", "boundless"])
def test_export_is_canonical_ndjson_that_verifies_on_its_own(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey, boundless: bool
) -> None:
    rid = play_boundless(audit) if boundless else play_european(api)
    seal(audit, key=key)
    r = api.client.get(f"/rounds/{rid}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(NDJSON)
    assert r.headers["content-disposition"] == f'attachment; filename="round-{rid}.jsonl"'
    policy = make_policy(operator_key(ORIGIN, key.public_key()), origin=ORIGIN)
    assert r.content == export_round(audit, UUID(rid), public_key=key.public_key(), policy=policy)
    lines = r.content.splitlines()
    assert all(line == canonical(orjson.loads(line)) for line in lines)
    assert orjson.loads(lines[0])["line"] == "header"
    assert orjson.loads(lines[-1])["line"] == "checkpoint"
    exported = read_export(lines)
    assert exported.problems == []
    assert str(exported.bundle.round_id) == rid
    verdict = verify_export(exported, policy=policy)
    assert verdict.ok, verdict.as_json()
    assert {"commit", "checkpoint"} <= set(verdict.checks)
    # the file carries the service's key (for convenience; a reader compares it)
    assert orjson.loads(lines[-1])["vkey"] == operator_key(ORIGIN, key.public_key()).vkey()


# ------------------------------------------------------------------------------ proofs
def test_inclusion_proof_checks_with_an_independent_rfc9162_verifier(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey, raw: bytes
) -> None:
    first = play_european(api, 1)
    boundless = play_boundless(audit)
    seal(audit, key=key)  # checkpoint 1
    second = play_european(api, 2)
    seal(audit, key=key)  # checkpoint 2
    for rid in (first, boundless, second):
        doc = get(api, f"/rounds/{rid}/proof")
        assert doc["round_id"] == rid
        assert any(rid in item["leaf"] for item in doc["leaves"])
        assert doc["checkpoint"]["number"] == 2
        assert rfc9162.proof_document_ok(doc, ORIGIN, raw), doc
        item = doc["leaves"][0]
        flipped = {**item, "leaf": item["leaf"].replace(" 1 ", " 2 ", 1)}
        assert not rfc9162.proof_document_ok({**doc, "leaves": [flipped]}, ORIGIN, raw)
    older = get(api, f"/rounds/{first}/proof?checkpoint=1")
    assert older["checkpoint"]["number"] == 1
    assert rfc9162.proof_document_ok(older, ORIGIN, raw)
    assert get(api, "/rounds/EU1%231/proof") == get(api, f"/rounds/{first}/proof")
    body = api.problem("GET", f"/rounds/{second}/proof?checkpoint=1", 409, "proof-unavailable")
    assert "does not cover leaf" in body["detail"]
    api.problem("GET", f"/rounds/{first}/proof?checkpoint=0", 422, "validation-error")


def test_proof_of_a_round_before_any_checkpoint_is_a_409(api: Api, audit: RoundAudit) -> None:
    rid = play_european(api)
    body = api.problem("GET", f"/rounds/{rid}/proof", 409, "proof-unavailable")
    assert body["detail"] == f"no checkpoint covers round {rid} (yet)"
    unfinished = api.start("EU1", "european", ORDER, 2)
    api.problem("GET", f"/rounds/{unfinished}/proof", 409, "proof-unavailable")


def test_one_merkle_log_per_process_reads_only_what_was_sealed_since(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey, raw: bytes
) -> None:
    """The service keeps one log and brings it up to date per request with one query for the
    new leaves: it does not read the whole log again for every proof or verification."""
    first = play_european(api, 1)
    seal(audit, key=key)
    assert get(api, f"/rounds/{first}/proof")["leaves"]
    log = api.client.app.state.merkle_log  # type: ignore[attr-defined]
    held = log.size
    assert held > 1
    asked: list[int | None] = []
    select = log.table.select_events

    def counting(originator_id: Any, **kwargs: Any) -> Any:
        if originator_id == LEAVES_ID:
            asked.append(kwargs.get("gt"))
        return select(originator_id, **kwargs)

    leaf_rows = log._leaf_rows  # the new leaves' read (one query of plain rows)

    def counting_rows(after: int, limit: int | None) -> Any:
        asked.append(after)
        return leaf_rows(after, limit)

    second = play_european(api, 2)
    seal(audit, key=key)  # the signer reads the log on its own
    log.table.select_events = counting
    log._leaf_rows = counting_rows
    doc = get(api, f"/rounds/{second}/proof")
    assert rfc9162.proof_document_ok(doc, ORIGIN, raw)
    assert min(item["index"] for item in doc["leaves"]) >= held
    assert api.client.app.state.merkle_log is log  # type: ignore[attr-defined]
    assert asked
    assert all(gt is not None and gt >= held for gt in asked), (asked, held)
    size = log.size
    asked.clear()
    assert get(api, f"/rounds/{second}/verification")["ok"] is True
    assert asked
    assert all(gt == size for gt in asked)


# ------------------------------------------------------------------------------ the log
def test_latest_checkpoint_and_consistency_check_independently(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey, raw: bytes
) -> None:
    api.problem("GET", "/merkle/checkpoints/latest", 404, "checkpoint-not-found")
    api.problem("GET", "/merkle/consistency?first=1&second=1", 409, "invalid-checkpoints")
    play_european(api, 1)
    seal(audit, key=key)
    cp1 = get(api, "/merkle/checkpoints/latest")
    assert cp1["number"] == 1
    assert rfc9162.note_ok(cp1["note"], ORIGIN, raw) == (
        cp1["size"], base64.b64decode(cp1["root"])
    )  # fmt: skip
    play_european(api, 2)
    play_european(api, 3)
    seal(audit, key=key)
    cp2 = get(api, "/merkle/checkpoints/latest")
    assert cp2["number"] == 2
    assert cp2["size"] > cp1["size"]
    assert rfc9162.note_ok(cp2["note"], ORIGIN, raw) is not None
    doc = get(api, "/merkle/consistency?first=1&second=2")
    assert (doc["first"], doc["second"]) == (cp1, cp2)
    assert rfc9162.consistency_document_ok(doc, ORIGIN, raw)
    assert not rfc9162.consistency_document_ok({**doc, "first": cp2}, ORIGIN, raw)
    assert get(api, "/merkle/consistency?first=2&second=2")["proof"] == []


@pytest.mark.parametrize(
    ("query", "status", "code", "said"),
    [
        ("first=one&second=2", 422, "validation-error", "first"),
        ("first=0&second=2", 422, "validation-error", "first"),
        ("first=1", 422, "validation-error", "second"),
        ("first=1&second=3", 409, "invalid-checkpoints", "checkpoints 1..2"),
        ("first=2&second=1", 409, "invalid-checkpoints", "larger"),
    ],
)
def test_consistency_with_bad_numbers_is_refused(
    api: Api,
    audit: RoundAudit,
    key: Ed25519PrivateKey,
    query: str,
    status: int,
    code: str,
    said: str,
) -> None:
    play_european(api, 1)
    seal(audit, key=key)
    play_european(api, 2)
    seal(audit, key=key)
    body = api.problem("GET", f"/merkle/consistency?{query}", status, code)
    assert said in body["detail"]


def test_public_key_is_published_never_the_private_key(api: Api, key: Ed25519PrivateKey) -> None:
    body = get(api, "/merkle/public-key")
    public = key.public_key()
    assert body == {
        "vkey": operator_key(ORIGIN, public).vkey(),
        "origin": ORIGIN,
        "raw": raw_public(public).hex(),
        "key_id": key_id(public),
        "pem": public_pem(public),
    }
    private = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    text = api.client.get("/merkle/public-key").text
    assert "PRIVATE" not in text
    assert private.hex() not in text


def test_without_a_key_nothing_is_published_and_signatures_are_not_checked(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    with TestClient(create_app(service_settings(f"sqlite:///{tmp_path}/nokey.db"))) as c:
        api = Api(c)
        api.problem("GET", "/merkle/public-key", 404, "public-key-not-configured")
        rid = play_european(api)
        seal(c.app.state.audit, key=key)  # type: ignore[attr-defined]
        verdict = get(api, f"/rounds/{rid}/verification")
        assert verdict["ok"] is True
        assert "checkpoint signature not checked: no operator key pinned" in verdict["notes"]
        last = orjson.loads(api.client.get(f"/rounds/{rid}/export").content.splitlines()[-1])
        assert last["line"] == "checkpoint"
        assert "vkey" not in last


def test_a_checkpoint_signed_by_another_key_fails_verification(api: Api, audit: RoundAudit) -> None:
    rid = play_european(api)
    seal(audit, key=generate_key())  # not the key the service publishes
    verdict = get(api, f"/rounds/{rid}/verification")
    assert verdict["ok"] is False
    assert [d["field"] for d in verdict["discrepancies"]] == ["signature"]


# ------------------------------------------------------------------------------ problems
AUDIT_ROUTES = ["replay", "verification", "export", "proof"]


@pytest.mark.parametrize("route", AUDIT_ROUTES)
def test_an_unknown_round_is_a_404_problem(api: Api, route: str) -> None:
    missing = Round.create_id("NOWHERE", 1)
    url = f"/rounds/{missing}/{route}"
    body = api.problem("GET", url, 404, "round-not-found")
    assert body["type"] == "urn:roundaudit:problem:round-not-found"
    assert body["title"] == "Round not found"
    assert body["status"] == 404
    assert str(missing) in body["detail"]
    body = api.problem("GET", f"/rounds/NOWHERE%231/{route}", 404, "round-not-found")
    assert str(missing) in body["detail"]


@pytest.mark.parametrize("route", AUDIT_ROUTES)
def test_another_aggregates_id_is_not_a_round(api: Api, route: str) -> None:
    api.wallet("bob")
    body = api.problem("GET", f"/rounds/{Wallet.create_id('bob')}/{route}", 404, "round-not-found")
    assert "is not a round" in body["detail"]


@pytest.mark.parametrize("route", AUDIT_ROUTES)
@pytest.mark.parametrize("bad", ["not-a-round", "T1%23one", "%231", "T1%23"])
def test_a_malformed_round_id_is_a_422_problem(api: Api, route: str, bad: str) -> None:
    r = api.client.get(f"/rounds/{bad}/{route}")
    body = check_problem(r, 422, "invalid-id")  # the one grammar of ids (issue 12)
    assert body["field"] == "round_id"
    assert "not a round id" in body["detail"]
    assert "TABLE#NUMBER" in body["detail"]


def test_openapi_lists_the_audit_routes(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    routes = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert routes >= {
        ("get", "/rounds/{round_id}/replay"),
        ("get", "/rounds/{round_id}/verification"),
        ("get", "/rounds/{round_id}/export"),
        ("get", "/rounds/{round_id}/proof"),
        ("get", "/merkle/checkpoints/latest"),
        ("get", "/merkle/consistency"),
        ("get", "/merkle/public-key"),
    }
    assert NDJSON in doc["paths"]["/rounds/{round_id}/export"]["get"]["responses"]["200"]["content"]


def test_the_same_round_reads_the_same_from_concurrent_requests(
    api: Api, audit: RoundAudit, key: Ed25519PrivateKey
) -> None:
    """Each request makes its own log and reader: answers do not depend on what ran before."""
    from concurrent.futures import ThreadPoolExecutor

    rid = play_european(api)
    seal(audit, key=key)
    urls = [f"/rounds/{rid}/{route}" for route in AUDIT_ROUTES] * 4
    with ThreadPoolExecutor(4) as pool:
        first = list(pool.map(lambda u: api.client.get(u).content, urls))
    second = [api.client.get(u).content for u in urls]
    assert first == second


# ------------------------------------------------------------------------------ settings
def write_private(path: Path, key: Ed25519PrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def env(tmp_path: Path, **keys: str) -> dict[str, str]:
    seed = tmp_path / "seed.key"
    if not seed.exists():
        write_seed_key(seed, SeedKeyRing.generate())
    return {DATABASE_URL_ENV: f"sqlite:///{tmp_path}/events.db", SEED_KEY_ENV: str(seed), **keys}


def test_public_key_setting_takes_hex_or_a_pem_file(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    public = key.public_key()
    hexed = raw_public(public).hex()
    assert load_settings(env(tmp_path, ROUNDAUDIT_PUBLIC_KEY=hexed)).public_key == public
    pem = tmp_path / "public.pem"
    pem.write_text(public_pem(public))
    assert load_settings(env(tmp_path, ROUNDAUDIT_PUBLIC_KEY=str(pem))).public_key == public
    assert load_settings(env(tmp_path)).public_key is None


def test_signing_key_setting_gives_its_public_half(tmp_path: Path) -> None:
    path = tmp_path / "signing.pem"
    key, created = load_private_key(path, create=True)  # as `roundaudit seal` makes it
    assert created
    s = load_settings(env(tmp_path, ROUNDAUDIT_SIGNING_KEY=str(path)))
    assert s.public_key == key.public_key()
    both = env(
        tmp_path,
        ROUNDAUDIT_SIGNING_KEY=str(path),
        ROUNDAUDIT_PUBLIC_KEY=raw_public(key.public_key()).hex(),
    )
    assert load_settings(both).public_key == key.public_key()


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        (PUBLIC_KEY_ENV, "not-a-key", "neither a PEM file nor 64 hex digits"),
        (PUBLIC_KEY_ENV, "ab" * 31, "neither a PEM file nor 64 hex digits"),
        (PUBLIC_KEY_ENV, "{garbage}", "does not hold an Ed25519 key"),
        (SIGNING_KEY_ENV, "{missing}", "no such file"),
        (SIGNING_KEY_ENV, "{garbage}", "does not hold an unencrypted Ed25519 private key"),
        (SIGNING_KEY_ENV, "{public}", "does not hold an unencrypted Ed25519 private key"),
    ],
)
def test_invalid_key_settings_are_refused_at_startup(
    tmp_path: Path, key: Ed25519PrivateKey, name: str, value: str, said: str
) -> None:
    (tmp_path / "garbage.pem").write_text("-----BEGIN PUBLIC KEY-----\nnope\n")
    (tmp_path / "public.pem").write_text(public_pem(key.public_key()))
    value = value.format(
        garbage=tmp_path / "garbage.pem",
        public=tmp_path / "public.pem",
        missing=tmp_path / "missing.pem",
    )
    with pytest.raises(SettingsError, match=name) as raised:
        load_settings(env(tmp_path, **{name: value}))
    assert said in str(raised.value)
    assert not (tmp_path / "missing.pem").exists()  # the service never generates a key


def test_a_public_key_that_is_not_the_signing_keys_is_refused(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    signing = write_private(tmp_path / "signing.pem", key)
    other = raw_public(generate_key().public_key()).hex()
    with pytest.raises(SettingsError, match="is not the public half"):
        load_settings(env(tmp_path, ROUNDAUDIT_SIGNING_KEY=str(signing), **{PUBLIC_KEY_ENV: other}))


@pytest.mark.usefixtures("collector_restored")  # get_app tunes the collector
def test_get_app_reads_the_keys_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    signing = write_private(tmp_path / "signing.pem", key)
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite:///{tmp_path}/env.db")
    monkeypatch.delenv("ROUNDAUDIT_PRODUCTION", raising=False)
    monkeypatch.delenv(PUBLIC_KEY_ENV, raising=False)
    monkeypatch.setenv(SIGNING_KEY_ENV, str(signing))
    for name, value in env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, ",".join(TEST_HOSTS))
    with TestClient(get_app()) as c:
        body: Json = c.get("/merkle/public-key").json()
    assert body["key_id"] == key_id(key.public_key())
    monkeypatch.setenv(PUBLIC_KEY_ENV, "nonsense")
    with pytest.raises(SettingsError, match=PUBLIC_KEY_ENV):
        get_app()


def test_shared_hand_round_ids_are_round_ids() -> None:
    """``TABLE#NUMBER`` names a boundless round too: its shared hand has a Round's id."""
    assert SharedHand.create_id("BX1", 1) == Round.create_id("BX1", 1)

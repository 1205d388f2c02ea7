"""domain.access, domain.keys, domain.vault and domain.disclosure on their own."""

from __future__ import annotations

import hmac
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.access import (
    OPERATOR,
    PERMISSIONS,
    Action,
    Forbidden,
    InvalidKeyRequest,
    Principal,
    Role,
    Scope,
    Unauthenticated,
    authorize,
    check_binding,
)
from domain.application import RoundAudit
from domain.disclosure import round_secrets
from domain.keys import ApiKey, KeyNotFound, new_token, parse_token, secret_hash
from domain.vault import (
    SeedKeyMissing,
    SeedKeyRing,
    SeedNotEncrypted,
    SeedVaultError,
    classify,
)

ACTOR = {"kind": "system", "id": "test"}


# ------------------------------------------------------------------------- the table
def test_every_action_has_a_row_and_admin_may_do_everything() -> None:
    assert set(PERMISSIONS) == set(Action)
    assert all(PERMISSIONS[a].get(Role.ADMIN) is Scope.ALL for a in Action)


def test_bound_roles_are_never_given_an_unbound_scope() -> None:
    """A table-bound key reaches its tables only, a player key its player only; the only
    exceptions are the reads that concern no table or player at all (rules, the log, and what
    the key itself is: ``GET /session``)."""
    open_to_all = {Action.RULES_READ, Action.LOG_READ, Action.SESSION_READ}
    for action, row in PERMISSIONS.items():
        if action in open_to_all:
            continue
        for role in (Role.TABLE_FEED, Role.SUPERVISOR):
            assert row.get(role) in (None, Scope.OWN_TABLES), (action, role)
        assert row.get(Role.PLAYER) in (None, Scope.SELF), action


@given(st.sampled_from(list(Action)), st.sampled_from(list(Role)), st.sampled_from(["T1", "T2"]))
def test_authorize_follows_the_table(action: Action, role: Role, table: str) -> None:
    bound = {"tables": frozenset({"T1"})} if role in (Role.TABLE_FEED, Role.SUPERVISOR) else {}
    player = "p1" if role is Role.PLAYER else None
    p = Principal("k", role, player=player, **bound)  # type: ignore[arg-type]
    scope = PERMISSIONS[action].get(role)
    allowed = {
        None: False,
        Scope.ALL: True,
        Scope.OWN_TABLES: table == "T1",
        Scope.SELF: True,  # as p1 below
        Scope.SETTLED: False,  # unsettled below
    }[scope]
    try:
        authorize(p, action, table=table, players=["p1"], settled=False)
    except Forbidden:
        assert not allowed
    else:
        assert allowed


def test_bindings_must_fit_the_role() -> None:
    check_binding(Role.TABLE_FEED, ["T1"], None)
    check_binding(Role.PLAYER, [], "p1")
    check_binding(Role.CASHIER, [], None)
    for role, tables, player in (
        (Role.TABLE_FEED, [], None),
        (Role.SUPERVISOR, ["T1"], "p1"),
        (Role.PLAYER, [], None),
        (Role.PLAYER, ["T1"], "p1"),
        (Role.INVESTIGATOR, ["T1"], None),
        (Role.ADMIN, [], "p1"),
    ):
        with pytest.raises(InvalidKeyRequest):
            check_binding(role, tables, player)


def test_a_forbidden_message_is_the_same_whatever_the_reason() -> None:
    feed = Principal("k", Role.TABLE_FEED, tables=frozenset({"T1"}))
    with pytest.raises(Forbidden) as other:
        authorize(feed, Action.ROUND_READ, table="T2")
    with pytest.raises(Forbidden) as none:
        authorize(feed, Action.ROUND_READ, table=None)
    assert other.value.message == none.value.message


# ------------------------------------------------------------------------- keys
def test_tokens_carry_a_64_bit_id_and_a_256_bit_secret() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for t in tokens:
        parsed = parse_token(t)
        assert parsed is not None
        key_id, secret = parsed
        assert len(key_id) == 16
        assert len(secret) == 43
    for bad in (
        "",
        "rak",
        "rak__",
        "rak_0123_x",
        "xyz_0123456789abcdef_" + "A" * 43,
        "rak_0123456789ABCDEF_" + "A" * 43,
    ):
        assert parse_token(bad) is None


def test_only_a_hash_of_the_secret_is_stored_and_it_is_bound_to_the_key_id() -> None:
    token = new_token()
    key_id, secret = parse_token(token)  # type: ignore[misc]
    key = ApiKey.issue(key_id=key_id, secret=secret, role=Role.CASHIER, actor=ACTOR)
    state = repr(key.__dict__) + repr([e.__dict__ for e in key.collect_events()])
    assert secret not in state
    assert key.matches(secret)
    assert not key.matches(secret[:-1] + ("A" if secret[-1] != "A" else "B"))
    assert secret_hash(key_id, secret) != secret_hash("f" * 16, secret)
    assert hmac.compare_digest(key.secret_hash, secret_hash(key_id, secret))


def test_the_key_ring_authenticates_revokes_and_lists() -> None:
    app = RoundAudit()
    issued = app.keys.create(role="table-feed", tables=["T2", "T1"], label="studio", actor=ACTOR)
    p = app.keys.authenticate(issued.token)
    assert (p.role, p.tables, p.label) == (Role.TABLE_FEED, frozenset({"T1", "T2"}), "studio")
    key_id = issued.key["key_id"]
    for wrong in (
        None,
        "",
        "Bearer x",
        issued.token[:-1] + "x",
        "rak_" + "0" * 16 + "_" + "A" * 43,
    ):
        with pytest.raises(Unauthenticated):
            app.keys.authenticate(wrong)
    app.keys.revoke(key_id, actor=ACTOR, reason="lost")
    with pytest.raises(Unauthenticated):
        app.keys.authenticate(issued.token)
    version = len(list(app.events.get(ApiKey.create_id(key_id))))
    app.keys.revoke(key_id, actor=ACTOR)  # again: nothing more recorded
    assert len(list(app.events.get(ApiKey.create_id(key_id)))) == version == 2
    assert [k.key_id for k in app.keys.all()] == [key_id]
    with pytest.raises(KeyNotFound):
        app.keys.revoke("0" * 16, actor=ACTOR)
    assert OPERATOR.role is Role.ADMIN


def test_ensure_admin_generates_one_key_only_when_none_is_usable() -> None:
    app = RoundAudit()
    first = app.keys.ensure_admin(None, generate=True, actor=ACTOR)
    assert first is not None
    assert app.keys.ensure_admin(None, generate=True, actor=ACTOR) is None
    app.keys.revoke(parse_token(first)[0], actor=ACTOR)  # type: ignore[index]
    second = app.keys.ensure_admin(None, generate=True, actor=ACTOR)
    assert second is not None
    assert second != first
    assert app.keys.ensure_admin(None, generate=False, actor=ACTOR) is None


# ------------------------------------------------------------------------- the vault
def test_a_sealed_seed_opens_only_with_its_key_and_for_its_shoe() -> None:
    ring = SeedKeyRing.generate()
    shoe = uuid4()
    seed = bytes(range(32))
    sealed = ring.seal(shoe, seed)
    assert classify(sealed) == "sealed"
    assert seed not in sealed
    assert len(sealed) == 72
    assert ring.open(shoe, sealed) == seed
    assert ring.seal(shoe, seed) != sealed  # a fresh nonce each time
    with pytest.raises(SeedVaultError, match="altered or moved"):
        ring.open(uuid4(), sealed)
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SeedVaultError, match="altered"):
        ring.open(shoe, tampered)
    with pytest.raises(SeedKeyMissing, match=ring.current_id):
        SeedKeyRing.generate().open(shoe, sealed)
    with pytest.raises(SeedNotEncrypted, match="seed-key migrate"):
        ring.open(shoe, seed)
    with pytest.raises(SeedKeyMissing, match="ROUNDAUDIT_SEED_KEY"):
        SeedKeyRing.locked().seal(shoe, seed)


def test_a_rotated_ring_opens_old_seeds_and_seals_new_ones_with_the_new_key() -> None:
    old = SeedKeyRing.generate()
    shoe = uuid4()
    sealed = old.seal(shoe, b"s" * 32)
    new = old.with_new_key()
    assert new.open(shoe, sealed) == b"s" * 32
    assert new.ids()[1] == old.current_id != new.current_id
    assert SeedKeyRing.parse(new.render()) == new
    rendered_keys = [ln for ln in new.render().splitlines() if not ln.startswith("#")]
    assert all(k not in repr(new) for k in rendered_keys)  # key material is never printed


def test_the_application_keeps_rng_seeds_sealed_and_reseals_plaintext_ones() -> None:
    app = RoundAudit(seed_key=SeedKeyRing.generate())
    sid = app.open_shoe(table_id="T", shoe_number=1, kind="rng", decks=1, production=True)
    assert app.vault.inventory().as_json()["sealed"] == {app.vault.ring.current_id: 1}
    assert app.vault.problems() == []
    # a plaintext row, as an old store holds it
    from eventsourcing.persistence import StoredEvent

    from domain.shuffle import commitment, new_seed
    from domain.vault import SEED_TOPIC

    seed, old = new_seed(), uuid4()
    app.vault.recorder.insert_events([StoredEvent(old, 1, SEED_TOPIC, seed)])
    assert app.vault.inventory().plaintext == 1
    assert "seed-key migrate" in app.vault.problems()[0]
    with pytest.raises(SeedNotEncrypted):
        app.vault.open(old)
    assert app.vault.reseal() == {"resealed": 1, "kept": 1}
    assert app.vault.inventory().plaintext == 0
    assert app.vault.open(old) == seed
    revealed = app.retire_shoe(sid)["revealed_seed"]
    assert app.shoe(sid).commitment == commitment(bytes.fromhex(revealed))


# ------------------------------------------------------------------------- disclosure
class _E:
    def __init__(self, name: str, version: int, **fields: object) -> None:
        self.__class__ = type(name, (), {})  # type: ignore[assignment]
        self.originator_id = RID
        self.originator_version = version
        self.__dict__.update(fields)


RID = uuid4()
SHOE = uuid4()


def test_round_secrets_are_the_face_down_card_until_it_is_turned_or_the_round_ends() -> None:
    dealt = [
        _E("CardDealt", 2, card="10H", shoe_position=0),
        _E("CardToHand", 3, card="10H"),
        _E("CardDealt", 4, card="9S", shoe_position=1),
        _E("CardToDealer", 5, card="9S", face_up=True),
        _E("CardDealt", 6, card="QD", shoe_position=2),
        _E("CardToDealer", 7, card="QD", face_up=False),
    ]
    secrets = round_secrets(dealt, SHOE)
    assert secrets.records == frozenset({(RID, 6), (RID, 7)})
    assert secrets.shoe_positions == {SHOE: frozenset({2})}
    event = {"version": 7, "payload": {"card": "QD", "face_up": False}}
    assert secrets.redact_round_event(RID, event) == {
        "version": 7,
        "payload": {"card": None, "face_up": False},
        "redacted": ["card"],
    }
    assert secrets.redact_round_event(RID, {"version": 5, "payload": {"card": "9S"}})[
        "payload"
    ] == {"card": "9S"}
    for end in ("HoleCardRevealed", "RoundSettled", "RoundCancelled"):
        assert not round_secrets([*dealt, _E(end, 8)], SHOE)


def test_the_dispute_timeline_shows_no_face_down_card() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from roundkit import Kit

    from projections.dispute import timeline

    kit = Kit("multihand", ["10H", "9S", "6D", "QD", "5C", "3H"], players={"A": 100})
    kit.bet("A", 10, spot=1)
    kit.close()
    text = repr(timeline(kit.app, kit.rid, "A").as_json())
    assert "QD" not in text
    kit.decide("A", "stand")
    assert "QD" in repr(timeline(kit.app, kit.rid, "A").as_json())  # shown once turned

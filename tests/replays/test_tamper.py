"""Tampering directly in the database, as an insider with the operator's database (and, in two
cases, its signing key) would, is found by ``roundaudit verify`` on SQLite and PostgreSQL, each
case on a fresh copy of one built store: the exit status is 1, and the output names the check,
the aggregate and the position.

The store: three european rounds, two deluxe rounds at a deluxe table, every transaction sealed
at commit; a checkpoint signed by the operator and cosigned by a witness (its own process, on
loopback); then one more european round, committed after that checkpoint (its transactions
are in the log, not yet under a checkpoint). The verifier pins the operator's key (its vkey)
and trusts the witness.

Cases (the issue's list, then the older ones): forged client time and request id of the round
not yet checkpointed (and still found after a later checkpoint); a round and its wallet rows
deleted; one digit of a stored timestamp; a cut tail of events; events and leaves cut together
after the witnessed checkpoint (a rollback against the witness); the log rewritten and re-signed
with the operator key (a fork for the witness); a rewrite signed with another key (the pinned
key); edits to a table, a shoe, a seed reveal, a wallet, an API key (a role escalated, a
revocation deleted); a checkpoint whose signature fails;
bytes of an input and of a consequence, a deleted event, two swapped, a round's tail, an amount
in the round and in the wallet, a card of the shoe, a rewritten leaf.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest
from pg import fresh_database
from storekit import (
    Store,
    WitnessProcess,
    copy_store,
    copy_witness,
    drop_copy,
    operator,
    sign,
    timestamp_changed,
)

from cli.simulate import simulate
from domain.application import RoundAudit
from domain.commit_leaf import LEAVES_ID
from domain.persistence import environment_for
from domain.round import Round
from domain.wallet import Wallet
from replays.log import CHECKPOINTS_ID
from replays.merkle import generate_key, load_private_key
from replays.note import operator_key

ROUNDS = {"european": 3, "deluxe": 2}
TOTAL = sum(ROUNDS.values()) + 1  # and one european round after the checkpoint
WITNESS = "witness.example/w1"
KEY_ADMIN = {"kind": "system", "id": "tamper-test"}


@dataclass
class Template:
    url: str
    folder: Path
    postgres_url: str | None
    witness: WitnessProcess

    @property
    def key(self) -> Path:
        return self.folder / "operator.pem"


def build(url: str, folder: Path) -> Template:
    key = folder / "operator.pem"
    witness = WitnessProcess(folder / "witness", WITNESS, [operator(key)])
    app = RoundAudit(env=environment_for(url))
    try:
        # reproducible shoes: the same cards every build, so each attack below finds the event
        # it edits (with CSPRNG shoes a round's cards could leave none, e.g. no hand stood)
        simulate(
            app, variant="european", rounds=ROUNDS["european"], players=2, reproducible_shoes=True
        )
        simulate(app, variant="deluxe", rounds=ROUNDS["deluxe"], players=3, reproducible_shoes=True)
        # an investigator's key, and a key issued then revoked (key changes are events)
        app.keys.create(role="investigator", label="lab", actor=KEY_ADMIN)
        gone = app.keys.create(role="table-feed", tables=["sim-deluxe"], actor=KEY_ADMIN)
        app.keys.revoke(gone.key["key_id"], actor=KEY_ADMIN, reason="left the studio")
    finally:
        app.close()
    with witness:
        report = sign(url, key, [witness.trusted])
        assert report.witnessed == [WITNESS], report.problems
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(
            app, variant="european", rounds=1, players=2, reproducible_shoes=True
        )  # after the checkpoint
    finally:
        app.close()
    return Template(url, folder, None, witness)


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def template(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Template]:
    folder = tmp_path_factory.mktemp("tamper")
    if request.param == "sqlite":
        yield build(f"sqlite:///{folder}/events.db", folder)
        return
    session: str = request.getfixturevalue("postgres_url")
    with fresh_database(session) as url:
        t = build(url, folder)
        t.postgres_url = session
        yield t


@pytest.fixture
def store(
    template: Template, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Store]:
    """A fresh copy of the built store (and of its witness's state), verified clean first."""
    url = copy_store(template.url, tmp_path, template.postgres_url)
    witness = copy_witness(template.witness, tmp_path / "witness")
    s = Store(url, template.key, capsys, [witness])
    try:
        code, out = s.verify()
        assert code == 0, out
        assert out.splitlines()[-1] == f"{TOTAL} passed, 0 failed, 1 not final", out
        yield s
    finally:
        if witness.process is not None:
            witness.stop()
        drop_copy(url, template.postgres_url)


def failed(code: int, out: str, rounds: int = 1, log: str | None = None) -> None:
    """verify exited 1; the summary counts ``rounds`` failed rounds (and the log's checks)."""
    assert code == 1, out
    last = out.splitlines()[-1]
    assert re.match(rf"\d+ passed, {rounds} failed", last), last
    if log is not None:
        assert last.endswith(f"; the log failed: {log}"), last
    else:
        assert "the log failed" not in last, last


def named(out: str, check: str, where: str, event: str) -> bool:
    """A round finding: ``[check] position P Event...`` (``where``: ``position P``/``round``)."""
    return re.search(rf"\[{check}\] {where} {re.escape(event)}", out) is not None


def log_finding(out: str, check: str, aggregate: str, position: str) -> bool:
    """A finding of the log: ``[check] Aggregate <id> <position>...``."""
    return (
        re.search(rf"\[{check}\] {re.escape(aggregate)} [0-9a-f-]{{36}} {position}", out)
        is not None
    )


def round_ids(variant: str) -> list[UUID]:
    n = ROUNDS[variant] + (1 if variant == "european" else 0)
    return [Round.create_id(f"sim-{variant}", i) for i in range(1, n + 1)]


def busiest(store: Store, variant: str, *, having: str | None = None) -> UUID:
    """The checkpointed simulated round of ``variant`` with the most events (``having``: of
    those with a ``Round.<having>`` event: the shoes are new each build, and a round's cards
    may leave none, e.g. no hand stood when every hand doubled, busted or made 21)."""
    ids = round_ids(variant)[: ROUNDS[variant]]
    rows = {rid: store.rows(rid) for rid in ids}
    if having is not None:
        ids = [rid for rid in ids if any(r[1].endswith(f"Round.{having}") for r in rows[rid])]
        assert ids, f"no simulated {variant} round has a {having}"
    return max(ids, key=lambda rid: len(rows[rid]))


def index_of(rows: list[tuple[int, str, bytes]], cls: str, *, last: bool = False) -> int:
    found = [i for i, r in enumerate(rows) if r[1].endswith(f"Round.{cls}")]
    return found[-1] if last else found[0]


# ------------------------------------------------------------------------------ the issue
def test_forged_client_time_and_request_id_before_a_checkpoint_are_found(store: Store) -> None:
    """The round committed after the last checkpoint: its decision's client time and request id
    forged. Its transaction's leaf holds the bytes as committed, so the forgery is found now,
    and still after the next checkpoint (which cannot seal it in)."""
    late = round_ids("european")[-1]
    rows = store.rows(late)
    # a decision when the random cards left one (a dealt blackjack ends the round without),
    # else a bet: both are inputs carrying a client time and a request id
    cls = "DecisionMade" if any(r[1].endswith("Round.DecisionMade") for r in rows) else "BetPlaced"
    version, _, state = rows[index_of(rows, cls)]
    forged = state.replace(b'"client_time":null', b'"client_time":"2020-01-01T00:00:00Z"')
    forged = forged.replace(b'"request_id":null', b'"request_id":"forged-1"')
    assert forged != state
    store.set_state(late, version, forged)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "commit", f"position {version}", f"Round.{cls} (bytes)"), out
    assert f"Round {late} version {version}: the stored bytes are not those leaf" in out
    assert log_finding(out, "commit", "Round", f"version {version}, notification"), out
    with store.witnesses[0]:
        report = store.sign()
        assert report.checkpoint is not None
        code, out = store.verify()
    failed(code, out, log="commit")
    assert "changed after commit" in out


def test_a_deleted_round_and_its_wallet_rows_are_found(store: Store) -> None:
    rid = busiest(store, "european")
    wallets = {
        Wallet.create_id(p.decode())
        for _, _, st in store.rows(rid)
        for p in re.findall(rb'"player":"([^"]+)"', st)
    }
    store.delete(rid)
    for wid in wallets:
        for version, _, state in store.rows(wid):
            if str(rid).encode() in state:
                store.delete(wid, version=version)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert f"FAIL {rid}" in out  # the log still knows the round
    assert "the store holds no event of this round" in out
    assert log_finding(out, "commit", "Round", "version 1, notification"), out
    assert log_finding(out, "commit", "Wallet", r"version \d+, notification"), out
    assert "no longer in the store: deleted" in out


def test_one_digit_of_a_stored_timestamp_is_found(store: Store) -> None:
    """A CardDealt in the middle of the log: one digit of its server timestamp."""
    dealt = store.notifications("%Round.CardDealt")
    n, oid, version, _, state = dealt[len(dealt) // 2]
    changed = timestamp_changed(state)
    store.set_state(oid, version, changed)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "commit", f"position {version}", "Round.CardDealt (bytes)"), out
    assert log_finding(out, "commit", "Round", f"version {version}, notification {n},"), out


def test_a_cut_tail_of_events_is_found(store: Store) -> None:
    """The last transactions' events removed from the events table (their leaves remain)."""
    events = store.notifications()
    keep = events[-15][0]
    store.delete_after(keep)
    code, out = store.verify()
    failed(code, out, log="commit")
    late = round_ids("european")[-1]
    assert f"FAIL {late}" in out
    assert re.search(rf"version \d+, notification {keep + 1}, leaf \d+: committed in the leaf", out)
    assert "no longer in the store: deleted" in out


def test_events_and_leaves_cut_after_a_witnessed_checkpoint_are_a_rollback(store: Store) -> None:
    """Events, leaves and checkpoints cut back together to before the witnessed checkpoint:
    what is left is a consistent smaller log, but the witness cosigned a larger tree."""
    with store.log() as log:
        witnessed = log.checkpoints()[-1].size
        cut = witnessed - 5
        last_kept = max(e.notification_id for i, e in log.iter_entries() if i < cut)
    store.delete_after(last_kept)
    store.execute(
        f"DELETE FROM {store.table('merkle_log')} WHERE originator_id = %s "
        "AND originator_version > %s",
        (store._id(LEAVES_ID), cut),
    )
    store.delete(CHECKPOINTS_ID, purpose="merkle_log")
    with store.witnesses[0]:
        code, out = store.verify()
        assert code == 1, out
        assert (
            f"[rollback] (merkle log) witness {WITNESS}: it cosigned a tree of {witnessed}" in out
        )
        assert out.splitlines()[-1].endswith("; the log failed: rollback"), out
        # the signer refuses to go on from the smaller tree: the witness holds a larger one
        report = store.sign()
        assert any("rolled back" in p for p in report.problems), report.problems


def _a_payout(store: Store) -> tuple[UUID, int, bytes]:
    for rid in round_ids("european")[:-1] + round_ids("deluxe"):
        for version, topic, state in store.rows(rid):
            if topic.endswith("Round.WagerSettled") and b'"payout":"0.00"' not in state:
                return rid, version, state
    pytest.fail("no simulated wager paid anything")


def test_a_rewrite_re_signed_with_the_operator_key_is_a_fork_for_the_witness(
    store: Store,
) -> None:
    """An insider with the database and the signing key changes a payout, rewrites its leaf,
    drops the checkpoints and signs new ones: consistent, signed, but the witness's checkpoint
    has another root at its size. (The witness also refuses to cosign the new tree.)"""
    rid, version, state = _a_payout(store)
    forged = re.sub(rb'"payout":"([0-9.]+)"', rb'"payout":"9\1"', state, count=1)
    store.rewrite_with_leaf(rid, version, forged)
    store.delete(CHECKPOINTS_ID, purpose="merkle_log")
    with store.witnesses[0]:
        report = store.sign()  # the operator's key, sent to the witness: refused
        assert report.checkpoint is not None
        assert any("refused: 422" in p for p in report.problems), report.problems
        code, out = store.verify()
    assert code == 1, out
    assert f"[fork] (merkle log) witness {WITNESS}: it cosigned root" in out
    assert "the log failed: fork" in out.splitlines()[-1]
    assert named(out, "reexecution", f"position {version}", "Round.WagerSettled.payout"), out
    # without asking the witness: the new checkpoint is the operator's word only
    code, out = store.verify()
    assert code == 1, out  # re-execution still refuses the payout
    assert re.search(r", \d+ not final", out.splitlines()[-1]), out


def test_a_rewrite_signed_with_another_key_fails_the_pinned_key(
    store: Store, tmp_path: Path
) -> None:
    """The insider rewrites a table event and signs with a key of their own: the checkpoints
    do not carry the pinned operator key's signature."""
    _, oid, version, _, state = store.notifications("%Table.SeatTaken")[0]
    store.rewrite_with_leaf(oid, version, state.replace(b'"seat":', b'"seat":1'))
    store.delete(CHECKPOINTS_ID, purpose="merkle_log")
    own = tmp_path / "insider.pem"
    load_private_key(own, create=True)
    sign(store.url, own)
    code, out = store.verify()
    assert code == 1, out
    assert "is not signed by the pinned operator key" in out
    assert "[signature] (merkle log) checkpoint #1: not signed by the pinned operator key" in out
    last = out.splitlines()[-1]
    assert re.match(rf"0 passed, {TOTAL} failed; the log failed: signature", last), last
    # a verifier who pins nothing but the key the file system offers would see it signed: so
    # the pinned vkey is what stops the swapped key
    code, out = store.verify(pinned=operator(own).vkey())
    assert code == 0, out


@pytest.mark.parametrize(
    ("topic", "aggregate", "how"),
    [
        ("%Table.SeatTaken", "Table", "edit"),
        ("%Shoe.Opened", "Shoe", "edit"),
        ("%Shoe.SeedRevealed", "Shoe", "delete"),
        ("%Wallet.Deposited", "Wallet", "edit"),
    ],
    ids=["table", "shoe", "seed-reveal", "wallet"],
)
def test_edits_outside_any_round_are_found(
    store: Store, topic: str, aggregate: str, how: str
) -> None:
    """A table's seat, a shoe's opening, a seed reveal (deleted with the shoe's Retired), a
    wallet's deposit: the log names the aggregate and the position."""
    n, oid, version, _, state = store.notifications(topic)[0]
    if how == "delete":
        store.delete(oid, above=version - 1)  # the reveal and the Retired after it
    else:
        changed = re.sub(rb'("(?:seat|decks|amount)":"?)(\d)', rb"\g<1>9", state, count=1)
        assert changed != state
        store.set_state(oid, version, changed)
    code, out = store.verify()
    assert code == 1, out
    assert "the log failed: commit" in out.splitlines()[-1], out
    assert log_finding(out, "commit", aggregate, f"version {version}, notification {n}"), out
    if how == "delete":
        assert "no longer in the store: deleted" in out
    else:
        assert "changed after commit" in out


def test_an_escalated_key_is_found(store: Store) -> None:
    """An insider turns the investigator's key into an admin key in the database: the key's
    ``Issued`` event no longer matches its leaf; the log names the key and the position."""
    n, oid, version, _, state = store.notifications("%ApiKey.Issued")[0]
    assert b'"role":"investigator"' in state, state
    store.set_state(oid, version, state.replace(b'"role":"investigator"', b'"role":"admin"'))
    code, out = store.verify()
    assert code == 1, out
    assert "the log failed: commit" in out.splitlines()[-1], out
    assert log_finding(out, "commit", "ApiKey", f"version {version}, notification {n}"), out
    assert "changed after commit" in out


def test_a_deleted_revocation_is_found(store: Store) -> None:
    """Deleting a key's ``Revoked`` event would make the key usable again: the log names the
    key's missing version."""
    n, oid, version, _, _ = store.notifications("%ApiKey.Revoked")[0]
    store.delete(oid, above=version - 1)
    code, out = store.verify()
    assert code == 1, out
    assert "the log failed: commit" in out.splitlines()[-1], out
    assert log_finding(out, "commit", "ApiKey", f"version {version}, notification {n}"), out
    assert "no longer in the store: deleted" in out


def test_a_checkpoint_whose_signature_fails_fails_the_log_in_the_summary(store: Store) -> None:
    rows = store.rows(CHECKPOINTS_ID, purpose="merkle_log")
    version, _, state = rows[0]
    _bad_signature(store, version, state)
    code, out = store.verify()
    assert code == 1, out
    assert "[signature] (merkle log) checkpoint #1: not signed by the pinned operator key" in out
    last = out.splitlines()[-1]
    assert re.match(r"\d+ passed, \d+ failed(, 1 not final)?; the log failed: signature", last), (
        last
    )
    assert not last.startswith(f"{TOTAL} passed, 0 failed")


def _bad_signature(store: Store, version: int, state: bytes) -> None:
    """Flip one byte of the operator's signature inside the stored checkpoint note."""
    import base64

    import orjson

    row = orjson.loads(state)
    text, _, sigs = row["note"].partition("\n\n")
    lines = sigs.splitlines()
    dash, name, b64 = lines[0].split(" ")
    raw = bytearray(base64.b64decode(b64))
    raw[10] ^= 1
    lines[0] = f"{dash} {name} {base64.b64encode(bytes(raw)).decode()}"
    row["note"] = text + "\n\n" + "\n".join(lines) + "\n"
    store.set_state(CHECKPOINTS_ID, version, orjson.dumps(row, option=orjson.OPT_SORT_KEYS),
                    purpose="merkle_log")  # fmt: skip


# ------------------------------------------------------------------------------ and before
def test_changed_bytes_of_an_input_are_named(store: Store) -> None:
    """A changed client time: re-execution takes inputs as given; the leaf holds the bytes."""
    rid = busiest(store, "european")
    rows = store.rows(rid)
    version, _, state = rows[index_of(rows, "BetPlaced")]
    store.set_state(
        rid, version, state.replace(b'"client_time":null', b'"client_time":"2020-01-01T00:00Z"')
    )
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "commit", f"position {version}", "Round.BetPlaced (bytes)"), out
    code, out = store.verify(f"sim-european#{store.number(rid)}")  # by table and number
    assert code == 1
    assert out.splitlines()[-1] == "0 passed, 1 failed"  # one round: no scan of the store


def test_garbled_bytes_of_a_consequence_are_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    version = rows[index_of(rows, "CardToHand")][0]
    store.set_state(rid, version, b"\x00not json at all")
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "storage", f"position {version}", "Round.CardToHand (bytes)"), out
    assert named(out, "reexecution", f"position {version}", "Round."), out
    assert named(out, "commit", f"position {version}", "Round.CardToHand (bytes)"), out


SYSTEM_ACTOR = b'"actor":{"id":"roundaudit","kind":"system"}'


def test_a_forged_actor_on_a_consequence_is_named(store: Store) -> None:
    """A consequence made to look caused by a supervisor: re-execution derives the system
    actor (``domain.events.Derived``), and the leaf holds the bytes as recorded."""
    rid = busiest(store, "deluxe", having="HandStood")
    rows = store.rows(rid)
    version, _, state = rows[index_of(rows, "HandStood")]
    assert SYSTEM_ACTOR in state
    assert b'"class_version":2' in state
    forged = state.replace(SYSTEM_ACTOR, b'"actor":{"id":"sue","kind":"supervisor"}')
    store.set_state(rid, version, forged)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "reexecution", f"position {version}", "Round.HandStood.actor"), out
    assert named(out, "commit", f"position {version}", "Round.HandStood (bytes)"), out


def test_a_consequence_rewritten_in_the_old_format_is_found_by_the_seal(store: Store) -> None:
    """The actor and ``class_version`` taken out (the format before consequences recorded
    their actor): the upcast reads it back as the system's, so re-execution agrees, but the
    leaf commits to the stored bytes."""
    rid = busiest(store, "european")
    rows = store.rows(rid)
    version, _, state = rows[index_of(rows, "CardToHand")]
    old = state.replace(SYSTEM_ACTOR + b",", b"").replace(b'"class_version":2,', b"")
    assert old != state
    assert b"actor" not in old
    store.set_state(rid, version, old)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "commit", f"position {version}", "Round.CardToHand (bytes)"), out
    assert not named(out, "reexecution", f"position {version}", "Round.CardToHand"), out


def test_a_deleted_event_is_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    version = rows[index_of(rows, "HandOpened") + 3][0]
    store.delete(rid, version=version)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "reexecution", f"position {version}", "Round."), out
    assert f"Round {rid} version {version} (notification" in out
    assert log_finding(out, "commit", "Round", f"version {version}, notification"), out


def test_two_swapped_events_are_named(store: Store) -> None:
    rid = busiest(store, "european")
    rows = store.rows(rid)
    i = index_of(rows, "WagerSettled")
    (va, ta, sa), (vb, tb, sb) = rows[i - 1], rows[i]
    assert ta != tb
    store.set_row(rid, va, tb, sb)
    store.set_row(rid, vb, ta, sa)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "reexecution", f"position {va}", "Round."), out
    assert named(out, "commit", f"position {va}", ""), out
    assert log_finding(out, "commit", "Round", f"version {va}, notification"), out
    assert "changed after commit" in out


def test_a_truncated_tail_of_a_round_is_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    keep = len(rows) - 3
    store.delete(rid, above=keep)
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "reexecution", f"position {keep + 1}", "Round."), out
    assert f"Round {rid} version {keep + 1} (notification" in out
    assert "was committed in leaf" in out


def test_an_altered_settled_amount_in_the_round_is_named(store: Store) -> None:
    rid, version, state = _a_payout(store)
    payout = re.search(rb'"payout":"([0-9.]+)"', state)
    assert payout is not None
    store.set_state(
        rid, version, state.replace(payout.group(0), b'"payout":"9' + payout.group(1) + b'"')
    )
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "reexecution", f"position {version}", "Round.WagerSettled.payout"), out
    assert re.search(r"Round.WagerSettled.payout: .* \[rule [A-Z0-9-]+\]", out)
    assert named(out, "money", f"position {version}", "Round.WagerSettled.wallet.amount"), out
    assert named(out, "commit", f"position {version}", "Round.WagerSettled (bytes)"), out


def test_an_altered_payout_in_a_wallet_is_named(store: Store) -> None:
    rid, _, settled = _a_payout(store)
    player = re.search(rb'"player":"([^"]+)"', settled)
    assert player is not None
    wid = Wallet.create_id(player.group(1).decode())
    version, state = next(
        (v, st)
        for v, t, st in store.rows(wid)
        if t.endswith("Wallet.PayoutCredited") and str(rid).encode() in st
    )
    store.set_state(wid, version, re.sub(rb'"amount":"([0-9.]+)"', rb'"amount":"1\1"', state))
    code, out = store.verify()
    failed(code, out, log="commit")
    assert re.search(r"\[money\] position \d+ Round.WagerSettled.wallet.amount", out), out
    assert f"Wallet {wid} version {version}: the stored bytes are not those leaf" in out
    assert log_finding(out, "commit", "Wallet", f"version {version}, notification"), out


def test_an_altered_card_of_the_shoe_is_named(store: Store) -> None:
    rid = busiest(store, "european")
    dealt = next(r for r in store.rows(rid) if r[1].endswith("Round.CardDealt"))
    app = RoundAudit(env=environment_for(store.url))
    try:
        shoe_id = UUID(app.round(rid).shoe_id)
    finally:
        app.close()
    position = int(re.search(rb'"shoe_position":(\d+)', dealt[2]).group(1))  # type: ignore[union-attr]
    card = re.search(rb'"card":"([0-9AJQK]+[CDHS])"', dealt[2]).group(1)  # type: ignore[union-attr]
    other = b"2C" if card != b"2C" else b"3C"
    for version, topic, state in store.rows(shoe_id):
        if topic.endswith("Shoe.CardDrawn") and f'"position":{position},'.encode() in state:
            store.set_state(
                shoe_id, version, state.replace(b'"card":"' + card, b'"card":"' + other)
            )
            break
    else:
        pytest.fail("no CardDrawn at that position")
    code, out = store.verify()
    failed(code, out, log="commit")
    assert named(out, "shoe", f"position {dealt[0]}", "Round.CardDealt.card"), out
    assert "SHOE-3" in out
    assert f"Shoe {shoe_id} version {version}: the stored bytes are not those leaf" in out


@pytest.mark.parametrize(
    "algorithm", [b"hmac-sha256-ctr-fisher-yates-v9", b"hmac-sha256-ctr-fisher-yates-v1"]
)
def test_a_shoe_s_rewritten_shuffle_algorithm_is_named(store: Store, algorithm: bytes) -> None:
    """A european round's shoe opened with version 2 of the shuffle (the shoes opened since
    session 26): its ``Shoe.Opened`` rewritten to name an algorithm that does not exist is a
    shoe finding on the algorithm, and to name version 1 (a real one, not the one the shoe
    dealt by) makes the revealed seed give other cards at the dealt positions (SHOE-3); the
    stored bytes no longer those of their leaf either way."""
    rid = busiest(store, "european")
    app = RoundAudit(env=environment_for(store.url))
    try:
        shoe_id = UUID(app.round(rid).shoe_id)
    finally:
        app.close()
    version, topic, state = store.rows(shoe_id)[0]
    assert topic.endswith("Shoe.Opened")
    assert b'"algorithm":"hmac-sha256-ctr-fisher-yates-v2"' in state
    store.set_state(shoe_id, version, state.replace(b"hmac-sha256-ctr-fisher-yates-v2", algorithm))
    code, out = store.verify()
    failed(code, out, log="commit")
    assert "SHOE-3" in out
    if algorithm.endswith(b"v9"):
        assert "the shoe names no shuffle algorithm" in out, out
    else:
        assert "but the shuffle gives" in out, out
    assert f"Shoe {shoe_id} version {version}: the stored bytes are not those leaf" in out


def test_a_rewritten_leaf_is_found_by_the_checkpoint(store: Store) -> None:
    """A round's event and its leaf rewritten consistently (without the signing key): the
    signed checkpoint no longer matches the log's leaves."""
    rid = busiest(store, "european")
    rows = store.rows(rid)
    version, _, state = rows[index_of(rows, "BetPlaced")]
    index = store.rewrite_with_leaf(
        rid, version, state.replace(b'"request_id":null', b'"request_id":"x"')
    )
    code, out = store.verify()
    assert code == 1, out
    assert "[consistency] (merkle log) checkpoint #1: its root" in out
    assert "the log was rewritten" in out
    assert "(this round's leaf" in out or f"leaf {index} is not included" in out
    assert "the log failed: consistency" in out.splitlines()[-1]


def test_the_pinned_key_is_what_a_swapped_operator_key_cannot_pass(store: Store) -> None:
    """A genuine store verified against a key that is not the operator's: every checkpoint is
    refused, and so every round."""
    other = operator_key(store.origin, generate_key().public_key()).vkey()
    code, out = store.verify(pinned=other)
    assert code == 1
    assert out.splitlines()[-1].startswith(f"1 passed, {TOTAL - 1} failed"), out

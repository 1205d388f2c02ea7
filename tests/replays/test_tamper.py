"""Tampering directly in the database is detected and named by ``roundaudit verify``, on SQLite
and PostgreSQL: a stored event's bytes changed, one deleted, two swapped, a round's tail cut
off, a settled amount altered (in the round, and in the wallet), a card of the shoe altered, and
the Merkle log itself rewritten. Each test builds a small sealed store (simulated rounds), makes
one change with SQL, and runs the command as an operator would."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from pg import libpq_url

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for, sqlite_path
from domain.round import Round
from domain.wallet import Wallet
from replays.log import seal
from replays.merkle import load_private_key


@dataclass
class Store:
    url: str
    key: Path
    capsys: pytest.CaptureFixture[str]

    @property
    def postgres(self) -> bool:
        return self.url.startswith("postgres")

    def table(self, purpose: str = "events") -> str:
        return f"roundaudit_{purpose}" if self.postgres else f"stored_{purpose}"

    @contextmanager
    def sql(self) -> Iterator[Any]:
        if self.postgres:
            with psycopg.connect(libpq_url(self.url)) as conn:
                yield conn
        else:
            path = sqlite_path(self.url)
            assert path is not None
            conn = sqlite3.connect(path)
            try:
                yield conn
                conn.commit()
            finally:
                conn.close()

    def _id(self, oid: UUID) -> Any:
        return oid if self.postgres else oid.hex

    def _q(self, text: str) -> str:
        return text if self.postgres else text.replace("%s", "?")

    def rows(self, oid: UUID, purpose: str = "events") -> list[tuple[int, str, bytes]]:
        with self.sql() as c:
            got = c.execute(
                self._q(
                    f"SELECT originator_version, topic, state FROM {self.table(purpose)} "
                    "WHERE originator_id = %s ORDER BY originator_version"
                ),
                (self._id(oid),),
            ).fetchall()
        return [(int(v), str(t), bytes(s)) for v, t, s in got]

    def set_state(self, oid: UUID, version: int, state: bytes, purpose: str = "events") -> None:
        with self.sql() as c:
            c.execute(
                self._q(
                    f"UPDATE {self.table(purpose)} SET state = %s "
                    "WHERE originator_id = %s AND originator_version = %s"
                ),
                (state, self._id(oid), version),
            )

    def set_row(self, oid: UUID, version: int, topic: str, state: bytes) -> None:
        with self.sql() as c:
            c.execute(
                self._q(
                    f"UPDATE {self.table()} SET topic = %s, state = %s "
                    "WHERE originator_id = %s AND originator_version = %s"
                ),
                (topic, state, self._id(oid), version),
            )

    def delete(self, oid: UUID, *, version: int | None = None, above: int | None = None) -> None:
        cond, arg = ("= %s", version) if version is not None else ("> %s", above)
        with self.sql() as c:
            c.execute(
                self._q(
                    f"DELETE FROM {self.table()} WHERE originator_id = %s "
                    f"AND originator_version {cond}"
                ),
                (self._id(oid), arg),
            )

    def number(self, rid: UUID) -> int:
        state = self.rows(rid)[0][2]
        found = re.search(rb'"round_number":(\d+)', state)
        assert found is not None
        return int(found.group(1))

    def verify(self, *args: str) -> tuple[int, str]:
        self.capsys.readouterr()
        code = main(
            [
                "--database-url",
                self.url,
                "verify",
                *(args or ("--all",)),
                "--signing-key",
                str(self.key),
                "--no-progress",
            ]
        )
        return code, self.capsys.readouterr().out


def build(url: str, tmp_path: Path, *, sealed: bool = True) -> None:
    app = RoundAudit(env=environment_for(url))
    try:
        simulate(app, variant="european", rounds=3, players=2)
        simulate(app, variant="deluxe", rounds=3, players=3)
        if sealed:
            key, _ = load_private_key(tmp_path / "key.pem", create=True)
            report = seal(app, key=key)
            assert report.sealed == 6
    finally:
        app.close()


@pytest.fixture
def store(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Store]:
    build(store_url, tmp_path)
    s = Store(store_url, tmp_path / "key.pem", capsys)
    code, out = s.verify()
    assert code == 0, out
    assert out.splitlines()[-1] == "6 passed, 0 failed"
    return s


def busiest(store: Store, variant: str) -> UUID:
    """The simulated round of ``variant`` with the most events (bots may sit a round out)."""
    ids = [Round.create_id(f"sim-{variant}", n) for n in (1, 2, 3)]
    return max(ids, key=lambda rid: len(store.rows(rid)))


def failed_once(code: int, out: str) -> None:
    assert code == 1, out
    assert out.splitlines()[-1] == "5 passed, 1 failed", out


def named(out: str, check: str, position: int | None, event: str, field: str = "") -> bool:
    where = f"position {position}" if position is not None else "round"
    pattern = rf"\[{check}\] {where} {re.escape(event)}{re.escape(field)}"
    return re.search(pattern, out) is not None


def index_of(rows: list[tuple[int, str, bytes]], cls: str, *, last: bool = False) -> int:
    found = [i for i, r in enumerate(rows) if r[1].endswith(f"Round.{cls}")]
    return found[-1] if last else found[0]


def test_changed_bytes_of_an_input_are_named(store: Store) -> None:
    """A changed client time: re-execution takes inputs as given; the seal catches the bytes."""
    rid = busiest(store, "european")
    rows = store.rows(rid)
    i = index_of(rows, "BetPlaced")
    version, _, state = rows[i]
    assert b'"client_time":null' in state
    store.set_state(
        rid,
        version,
        state.replace(b'"client_time":null', b'"client_time":"2020-01-01T00:00:00Z"'),
    )
    code, out = store.verify()
    failed_once(code, out)
    assert named(out, "seal", version, "Round.BetPlaced", " (bytes)"), out
    assert "changed after sealing" in out
    code, out = store.verify(f"sim-european#{store.number(rid)}")  # by table and number
    assert code == 1
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_garbled_bytes_of_a_consequence_are_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    i = index_of(rows, "CardToHand")
    version = rows[i][0]
    store.set_state(rid, version, b"\x00not json at all")
    code, out = store.verify()
    failed_once(code, out)
    assert named(out, "storage", version, "Round.CardToHand", " (bytes)"), out
    assert named(out, "reexecution", version, "Round."), out
    assert named(out, "seal", version, "Round.CardToHand", " (bytes)"), out


def test_a_deleted_event_is_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    i = index_of(rows, "HandOpened") + 3
    version, _topic, _ = rows[i]
    store.delete(rid, version=version)
    code, out = store.verify()
    failed_once(code, out)
    assert named(out, "reexecution", version, "Round."), out
    assert named(out, "seal", version, "Round."), out
    assert "versions are not 1..N" in out


def test_two_swapped_events_are_named(store: Store) -> None:
    rid = busiest(store, "european")
    rows = store.rows(rid)
    i = index_of(rows, "WagerSettled")
    (va, ta, sa), (vb, tb, sb) = rows[i - 1], rows[i]
    assert ta != tb
    store.set_row(rid, va, tb, sb)
    store.set_row(rid, vb, ta, sa)
    code, out = store.verify()
    failed_once(code, out)
    assert named(out, "reexecution", va, "Round."), out
    assert named(out, "seal", va, "Round."), out


def test_a_truncated_tail_is_named(store: Store) -> None:
    rid = busiest(store, "deluxe")
    rows = store.rows(rid)
    keep = len(rows) - 3
    store.delete(rid, above=keep)
    code, out = store.verify()
    failed_once(code, out)
    assert named(out, "reexecution", keep + 1, "Round."), out
    assert "re-execution produced an event the store lacks" in out
    assert named(out, "seal", keep + 1, "(missing)", " (bytes)"), out
    assert "are gone" in out


def test_a_truncated_tail_is_found_without_a_seal(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut just before the round's last input: what is left re-executes cleanly as an
    unfinished round, but the shoe still holds the cards the cut-off part dealt (and the wallets
    the payouts it made, when there were any)."""
    build(store_url, tmp_path, sealed=False)
    s = Store(store_url, tmp_path / "missing-key.pem", capsys)
    rid = busiest(s, "european")
    rows = s.rows(rid)
    last_input = max(i for i, r in enumerate(rows) if r[1].endswith(("CardDealt", "DecisionMade")))
    s.delete(rid, above=rows[last_input][0] - 1)
    code, out = s.verify()
    assert code == 1, out
    assert out.splitlines()[-1] == "5 passed, 1 failed", out
    assert "[shoe] round Shoe.CardDrawn.position" in out, out
    assert "but the round's log has no CardDealt for it" in out


ALL_ROUNDS = [Round.create_id(f"sim-{v}", n) for v in ("deluxe", "european") for n in (1, 2, 3)]


def a_winning_settlement(store: Store) -> tuple[UUID, int, bytes]:
    """(round, version, state) of a WagerSettled that pays something (the simulated rounds are
    random: search them all)."""
    for rid in ALL_ROUNDS:
        for version, topic, state in store.rows(rid):
            if topic.endswith("Round.WagerSettled") and b'"payout":"0.00"' not in state:
                return rid, version, state
    pytest.fail("no simulated wager paid anything")


def test_an_altered_settled_amount_in_the_round_is_named(store: Store) -> None:
    rid, version, state = a_winning_settlement(store)
    payout = re.search(rb'"payout":"([0-9.]+)"', state)
    assert payout is not None
    store.set_state(
        rid,
        version,
        state.replace(payout.group(0), b'"payout":"' + b"9" + payout.group(1) + b'"'),
    )
    code, out = store.verify()
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert named(out, "reexecution", version, "Round.WagerSettled", ".payout"), out
    assert re.search(
        rf"position {version} Round.WagerSettled.payout: expected "
        rf"'{re.escape(payout.group(1).decode())}', recorded '9",
        out,
    )
    assert re.search(r"Round.WagerSettled.payout: .* \[rule [A-Z0-9-]+\]", out)
    assert named(out, "money", version, "Round.WagerSettled", ".wallet.amount"), out
    assert named(out, "seal", version, "Round.WagerSettled", " (bytes)"), out


def test_an_altered_payout_in_a_wallet_is_named(store: Store) -> None:
    rid, _, settled = a_winning_settlement(store)
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
    failed_once(code, out)
    assert f"FAIL {rid}" in out
    assert re.search(r"\[money\] position \d+ Round.WagerSettled.wallet.amount", out), out
    assert "[seal] round (merkle log).leaf.money" in out


def test_an_altered_card_of_the_shoe_is_named(store: Store) -> None:
    """The shoe's CardDrawn for a card of the round says another card than the round's."""
    rid = busiest(store, "european")
    rows = store.rows(rid)
    dealt = next(r for r in rows if r[1].endswith("Round.CardDealt"))
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
    failed_once(code, out)
    assert named(out, "shoe", dealt[0], "Round.CardDealt", ".card"), out
    assert "[shoe]" in out
    assert "SHOE-3" in out
    assert "[seal] round (merkle log).leaf.cards" in out


def test_a_rewritten_merkle_log_is_found(store: Store) -> None:
    """Someone rewrites a round's events *and* its leaf consistently: the signed checkpoint no
    longer matches the log's leaves."""
    from replays.log import LEAVES_ID

    leaves = store.rows(LEAVES_ID, purpose="merkle_log")
    version, _, leaf = leaves[1]
    store.set_state(
        LEAVES_ID, version, leaf.replace(b'"events":', b'"events":1'), purpose="merkle_log"
    )
    code, out = store.verify()
    assert code == 1, out
    assert "FAIL merkle log" in out
    assert "the log was rewritten" in out
    assert "is not included in checkpoint" in out

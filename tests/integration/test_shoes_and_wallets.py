"""Shoes and wallets on real stores (SQLite and PostgreSQL, ``store_env``).

What the unit tests show in memory must hold once written and read back by a new application
instance: the revealed seed reproduces every card, card accounting refuses the ninth ace of
spades of an 8-deck shoe without recording anything, wallet money is conserved.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.application import RoundAudit
from domain.errors import CardAccountingError, DomainError
from domain.shuffle import shuffled_order, verify_order


def _head(app: RoundAudit) -> int:
    return app.recorder.max_notification_id() or 0


def test_rng_shoe_seed_reproduces_every_card_after_reload(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    sid = app.open_shoe(
        table_id="rng-1", shoe_number=1, kind="rng", decks=8, production=True, burn_procedure=True
    )
    burn = app.burn(sid)
    assert app.shoe(sid).revealed_seed is None  # sealed until retirement
    app.retire_shoe(sid)
    app.close()

    again = RoundAudit(env=store_env)
    shoe = again.shoe(sid)
    seed = bytes.fromhex(shoe.revealed_seed or "")
    order = shuffled_order(seed, 8)
    assert sorted(c.code for c in order) == sorted(c.code for c in shuffled_order(b"x" * 32, 8))
    drawn = [(d.position, d.card) for d in shoe.drawn]
    assert [c for _, c in drawn] == [burn["shown"], *burn["burned"]]
    assert [c for _, c in drawn] == [c.code for c in order[: len(drawn)]]
    assert verify_order(shoe.commitment or "", seed, 8, drawn) == []
    assert shoe.verify() == []
    tampered = [(p, "AS" if c != "AS" else "KD") for p, c in drawn]
    assert verify_order(shoe.commitment or "", seed, 8, tampered)
    again.close()


def test_ninth_ace_of_spades_is_refused_and_nothing_recorded(store_env: dict[str, str]) -> None:
    app = RoundAudit(env=store_env)
    sid = app.open_shoe(
        table_id="live-8",
        shoe_number=1,
        kind="live",
        decks=8,
        production=True,
        burn_procedure=True,
    )
    app.burn(sid, card="AS", cards=["AS"])  # an ace shown burns one card: two aces of spades
    app.open_wallet("p")
    app.deposit("p", "1000", transaction_id="d")
    app.open_table("live-8")
    app.sit("live-8", player="p", seat=1)
    aces = 2
    rnd = 0
    while aces < 8:
        rnd += 1
        rid = app.start_round(table_id="live-8", round_number=rnd, variant="deluxe", shoe_id=sid)
        app.place_bet(rid, player="p", amount="10", spot=1)
        app.close_betting(rid)
        for card in ["AS", "7H", "AS", "10C"][: 8 - aces]:
            app.deal_card(rid, card)
            aces += card == "AS"
        app.cancel(rid, reason="test-fill", supervisor="sup")
    rnd += 1
    rid = app.start_round(table_id="live-8", round_number=rnd, variant="deluxe", shoe_id=sid)
    app.place_bet(rid, player="p", amount="10", spot=1)
    app.close_betting(rid)
    head = _head(app)
    with pytest.raises(CardAccountingError, match="AS"):
        app.deal_card(rid, "AS")
    assert _head(app) == head
    assert app.shoe(sid).accounting()["AS"] == 8
    app.close()


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["deposit", "withdraw"]),
            st.decimals(min_value=Decimal("0.01"), max_value=Decimal("500"), places=2),
            st.integers(min_value=0, max_value=5),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_wallet_money_is_conserved_on_the_store(
    store_env: dict[str, str], ops: list[tuple[str, Decimal, int]]
) -> None:
    app = RoundAudit(env=store_env)
    player = f"w{_head(app)}"
    app.open_wallet(player)
    expected = Decimal("0.00")
    seen: dict[str, tuple[str, Decimal]] = {}
    for kind, amount, tid in ops:
        txn = f"t{tid}"
        try:
            if kind == "deposit":
                app.deposit(player, amount, transaction_id=txn)
            else:
                app.withdraw(player, amount, transaction_id=txn)
        except DomainError:
            continue
        if txn not in seen:
            seen[txn] = (kind, amount)
            expected += amount if kind == "deposit" else -amount
    assert app.balance(player) == expected
    app.close()
    assert RoundAudit(env=store_env).balance(player) == expected

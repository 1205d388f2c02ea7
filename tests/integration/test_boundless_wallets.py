"""A boundless round sees every write another process makes to its players' wallets
(SQLite and PostgreSQL).

The round keeps each player's wallet once read, and reads it through the application's
aggregate cache, so a wallet known from an earlier round is brought forward from its last
version rather than rebuilt (``BoundlessService._wallet``). Neither may hide a cashier's
deposit or withdrawal made by another instance: a bet is checked against the balance the
store has, a settlement credits on top of it, and no movement is lost or doubled.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from roundkit import stack

from domain.application import RoundAudit
from domain.boundless.service import Bet, Decision
from domain.errors import InsufficientFunds
from replays.boundless import verify_round

V = "boundless"


def _round(app: RoundAudit, number: int) -> str:
    order = stack(V, [["10H", "9D"]], up="9C", hole="8S")  # 19 against 17: the player wins
    return app.start_round(
        table_id="wallets", round_number=number, variant=V, production=False, test_order=order
    )


def _movements_add_up(store_env: dict[str, str], player: str) -> None:
    """The balance the store has is the sum of the wallet's movements, each recorded once."""
    fresh = RoundAudit({**store_env, "CREATE_TABLE": "n"})
    try:
        w = fresh.wallet(player)
        ids = [m["transaction_id"] for m in w.movements]
        assert len(ids) == len(set(ids)), ids
        sign = {"deposit": 1, "withdrawal": -1, "stake": -1, "payout": 1, "refund": 1}
        sign["reversal"] = -1
        total = sum((sign[m["kind"]] * Decimal(m["amount"]) for m in w.movements), start=Decimal(0))
        assert w.balance == total
    finally:
        fresh.close()


def _apps(store_env: dict[str, str]) -> tuple[RoundAudit, RoundAudit]:
    app = RoundAudit(store_env)
    other = RoundAudit({**store_env, "CREATE_TABLE": "n"})  # another process: the cashier
    return app, other


def test_a_deposit_made_elsewhere_mid_round_is_seen_by_the_next_bet_and_the_settlement(
    store_env: dict[str, str],
) -> None:
    app, cashier = _apps(store_env)
    app.open_wallet("A", account_type="test")
    app.deposit("A", "10", transaction_id="dep-1")
    rid = _round(app, 1)
    assert app.boundless.place_bets(rid, [Bet("A", "8")]) == [None]
    cashier.deposit("A", "50", transaction_id="dep-2")  # 2 + 50
    # the round read A's wallet before the deposit; its next bet needs the deposit
    assert app.boundless.place_bets(rid, [Bet("A", "5", "pair")]) == [None]
    app.close_betting(rid)
    cashier.deposit("A", "25", transaction_id="dep-3")  # after betting, before settlement
    app.boundless.decide_many(rid, [Decision("A", "stand")])
    view = app.round_view(rid)
    assert view["phase"] == "settled"
    paid = sum((Decimal(w["payout"] or 0) for w in view["wagers"]), start=Decimal(0))
    expected = Decimal("10") - 8 - 5 + 50 + 25 + paid
    assert cashier.wallet("A").balance == expected
    assert app.wallet("A").balance == expected
    _movements_add_up(store_env, "A")
    assert verify_round(app, rid).ok
    cashier.close()
    app.close()


@pytest.mark.parametrize("kept_by", ["finished-round", "aggregate-cache"])
def test_a_wallet_from_an_earlier_round_is_brought_forward_before_it_is_debited(
    store_env: dict[str, str], kept_by: str
) -> None:
    """Round 1 leaves A's wallet in this process (in the finished round the index keeps, or,
    once the index has forgotten it, in the application's aggregate cache); the cashier
    (another process) then deposits, and later withdraws: round 2 sees the deposit (the bet
    it pays for is taken) and round 3 the withdrawal (the bet it no longer covers is
    refused, nothing debited)."""
    app, cashier = _apps(store_env)

    def settled(rid: str) -> None:
        assert app.round_view(rid)["phase"] == "settled"
        if kept_by == "aggregate-cache":
            app.boundless._rounds.clear()  # as when more rounds finished since

    def play(rid: str, amount: str) -> None:
        """A's bet of ``amount`` taken, A stands, the round settled."""
        assert app.boundless.place_bets(rid, [Bet("A", amount)]) == [None]
        app.close_betting(rid)
        app.boundless.decide_many(rid, [Decision("A", "stand")])
        settled(rid)

    app.open_wallet("A", account_type="test")
    app.deposit("A", "10", transaction_id="dep-1")
    r1 = _round(app, 1)
    play(r1, "10")
    after_1 = app.wallet("A").balance
    assert after_1 == 20  # 10 staked, 19 against 17 pays 20

    cashier.deposit("A", "100", transaction_id="dep-2")
    r2 = _round(app, 2)
    # 70 needs the deposit: a wallet kept as round 1 left it would refuse the bet
    play(r2, "70")

    balance = cashier.wallet("A").balance
    assert balance == 120 - 70 + 140
    cashier.withdraw("A", balance - 1, transaction_id="wd-1")  # 1 left
    r3 = _round(app, 3)
    [refused] = app.boundless.place_bets(r3, [Bet("A", "5")])
    assert isinstance(refused, InsufficientFunds)
    assert cashier.wallet("A").balance == 1  # a wallet kept as round 2 left it would pay it
    _movements_add_up(store_env, "A")
    for rid in (r1, r2):
        assert verify_round(app, rid).ok
    cashier.close()
    app.close()


def test_a_rounds_players_share_the_texts_and_amounts_their_state_and_wallets_keep(
    store_env: dict[str, str],
) -> None:
    """What a boundless round holds for each player names its round id, its amounts and its
    currency with one object each (``participation.round_text``, ``wallet_checks.kept_text``,
    ``wagers.money_value``; docs/performance-history.md ``bwmem``), with the same values: the
    round verifies and every balance adds up. (A settled participation is not held any more,
    ``Engine.release``: its state is looked at while the players decide; the payouts' sharing
    is ``tests/unit/test_shared_amounts.py``'s.)"""
    app = RoundAudit(store_env)
    for p in ("A", "B"):
        app.open_wallet(p, account_type="test")
        app.deposit(p, "30", transaction_id=f"dep-{p}")
    rid = _round(app, 1)
    assert app.boundless.place_bets(rid, [Bet("A", "8"), Bet("B", "8")]) == [None, None]
    app.close_betting(rid)
    decisions = [Decision("A", "stand"), Decision("B", "stand")]
    app.boundless.decide_many(rid, decisions, advance=False)
    t = next(iter(app.boundless._rounds.values()))
    a, b = (t.eng.participation(p) for p in ("A", "B"))
    assert a is not None
    assert b is not None
    assert a._state.round_id == b._state.round_id == rid
    assert a._state.round_id is b._state.round_id
    wa, wb = a._state.wagers["A:main"], b._state.wagers["B:main"]
    assert wa.stake == Decimal("8.00")
    assert wa.stake is wb.stake
    app.boundless.advance(rid)
    settled = t.eng.participation("A")
    assert settled is not None
    wa = settled._state.wagers["A:main"]
    assert (wa.stake, wa.payout, wa.result) == (Decimal("8.00"), Decimal("16.00"), "win")
    ka, kb = (t.wallets[p]._movements[f"{rid}/{p}:main/stake"] for p in ("A", "B"))
    assert (ka.amount, kb.amount) == ("8.00", "8.00")
    assert ka.amount is kb.amount
    fresh = RoundAudit({**store_env, "CREATE_TABLE": "n"})  # the wallets decoded from the store
    assert fresh.wallet("A").currency == "EUR"
    assert fresh.wallet("A").currency is fresh.wallet("B").currency
    assert fresh.wallet("A").account_type is fresh.wallet("B").account_type
    fresh.close()
    assert app.wallet("A").balance == Decimal("38.00")
    for p in ("A", "B"):
        _movements_add_up(store_env, p)
    assert verify_round(app, rid).ok
    app.close()

"""The Wallet aggregate: exact balances, refusals that record nothing, idempotent movements,
ERR-1 reversals, and replay equal to the live wallet (including a hypothesis state machine)."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Any

import orjson
import pytest
from eventsourcing.application import Application
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from domain.errors import (
    DepositLimitReached,
    DuplicateTransaction,
    InsufficientFunds,
    InvalidAmount,
    InvalidReversal,
    InvalidWalletRequest,
)
from domain.events import SYSTEM, actor, event_kind
from domain.layered import LayeredMapAsDict
from domain.wallet import Wallet
from domain.wallet_checks import WALLET_DEPOSIT_LIMIT, KeptMovementAsDict, kept_actor

NAMESPACE = uuid.UUID("6f1d2b1e-5b0a-4c43-9d7e-2d1c6e0b8a11")
ALICE = actor("player", "alice")


def funded(amount: str = "100.00", *, discard: bool = True) -> Wallet:
    """Given: an open wallet with ``amount`` deposited, its history discarded unless the test
    persists it."""
    wallet = Wallet.open("alice")
    wallet.deposit(amount, "dep-0")
    if discard:
        wallet.collect_events()
    return wallet


def rebuilt(wallet: Wallet, app: Application | None = None) -> Wallet:
    app = app or Application()
    app.save(wallet)
    copy = app.repository.get(wallet.id)
    assert isinstance(copy, Wallet)
    return copy


# --------------------------------------------------------------------------- opening, identity


def test_wallet_id_is_uuid5_of_the_namespace_and_player() -> None:
    expected = uuid.uuid5(NAMESPACE, "wallet:alice")
    assert Wallet.create_id("alice") == expected
    assert Wallet.open("alice").id == expected
    assert Wallet.open("bob").id != expected


def test_open_records_player_currency_account_type_and_actor() -> None:
    wallet = Wallet.open("alice", actor=ALICE, request_id="req-1")
    [opened] = wallet.collect_events()
    assert isinstance(opened, Wallet.Opened)
    assert event_kind(opened) == "input"
    assert (opened.player_id, opened.currency, opened.account_type) == ("alice", "EUR", "real")
    assert opened.actor == {"kind": "player", "id": "alice"}
    assert opened.transaction_id == "open:alice"
    assert (opened.client_time, opened.request_id) == (None, "req-1")
    assert wallet.balance == Decimal("0.00")
    assert wallet.movements == []
    assert wallet.has_transaction("open:alice")


@pytest.mark.parametrize("account_type", ["test", "fun"])
def test_test_and_play_for_fun_accounts_can_be_opened(account_type: Any) -> None:
    wallet = Wallet.open("tester", currency="USD", account_type=account_type)
    assert (wallet.currency, wallet.account_type) == ("USD", account_type)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"player_id": ""},
        {"player_id": "a:b"},
        {"player_id": "alice", "account_type": "vip"},
        {"player_id": "alice", "currency": "eur"},
        {"player_id": "alice", "currency": "EURO"},
        {"player_id": "alice", "actor": {"kind": "robot", "id": "x"}},
        {"player_id": "alice", "actor": {"kind": "player"}},
    ],
)
def test_open_refuses_malformed_requests(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidWalletRequest):
        Wallet.open(**kwargs)


# ----------------------------------------------------------------------------------- movements


def test_movements_update_the_balance_exactly() -> None:
    wallet = Wallet.open("alice")
    assert wallet.deposit("0.10", "d1") is True
    assert wallet.deposit(Decimal("0.20"), "d2") is True
    assert wallet.balance == Decimal("0.30")  # not 0.30000000000000004
    wallet.deposit(100, "d3")
    wallet.withdraw("0.05", "w1")
    wallet.debit_stake("10.01", "r1", "main", "s1")
    wallet.credit_payout("25.02", "r1", "main", "p1", rule="OUT-1")
    wallet.credit_refund("3.33", "r2", "pair", "f1", "round cancelled")
    assert [m["balance_after"] for m in wallet.movements] == [
        "0.10",
        "0.30",
        "100.30",
        "100.25",
        "90.24",
        "115.26",
        "118.59",
    ]
    assert wallet.balance == Decimal("118.59")


def test_each_movement_is_one_event_with_plain_json_payload() -> None:
    wallet = funded("50")
    wallet.debit_stake("10", "round-7", "wager-1", "s1", rule=None, actor=ALICE)
    wallet.credit_payout("25", "round-7", "wager-1", "p1", rule="OUT-1")
    wallet.credit_refund("5", "round-8", "bb-1", "f1", "seat removed", rule="DLX-3")
    wallet.withdraw("1", "w1", actor=ALICE, client_time="2024-01-01T00:00:00Z")
    stake, payout, refund, withdrawal = wallet.collect_events()

    assert isinstance(stake, Wallet.StakeDebited)
    assert (stake.amount, stake.balance_after) == ("10.00", "40.00")
    assert (stake.round_id, stake.wager_id, stake.transaction_id) == ("round-7", "wager-1", "s1")
    assert stake.actor == ALICE
    assert isinstance(payout, Wallet.PayoutCredited)
    assert (payout.amount, payout.balance_after, payout.rule) == ("25.00", "65.00", "OUT-1")
    assert isinstance(refund, Wallet.RefundCredited)
    assert (refund.amount, refund.reason, refund.rule) == ("5.00", "seat removed", "DLX-3")
    assert isinstance(withdrawal, Wallet.Withdrawn)
    assert (withdrawal.amount, withdrawal.balance_after) == ("1.00", "69.00")
    assert withdrawal.client_time == "2024-01-01T00:00:00Z"
    assert [event_kind(e) for e in (stake, payout, refund, withdrawal)] == [
        "consequence",
        "consequence",
        "consequence",
        "input",
    ]


def test_zero_payout_is_allowed_and_recorded() -> None:
    wallet = funded("10")
    assert wallet.credit_payout("0", "r1", "main", "p0", rule="OUT-3") is True
    [event] = wallet.collect_events()
    assert isinstance(event, Wallet.PayoutCredited)
    assert (event.amount, event.balance_after) == ("0.00", "10.00")
    assert wallet.movement("p0") is not None


def test_movements_returns_copies() -> None:
    wallet = funded("10")
    wallet.movements[0]["amount"] = "999.00"
    wallet.movements[0]["actor"]["id"] = "mallory"
    moved = wallet.movement("dep-0")
    assert moved is not None
    assert moved["amount"] == "10.00"
    assert moved["actor"] == SYSTEM


def test_can_afford() -> None:
    wallet = funded("10.00")
    assert wallet.can_afford("10.00")
    assert wallet.can_afford(0)
    assert not wallet.can_afford("10.01")
    with pytest.raises(InvalidAmount):
        wallet.can_afford(9.5)


# ------------------------------------------------------------------------------------ refusals


def test_stake_beyond_balance_raises_insufficient_funds_and_records_nothing() -> None:
    wallet = funded("5.00")
    with pytest.raises(InsufficientFunds) as refused:
        wallet.debit_stake("10.00", "r1", "ins", "s1", rule="INS-1")
    assert "10.00" in refused.value.message
    assert "5.00" in refused.value.message
    assert refused.value.rule == "INS-1"
    assert wallet.pending_events == []
    assert wallet.balance == Decimal("5.00")
    assert not wallet.has_transaction("s1")
    # The refused id left no trace: it can carry an affordable stake later.
    assert wallet.debit_stake("5.00", "r1", "main", "s1") is True
    assert wallet.balance == Decimal("0.00")


def test_withdrawal_beyond_balance_is_refused() -> None:
    wallet = funded("5.00")
    with pytest.raises(InsufficientFunds):
        wallet.withdraw("5.01", "w1")
    assert wallet.pending_events == []
    assert wallet.balance == Decimal("5.00")


@pytest.mark.parametrize(
    "amount", [1.5, 0.1, "-1", -1, "0", 0, "0.00", "1.001", "abc", "NaN", "Infinity", None, True]
)
def test_bad_amounts_raise_invalid_amount_and_record_nothing(amount: object) -> None:
    wallet = funded("10")
    with pytest.raises(InvalidAmount):
        wallet.deposit(amount, "d1")
    with pytest.raises(InvalidAmount):
        wallet.debit_stake(amount, "r1", "main", "s1")
    with pytest.raises(InvalidAmount):
        wallet.credit_refund(amount, "r1", "main", "f1", "cancelled")
    assert wallet.pending_events == []
    assert wallet.balance == Decimal("10.00")


@pytest.mark.parametrize("amount", [1.0, 0.0, "-0.01", "0.001"])
def test_payout_accepts_zero_but_no_other_bad_amount(amount: object) -> None:
    wallet = funded("10")
    with pytest.raises(InvalidAmount):
        wallet.credit_payout(amount, "r1", "main", "p1")
    assert wallet.pending_events == []


@pytest.mark.parametrize(
    "call",
    [
        lambda w: w.deposit("1", ""),
        lambda w: w.debit_stake("1", "", "main", "s1"),
        lambda w: w.debit_stake("1", "r1", "", "s1"),
        lambda w: w.credit_refund("1", "r1", "main", "f1", ""),
        lambda w: w.deposit("1", "d1", actor={"kind": "player", "id": 7}),
    ],
)
def test_malformed_ids_reasons_and_actors_are_refused(call: Any) -> None:
    wallet = funded("10")
    with pytest.raises(InvalidWalletRequest):
        call(wallet)
    assert wallet.pending_events == []


# --------------------------------------------------------------------------------- idempotency


def test_repeated_transaction_id_with_same_parameters_records_once() -> None:
    wallet = funded("20")
    assert wallet.debit_stake("10", "r1", "main", "s1") is True
    assert wallet.debit_stake("10.00", "r1", "main", "s1") is False
    assert wallet.debit_stake(Decimal("10.0"), "r1", "main", "s1") is False
    assert len(wallet.collect_events()) == 1
    assert wallet.balance == Decimal("10.00")
    assert [m["transaction_id"] for m in wallet.movements] == ["dep-0", "s1"]


def test_repeat_of_an_applied_stake_is_not_refused_after_the_balance_fell() -> None:
    wallet = funded("10")
    wallet.debit_stake("10", "r1", "main", "s1")
    assert wallet.balance == Decimal("0.00")
    assert wallet.debit_stake("10", "r1", "main", "s1") is False


def test_repeat_is_recognised_after_a_rebuild() -> None:
    app = Application()
    wallet = funded("20", discard=False)
    wallet.credit_payout("5", "r1", "main", "p1")
    copy = rebuilt(wallet, app)
    assert copy.credit_payout("5", "r1", "main", "p1") is False
    assert copy.pending_events == []
    with pytest.raises(DuplicateTransaction):
        copy.credit_payout("6", "r1", "main", "p1")


@pytest.mark.parametrize(
    "conflict",
    [
        lambda w: w.debit_stake("11", "r1", "main", "s1"),  # other amount
        lambda w: w.debit_stake("10", "r2", "main", "s1"),  # other round
        lambda w: w.debit_stake("10", "r1", "side", "s1"),  # other wager
        lambda w: w.credit_payout("10", "r1", "main", "s1"),  # other kind
        lambda w: w.deposit("10", "s1"),
        lambda w: w.deposit("10", "open:alice"),  # the opening's id is taken
    ],
)
def test_conflicting_reuse_of_a_transaction_id_raises(conflict: Any) -> None:
    wallet = funded("20")
    wallet.debit_stake("10", "r1", "main", "s1")
    wallet.collect_events()
    with pytest.raises(DuplicateTransaction) as refused:
        conflict(wallet)
    assert "'s1'" in refused.value.message or "'open:alice'" in refused.value.message
    assert wallet.pending_events == []
    assert wallet.balance == Decimal("10.00")


# ------------------------------------------------------------------------- ERR-1 reversals


def test_cancelled_round_with_even_money_ends_where_it_started_even_below_zero() -> None:
    """ERR-1: the stake is refunded and the even-money payment reversed; the player had already
    withdrawn the payment, so the reversal takes the balance below zero, and it is recorded."""
    wallet = funded("10.00")
    wallet.debit_stake("10.00", "r1", "main", "s1")
    wallet.credit_payout("20.00", "r1", "main", "p1", rule="EVEN-1")
    wallet.withdraw("20.00", "w1")
    wallet.credit_refund("10.00", "r1", "main", "f1", "round cancelled")
    assert wallet.reverse_payment("20.00", "r1", "main", "v1", "p1", "round cancelled") is True
    events = wallet.collect_events()
    reversal = events[-1]
    assert isinstance(reversal, Wallet.PaymentReversed)
    assert (reversal.amount, reversal.balance_after) == ("20.00", "-10.00")
    assert (reversal.reversed_transaction_id, reversal.rule) == ("p1", "ERR-1")
    assert event_kind(reversal) == "consequence"
    # The round's own movements net to zero: the wallet ends where it started, but for the
    # withdrawal made meanwhile.
    assert wallet.balance == Decimal("10.00") - Decimal("20.00")
    # A negative balance pays no stake and no withdrawal.
    assert not wallet.can_afford("0.01")
    with pytest.raises(InsufficientFunds):
        wallet.debit_stake("0.01", "r2", "main", "s2")
    assert wallet.reverse_payment("20.00", "r1", "main", "v1", "p1", "round cancelled") is False
    assert wallet.pending_events == []


def test_partial_reversals_cannot_exceed_the_payout() -> None:
    wallet = funded("10")
    wallet.credit_payout("15", "r1", "main", "p1")
    wallet.reverse_payment("10", "r1", "main", "v1", "p1", "cancelled")
    with pytest.raises(InvalidReversal):
        wallet.reverse_payment("5.01", "r1", "main", "v2", "p1", "cancelled")
    wallet.reverse_payment("5", "r1", "main", "v2", "p1", "cancelled")
    assert wallet.balance == Decimal("10.00")
    with pytest.raises(InvalidReversal):
        wallet.reverse_payment("0.01", "r1", "main", "v3", "p1", "cancelled")


@pytest.mark.parametrize(
    ("round_id", "wager_id", "reversed_tid"),
    [
        ("r1", "main", "nope"),  # unknown transaction
        ("r1", "main", "dep-0"),  # not a payout
        ("r1", "main", "f1"),  # a refund is not a payment to reverse
        ("r2", "main", "p1"),  # payout of another round
        ("r1", "side", "p1"),  # payout of another wager
    ],
)
def test_reversal_must_name_a_payout_of_the_same_round_and_wager(
    round_id: str, wager_id: str, reversed_tid: str
) -> None:
    wallet = funded("10")
    wallet.credit_payout("5", "r1", "main", "p1")
    wallet.credit_refund("5", "r1", "main", "f1", "cancelled")
    wallet.collect_events()
    with pytest.raises(InvalidReversal):
        wallet.reverse_payment("1", round_id, wager_id, "v1", reversed_tid, "cancelled")
    assert wallet.pending_events == []
    assert not wallet.has_transaction("v1")


# -------------------------------------------------------------------------------- persistence


def test_rebuilt_wallet_equals_the_live_one() -> None:
    wallet = Wallet.open("alice", actor=ALICE)
    wallet.deposit("100", "d1", actor=ALICE)
    wallet.debit_stake("10", "r1", "main", "s1")
    wallet.credit_payout("20", "r1", "main", "p1", rule="OUT-2")
    wallet.credit_refund("2.50", "r2", "pair", "f1", "cancelled")
    wallet.reverse_payment("20", "r1", "main", "v1", "p1", "cancelled")
    wallet.withdraw("12.50", "w1")
    copy = rebuilt(wallet)
    assert copy == wallet
    assert copy.balance == wallet.balance == Decimal("80.00")
    assert copy.movements == wallet.movements
    assert copy.version == wallet.version == 7
    assert (copy.player_id, copy.currency, copy.account_type) == ("alice", "EUR", "real")


def test_snapshot_round_trip_keeps_the_state() -> None:
    app = Application(env={"IS_SNAPSHOTTING_ENABLED": "y"})
    app.mapper.transcoder.register(LayeredMapAsDict())  # a wallet's persistent maps
    app.mapper.transcoder.register(KeptMovementAsDict())  # and its movements
    wallet = funded("10", discard=False)
    wallet.credit_payout("15", "r1", "main", "p1")
    wallet.reverse_payment("5", "r1", "main", "v1", "p1", "cancelled")
    app.save(wallet)
    app.take_snapshot(wallet.id)
    copy = app.repository.get(wallet.id)
    assert copy == wallet
    # Idempotency and reversal bookkeeping survive the snapshot.
    assert copy.reverse_payment("5", "r1", "main", "v1", "p1", "cancelled") is False
    with pytest.raises(InvalidReversal):
        copy.reverse_payment("10.01", "r1", "main", "v2", "p1", "cancelled")


# ----------------------------------------------------------------------- the deposit limit


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.integers(min_value=1, max_value=int(WALLET_DEPOSIT_LIMIT * 100)),
        min_size=1,
        max_size=8,
    )
)
def test_deposits_are_taken_while_their_life_total_stays_within_the_limit(
    amounts: list[int],
) -> None:
    """WALLET_DEPOSIT_LIMIT: each deposit is taken exactly when the wallet's deposits, with
    it, stay within the limit; a refused one records nothing (no event, same balance), and a
    withdrawal gives no room back."""
    wallet = Wallet.open("alice")
    wallet.collect_events()
    taken = 0
    for i, amount_cents in enumerate(amounts):
        amount = Decimal(amount_cents).scaleb(-2)
        if taken + amount_cents > WALLET_DEPOSIT_LIMIT * 100:
            with pytest.raises(DepositLimitReached, match="WALLET_DEPOSIT_LIMIT"):
                wallet.deposit(amount, f"d{i}")
            assert wallet.collect_events() == []
        else:
            assert wallet.deposit(amount, f"d{i}") is True
            taken += amount_cents
            wallet.withdraw(amount, f"w{i}")
            assert len(wallet.collect_events()) == 2
        assert wallet.balance == 0
    deposited = sum(Decimal(m["amount"]) for m in wallet.movements if m["kind"] == "deposit")
    assert deposited == Decimal(taken).scaleb(-2)


def test_the_deposit_limit_holds_after_a_rebuild_and_repeats_are_still_recognised() -> None:
    wallet = Wallet.open("alice")
    wallet.deposit(WALLET_DEPOSIT_LIMIT, "all")
    copy = rebuilt(wallet)
    with pytest.raises(DepositLimitReached):
        copy.deposit("0.01", "one-more")
    assert copy.deposit(WALLET_DEPOSIT_LIMIT, "all") is False  # a repeat, not a refusal
    assert copy.balance == WALLET_DEPOSIT_LIMIT


# -------------------------------------------------------------------------------- properties

TIDS = [f"t{i}" for i in range(30)]
ROUNDS = ["r1", "r2"]
WAGERS = ["main", "side"]
cents = st.integers(min_value=1, max_value=20_000)


def as_input(amount_cents: int, style: int) -> object:
    """The same amount in the several exact forms callers may use."""
    value = Decimal(amount_cents).scaleb(-2)
    if style == 0:
        return value
    if style == 1:
        return f"{value:.2f}"
    if style == 2 and amount_cents % 100 == 0:
        return amount_cents // 100
    return format(value.normalize(), "f")  # "1.5", "100"


class WalletMachine(RuleBasedStateMachine):
    """Random sequences of movements with reused transaction ids and refused commands. The
    model decides independently what should be accepted and sums only the accepted ones."""

    def __init__(self) -> None:
        super().__init__()
        self.app = Application()
        self.wallet = Wallet.open("prop")
        self.used: dict[str, tuple[object, ...]] = {}  # tid -> accepted parameters
        self.replays: dict[str, Any] = {}  # tid -> the accepted command, to send again
        self.payouts: dict[str, tuple[str, str, Decimal]] = {}  # tid -> round, wager, left
        self.totals = dict.fromkeys(
            ["deposit", "withdrawal", "stake", "payout", "refund", "reversal"], Decimal(0)
        )

    # The model's balance, from accepted operations only.
    def expected(self) -> Decimal:
        t = self.totals
        return (
            t["deposit"] - t["withdrawal"] - t["stake"] + t["payout"] + t["refund"] - t["reversal"]
        )

    def attempt(
        self, params: tuple[object, ...], command: Any, refused: type[Exception] | None
    ) -> None:
        """Run ``command``; expect a repeat, a duplicate, ``refused``, or acceptance."""
        kind, tid, amount = params[0], params[1], params[2]
        assert isinstance(kind, str)
        assert isinstance(tid, str)
        assert isinstance(amount, Decimal)
        before = (self.wallet.balance, self.wallet.version)
        if tid in self.used:
            if self.used[tid] == params:
                assert command() is False
            else:
                with pytest.raises(DuplicateTransaction):
                    command()
            assert (self.wallet.balance, self.wallet.version) == before
            return
        if refused is not None:
            with pytest.raises(refused):
                command()
            assert (self.wallet.balance, self.wallet.version) == before
            assert not self.wallet.has_transaction(tid)
            return
        assert command() is True
        assert self.wallet.version == before[1] + 1
        self.used[tid] = params
        self.replays[tid] = command
        self.totals[kind] += amount

    @rule(tid=st.sampled_from(TIDS), amount=cents, style=st.integers(0, 3))
    def deposit(self, tid: str, amount: int, style: int) -> None:
        value = Decimal(amount).scaleb(-2)
        self.attempt(
            ("deposit", tid, value),
            lambda: self.wallet.deposit(as_input(amount, style), tid),
            None,
        )

    @rule(tid=st.sampled_from(TIDS), amount=cents, style=st.integers(0, 3))
    def withdraw(self, tid: str, amount: int, style: int) -> None:
        value = Decimal(amount).scaleb(-2)
        self.attempt(
            ("withdrawal", tid, value),
            lambda: self.wallet.withdraw(as_input(amount, style), tid),
            InsufficientFunds if value > self.expected() else None,
        )

    @rule(
        tid=st.sampled_from(TIDS),
        amount=st.integers(min_value=1, max_value=5_000),
        rnd=st.sampled_from(ROUNDS),
        wager=st.sampled_from(WAGERS),
    )
    def debit(self, tid: str, amount: int, rnd: str, wager: str) -> None:
        value = Decimal(amount).scaleb(-2)
        self.attempt(
            ("stake", tid, value, rnd, wager),
            lambda: self.wallet.debit_stake(value, rnd, wager, tid),
            InsufficientFunds if value > self.expected() else None,
        )

    @rule(
        tid=st.sampled_from(TIDS),
        amount=st.integers(min_value=0, max_value=40_000),
        rnd=st.sampled_from(ROUNDS),
        wager=st.sampled_from(WAGERS),
    )
    def payout(self, tid: str, amount: int, rnd: str, wager: str) -> None:
        value = Decimal(amount).scaleb(-2)
        was_new = tid not in self.used
        self.attempt(
            ("payout", tid, value, rnd, wager),
            lambda: self.wallet.credit_payout(f"{value:.2f}", rnd, wager, tid),
            None,
        )
        if was_new:
            self.payouts[tid] = (rnd, wager, value)

    @rule(
        tid=st.sampled_from(TIDS),
        amount=cents,
        rnd=st.sampled_from(ROUNDS),
        wager=st.sampled_from(WAGERS),
    )
    def refund(self, tid: str, amount: int, rnd: str, wager: str) -> None:
        value = Decimal(amount).scaleb(-2)
        self.attempt(
            ("refund", tid, value, rnd, wager),
            lambda: self.wallet.credit_refund(value, rnd, wager, tid, "cancelled"),
            None,
        )

    @precondition(lambda self: self.expected() > 0)
    @rule(tid=st.sampled_from(TIDS))
    def withdraw_everything(self, tid: str) -> None:
        """Empty the wallet, so that a later reversal can take it below zero."""
        value = self.expected()
        self.attempt(
            ("withdrawal", tid, value), lambda: self.wallet.withdraw(f"{value:.2f}", tid), None
        )

    @precondition(lambda self: bool(self.payouts))
    @rule(data=st.data(), tid=st.sampled_from(TIDS))
    def reverse(self, data: st.DataObject, tid: str) -> None:
        paid = data.draw(st.sampled_from(sorted(self.payouts)))
        rnd, wager, left = self.payouts[paid]
        # Mostly within what is left of the payout, sometimes beyond it.
        amount = data.draw(st.integers(min_value=1, max_value=int(left * 100) + 100))
        value = Decimal(amount).scaleb(-2)
        was_new = tid not in self.used
        self.attempt(
            ("reversal", tid, value, rnd, wager, paid),
            lambda: self.wallet.reverse_payment(value, rnd, wager, tid, paid, "cancelled"),
            InvalidReversal if value > left else None,
        )
        if was_new and self.used.get(tid) == ("reversal", tid, value, rnd, wager, paid):
            self.payouts[paid] = (rnd, wager, left - value)

    @precondition(lambda self: bool(self.replays))
    @rule(data=st.data())
    def repeat(self, data: st.DataObject) -> None:
        """Send an accepted command again, unchanged: nothing is recorded."""
        tid = data.draw(st.sampled_from(sorted(self.replays)))
        before = (self.wallet.balance, self.wallet.version)
        assert self.replays[tid]() is False
        assert (self.wallet.balance, self.wallet.version) == before

    @rule(bad=st.sampled_from([1.25, "-1.00", "0", "0.001", "ten"]), tid=st.sampled_from(TIDS))
    def bad_amount(self, bad: object, tid: str) -> None:
        before = self.wallet.version
        with pytest.raises(InvalidAmount):
            self.wallet.deposit(bad, tid)
        with pytest.raises(InvalidAmount):
            self.wallet.debit_stake(bad, "r1", "main", tid)
        assert self.wallet.version == before

    @rule()
    def save_and_rebuild(self) -> None:
        self.app.save(self.wallet)
        copy = self.app.repository.get(self.wallet.id)
        assert copy == self.wallet

    @invariant()
    def money_is_conserved(self) -> None:
        assert self.wallet.balance == self.expected()

    @invariant()
    def balance_goes_negative_only_through_a_reversal(self) -> None:
        previous = Decimal(0)
        for m in self.wallet.movements:
            after = Decimal(m["balance_after"])
            if m["kind"] in ("withdrawal", "stake"):
                assert after >= 0, m
            if after < 0 and m["kind"] != "reversal":
                # Only a credit can leave a balance negative, and never lower than it was
                # (a zero payout, a lost wager's settlement, leaves it where it was).
                assert m["kind"] in ("deposit", "payout", "refund")
                assert after >= previous
            previous = after
        assert previous == self.wallet.balance

    def teardown(self) -> None:
        self.app.save(self.wallet)
        copy = self.app.repository.get(self.wallet.id)
        assert isinstance(copy, Wallet)
        assert copy.balance == self.wallet.balance == self.expected()
        assert copy.movements == self.wallet.movements


WalletMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWalletMachine = WalletMachine.TestCase


def test_a_deep_copy_is_independent_of_its_original() -> None:
    """The aggregate cache hands out deep copies: a command run on a copy (and then discarded,
    e.g. refused or not saved) must leave the cached wallet exactly as it was."""
    import copy

    wallet = funded("100.00")
    wallet.debit_stake("10.00", "r1", "main", "r1/main/stake")
    wallet.credit_payout("20.00", "r1", "main", "r1/main/win")
    before = (wallet.balance, wallet.movements, len(wallet.pending_events), wallet.version)
    clone = copy.deepcopy(wallet)
    assert (clone.balance, clone.movements, clone.version) == (*before[:2], before[3])
    clone.deposit("5.00", "dep-1")
    clone.reverse_payment("20.00", "r1", "main", "r1/main/reverse", "r1/main/win", "ERR-1")
    clone.collect_events()
    assert clone.balance == Decimal("95.00")  # 100 - 10 + 20 + 5 - 20
    assert (wallet.balance, wallet.movements, len(wallet.pending_events), wallet.version) == before
    assert not wallet.has_transaction("dep-1")
    # the original can still reverse the payout the copy reversed
    assert wallet.reverse_payment("20.00", "r1", "main", "r1/main/reverse", "r1/main/win", "ERR-1")
    assert wallet.balance == Decimal("90.00")  # 100 - 10 + 20 - 20
    assert clone.movements[-1]["transaction_id"] == "r1/main/reverse"


# ------------------------------------------------------------ the movements' JSON, kept once


def _every_kind() -> Wallet:
    """A wallet with a movement of every kind (None fields, a reason, a reversal, unicode)."""
    wallet = funded("100.00", discard=False)
    wallet.withdraw("1.10", "wd-1", actor=actor("supervisor", "cashier-é"))
    wallet.debit_stake("10", "r1", "main", "s-1", rule="PHASE-1")
    wallet.debit_stake("2", "r1", None, "s-2")
    wallet.credit_payout("25", "r1", "main", "p-1", rule="OUT-2")
    wallet.credit_refund("2", "r1", None, "f-1", "cancelled: “dealer error”")
    wallet.reverse_payment("5", "r1", "main", "v-1", "p-1", "cancelled")
    return wallet


@pytest.mark.parametrize("n", [0, 1, 3, 7, 50, 500])
def test_recent_movements_json_is_the_json_of_recent_movements(n: int) -> None:
    """``recent_movements_json(n)`` is ``orjson.dumps(recent_movements(n))`` byte for byte, on
    the first call and when the movements' bytes are kept (the next calls, and a copy)."""
    import orjson

    wallet = _every_kind()
    for _ in range(40):  # past the layered map's top: movements in frozen levels too
        wallet.deposit("0.01", f"dep-{uuid.uuid4()}")
    for w in (wallet, wallet, rebuilt(wallet)):
        assert w.recent_movements_json(n) == orjson.dumps(w.recent_movements(n))


def test_recent_movements_json_of_two_attempts_at_one_transaction_differ() -> None:
    """Two copies of a wallet recording the same transaction id at another balance (an attempt
    that did not commit, then its retry after another deposit) each render their own
    movement: the bytes kept are those of the very record, not of its transaction id."""
    import copy

    import orjson

    wallet = funded("10.00")
    first, second = copy.deepcopy(wallet), copy.deepcopy(wallet)
    first.deposit("1.00", "same")
    second.deposit("5.00", "other")
    second.deposit("1.00", "same")
    a, b = first.recent_movements_json(3), second.recent_movements_json(3)
    assert a == orjson.dumps(first.recent_movements(3))
    assert b == orjson.dumps(second.recent_movements(3))
    assert orjson.loads(a)[-1]["balance_after"] == "11.00"
    assert orjson.loads(b)[-1]["balance_after"] == "16.00"


def test_rendered_movements_are_bounded_and_stay_exact() -> None:
    """The table of rendered movements forgets its oldest quarter when full; whatever it
    forgot is rendered again, the same bytes."""
    import orjson

    from domain.movement_json import RenderedMovements

    table = RenderedMovements(limit=8)
    movements = [{"kind": "deposit", "amount": f"{i}.00", "actor": {"id": "s"}} for i in range(30)]
    for i in range(len(movements)):
        window = movements[max(0, i - 5) : i + 1]
        assert table.array(window) == orjson.dumps(window)
        assert len(table) <= 8
    assert table.array(movements) == orjson.dumps(movements)
    assert len(table) <= 8


def test_movements_of_one_actor_share_its_dict_and_queries_copy_it() -> None:
    """A movement's actor is kept once for all movements of the same actor (same items, same
    order: ``domain.wallet_checks.kept_actor``), and never reaches a caller: each query copies
    it, so changing an answer changes neither the wallet nor another movement."""
    wallet = funded("100.00")
    rid = "r-shared-actors"
    wallet.debit_stake("10.00", round_id=rid, wager_id="w1", transaction_id="t1")
    wallet.debit_stake("5.00", round_id=rid, wager_id="w2", transaction_id="t2")
    wallet.deposit("1.00", "dep-1", actor=ALICE)
    reordered = {"id": SYSTEM["id"], "kind": SYSTEM["kind"]}  # as the store decodes it: sorted
    wallet.deposit("1.00", "dep-2", actor=reordered)
    kept = {m: wallet._movements.get(m) for m in ("t1", "t2", "dep-1", "dep-2")}
    assert None not in kept.values()
    assert kept["t1"].actor is kept["t2"].actor
    assert kept["t1"].actor == SYSTEM
    assert kept["t1"].actor is not SYSTEM
    assert kept["dep-1"].actor == ALICE
    assert kept["dep-1"].actor is not ALICE
    # each movement's actor in its event's order (what a wallet view renders)
    events = {getattr(e, "transaction_id", None): e for e in wallet.collect_events()}
    for tid, m in kept.items():
        assert list(m.actor.items()) == list(events[tid].actor.items())
    # the same items in another order are another actor: its own dict, in its own order
    assert kept_actor(reordered) is not kept_actor(dict(SYSTEM))
    assert list(kept_actor(reordered)) == ["id", "kind"]
    assert kept_actor(dict(reordered)) is kept_actor(reordered)
    answer = wallet.movement("t1")
    assert answer is not None
    answer["actor"]["id"] = "changed"
    for m in wallet.recent_movements(10):
        m["actor"].clear()
    assert wallet.movement("t2") is not None
    assert wallet.movement("t2")["actor"] == SYSTEM  # type: ignore[index]
    assert kept["t1"].actor == SYSTEM
    assert actor("system", "roundaudit") == SYSTEM
    # a caller's dict changed after the movement changes nothing recorded
    mine = actor("supervisor", "s-9")
    wallet.deposit("1.00", "dep-3", actor=mine)
    mine["id"] = "other"
    assert wallet.movement("dep-3")["actor"] == actor("supervisor", "s-9")  # type: ignore[index]


def test_a_kept_movement_is_a_slotted_record_rendered_as_the_querys_dict() -> None:
    """A wallet keeps each movement as a slotted record (``KeptMovement``, about 120 bytes
    against a dict's 280: docs/performance-history.md ``bwmem``), which its queries give as a
    dict of its own and ``orjson`` renders as that dict, byte for byte; the fingerprint a
    repeated transaction id is checked against is made from it (none is kept), and what
    remains of a payout is its amount less what reversals took back (none is kept either)."""
    wallet = funded("20")
    wallet.credit_payout("15", "r1", "main", "p1")
    wallet.reverse_payment("5", "r1", "main", "v1", "p1", "cancelled")
    for tid in ("dep-0", "p1", "v1"):
        kept = wallet._movements[tid]
        assert not hasattr(kept, "__dict__")
        answer = wallet.movement(tid)
        assert answer is not None
        assert answer["transaction_id"] == tid
        assert orjson.dumps(kept) == orjson.dumps(answer)
    assert wallet._movements["v1"].fingerprint() == '["reversal","5.00","r1","main","p1"]'
    assert wallet._movements["dep-0"].fingerprint() == '["deposit","20.00",null,null,null]'
    assert wallet.reverse_payment("5.00", "r1", "main", "v1", "p1", "cancelled") is False
    known = re.escape('["reversal","5.00","r1","main","p1"]')
    with pytest.raises(DuplicateTransaction, match=known):
        wallet.reverse_payment("5", "r1", "main", "v1", "p0", "cancelled")
    with pytest.raises(InvalidReversal, match=r"exceeds the 10\.00 of payout"):
        wallet.reverse_payment("10.01", "r1", "main", "v2", "p1", "cancelled")
    assert wallet.reverse_payment("10", "r1", "main", "v2", "p1", "cancelled") is True
    with pytest.raises(InvalidReversal, match=r"exceeds the 0\.00 of payout"):
        wallet.reverse_payment("0.01", "r1", "main", "v3", "p1", "cancelled")
    with pytest.raises(InvalidReversal, match="is not a payout"):
        wallet.reverse_payment("1", "r1", "main", "v3", "dep-0", "cancelled")
    assert wallet.balance == Decimal("20.00")


def test_wallets_share_one_empty_map_of_reversals_and_a_reversal_is_the_wallets_own() -> None:
    """Until its first reversal a wallet's map of reversed payouts is one map for all wallets
    (a persistent map, never changed in place); a reversal in one changes no other."""
    a, b = funded("20"), funded("20")
    assert a._reversed is b._reversed
    for w in (a, b):
        w.credit_payout("15", "r1", "main", "p1")
    assert a.reverse_payment("15", "r1", "main", "v1", "p1", "cancelled") is True
    assert a._reversed is not b._reversed
    assert len(Wallet.open("carol")._reversed) == 0
    assert b.reverse_payment("15", "r1", "main", "v1", "p1", "cancelled") is True
    assert (a.balance, b.balance) == (Decimal("20.00"), Decimal("20.00"))


def test_a_kept_movement_has_the_fields_of_a_movement_in_their_order() -> None:
    """``KeptMovement`` (the wallet's record) and ``Movement`` (what its queries give) name
    the same fields in the same order: the one's rendering is the other's JSON, byte for byte,
    only while they do (both are declared, for the type checker; this keeps them one list)."""
    from dataclasses import fields

    from domain.wallet_checks import KeptMovement, Movement

    assert [f.name for f in fields(KeptMovement)] == list(Movement.__annotations__)

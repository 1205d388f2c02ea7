"""deluxe table rules (RULES.md "deluxe: seats, bet behind, Pair"): DLX-1..8, DLX-PAIR, PRE-1,
with FUNDS-1 and INS-1 where they meet them, and a full seven-seat round settled to the cent.

Every round here is played on a (non-production) Table aggregate: the players sit first
(``RoundAudit.sit``), the round takes the table's seat map when it starts, and the table
removes players at the end of the countdown (DLX-3) or at the start of a round (DLX-4).
Cards come from a stacked test shoe (``roundkit.stack``: first cards in seat order, the dealer's
up card, second cards, the hole card, then the draws in the order the round asks for them).

Amounts are worked by hand in the comments; the assertions check the wallets' nets and the
recorded events' fields (rule, result, payout, reason, balance_seen).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roundkit import D, Kit, cards_to, kinds, of, one, settled, stack, stood

from domain.application import RoundAudit, event_json
from domain.errors import (
    AccountTypeRefused,
    BetLimit,
    DomainError,
    IllegalAction,
    InsufficientFunds,
    OutOfTurn,
    UnknownPlayer,
    WalletNotFound,
    WrongOrder,
)
from domain.table import Table
from replays.reexecute import verify_events

V = "deluxe"
TABLE = "dlx"
Json = dict[str, Any]
PRE_1 = {"kind": "system", "id": "PRE-1"}
PAIR_TABLE = {
    "mixed_pair": "5:1",
    "coloured_pair": "10:1",
    "perfect_pair": "30:1",
    "suited_trips": "50:1",
}


# --------------------------------------------------------------------------------- helpers
def fund(app: RoundAudit, funds: Mapping[str, object], accounts: Mapping[str, str] | None = None):
    """Open (test accounts by default: the table is a test table) and fund the wallets."""
    for player, amount in funds.items():
        try:
            app.wallet(player)
        except WalletNotFound:
            app.open_wallet(player, account_type=(accounts or {}).get(player, "test"))
        if D(amount) > 0:
            n = len(app.wallet(player).movements)
            app.deposit(player, str(amount), transaction_id=f"dep-{player}-{n}")


def table_round(
    seating: Mapping[int, str],
    cards: list[str],
    funds: Mapping[str, object],
    *,
    accounts: Mapping[str, str] | None = None,
    app: RoundAudit | None = None,
    round_number: int = 1,
) -> Kit:
    """Open the table (once), fund the players, seat ``seating`` (seat -> player) and start
    round ``round_number`` on a test shoe of ``cards``. Nets are measured from here."""
    app = app if app is not None else RoundAudit()
    if Table.create_id(TABLE) not in app.repository:
        app.open_table(TABLE, production=False)
    fund(app, funds, accounts)
    for seat, player in sorted(seating.items()):
        app.sit(TABLE, player=player, seat=seat)
    return Kit(
        V,
        cards,
        players=dict.fromkeys(funds, 0),
        app=app,
        table=TABLE,
        round_number=round_number,
    )


def behind(
    kit: Kit, player: str, seat: int, amount: object, *, double: bool = False, split: bool = False
) -> list[Json]:
    return kit.run(
        lambda: kit.app.place_behind(
            kit.rid,
            player=player,
            seat=seat,
            amount=str(amount),
            follow_double=double,
            follow_split=split,
        )
    )


def pair(kit: Kit, player: str, seat: int, amount: object) -> list[Json]:
    return kit.side(player, "pair", amount, seat)


def preselect(kit: Kit, player: str, action: str, hand: str | None = None) -> list[Json]:
    return kit.run(lambda: kit.app.preselect(kit.rid, player=player, action=action, hand=hand))


def table_events(app: RoundAudit) -> list[Json]:
    return [event_json(e) for e in app.events.get(Table.create_id(TABLE))]


def table_of(events: list[Json], name: str) -> list[Json]:
    return of(events, name)


def table_refused(
    app: RoundAudit, error: type[DomainError], command: Callable[[], object], players=()
) -> DomainError:
    """A table command refused with ``error``: no table event, no money moved."""
    before = table_events(app)
    money = {p: app.balance(p) for p in players}
    with pytest.raises(error) as info:
        command()
    assert table_events(app) == before, "a refused table command recorded events"
    assert {p: app.balance(p) for p in players} == money
    return info.value


def house_result(events: list[Json]) -> Decimal:
    """What the house won in the round: every stake taken minus every amount paid back."""
    taken = sum(
        (D(p["stake"]) for p in of(events, "BetPlaced") + of(events, "SeatBetMirrored")),
        Decimal(0),
    ) + sum((D(p["stake"]) for p in of(events, "WagerAdded")), Decimal(0))
    paid = sum((D(p["payout"]) for p in of(events, "WagerSettled")), Decimal(0))
    return taken - paid


def assert_reexecutes(kit: Kit) -> None:
    rnd = kit.app.round(kit.rid)
    verdict = verify_events(kit.rid, list(kit.app.events.get(rnd.id)))
    assert verdict.ok, verdict.as_json()


def brief(p: Json) -> tuple[Any, ...]:
    """(kind, hand, stake, result, payout, net, rule) of a WagerSettled payload."""
    return (p["kind"], p["hand"], p["stake"], p["result"], p["payout"], p["net"], p["rule"])


# ------------------------------------------------------------------------------------ DLX-1
@pytest.mark.parametrize("seat", [0, 8, -1, 12])
def test_dlx_1_seats_are_1_to_7_only(seat):
    app = RoundAudit()
    app.open_table(TABLE, production=False)
    fund(app, {"A": 100})
    err = table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="A", seat=seat), "A")
    assert err.rule == "DLX-1"
    app.sit(TABLE, player="A", seat=1)
    app.sit(TABLE, player="A", seat=7)
    taken = table_of(table_events(app), "SeatTaken")
    assert [(p["seat"], p["player"], p["account_type"], p["balance_seen"]) for p in taken] == [
        (1, "A", "test", "100.00"),
        (7, "A", "test", "100.00"),
    ]
    assert taken[0]["actor"] == {"kind": "player", "id": "A"}
    assert app.table(TABLE).seat_map() == {"1": "A", "7": "A"}


def test_dlx_1_a_third_seat_is_refused():
    app = RoundAudit()
    app.open_table(TABLE, production=False)
    fund(app, {"A": 100, "B": 100})
    app.sit(TABLE, player="A", seat=2)
    app.sit(TABLE, player="A", seat=5)
    err = table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="A", seat=7), "AB")
    assert err.rule == "DLX-1"
    assert "two at most" in err.message
    app.sit(TABLE, player="B", seat=7)  # the seat stayed free
    assert app.table(TABLE).seat_map() == {"2": "A", "5": "A", "7": "B"}


def test_dlx_1_a_taken_seat_is_refused():
    app = RoundAudit()
    app.open_table(TABLE, production=False)
    fund(app, {"A": 100, "B": 100})
    app.sit(TABLE, player="A", seat=3)
    err = table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="B", seat=3), "AB")
    assert err.rule == "DLX-1"
    assert "taken by A" in err.message
    table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="A", seat=3), "AB")
    assert app.table(TABLE).seat_map() == {"3": "A"}


@pytest.mark.parametrize("account", ["test", "fun"])
def test_dlx_1_test_and_fun_accounts_may_not_sit_but_may_bet_behind(account):
    # A production table, dealt from a live shoe (test shoes are for test tables only).
    # A (real) 10.00 on seat 1: 10,9 = 19 stands against the dealer's 9,8 = 17: wins 1:1
    # (+10.00). T (test/fun) may not sit; behind seat 1 with 5.00: wins with it (+5.00); Pair
    # 1.00 on seat 1 (10,9: no pair) loses (-1.00). T's net +4.00.
    app = RoundAudit()
    app.open_table(TABLE, production=True)
    fund(app, {"A": 100, "T": 100}, {"A": "real", "T": account})
    err = table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="T", seat=2), "AT")
    assert err.rule == "DLX-1"
    assert f"{account} accounts may not sit" in err.message
    assert app.table(TABLE).seat_map() == {}
    app.sit(TABLE, player="A", seat=1)
    shoe = app.open_shoe(
        table_id=TABLE, shoe_number=1, kind="live", decks=8, production=True, burn_procedure=False
    )
    rid = app.start_round(table_id=TABLE, round_number=1, variant=V, shoe_id=shoe)
    with pytest.raises(IllegalAction) as refused:  # no seat: no seat bet
        app.place_bet(rid, player="T", amount="10", spot=2)
    assert refused.value.rule == "DLX-1"
    app.place_bet(rid, player="A", amount="10", spot=1)
    app.place_behind(rid, player="T", seat=1, amount="5")
    app.place_bet(rid, player="T", kind="pair", amount="1", spot=1)
    app.close_betting(rid)
    for card in ("10H", "9D", "9C", "8C"):
        app.deal_card(rid, card)
    app.decide(rid, player="A", action="stand")
    events = app.round_events(rid)
    s = settled(events)
    assert brief(s["1:main"]) == ("main", "1", "10.00", "win", "20.00", "10.00", "OUT-2")
    assert brief(s["1:behind:T"]) == ("behind", "1", "5.00", "win", "10.00", "5.00", "OUT-2")
    assert brief(s["1:pair:T"]) == ("pair", None, "1.00", "lose", "0.00", "-1.00", "DLX-PAIR")
    assert (app.balance("A"), app.balance("T")) == (D(110), D(104))
    verdict = verify_events(rid, list(app.events.get(app.round(rid).id)))
    assert verdict.ok, verdict.as_json()


def test_a_test_table_seats_play_money_accounts_only():
    # A test table (stacked shoes allowed) takes test and play-for-fun accounts, seats included;
    # a real account is refused a seat and every bet, with nothing recorded.
    app = RoundAudit()
    app.open_table(TABLE, production=False)
    fund(app, {"A": 100, "R": 100}, {"R": "real"})
    app.sit(TABLE, player="A", seat=1)
    table_refused(app, AccountTypeRefused, lambda: app.sit(TABLE, player="R", seat=2), "AR")
    kit = table_round({}, stack(V, [["10H", "9C"]], up="9D", hole="8C"), {"A": 0}, app=app)
    kit.refused(
        AccountTypeRefused, lambda: kit.app.place_behind(kit.rid, player="R", seat=1, amount="5")
    )
    kit.refused(AccountTypeRefused, lambda: kit.side("R", "pair", 1, 1))
    kit.bet("A", 10, 1)
    kit.close()
    kit.decide("A", "stand")
    assert kit.nets() == {"A": D(10)}
    assert app.balance("R") == D(100)


def test_dlx_1_a_seat_bet_needs_ones_own_seat():
    kit = table_round({1: "A"}, stack(V, [["10H", "9C"]], up="9D", hole="8C"), {"A": 100, "B": 100})
    err = kit.refused(IllegalAction, lambda: kit.bet("B", 10, 2))  # B never sat
    assert err.rule == "DLX-1"
    err = kit.refused(IllegalAction, lambda: kit.bet("B", 10, 1))  # A's seat
    assert err.rule == "DLX-1"
    assert "taken by A" in err.message
    assert kinds(kit.events()) == ["Started"]


# ------------------------------------------------------------------------------------ DLX-2
def test_dlx_2_a_two_seat_players_seat_bet_is_mirrored_when_the_balance_allows():
    # A on seats 2 and 5 with 100.00 bets 10.00 on seat 5: mirrored on seat 2 (2 x 10 <= 100).
    # Seat 2: 10,9 = 19; seat 5: 10,8 = 18; dealer 9,8 = 17: both win 1:1: A +20.00.
    cards = stack(V, [["10H", "9C"], ["10D", "8S"]], up="9D", hole="8C")
    kit = table_round({2: "A", 5: "A"}, cards, {"A": 100})
    new = kit.bet("A", 10, 5)
    assert kinds(new) == ["BetPlaced", "SeatBetMirrored"]
    placed = new[0]["payload"]
    assert {k: placed[k] for k in ("wager_id", "spot", "stake", "requested", "balance_seen")} == {
        "wager_id": "5:main",
        "spot": "5",
        "stake": "10.00",
        "requested": "10.00",
        "balance_seen": "100.00",
    }
    assert one(new, "SeatBetMirrored") == {
        "wager_id": "2:main",
        "player": "A",
        "spot": "2",
        "stake": "10.00",
        "mode": "mirrored",
        "rule": "DLX-2",
    }
    assert kit.balance("A") == D(80)
    kit.close()
    assert [h["hand"] for h in kit.view()["hands"]] == ["2", "5"]  # seat order, lowest first
    kit.decide("A", "stand")
    new = kit.decide("A", "stand")
    s = settled(new)
    assert brief(s["2:main"]) == ("main", "2", "10.00", "win", "20.00", "10.00", "OUT-2")
    assert brief(s["5:main"]) == ("main", "5", "10.00", "win", "20.00", "10.00", "OUT-2")
    assert kit.net("A") == D(20)
    assert_reexecutes(kit)


def test_dlx_2_the_bet_is_split_equally_when_the_balance_does_not_allow_mirroring():
    # A with 15.00 bets 10.00: 2 x 10 > 15, so the 10.00 is split 5.00 + 5.00.
    # Seat 2: 10,9 = 19 wins (+5.00); seat 5: 10,7 = 17 pushes (0); dealer 9,8 = 17. A +5.00.
    cards = stack(V, [["10H", "9C"], ["10D", "7S"]], up="9D", hole="8C")
    kit = table_round({2: "A", 5: "A"}, cards, {"A": 15})
    new = kit.bet("A", 10, 2)
    placed = one(new, "BetPlaced")
    assert (placed["wager_id"], placed["stake"], placed["requested"], placed["balance_seen"]) == (
        "2:main",
        "5.00",
        "10.00",
        "15.00",
    )
    assert one(new, "SeatBetMirrored") == {
        "wager_id": "5:main",
        "player": "A",
        "spot": "5",
        "stake": "5.00",
        "mode": "split",
        "rule": "DLX-2",
    }
    assert kit.balance("A") == D(5)
    kit.close()
    kit.decide("A", "stand")
    new = kit.decide("A", "stand")
    s = settled(new)
    assert brief(s["2:main"]) == ("main", "2", "5.00", "win", "10.00", "5.00", "OUT-2")
    assert brief(s["5:main"]) == ("main", "5", "5.00", "push", "5.00", "0.00", "OUT-4")
    assert kit.net("A") == D(5)
    assert kit.balance("A") == D(20)
    assert_reexecutes(kit)


@pytest.mark.parametrize(
    ("balance", "amount", "mode", "each"),
    [
        ("20.00", "10.00", "mirrored", "10.00"),  # exactly twice: mirrored
        ("19.99", "10.00", "split", "5.00"),
        ("3.00", "2.00", "split", "1.00"),  # halves exactly the minimum seat bet
    ],
)
def test_dlx_2_mirror_or_split_at_the_balance_boundary(balance, amount, mode, each):
    kit = table_round({3: "B", 6: "B"}, ["10H"], {"B": balance})
    new = kit.bet("B", amount, 3)
    mirrored = one(new, "SeatBetMirrored")
    assert (mirrored["mode"], mirrored["stake"], mirrored["spot"]) == (mode, each, "6")
    assert one(new, "BetPlaced")["stake"] == each
    assert kit.balance("B") == D(balance) - 2 * D(each)


@pytest.mark.parametrize(
    ("balance", "amount"),
    [
        ("2.00", "1.50"),  # 3.00 > 2.00; halves of 0.75 are below the 1.00 minimum
        ("1.00", "1.00"),  # 2.00 > 1.00; halves of 0.50 are below the minimum
        ("1.99", "1.99"),  # 3.98 > 1.99; D17: halves of 0.99 (0.01 kept) are below the minimum
    ],
)
def test_dlx_2_refused_when_neither_mirror_nor_equal_split_works(balance, amount):
    kit = table_round({2: "A", 5: "A", 4: "B"}, ["10H"], {"A": balance, "B": balance})
    err = kit.refused(BetLimit, lambda: kit.bet("A", amount, 2))
    assert err.rule == "DLX-2"
    err = kit.refused(BetLimit, lambda: kit.bet("A", amount, 5))
    assert err.rule == "DLX-2"
    assert kinds(kit.events()) == ["Started"]
    kit.bet("B", amount, 4)  # a one-seat player with the same balance is not concerned
    assert kit.balance("B") == D(balance) - D(amount)


def test_d17_an_odd_cent_left_by_the_split_stays_in_the_wallet():
    # D17: A with 10.00 bets 9.99 on two seats: 2 x 9.99 > 10.00, so the bet is split; half of
    # 9.99 is 4.995: each seat gets 4.99 and the odd 0.01 is not staked (it stays with A).
    # Seat 2: 10,9 = 19 wins (+4.99); seat 5: 10,7 = 17 pushes; dealer 9,8 = 17.
    cards = stack(V, [["10H", "9C"], ["10D", "7S"]], up="9D", hole="8C")
    kit = table_round({2: "A", 5: "A"}, cards, {"A": "10.00"})
    new = kit.bet("A", "9.99", 2)
    placed = one(new, "BetPlaced")
    assert (placed["stake"], placed["requested"], placed["balance_seen"]) == (
        "4.99",
        "9.99",
        "10.00",
    )  # the bet records what was asked (9.99) and what each seat stakes (4.99)
    assert one(new, "SeatBetMirrored") == {
        "wager_id": "5:main",
        "player": "A",
        "spot": "5",
        "stake": "4.99",
        "mode": "split",
        "rule": "D17",  # the split left an odd unit: D17 decided where it goes
    }
    assert kit.balance("A") == D("10.00") - 2 * D("4.99")  # 0.02 left: 0.01 of it the odd unit
    kit.close()
    kit.decide("A", "stand")
    s = settled(kit.decide("A", "stand"))
    assert brief(s["2:main"]) == ("main", "2", "4.99", "win", "9.98", "4.99", "OUT-2")
    assert brief(s["5:main"]) == ("main", "5", "4.99", "push", "4.99", "0.00", "OUT-4")
    assert kit.net("A") == D("4.99")
    assert_reexecutes(kit)


@pytest.mark.parametrize(
    ("balance", "amount", "each"),
    [("2.01", "2.01", "1.00"), ("3.03", "3.03", "1.51"), ("100.00", "99.99", "49.99")],
)
def test_d17_the_odd_unit_is_never_staked_and_never_lost(balance, amount, each):
    kit = table_round({3: "B", 6: "B"}, ["10H"], {"B": balance})
    new = kit.bet("B", amount, 3)
    stakes = [D(p["stake"]) for p in of(new, "BetPlaced") + of(new, "SeatBetMirrored")]
    assert stakes == [D(each), D(each)]
    assert D(amount) - sum(stakes) == D("0.01")  # one odd unit, in the wallet
    assert kit.balance("B") == D(balance) - 2 * D(each)
    assert one(new, "SeatBetMirrored")["rule"] == "D17"


def test_d17_a_split_below_the_minimum_is_refused_naming_the_setting():
    # halves of 1.99 are 0.99 (the odd 0.01 kept): below deluxe/1's min_bet 1.00 (D18)
    kit = table_round({2: "A", 5: "A"}, ["10H"], {"A": "1.99"})
    err = kit.refused(BetLimit, lambda: kit.bet("A", "1.99", 2))
    assert err.rule == "DLX-2"
    assert err.setting == "deluxe/1:min_bet"
    assert "0.99" in err.message
    assert "min_bet" in err.message


@pytest.mark.parametrize("second", ["20.00", "10.00", "5.00"])
def test_dlx_2_a_second_seat_bet_is_refused_the_first_covers_both_seats(second):
    kit = table_round({2: "A", 5: "A"}, ["10H"], {"A": 100})
    kit.bet("A", 10, 2)
    for seat in (5, 2):
        err = kit.refused(IllegalAction, lambda s=seat: kit.bet("A", second, s))
        assert err.code == "illegal-action"
    assert kit.balance("A") == D(80)
    assert [(w["wager_id"], w["stake"]) for w in kit.view()["wagers"]] == [
        ("2:main", "10.00"),
        ("5:main", "10.00"),
    ]


def test_dlx_2_the_refusal_of_a_second_seat_bet_cites_dlx_2():
    kit = table_round({2: "A", 5: "A"}, ["10H"], {"A": 100})
    kit.bet("A", 10, 2)
    err = kit.refused(IllegalAction, lambda: kit.bet("A", 20, 5))
    assert err.rule == "DLX-2"


# ------------------------------------------------------------------------------------ DLX-3
def test_dlx_3_a_new_player_without_seat_bet_is_removed_and_bets_on_the_seat_refunded():
    # A (seat 1) bets 10.00. B sat on seat 2 for this round: 10.00 refused (balance 5.00), so
    # no valid seat bet. C sat on seats 3 and 4 and bets nothing. At the end of the countdown
    # B and C lose their seats (DLX-3); X's bet behind seat 2 (7.00), X's and Y's Pair bets on
    # seat 2 (2.50, 1.00) and Y's bet behind seat 4 (3.00) are refunded. X's bet behind seat 1
    # (5.00) stays and wins with A's 10,9 = 19 against 9,8 = 17: A +10.00, X +5.00.
    cards = stack(V, [["10H", "9C"]], up="9D", hole="8C")
    funds = {"A": 100, "B": 5, "C": 100, "X": 100, "Y": 100}
    kit = table_round({1: "A", 2: "B", 3: "C", 4: "C"}, cards, funds)
    kit.bet("A", 10, 1)
    kit.refused(InsufficientFunds, lambda: kit.bet("B", 10, 2))
    behind(kit, "X", 1, 5)
    behind(kit, "X", 2, 7)
    pair(kit, "X", 2, "2.50")
    pair(kit, "Y", 2, 1)
    behind(kit, "Y", 4, 3)
    assert kit.balances() == {"A": 90, "B": 5, "C": 100, "X": D("85.50"), "Y": 96}
    new = kit.close()
    assert {w: brief(p) for w, p in settled(new).items()} == {
        "2:behind:X": ("behind", None, "7.00", "refund", "7.00", "0.00", "DLX-3"),
        "2:pair:X": ("pair", None, "2.50", "refund", "2.50", "0.00", "DLX-3"),
        "2:pair:Y": ("pair", None, "1.00", "refund", "1.00", "0.00", "DLX-3"),
        "4:behind:Y": ("behind", None, "3.00", "refund", "3.00", "0.00", "DLX-3"),
    }
    assert [p["hand"] for p in of(new, "HandOpened")] == ["1"]
    assert kit.balances() == {"A": 90, "B": 5, "C": 100, "X": 95, "Y": 100}
    t = table_events(kit.app)
    closed = one(t, "RoundBetsClosed")
    assert (closed["round_number"], closed["seats_with_bets"]) == (1, [1])
    assert table_of(t, "SeatRemoved") == [
        {"seat": 2, "player": "B", "reason": "no valid seat bet", "rule": "DLX-3"},
        {"seat": 3, "player": "C", "reason": "no valid seat bet", "rule": "DLX-3"},
        {"seat": 4, "player": "C", "reason": "no valid seat bet", "rule": "DLX-3"},
    ]
    assert "SeatKeptForOneRound" not in kinds(t)
    assert kit.app.table(TABLE).seat_map() == {"1": "A"}
    new = kit.decide("A", "stand")
    assert brief(settled(new)["1:behind:X"]) == (
        "behind", "1", "5.00", "win", "10.00", "5.00", "OUT-2"
    )  # fmt: skip
    assert kit.nets() == {"A": 10, "B": 0, "C": 0, "X": 5, "Y": 0}
    assert_reexecutes(kit)


def test_dlx_3_the_table_records_the_close_commands_request_id_and_client_time():
    """Issue 14: the table's record of the countdown's end (DLX-3, DLX-4) is an input; it
    carries the request id and client time of the close command that ended it."""
    cards = stack(V, [["10H", "9C"]], up="9D", hole="8C")
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100})
    kit.bet("A", 10, 1)
    kit.run(
        lambda: kit.app.close_betting(
            kit.rid, request_id="close-1", client_time="2026-12-01T10:00:00Z"
        )
    )
    closed = one(table_events(kit.app), "RoundBetsClosed")
    assert closed["request_id"] == "close-1"
    assert closed["client_time"] is not None
    assert closed["client_time"].startswith("2026-12-01T10:00:00")
    assert (closed["round_number"], closed["seats_with_bets"]) == (1, [1])
    assert_reexecutes(kit)


def test_dlx_3_no_seat_bet_at_all_refunds_everything_and_deals_nothing():
    kit = table_round({2: "B"}, ["10H", "9C"], {"B": 100, "X": 100})
    behind(kit, "X", 2, 7)
    pair(kit, "X", 2, 1)
    new = kit.close()
    assert kinds(new) == ["BettingClosed", "WagerSettled", "WagerSettled", "RoundSettled"]
    assert {w: (p["result"], p["payout"], p["rule"]) for w, p in settled(new).items()} == {
        "2:behind:X": ("refund", "7.00", "DLX-3"),
        "2:pair:X": ("refund", "1.00", "DLX-3"),
    }
    assert kit.drawn() == []
    assert kit.nets() == {"B": 0, "X": 0}
    assert table_of(table_events(kit.app), "SeatRemoved") == [
        {"seat": 2, "player": "B", "reason": "no valid seat bet", "rule": "DLX-3"}
    ]
    assert_reexecutes(kit)


def test_dlx_3_refunded_bets_stay_refunded_when_the_round_is_cancelled():
    cards = stack(V, [["10H", "9C"]], up="9D", hole="8C")
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100, "X": 100})
    kit.bet("A", 10, 1)
    behind(kit, "X", 2, 7)
    kit.close()  # X's bet behind seat 2 refunded (DLX-3)
    kit.cancel()  # ERR-1: every stake refunded, every wallet where it started
    assert kit.phase == "cancelled"
    assert kit.nets() == {"A": 0, "B": 0, "X": 0}


def test_dlx_3_applies_to_the_tables_first_round_whatever_its_number():
    app = RoundAudit()
    cards = stack(V, [["10H", "9C"]], up="9D", hole="8C")
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100}, app=app, round_number=7)
    kit.bet("A", 10, 1)
    kit.close()
    assert table_of(table_events(app), "SeatRemoved") == [
        {"seat": 2, "player": "B", "reason": "no valid seat bet", "rule": "DLX-3"}
    ]


# ------------------------------------------------------------------------------------ DLX-4
def test_dlx_4_a_seated_player_betting_nothing_keeps_the_seat_that_round_only():
    app = RoundAudit()
    # round 1: A (seat 1) 10,9 = 19 and B (seat 2) 10,8 = 18 against 9,8 = 17: both +10.00
    r1 = table_round(
        {1: "A", 2: "B"},
        stack(V, [["10H", "9C"], ["10S", "8H"]], up="9D", hole="8C"),
        {"A": 100, "B": 100, "X": 100, "C": 100},
        app=app,
    )
    r1.bet("A", 10, 1)
    r1.bet("B", 10, 2)
    r1.close()
    r1.decide("A", "stand")
    r1.decide("B", "stand")
    assert r1.nets() == {"A": 10, "B": 10, "X": 0, "C": 0}
    # round 2: A bets nothing; X's bet behind seat 1 (5.00) and Pair (1.00) are refunded
    # (DLX-3); A keeps seat 1 for this round (DLX-4). B 10,7 = 17 pushes 9,8 = 17.
    r2 = table_round(
        {}, stack(V, [["10S", "7H"]], up="9D", hole="8C"), {"A": 0, "B": 0, "X": 0}, app=app,
        round_number=2,
    )  # fmt: skip
    assert app.round(r2.rid).seats == {"1": "A", "2": "B"}
    behind(r2, "X", 1, 5)
    pair(r2, "X", 1, 1)
    r2.bet("B", 10, 2)
    new = r2.close()
    assert {w: (p["result"], p["payout"], p["rule"]) for w, p in settled(new).items()} == {
        "1:behind:X": ("refund", "5.00", "DLX-3"),
        "1:pair:X": ("refund", "1.00", "DLX-3"),
    }
    t = table_events(app)
    assert table_of(t, "SeatKeptForOneRound") == [
        {"seat": 1, "player": "A", "round_number": 2, "rule": "DLX-4"}
    ]
    assert "SeatRemoved" not in kinds(t)
    assert app.table(TABLE).seat_map() == {"1": "A", "2": "B"}
    table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="C", seat=1), "C")
    r2.decide("B", "stand")
    assert r2.nets() == {"A": 0, "B": 0, "X": 0}
    # round 3: A is removed when it starts
    r3 = table_round({}, ["10H"], {"A": 0, "B": 0}, app=app, round_number=3)
    t = table_events(app)
    begun = table_of(t, "RoundBegun")[-1]
    assert (begun["round_number"], begun["balances_seen"]) == (
        3, {"A": "110.00", "B": "110.00"}
    )  # fmt: skip
    assert table_of(t, "SeatRemoved") == [
        {"seat": 1, "player": "A", "reason": "no seat bet in round 2", "rule": "DLX-4"}
    ]
    assert kinds(t)[-2:] == ["RoundBegun", "SeatRemoved"]
    assert app.round(r3.rid).seats == {"2": "B"}
    err = r3.refused(IllegalAction, lambda: r3.bet("A", 10, 1))
    assert err.rule == "DLX-1"
    for r in (r1, r2):
        assert_reexecutes(r)


def test_dlx_4_a_seated_player_below_the_minimum_seat_bet_is_removed_at_round_start():
    # round 1: A bets 9.01 of 10.00 and loses (10,6 = 16 vs 9,8 = 17): 0.99 left;
    #          B bets 10.00 of 11.00 and loses (10,5 = 15): 1.00 left, exactly the minimum.
    app = RoundAudit()
    r1 = table_round(
        {1: "A", 2: "B"},
        stack(V, [["10H", "6C"], ["10S", "5H"]], up="9D", hole="8C"),
        {"A": "10.00", "B": "11.00", "C": "0.99"},
        app=app,
    )
    err = table_refused(app, IllegalAction, lambda: app.sit(TABLE, player="C", seat=3), "C")
    assert err.rule == "DLX-4"  # C cannot even sit with 0.99
    r1.bet("A", "9.01", 1)
    r1.bet("B", 10, 2)
    r1.close()
    r1.decide("A", "stand")
    r1.decide("B", "stand")
    assert r1.balances() == {"A": D("0.99"), "B": D("1.00"), "C": D("0.99")}
    r2 = table_round({}, ["10H"], {"A": 0, "B": 0}, app=app, round_number=2)
    t = table_events(app)
    assert table_of(t, "RoundBegun")[-1]["balances_seen"] == {"A": "0.99", "B": "1.00"}
    assert table_of(t, "SeatRemoved") == [
        {
            "seat": 1,
            "player": "A",
            "reason": "balance below the minimum seat bet 1.00",
            "rule": "DLX-4",
        }
    ]
    assert app.round(r2.rid).seats == {"2": "B"}
    r2.bet("B", 1, 2)  # B kept the seat and can bet the minimum


def test_dlx_4_a_player_who_sits_during_a_round_keeps_the_seat_for_the_next():
    app = RoundAudit()
    r1 = table_round(
        {1: "A"}, stack(V, [["10H", "9C"]], up="9D", hole="8C"), {"A": 100, "B": 100}, app=app
    )
    app.sit(TABLE, player="B", seat=2)  # round 1 has begun: B's first round is round 2
    r1.bet("A", 10, 1)
    r1.close()
    assert "SeatKeptForOneRound" not in kinds(table_events(app))
    r2 = table_round({}, ["10H"], {"A": 0, "B": 0}, app=app, round_number=2)
    assert app.round(r2.rid).seats == {"1": "A", "2": "B"}


# ------------------------------------------------------------------------------------ DLX-5
def test_dlx_5_bet_behind_several_seats_wins_and_loses_with_each_surrender_loses_half():
    # Dealer 7,10 = 17. Seat 1 A: 10,9 = 19 stands, wins. Seat 2 B: 10,6 surrenders (dealer's
    # first card a 7: allowed). Seat 3 C: 10,5 hits K, busts.
    # X behind 1 (5.00): +5.00; behind 2 (7.25): surrender returns half, 3.625 rounded down
    # to 3.62 (MONEY-1, rounding 0.005): -3.63; behind 3 (4.00): -4.00. X -2.63.
    # A (seated on 1) behind seat 2 (3.00): returns 1.50: -1.50. A +10 - 1.50 = +8.50.
    cards = stack(
        V, [["10H", "9C"], ["10S", "6D"], ["10D", "5C"]], up="7C", hole="10C", draws=["KC"]
    )
    kit = table_round({1: "A", 2: "B", 3: "C"}, cards, {"A": 100, "B": 100, "C": 100, "X": 100})
    for seat, player in ((1, "A"), (2, "B"), (3, "C")):
        kit.bet(player, 10, seat)
    behind(kit, "X", 1, 5)
    behind(kit, "X", 2, "7.25")
    behind(kit, "X", 3, 4)
    behind(kit, "A", 2, 3)
    kit.close()
    kit.decide("A", "stand")
    kit.decide("B", "surrender")
    new = kit.decide("C", "hit")
    s = settled(new)
    assert brief(s["1:behind:X"]) == ("behind", "1", "5.00", "win", "10.00", "5.00", "OUT-2")
    assert brief(s["2:behind:X"]) == (
        "behind", "2", "7.25", "surrender", "3.62", "-3.63", "SURR-1"
    )  # fmt: skip
    assert s["2:behind:X"]["rounding"] == "0.005"
    assert brief(s["3:behind:X"]) == ("behind", "3", "4.00", "lose", "0.00", "-4.00", "OUT-3")
    assert brief(s["2:behind:A"]) == (
        "behind", "2", "3.00", "surrender", "1.50", "-1.50", "SURR-1"
    )  # fmt: skip
    assert brief(s["2:main"]) == ("main", "2", "10.00", "surrender", "5.00", "-5.00", "SURR-1")
    assert kit.nets() == {"A": D("8.50"), "B": -5, "C": -10, "X": D("-2.63")}
    assert_reexecutes(kit)


def test_dlx_5_never_behind_ones_own_seat():
    kit = table_round({1: "A", 3: "A", 2: "B"}, ["10H"], {"A": 100, "B": 100, "X": 100})
    for seat in (1, 3):  # before and after the seat bet: either of A's two seats
        err = kit.refused(IllegalAction, lambda s=seat: behind(kit, "A", s, 5))
        assert err.rule == "DLX-5"
    kit.bet("A", 10, 1)
    for seat in (1, 3):
        err = kit.refused(IllegalAction, lambda s=seat: behind(kit, "A", s, 5))
        assert err.rule == "DLX-5"
        assert "own seat" in err.message
    kit.refused(IllegalAction, lambda: behind(kit, "X", 5, 5))  # an empty seat
    kit.refused(BetLimit, lambda: behind(kit, "X", 2, "0.99"))  # below the table minimum
    kit.refused(InsufficientFunds, lambda: behind(kit, "X", 2, "100.01"))
    behind(kit, "A", 2, 5)  # behind somebody else's seat: fine
    kit.refused(IllegalAction, lambda: behind(kit, "A", 2, 5))  # once per seat
    assert [w["wager_id"] for w in kit.view()["wagers"]] == ["1:main", "3:main", "2:behind:A"]


# ------------------------------------------------------------------------------------ DLX-6
@pytest.mark.parametrize(
    ("hole", "nets"),
    [
        # dealer A,K = BJ (END-1 after the window). A: main -10, insurance 5.00 pays 2:1
        # (+10): 0. X: behind -10 (not insured). B: -20 (not insured). Y: behind -7.25,
        # insurance half of 7.25 rounded down = 3.62 pays 7.24: -0.01.
        ("KD", {"A": 0, "B": -20, "X": -10, "Y": D("-0.01")}),
        # dealer A,7 = soft 18. A 19 wins +10, insurance -5: +5. X +10. B 18 pushes: 0.
        # Y pushes, insurance -3.62.
        ("7D", {"A": 5, "B": 0, "X": 10, "Y": D("-3.62")}),
    ],
)
def test_dlx_6_bet_behind_insurance_is_bought_independently_of_the_seat(hole, nets):
    cards = stack(V, [["10H", "9C"], ["10S", "8D"]], up="AS", hole=hole)
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100, "X": 100, "Y": 100})
    kit.bet("A", 10, 1)
    kit.bet("B", 20, 2)
    behind(kit, "X", 1, 10)
    behind(kit, "Y", 2, "7.25")
    new = kit.close()
    assert one(new, "InsuranceWindowOpened") == {"hands": ["1", "2"], "rule": "INS-1"}
    owed = {w["wager_id"]: w["options"] for w in kit.view()["wagers"]}
    assert owed == {
        "1:main": [],
        "2:main": [],
        "1:behind:X": ["insurance", "no_insurance"],  # the view shows who still owes one
        "2:behind:Y": ["insurance", "no_insurance"],
    }
    new = kit.decide("A", "insurance")  # the seat insures ...
    assert one(new, "WagerAdded")["wager_id"] == "1:insurance"
    new = kit.decide("X", "no_insurance")  # ... its bet behind does not
    made = one(new, "DecisionMade")
    assert (made["player"], made["hand"], made["action"], made["amount"]) == (
        "X", "1", "no_insurance", None
    )  # fmt: skip
    assert "WagerAdded" not in kinds(new)
    owed = {w["wager_id"]: w["options"] for w in kit.view()["wagers"]}
    assert (owed["1:behind:X"], owed["2:behind:Y"]) == ([], ["insurance", "no_insurance"])
    kit.decide("B", "no_insurance")  # the seat does not insure ...
    new = kit.decide("Y", "insurance", hand="2")  # ... its bet behind does
    made = of(new, "DecisionMade")[0]
    assert {k: made[k] for k in ("player", "hand", "action", "amount", "options")} == {
        "player": "Y",
        "hand": "2",
        "action": "insurance",
        "amount": "3.62",
        "options": ["insurance", "no_insurance"],
    }
    assert (made["balance_seen"], made["actor"]) == ("92.75", {"kind": "player", "id": "Y"})
    assert one(new, "WagerAdded") == {
        "wager_id": "2:insurance:Y",
        "player": "Y",
        "kind": "insurance",
        "hand": "2",
        "stake": "3.62",
        "balance_seen": "92.75",
        "rule": "DLX-6",
    }
    assert kinds(new)[2:4] == ["InsuranceWindowCompleted", "DealerChecked"]
    if hole == "7D":
        kit.decide("A", "stand")
        new = kit.decide("B", "stand")
    s = settled(kit.events())
    if hole == "KD":
        assert brief(s["1:insurance"]) == (
            "insurance", "1", "5.00", "win", "15.00", "10.00", "INS-1"
        )  # fmt: skip
        assert brief(s["2:insurance:Y"]) == (
            "insurance", "2", "3.62", "win", "10.86", "7.24", "INS-1"
        )  # fmt: skip
        assert brief(s["1:behind:X"])[3:] == ("lose", "0.00", "-10.00", "OUT-1")
        assert brief(s["2:behind:Y"])[3:] == ("lose", "0.00", "-7.25", "OUT-1")
    else:
        assert brief(s["1:insurance"])[3:] == ("lose", "0.00", "-5.00", "INS-1")
        assert brief(s["2:insurance:Y"])[3:] == ("lose", "0.00", "-3.62", "INS-1")
        assert brief(s["1:behind:X"])[3:] == ("win", "20.00", "10.00", "OUT-2")
        assert brief(s["2:behind:Y"])[3:] == ("push", "7.25", "0.00", "OUT-4")
    assert "1:insurance:X" not in s
    assert "2:insurance" not in s
    assert kit.nets() == nets
    assert_reexecutes(kit)


def test_dlx_6_bet_behind_insurance_needs_the_balance_and_the_exact_price():
    cards = stack(V, [["10H", "9C"]], up="AS", hole="7D")
    kit = table_round({1: "A"}, cards, {"A": 100, "Z": "5.00", "Y": 100})
    kit.bet("A", 10, 1)
    behind(kit, "Z", 1, 5)  # Z has 0.00 left: insurance of 2.50 is out of reach
    behind(kit, "Y", 1, 9)
    kit.close()
    err = kit.refused(InsufficientFunds, lambda: kit.decide("Z", "insurance"))
    assert err.rule == "INS-1"
    err = kit.refused(IllegalAction, lambda: kit.decide("Y", "insurance", amount="5.00"))
    assert err.rule == "INS-1"
    new = kit.decide("Y", "insurance", amount="4.50")
    assert one(new, "WagerAdded")["stake"] == "4.50"
    kit.refused(DomainError, lambda: kit.decide("Y", "insurance"))  # decided already
    kit.decide("Z", "no_insurance")
    new = kit.decide("A", "no_insurance")
    assert "InsuranceWindowCompleted" in kinds(new)


def test_dlx_6_a_bet_behind_undecided_when_the_window_closes_has_no_insurance():
    # Dealer A,K = BJ. A insures (5.00 pays 2:1): 0 net. X behind seat 1 never decides: the
    # timer closes the window (INS-1), X has no insurance and loses 10.00 with the seat.
    cards = stack(V, [["10H", "9C"]], up="AS", hole="KD")
    kit = table_round({1: "A"}, cards, {"A": 100, "X": 100})
    kit.bet("A", 10, 1)
    behind(kit, "X", 1, 10)
    kit.close()
    new = kit.decide("A", "insurance")
    assert "InsuranceWindowCompleted" not in kinds(new)  # the window waits for X
    assert kit.phase == "insurance"
    new = kit.close_window()
    assert kinds(new)[:3] == ["InsuranceWindowClosed", "DealerChecked", "HoleCardRevealed"]
    assert {w: (p["result"], p["payout"]) for w, p in settled(new).items()} == {
        "1:main": ("lose", "0.00"),
        "1:behind:X": ("lose", "0.00"),
        "1:insurance": ("win", "15.00"),
    }
    assert kit.nets() == {"A": 0, "X": -10}
    assert_reexecutes(kit)


# ------------------------------------------------------------------------------------ DLX-7
@pytest.mark.parametrize(
    ("draw", "dealer_draw", "nets"),
    [
        # A 5,6 doubles, draws 9 = 20; dealer 9,7 draws 2 = 18: every stake wins 1:1.
        ("9D", "2D", {"A": 20, "X": 10, "Y": 20, "Z": 10, "W": 20}),
        # A draws 5 = 16; dealer 18: every stake loses.
        ("5D", "2D", {"A": -20, "X": -10, "Y": -20, "Z": -10, "W": -20}),
    ],
)
def test_dlx_7_follow_double_default_no_yes_and_the_insufficient_balance_fallback(
    draw, dealer_draw, nets
):
    cards = stack(V, [["5H", "6C"]], up="9C", hole="7D", draws=[draw], dealer_draws=[dealer_draw])
    funds = {"A": 100, "X": 100, "Y": 100, "Z": 15, "W": 20}
    kit = table_round({1: "A"}, cards, funds)
    kit.bet("A", 10, 1)
    behind(kit, "X", 1, 10)  # follow double: default No
    behind(kit, "Y", 1, 10, double=True)
    behind(kit, "Z", 1, 10, double=True)  # 5.00 left: too little to follow
    behind(kit, "W", 1, 10, double=True)  # 10.00 left: exactly enough
    assert [p["follow_double"] for p in of(kit.events(), "BetPlaced")] == [
        False, False, True, True, True
    ]  # fmt: skip
    kit.close()
    new = kit.decide("A", "double")
    made = one(new, "DecisionMade")
    assert (made["amount"], made["balance_seen"]) == ("10.00", "90.00")
    assert made["others_balance"] == {"X": "90.00", "Y": "90.00", "Z": "5.00", "W": "10.00"}
    followed = {p["player"]: p for p in of(new, "BehindFollowed")}
    assert followed["X"] == {
        "wager_id": "1:behind:X",
        "player": "X",
        "hand": "1",
        "seat_action": "double",
        "followed": False,
        "reason": "follow double is No",
        "balance_seen": "90.00",
        "needed": "10.00",
        "rule": "DLX-7",
    }
    assert {p: (f["followed"], f["reason"], f["balance_seen"]) for p, f in followed.items()} == {
        "X": (False, "follow double is No", "90.00"),
        "Y": (True, "follow double is Yes", "90.00"),
        "Z": (False, "too little balance", "5.00"),
        "W": (True, "follow double is Yes", "10.00"),
    }
    added = {p["wager_id"]: p for p in of(new, "WagerAdded")}
    assert added["1:behind_double:Y"] == {
        "wager_id": "1:behind_double:Y",
        "player": "Y",
        "kind": "behind_double",
        "hand": "1",
        "stake": "10.00",
        "balance_seen": "90.00",
        "rule": "DLX-7",
    }
    assert set(added) == {"1:double", "1:behind_double:Y", "1:behind_double:W"}
    assert cards_to(new, "1") == [draw]  # the one card of the double, for every bet behind
    assert stood(new)["1"][0] == "double"
    s = settled(new)
    result = "win" if nets["A"] > 0 else "lose"
    payout = "20.00" if result == "win" else "0.00"
    for wager in ("1:behind:X", "1:behind:Y", "1:behind_double:Y", "1:behind:Z"):
        assert (s[wager]["hand"], s[wager]["stake"], s[wager]["result"], s[wager]["payout"]) == (
            "1", "10.00", result, payout
        )  # fmt: skip
    assert "1:behind_double:X" not in s
    assert "1:behind_double:Z" not in s
    assert kit.nets() == nets
    assert_reexecutes(kit)


def test_dlx_7_a_bet_behind_that_followed_a_split_follows_a_double_on_the_second_hand():
    # A 8,8 splits (dealer 7,10 = 17); 1.1 draws 10 = 18, stands, wins; 1.2 draws 3 = 11,
    # doubles, draws 9 = 20, wins. Y (follow split Yes, follow double Yes, 10.00) follows 1.1
    # (+10), 1.2 (+10) and the double on 1.2 (+10): +30.
    cards = stack(V, [["8H", "8C"]], up="7C", hole="10D", draws=["10S", "3D", "9H"])
    kit = table_round({1: "A"}, cards, {"A": 100, "Y": 100})
    kit.bet("A", 10, 1)
    behind(kit, "Y", 1, 10, double=True, split=True)
    kit.close()
    kit.decide("A", "split")
    kit.decide("A", "stand")
    new = kit.decide("A", "double")
    followed = one(new, "BehindFollowed")
    assert (followed["wager_id"], followed["hand"], followed["followed"]) == (
        "1.2:behind_split:Y", "1.2", True
    )  # fmt: skip
    assert settled(new)["1.2:behind_double:Y"]["payout"] == "20.00"
    assert kit.nets() == {"A": 30, "Y": 30}


# ------------------------------------------------------------------------------------ DLX-8
@pytest.mark.parametrize(
    ("draws", "nets"),
    [
        # A 8,8 splits against 7,10 = 17: 1.1 draws 10 = 18 wins, 1.2 draws 8 = 16 loses.
        # X (No) and Z (too little) follow only 1.1: +10. Y and W follow both: 0. A: 0.
        (["10D", "8D"], {"A": 0, "X": 10, "Y": 0, "Z": 10, "W": 0}),
        # 1.1 draws 8 = 16 loses, 1.2 draws 10 = 18 wins: X and Z lose with 1.1 although
        # 1.2 wins.
        (["8D", "10D"], {"A": 0, "X": -10, "Y": 0, "Z": -10, "W": 0}),
    ],
)
def test_dlx_8_follow_split_default_no_yes_and_the_insufficient_balance_fallback(draws, nets):
    cards = stack(V, [["8H", "8C"]], up="7C", hole="10C", draws=draws)
    funds = {"A": 100, "X": 100, "Y": 100, "Z": 12, "W": 20}
    kit = table_round({1: "A"}, cards, funds)
    kit.bet("A", 10, 1)
    behind(kit, "X", 1, 10)  # follow split: default No
    behind(kit, "Y", 1, 10, split=True)
    behind(kit, "Z", 1, 10, split=True)  # 2.00 left
    behind(kit, "W", 1, 10, split=True)  # 10.00 left: exactly enough
    kit.close()
    new = kit.decide("A", "split")
    made = one(new, "DecisionMade")
    assert made["others_balance"] == {"X": "90.00", "Y": "90.00", "Z": "2.00", "W": "10.00"}
    followed = {p["player"]: p for p in of(new, "BehindFollowed")}
    assert followed["Z"] == {
        "wager_id": "1:behind:Z",
        "player": "Z",
        "hand": "1.1",
        "seat_action": "split",
        "followed": False,
        "reason": "too little balance",
        "balance_seen": "2.00",
        "needed": "10.00",
        "rule": "DLX-8",
    }
    assert {p: (f["followed"], f["reason"]) for p, f in followed.items()} == {
        "X": (False, "follow split is No"),
        "Y": (True, "follow split is Yes"),
        "Z": (False, "too little balance"),
        "W": (True, "follow split is Yes"),
    }
    added = {p["wager_id"]: p for p in of(new, "WagerAdded")}
    assert added["1.2:behind_split:Y"] == {
        "wager_id": "1.2:behind_split:Y",
        "player": "Y",
        "kind": "behind_split",
        "hand": "1.2",
        "stake": "10.00",
        "balance_seen": "90.00",
        "rule": "DLX-8",
    }
    assert set(added) == {"1.2:split", "1.2:behind_split:Y", "1.2:behind_split:W"}
    kit.decide("A", "stand")
    new = kit.decide("A", "stand")
    s = settled(new)
    first = "win" if nets["X"] > 0 else "lose"
    second = "lose" if first == "win" else "win"
    for player in "XYZW":
        assert (s[f"1:behind:{player}"]["hand"], s[f"1:behind:{player}"]["result"]) == (
            "1.1", first
        )  # fmt: skip
    for player in "YW":
        w = s[f"1.2:behind_split:{player}"]
        assert (w["hand"], w["stake"], w["result"]) == ("1.2", "10.00", second)
    assert "1.2:behind_split:X" not in s
    assert "1.2:behind_split:Z" not in s
    assert kit.nets() == nets
    assert_reexecutes(kit)


def test_dlx_8_bet_behind_follows_a_split_and_then_a_double_on_the_first_hand():
    # A 8,8 splits (dealer 7,10 = 17); 1.1 draws 3 = 11, doubles, draws 10 = 21: wins;
    # 1.2 draws 10 = 18: wins. X (split Yes, double Yes) follows 1.1, its double and 1.2:
    # +30. Y (split No, double No) follows 1.1 only, without the double: +10. A +30.
    cards = stack(V, [["8H", "8C"]], up="7C", hole="10D", draws=["3S", "10C", "10H"])
    kit = table_round({1: "A"}, cards, {"A": 100, "X": 100, "Y": 100})
    kit.bet("A", 10, 1)
    behind(kit, "X", 1, 10, double=True, split=True)
    behind(kit, "Y", 1, 10)
    kit.close()
    kit.decide("A", "split")
    new = kit.decide("A", "double")
    followed = {p["player"]: p for p in of(new, "BehindFollowed")}
    facts = {
        p: (f["hand"], f["seat_action"], f["followed"], f["rule"]) for p, f in followed.items()
    }
    assert facts == {
        "X": ("1.1", "double", True, "DLX-7"),
        "Y": ("1.1", "double", False, "DLX-7"),
    }  # fmt: skip
    assert followed["X"]["balance_seen"] == "80.00"  # 100 - 10 behind - 10 split follow
    new = kit.decide("A", "stand")
    s = settled(new)
    assert {w: (p["hand"], p["result"], p["payout"]) for w, p in s.items() if ":" in w} == {
        "1:main": ("1.1", "win", "20.00"),
        "1:behind:X": ("1.1", "win", "20.00"),
        "1:behind:Y": ("1.1", "win", "20.00"),
        "1.2:split": ("1.2", "win", "20.00"),
        "1.2:behind_split:X": ("1.2", "win", "20.00"),
        "1.1:double": ("1.1", "win", "20.00"),
        "1.1:behind_double:X": ("1.1", "win", "20.00"),
    }
    assert kit.nets() == {"A": 30, "X": 30, "Y": 10}
    assert_reexecutes(kit)


# --------------------------------------------------------------------------------- DLX-PAIR
def test_dlx_pair_on_any_occupied_seat_by_any_player_only_the_highest_pattern_pays():
    # Dealer Q♠ (first card), 7♣ = 17. Seats: 1 A 7♥7♦ coloured; 2 A Q♠Q♠ suited trips with
    # the dealer's Q♠; 3 B 9♥9♣ mixed; 4 C 4♣4♣ perfect; 5 D K♥Q♥ no pair.
    # Pair bets: X 2.50 on 1 (10:1) +25.00; T (test account) 2.50 on 2 (50:1) +125.00;
    # A 1.00 on own seat 2 (50:1) +50.00; B 1.00 on A's seat 1 (10:1) +10.00; C 0.50 on 3
    # (5:1) +2.50; D 1.00 on 4 (30:1) +30.00 and 1.00 on own seat 5 -1.00.
    # Seat bets 10.00 (A mirrored): seat 1 14 loses, 2 20 wins, 3 18 wins, 4 8 loses, 5 20 wins.
    cards = stack(
        V,
        [["7H", "7D"], ["QS", "QS"], ["9H", "9C"], ["4C", "4C"], ["KH", "QH"]],
        up="QS",
        hole="7C",
    )
    funds = {"A": 100, "B": 100, "C": 100, "D": 100, "X": 100, "T": 100}
    kit = table_round(
        {1: "A", 2: "A", 3: "B", 4: "C", 5: "D"}, cards, funds, accounts={"T": "test"}
    )
    kit.bet("A", 10, 1)
    for seat, player in ((3, "B"), (4, "C"), (5, "D")):
        kit.bet(player, 10, seat)
    pair(kit, "X", 1, "2.50")
    pair(kit, "T", 2, "2.50")
    pair(kit, "A", 2, 1)
    pair(kit, "B", 1, 1)
    pair(kit, "C", 3, "0.50")
    pair(kit, "D", 4, 1)
    pair(kit, "D", 5, 1)
    err = kit.refused(IllegalAction, lambda: pair(kit, "X", 6, 1))  # an empty seat
    assert "occupied" in err.message
    kit.refused(BetLimit, lambda: pair(kit, "X", 3, "0.49"))
    kit.close()
    for player in ("A", "A", "B", "C", "D"):
        new = kit.decide(player, "stand")
    s = settled(new)
    pairs = {
        w: (p["pattern"], p["ratio"], p["payout"], p["net"]) for w, p in s.items() if ":pair:" in w
    }
    assert pairs == {
        "1:pair:X": ("coloured_pair", "10:1", "27.50", "25.00"),
        "2:pair:T": ("suited_trips", "50:1", "127.50", "125.00"),
        "2:pair:A": ("suited_trips", "50:1", "51.00", "50.00"),
        "1:pair:B": ("coloured_pair", "10:1", "11.00", "10.00"),
        "3:pair:C": ("mixed_pair", "5:1", "3.00", "2.50"),
        "4:pair:D": ("perfect_pair", "30:1", "31.00", "30.00"),
        "5:pair:D": (None, None, "0.00", "-1.00"),
    }  # fmt: skip
    for w in pairs:
        assert (s[w]["kind"], s[w]["rule"], s[w]["paytable"]) == ("pair", "DLX-PAIR", PAIR_TABLE)
    assert kit.nets() == {"A": 50, "B": 20, "C": D("-7.50"), "D": 39, "X": 25, "T": 125}
    assert_reexecutes(kit)


@pytest.mark.parametrize(
    ("up", "hole", "pattern", "payout"),
    [
        ("QS", "7C", "suited_trips", "51.00"),  # rank and suit of the dealer's first card
        ("QH", "7C", "perfect_pair", "31.00"),  # same rank, another suit: perfect pair only
        ("KS", "7C", "perfect_pair", "31.00"),  # same suit, another rank
        ("QS", "AC", "suited_trips", "51.00"),  # paid even though the dealer has BJ (END-1)
    ],
)
def test_dlx_pair_suited_trips_needs_the_rank_and_suit_of_the_dealers_first_card(
    up, hole, pattern, payout
):
    kit = table_round({4: "A"}, stack(V, [["QS", "QS"]], up=up, hole=hole), {"A": 100, "X": 100})
    kit.bet("A", 10, 4)
    pair(kit, "X", 4, 1)
    kit.close()
    if kit.phase != "settled":
        kit.decide("A", "stand")
    p = settled(kit.events())["4:pair:X"]
    assert (p["result"], p["pattern"], p["payout"], p["rule"]) == (
        "win",
        pattern,
        payout,
        "DLX-PAIR",
    )
    assert kit.net("X") == D(payout) - 1


# ------------------------------------------------------------------------------------ PRE-1
def test_pre_1_a_choice_made_before_the_turn_is_played_when_the_turn_starts_last_one_counts():
    # Seat 1 A 10,6; seat 2 B 5,6 = 11; dealer 9,7 = 16. B chooses stand, then changes to
    # double; X behind seat 2 follows doubles. A stands: B's turn starts and the double is
    # played at once by the system (PRE-1): B draws 9 = 20. The dealer draws 10: 26, bust.
    # A +10, B +20 (doubled), X +20 (followed the double).
    cards = stack(
        V, [["10H", "6C"], ["5S", "6D"]], up="9C", hole="7D", draws=["9H"], dealer_draws=["10H"]
    )
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100, "X": 100})
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    behind(kit, "X", 2, 10, double=True)
    kit.close()
    first = preselect(kit, "B", "stand")
    second = preselect(kit, "B", "double")
    assert kinds(first) == kinds(second) == ["DecisionPreselected"]
    assert [e["payload"]["action"] for e in (*first, *second)] == ["stand", "double"]
    assert second[0]["payload"] == {
        "player": "B",
        "hand": "2",
        "action": "double",
        "options": ["hit", "stand", "double", "surrender"],
        "actor": {"kind": "player", "id": "B"},
        "request_id": None,
        "client_time": None,
    }
    assert kit.options("2") == []  # not B's turn yet
    new = kit.decide("A", "stand")
    made = of(new, "DecisionMade")
    assert [(p["player"], p["hand"], p["action"], p["actor"]) for p in made] == [
        ("A", "1", "stand", {"kind": "player", "id": "A"}),
        ("B", "2", "double", PRE_1),
    ]
    assert (made[1]["amount"], made[1]["balance_seen"], made[1]["others_balance"]) == (
        "10.00", "90.00", {"X": "90.00"}
    )  # fmt: skip
    assert one(new, "BehindFollowed")["followed"] is True
    assert "stand" not in [p["action"] for p in made[1:]]  # the first choice was replaced
    assert cards_to(new, "2") == ["9H"]
    s = settled(new)
    assert brief(s["2:double"])[3:] == ("win", "20.00", "10.00", "OUT-2")
    assert brief(s["2:behind_double:X"])[3:] == ("win", "20.00", "10.00", "OUT-2")
    assert kit.nets() == {"A": 10, "B": 20, "X": 20}
    assert_reexecutes(kit)


def test_pre_1_a_two_seat_player_chooses_for_the_later_seat_and_choices_chain():
    # A on seats 1 and 3, B on seat 2; dealer 9,7 = 16. A chooses stand on seat 3, B hit on
    # seat 2 (10,2), while seat 1 is due. A stands seat 1: B's hit is played (draws 2: 14)
    # and B is asked again; B stands: A's stand on seat 3 is played; the dealer draws 10 and
    # busts. A +10 +10, B +10.
    cards = stack(
        V,
        [["10H", "6C"], ["10S", "2D"], ["10D", "8C"]],
        up="9C",
        hole="7D",
        draws=["2H"],
        dealer_draws=["10C"],
    )
    kit = table_round({1: "A", 3: "A", 2: "B"}, cards, {"A": 100, "B": 100})
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    kit.close()
    err = kit.refused(OutOfTurn, lambda: preselect(kit, "A", "hit", hand="1"))
    assert err.rule == "PRE-1"
    preselect(kit, "A", "stand", hand="3")
    preselect(kit, "B", "hit")
    new = kit.decide("A", "stand", hand="1")
    assert [(p["hand"], p["action"], p["actor"]["id"]) for p in of(new, "DecisionMade")] == [
        ("1", "stand", "A"),
        ("2", "hit", "PRE-1"),
    ]
    assert cards_to(new, "2") == ["2H"]
    assert kit.options("2") == ["hit", "stand"]  # 10,2,2 = 14: B's own decision now
    new = kit.decide("B", "stand")
    assert [(p["hand"], p["action"], p["actor"]) for p in of(new, "DecisionMade")] == [
        ("2", "stand", {"kind": "player", "id": "B"}),
        ("3", "stand", PRE_1),
    ]
    assert kit.nets() == {"A": 20, "B": 10}
    assert_reexecutes(kit)


def test_pre_1_refusals_record_nothing():
    cards = stack(V, [["10H", "6C"], ["10S", "5D"]], up="9C", hole="7D")
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 100, "X": 100})
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    behind(kit, "X", 2, 10)
    kit.refused(WrongOrder, lambda: preselect(kit, "B", "hit"))  # still betting
    kit.close()
    err = kit.refused(OutOfTurn, lambda: preselect(kit, "A", "stand"))  # A's turn: decide
    assert err.rule == "PRE-1"
    err = kit.refused(IllegalAction, lambda: preselect(kit, "B", "split"))  # not a pair
    assert err.rule == "PRE-1"
    kit.refused(UnknownPlayer, lambda: preselect(kit, "X", "stand"))  # a bet behind has no hand
    kit.refused(IllegalAction, lambda: preselect(kit, "A", "stand", hand="2"))  # B's hand
    kit.refused(OutOfTurn, lambda: kit.decide("B", "stand"))  # decide is for the due hand
    assert "DecisionPreselected" not in kinds(kit.events())


def test_pre_1_a_chosen_double_that_finds_too_little_balance_becomes_a_hit_funds_1():
    # B bets 10.00 of 15.00, chooses double on 5,6; X behind seat 2 follows doubles. When
    # B's turn starts B has 5.00: the double becomes a hit (FUNDS-1), 5,6 + 2 = 13, no bet
    # behind follows (nothing was doubled). B stands; dealer 9,7 draws 10: bust.
    # A +10, B +10, X +10 (stake unchanged).
    cards = stack(
        V, [["10H", "6C"], ["5S", "6D"]], up="9C", hole="7D", draws=["2H"], dealer_draws=["10C"]
    )
    kit = table_round({1: "A", 2: "B"}, cards, {"A": 100, "B": 15, "X": 100})
    kit.bet("A", 10, 1)
    kit.bet("B", 10, 2)
    behind(kit, "X", 2, 10, double=True)
    kit.close()
    preselect(kit, "B", "double")
    new = kit.decide("A", "stand")
    made = of(new, "DecisionMade")[1]
    assert (made["player"], made["action"], made["actor"], made["balance_seen"]) == (
        "B", "double", PRE_1, "5.00"
    )  # fmt: skip
    assert one(new, "DecisionConverted") == {
        "hand": "2",
        "requested": "double",
        "applied": "hit",
        "balance_seen": "5.00",
        "needed": "10.00",
        "rule": "FUNDS-1",
    }
    assert "BehindFollowed" not in kinds(new)
    assert "WagerAdded" not in kinds(new)
    assert cards_to(new, "2") == ["2H"]
    assert kit.options("2") == ["hit", "stand"]
    new = kit.decide("B", "stand")
    assert {w: p["payout"] for w, p in settled(new).items()} == {
        "1:main": "20.00",
        "2:main": "20.00",
        "2:behind:X": "20.00",
    }
    assert kit.nets() == {"A": 10, "B": 10, "X": 10}
    assert_reexecutes(kit)


# ------------------------------------------------------------------- a full seven-seat round
def test_full_seven_seat_round_settles_to_the_cent_and_conserves_money():
    """Seven seats: A on 1 and 3 (seat bet 10.00 mirrored), B 2, C 4, D on 5 and 6 (20.00
    split 10.00 + 10.00 for want of balance), E 7. Bets behind: X, Y, E on 1; T (a test
    account) on 2; W on 3; Z on 4. Pair bets by X, Y, C, D. Dealer A♣ up, 5♦ hole: insurance
    window (no BJ), then A,5 + 3 = soft 19.

    Seat 1 A 8,8 splits: 1.1 8+3 = 11 doubles, +10 = 21 wins; 1.2 8+10 = 18 loses.
    Seat 2 B 10,Q = 20 wins. Seat 3 A 5,6 doubles, +7 = 18 loses. Seat 4 C A,K = BJ (3:2).
    Seat 5 D 9,9 stands (chosen before the turn, PRE-1) 18 loses. Seat 6 D 10,6 hits 9: bust.
    Seat 7 E 7,7 hits 5 = 19 pushes.

    A: 1.1 main +10, 1.1 double +10, 1.2 split -10, seat 3 main -10 and double -10 = -10.00
    B: +20, insurance 10.00 lost = +10.00
    C: BJ 15.00 x 3:2 = +22.50, insurance -7.50, Pair 3.00 on 1 (8♥8♠ mixed 5:1) +15 = +30.00
    D: -10 -10, Pair 1.00 on own seat 6 lost = -21.00
    E: 7 pushes; behind 1 (6.00, split Yes with 4.00 left: follows 1.1 only, no double) +6
    X: behind 1 (10.00; split Yes, double Yes) 1.1 +10, its double +10, 1.2 -10; insurance
       5.00 lost; Pair 2.50 on 5 (9♠9♠ perfect 30:1) +75 = +80.00
    Y: behind 1 (5.00, No/No) follows 1.1 undoubled +5; Pair 1.00 on 7 (7♣7♦ mixed) +5 = +10
    Z: behind 4 (12.00) on the BJ: +18.00 (C insured, Z did not)
    T: behind 2 (9.00) +9, insurance 4.50 lost (B insured too) = +4.50
    W: behind 3 (8.00, double Yes) -8 -8 = -16.00
    Players +111.50 in all: the house result is -111.50.
    """
    cards = stack(
        V,
        [
            ["8H", "8S"],
            ["10D", "QC"],
            ["5C", "6D"],
            ["AH", "KH"],
            ["9S", "9S"],
            ["10S", "6H"],
            ["7C", "7D"],
        ],
        up="AC",
        hole="5D",
        draws=["3C", "10C", "10H", "7S", "9H", "5H"],
        dealer_draws=["3D"],
    )
    deposits = {
        "A": D(100), "B": D(200), "C": D(100), "D": D(25), "E": D(20),
        "X": D(100), "Y": D(50), "Z": D(50), "T": D(30), "W": D(40),
    }  # fmt: skip
    seating = {1: "A", 3: "A", 2: "B", 4: "C", 5: "D", 6: "D", 7: "E"}
    kit = table_round(seating, cards, deposits, accounts={"T": "test"})
    assert kit.app.round(kit.rid).seats == {str(s): p for s, p in sorted(seating.items())}
    # ---- bets
    kit.bet("A", 10, 1)
    kit.bet("B", 20, 2)
    kit.bet("C", 15, 4)
    new = kit.bet("D", 20, 5)
    assert one(new, "SeatBetMirrored")["mode"] == "split"
    assert one(new, "BetPlaced")["stake"] == "10.00"
    kit.bet("E", 10, 7)
    behind(kit, "X", 1, 10, double=True, split=True)
    behind(kit, "Y", 1, 5)
    behind(kit, "E", 1, 6, split=True)
    behind(kit, "T", 2, 9)
    behind(kit, "W", 3, 8, double=True)
    behind(kit, "Z", 4, 12)
    pair(kit, "X", 5, "2.50")
    pair(kit, "Y", 7, 1)
    pair(kit, "C", 1, 3)
    pair(kit, "D", 6, 1)
    new = kit.close()
    assert one(new, "InsuranceWindowOpened")["hands"] == ["1", "2", "3", "4", "5", "6", "7"]
    # ---- insurance window: seats and bets behind decide independently
    kit.decide("A", "no_insurance")  # seat 1
    kit.decide("A", "no_insurance")  # seat 3
    kit.decide("B", "insurance")
    kit.decide("C", "insurance")  # insurance with a BJ
    kit.decide("D", "no_insurance", hand="5")
    kit.decide("D", "no_insurance", hand="6")
    kit.decide("E", "no_insurance", hand="7")  # E's own seat ...
    kit.decide("E", "no_insurance", hand="1")  # ... and E's bet behind seat 1
    kit.decide("X", "insurance")
    kit.decide("Y", "no_insurance")
    kit.decide("T", "insurance")
    kit.decide("W", "no_insurance")
    new = kit.decide("Z", "no_insurance")
    assert kinds(new)[1:4] == ["InsuranceWindowCompleted", "DealerChecked", "PlayStarted"]
    assert one(new, "DealerChecked")["blackjack"] is False
    assert stood(new) == {"4": ("blackjack", 21, "HAND-1")}
    # ---- play
    preselect(kit, "D", "stand", hand="5")
    new = kit.decide("A", "split")
    followed = {
        p["player"]: (p["followed"], p["reason"], p["balance_seen"])
        for p in of(new, "BehindFollowed")
    }
    assert followed == {
        "X": (True, "follow split is Yes", "82.50"),
        "Y": (False, "follow split is No", "44.00"),
        "E": (False, "too little balance", "4.00"),
    }  # fmt: skip
    new = kit.decide("A", "double")  # 1.1: 8,3
    followed = {
        p["player"]: (p["hand"], p["followed"], p["reason"]) for p in of(new, "BehindFollowed")
    }
    assert followed == {
        "X": ("1.1", True, "follow double is Yes"),
        "Y": ("1.1", False, "follow double is No"),
        "E": ("1.1", False, "follow double is No"),
    }  # fmt: skip
    kit.decide("A", "stand")  # 1.2: 8,10
    kit.decide("B", "stand")
    new = kit.decide("A", "double")  # seat 3: 5,6; D's stand on seat 5 follows (PRE-1)
    assert one(new, "BehindFollowed")["player"] == "W"
    assert [(p["hand"], p["actor"]["id"]) for p in of(new, "DecisionMade")] == [
        ("3", "A"),
        ("5", "PRE-1"),
    ]
    kit.decide("D", "hit")  # seat 6: 10,6 + 9 busts
    kit.decide("E", "hit")  # seat 7: 7,7 + 5 = 19
    new = kit.decide("E", "stand")
    assert of(new, "RoundSettled")[0]["dealer"] == ["AC", "5D", "3D"]
    assert of(new, "RoundSettled")[0]["dealer_total"] == 19
    kit.assert_all_cards_used()
    # ---- settlement, wager by wager
    s = settled(kit.events())
    got = {w: (p["hand"], p["stake"], p["result"], p["payout"]) for w, p in s.items()}
    assert got == {
        "1:main": ("1.1", "10.00", "win", "20.00"),
        "3:main": ("3", "10.00", "lose", "0.00"),
        "2:main": ("2", "20.00", "win", "40.00"),
        "4:main": ("4", "15.00", "blackjack", "37.50"),
        "5:main": ("5", "10.00", "lose", "0.00"),
        "6:main": ("6", "10.00", "lose", "0.00"),
        "7:main": ("7", "10.00", "push", "10.00"),
        "1:behind:X": ("1.1", "10.00", "win", "20.00"),
        "1:behind:Y": ("1.1", "5.00", "win", "10.00"),
        "1:behind:E": ("1.1", "6.00", "win", "12.00"),
        "2:behind:T": ("2", "9.00", "win", "18.00"),
        "3:behind:W": ("3", "8.00", "lose", "0.00"),
        "4:behind:Z": ("4", "12.00", "blackjack", "30.00"),
        "5:pair:X": (None, "2.50", "win", "77.50"),
        "7:pair:Y": (None, "1.00", "win", "6.00"),
        "1:pair:C": (None, "3.00", "win", "18.00"),
        "6:pair:D": (None, "1.00", "lose", "0.00"),
        "2:insurance": ("2", "10.00", "lose", "0.00"),
        "4:insurance": ("4", "7.50", "lose", "0.00"),
        "1:insurance:X": ("1.1", "5.00", "lose", "0.00"),  # the split moved it to 1.1
        "2:insurance:T": ("2", "4.50", "lose", "0.00"),
        "1.2:split": ("1.2", "10.00", "lose", "0.00"),
        "1.2:behind_split:X": ("1.2", "10.00", "lose", "0.00"),
        "1.1:double": ("1.1", "10.00", "win", "20.00"),
        "1.1:behind_double:X": ("1.1", "10.00", "win", "20.00"),
        "3:double": ("3", "10.00", "lose", "0.00"),
        "3:behind_double:W": ("3", "8.00", "lose", "0.00"),
    }
    assert len(of(kit.events(), "WagerSettled")) == len(s)  # each wager settled once
    nets = {
        "A": D(-10), "B": D(10), "C": D(30), "D": D(-21), "E": D(6),
        "X": D(80), "Y": D(10), "Z": D(18), "T": D("4.50"), "W": D(-16),
    }  # fmt: skip
    assert kit.nets() == nets
    house = house_result(kit.events())
    assert house == D("-111.50")
    assert sum(kit.balances().values()) + house == sum(deposits.values())
    assert_reexecutes(kit)

"""Property test over random deluxe rounds on a seated table, through ``RoundAudit`` (in-memory).

Each example opens a non-production deluxe table, funds five real players and one test account
with balances small enough to hit FUNDS-1/2, DLX-2's equal split and DLX-7/8's fallbacks,
seats the real players at random (two-seat players included; the test account is refused,
DLX-1), and plays one or two rounds on stacked 8-deck test shoes: random seat bets (or none:
DLX-3), random bets behind with random follow-double/follow-split choices, random Pair bets,
random insurance for seats and bets behind (DLX-6), random decisions from the open options,
random PRE-1 choices, timeouts, disconnections, pauses and the occasional cancellation.

After every round:

* it ended settled, or cancelled when the test cancelled it;
* money is conserved: the sum of the wallets plus the house result equals the deposits, and
  every wallet equals its deposit minus its stakes plus its payouts; every wager is settled
  exactly once; a cancelled round leaves every wallet where the round found it (ERR-1);
* the round re-executes clean (``replays.reexecute.verify_events``);
* DLX-2, DLX-3, DLX-7/8, FUNDS-1/2 facts recorded in the events are consistent with the
  balances they record;
* the table's seats follow DLX-3 (removal at the end of the countdown) and DLX-4 (removal at
  the start of the next round below the minimum seat bet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from domain.application import RoundAudit, event_json
from domain.cards import RANKS, decks
from domain.errors import AccountTypeRefused, DomainError, InsufficientFunds
from domain.game import play
from domain.rules import get_rules
from domain.table import Table
from replays.reexecute import verify_events

V = "deluxe"
TABLE = "prop-dlx"
SUP = "sup"
RULES = get_rules(V)
#: The table is a test table (stacked shoes): its players hold play-money accounts...
PLAYERS = ["P1", "P2", "P3", "P4", "P5"]
#: ...and a real account there is refused a seat and every bet (play money only).
OUTSIDER = "R1"
PREFERENCE = ["split", "double", "surrender", "hit", "stand"]
AMOUNTS = ["1.00", "2.00", "5.00", "7.25", "10.00", "25.00", "9.99"]
FRONT = ["8", "A", "5", "6", "10", "K", "9", "2", "7"]
Json = dict[str, Any]


def _kind(e: Json) -> str:
    return str(e["type"]).rsplit(".", 1)[-1]


def _of(events: list[Json], name: str) -> list[Json]:
    return [e["payload"] for e in events if _kind(e) == name]


def _cents(value: int) -> Decimal:
    return Decimal(value) / 100


class Game:
    """One table, one or two random rounds, and the checks."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.app = RoundAudit()
        self.app.open_table(TABLE, production=False)
        self.deposits: dict[str, Decimal] = {}
        self.house = Decimal(0)
        for p in [*PLAYERS, OUTSIDER]:
            small = data.draw(st.integers(0, 2), label=f"{p} poor?") > 0
            cents = data.draw(st.integers(100, 4000), label=f"{p} cents") if small else 100_000
            self.app.open_wallet(p, account_type="real" if p == OUTSIDER else "fun")
            self.app.deposit(p, str(_cents(cents)), transaction_id=f"dep-{p}")
            self.deposits[p] = _cents(cents)

    # ----------------------------------------------------------------- plumbing
    def balances(self) -> dict[str, Decimal]:
        return {p: self.app.balance(p) for p in self.deposits}

    def table_events(self) -> list[Json]:
        return [event_json(e) for e in self.app.events.get(Table.create_id(TABLE))]

    def round_events(self) -> list[Json]:
        return self.app.round_events(self.rid)

    def attempt(
        self, command: Callable[[], object], may_refuse: tuple[type[DomainError], ...] = ()
    ) -> bool:
        """Run a command; a refusal must be one allowed here and must record nothing."""
        if not may_refuse:
            command()
            return True
        before = self.round_events()
        money = self.balances()
        try:
            command()
        except may_refuse:
            assert self.round_events() == before, "a refusal recorded round events"
            assert self.balances() == money, "a refusal moved money"
            return False
        return True

    def draw(self, strategy: st.SearchStrategy[Any], label: str) -> Any:
        return self.data.draw(strategy, label=label)

    # ------------------------------------------------------------------- seating
    def seat_players(self) -> None:
        free = list(range(1, 8))
        for p in PLAYERS:
            for _ in range((self.draw(st.integers(0, 2), f"{p} seats") + 1) % 3):
                if not free:
                    break
                seat = self.draw(st.sampled_from(free), "seat")
                self.app.sit(TABLE, player=p, seat=seat)
                free.remove(seat)
        if free:
            before = self.table_events()
            with pytest.raises(AccountTypeRefused):
                self.app.sit(TABLE, player=OUTSIDER, seat=free[0])
            assert self.table_events() == before

    # --------------------------------------------------------------------- round
    def start(self, number: int) -> None:
        """Plan the seat bets, stack the shoe for that many hands and start round ``number``."""
        seats = dict(self.app.table(TABLE).seats)
        self.plan: list[tuple[str, int, str]] = []  # (player, seat, amount)
        hands = 0  # how many hands the deal will most likely have
        for p in sorted(set(seats.values())):
            if self.draw(st.integers(0, 5), f"{p} bets?") == 5:
                continue  # no seat bet: DLX-3 (or DLX-4's grace) at the end of the countdown
            mine = sorted(s for s, o in seats.items() if o == p)
            balance = self.app.balance(p)
            affordable = [a for a in AMOUNTS if Decimal(a) <= balance] or AMOUNTS[:1]
            for attempt in range(self.draw(st.integers(1, 2), "seat bet attempts")):
                seat = self.draw(st.sampled_from(mine), "bet seat")
                amount = self.draw(st.sampled_from(affordable), "seat bet")
                self.plan.append((p, seat, amount))
                if attempt == 0 and (
                    len(mine) == 1
                    or 2 * Decimal(amount) <= balance
                    or (Decimal(amount) / 2) % Decimal("0.01") == 0
                ):
                    hands += len(mine)  # DLX-2 mirrors or splits onto the other seat
        self.order = self.stack(hands)
        self.table_before = seats
        self.start_balances = self.balances()
        self.rid = self.app.start_round(
            table_id=TABLE,
            round_number=number,
            variant=V,
            production=False,
            test_order=self.order,
        )
        self.number = number
        self.cancelled_on_purpose = False
        self.preselections = 0

    def stack(self, hands: int) -> list[str]:
        """8 decks in random order, the front chosen so that pairs (perfect ones too), an ace
        or ten up, and small cards to double on are common."""
        rng = self.draw(st.randoms(use_true_random=False), "shuffle")
        deck = [c.code for c in decks(RULES.decks)]
        rng.shuffle(deck)

        def take(rank: str | None = None, code: str | None = None) -> str:
            card = next(c for c in deck if c == code or (code is None and c[:-1] == rank))
            deck.remove(card)
            return card

        firsts, seconds = [], []
        for _ in range(hands):
            first = take(self.draw(st.sampled_from(FRONT), "first rank"))
            shape = self.draw(st.integers(0, 3), "pair?")
            if shape == 0:
                second = take(code=first)  # perfect pair
            elif shape == 1:
                second = take(first[:-1])
            else:
                second = take(self.draw(st.sampled_from(RANKS), "second rank"))
            firsts.append(first)
            seconds.append(second)
        up = take(self.draw(st.sampled_from(["A", "10", "6", "9", "K", "5"]), "up"))
        hole = take(self.draw(st.sampled_from(RANKS), "hole"))
        small = [take(self.draw(st.sampled_from(["2", "3", "5", "10"]), "draw")) for _ in "xxxx"]
        return [*firsts, up, *seconds, hole, *small, *deck]

    def place_bets(self) -> None:
        for p, seat, amount in self.plan:
            self.attempt(
                lambda p=p, s=seat, a=amount: self.app.place_bet(
                    self.rid, player=p, amount=a, spot=s
                ),
                may_refuse=(DomainError,),
            )
        everyone = [*PLAYERS, OUTSIDER]
        planned = sorted({seat for _, seat, _ in self.plan}) or [1]
        seat_choice = st.one_of(st.sampled_from(planned), st.integers(1, 7))
        for _ in range(self.draw(st.integers(0, 8), "bets behind")):
            who = self.draw(st.sampled_from(everyone), "behind who")
            seat = self.draw(seat_choice, "behind seat")
            amount = self.draw(st.sampled_from(AMOUNTS), "behind stake")
            fd = self.draw(st.booleans(), "follow double")
            fs = self.draw(st.booleans(), "follow split")
            self.attempt(
                lambda w=who, s=seat, a=amount, fd=fd, fs=fs: self.app.place_behind(
                    self.rid, player=w, seat=s, amount=a, follow_double=fd, follow_split=fs
                ),
                may_refuse=(DomainError,),
            )
        for _ in range(self.draw(st.integers(0, 4), "pair bets")):
            who = self.draw(st.sampled_from(everyone), "pair who")
            seat = self.draw(seat_choice, "pair seat")
            amount = self.draw(st.sampled_from(["0.50", "1.00", "2.35"]), "pair stake")
            self.attempt(
                lambda w=who, s=seat, a=amount: self.app.place_bet(
                    self.rid, player=w, kind="pair", amount=a, spot=s
                ),
                may_refuse=(DomainError,),
            )

    def maybe_interrupt(self) -> bool:
        """Now and then pause and resume, or cancel. True when the round was cancelled.

        A round with a DLX-3 refund is not cancelled here: that cancellation is refused
        (see test_dlx_3_refunded_bets_stay_refunded_when_the_round_is_cancelled, xfail)."""
        roll = self.draw(st.integers(0, 50), "interrupt")
        if roll == 50:
            before = self.app.round_view(self.rid)
            self.attempt(lambda: self.app.pause(self.rid, reason="fault", supervisor=SUP))
            self.attempt(lambda: self.app.resume(self.rid, reason="ok", supervisor=SUP))
            assert self.app.round_view(self.rid) == before, "ERR-1: resume as it was"
        elif roll == 49:
            refunded = any(p["rule"] == "DLX-3" for p in _of(self.round_events(), "WagerSettled"))
            if not refunded:
                self.attempt(lambda: self.app.cancel(self.rid, reason="fault", supervisor=SUP))
                self.cancelled_on_purpose = True
                return True
        return False

    def play(self) -> None:
        if self.maybe_interrupt():
            return
        self.attempt(lambda: self.app.close_betting(self.rid))
        for _ in range(400):
            rnd = self.app.round(self.rid)
            view = rnd.view()
            if view["phase"] in ("settled", "cancelled"):
                return
            assert view["card_needed"] is None, "a test shoe round never waits for a card"
            if self.maybe_interrupt():
                return
            if view["phase"] == "insurance":
                self.insurance_step(view, rnd)
                continue
            assert view["phase"] == "playing", view["phase"]
            due = [h for h in view["hands"] if h["options"]]
            assert len(due) == 1, "exactly one deluxe hand is due at a time"
            if self.maybe_preselect(rnd):
                continue  # the view may have changed: look again
            h = due[0]
            extra = self.draw(st.integers(0, 15), "timeout/disconnect")
            if extra == 15:
                self.attempt(
                    lambda h=h: self.app.time_out(self.rid, player=h["player"], hand=h["hand"])
                )
            elif extra == 14:
                self.attempt(lambda h=h: self.app.disconnect(self.rid, player=h["player"]))
            else:
                action = self.choose(sorted(h["options"], key=PREFERENCE.index))
                # deluxe never refuses a double or split for funds (FUNDS-1/2)
                self.attempt(
                    lambda h=h, a=action: self.app.decide(
                        self.rid, player=h["player"], action=a, hand=h["hand"]
                    )
                )
        raise AssertionError("the round did not end in 400 steps")

    def insurance_step(self, view: Json, rnd: Any) -> None:
        seat_items = [
            (h["player"], h["hand"], a) for h in view["hands"] if h["options"] for a in h["options"]
        ]
        behind_items = [
            (w.player, w.hand, a)
            for w in rnd.wagers.values()
            if w.kind == "behind" and w.hand in rnd.window_hands and not w.window_decided
            for a in ("insurance", "no_insurance")
        ]
        items = seat_items + behind_items
        pick = self.draw(st.integers(0, len(items)), "window pick")
        if pick == len(items):
            self.attempt(lambda: self.app.close_insurance_window(self.rid))
            return
        player, hand, action = items[pick]
        ok = self.attempt(
            lambda: self.app.decide(self.rid, player=player, action=action, hand=hand),
            may_refuse=(InsufficientFunds,),
        )
        if not ok:  # INS-1: too little balance for insurance; decline instead
            assert action == "insurance"
            self.attempt(
                lambda: self.app.decide(self.rid, player=player, action="no_insurance", hand=hand)
            )

    def maybe_preselect(self, rnd: Any) -> bool:
        """PRE-1: choose (or change) a decision for a hand whose turn has not started."""
        due = {h.id for h in rnd.due_hands()}
        waiting = [
            h for h in rnd.hands.values() if not h.finished and h.id not in due and not h.actions
        ]
        if not waiting or self.preselections >= 6:
            return False
        if self.draw(st.integers(0, 3), "preselect?") != 3:
            return False
        self.preselections += 1
        h = self.draw(st.sampled_from(sorted(waiting, key=lambda h: h.id)), "preselect hand")
        options = play.play_options(h.facts(), rnd.dealer, rnd.rules)
        action = self.choose(sorted(options, key=PREFERENCE.index))
        ok = self.attempt(
            lambda: self.app.preselect(self.rid, player=h.player, action=action, hand=h.id),
            may_refuse=(DomainError,),
        )
        assert ok, "a PRE-1 choice from the open options was refused"
        return True

    def choose(self, options: list[str]) -> str:
        """One of ``options``; the first (the rarest decisions) more often."""
        if self.draw(st.integers(0, 2), "first option?") == 0:
            return options[0]
        return self.draw(st.sampled_from(options), "action")

    # -------------------------------------------------------------------- checks
    def check(self) -> None:
        events = self.round_events()
        view = self.app.round_view(self.rid)
        for name in (
            "SeatBetMirrored",
            "BehindFollowed",
            "DecisionConverted",
            "DecisionPreselected",
            "HandSplit",
            "HandDoubled",
            "InsuranceWindowOpened",
        ):
            if _of(events, name):
                event(name)
        if any(p["rule"] == "DLX-3" for p in _of(events, "WagerSettled")):
            event("DLX-3 refund")
        if any(p["mode"] == "split" for p in _of(events, "SeatBetMirrored")):
            event("DLX-2 split")
        if any(not p["followed"] for p in _of(events, "BehindFollowed")):
            event("DLX-7/8 not followed")
        event(f"round {self.number} {view['phase']}")
        assert view["phase"] in ("settled", "cancelled"), view["phase"]
        assert (view["phase"] == "cancelled") == self.cancelled_on_purpose
        rnd = self.app.round(self.rid)
        verdict = verify_events(self.rid, list(self.app.events.get(rnd.id)))
        assert verdict.ok, verdict.as_json()
        self.check_money(events, view)
        self.check_table_facts(events)
        self.check_seats(events, view)

    def check_money(self, events: list[Json], view: Json) -> None:
        stakes: dict[str, tuple[str, Decimal]] = {}
        for p in (
            _of(events, "BetPlaced") + _of(events, "SeatBetMirrored") + _of(events, "WagerAdded")
        ):
            assert p["wager_id"] not in stakes, f"{p['wager_id']} staked twice"
            stakes[p["wager_id"]] = (p["player"], Decimal(p["stake"]))
        final: dict[str, Json] = {}
        paid: Counter[str] = Counter()
        for e in events:
            k, p = _kind(e), e["payload"]
            if k == "WagerSettled":
                assert p["wager_id"] not in final, f"{p['wager_id']} settled twice"
                assert Decimal(p["net"]) == Decimal(p["payout"]) - Decimal(p["stake"])
                assert Decimal(p["stake"]) == stakes[p["wager_id"]][1]
                final[p["wager_id"]] = p
                paid[p["player"]] += Decimal(p["payout"])
            elif k == "PaymentReversed":  # deluxe has no even money: never expected
                raise AssertionError(f"unexpected PaymentReversed {p}")
        assert set(final) == set(stakes), "every wager settled exactly once"
        assert all(w["settled"] for w in view["wagers"])
        house = sum((stakes[w][1] - Decimal(p["payout"]) for w, p in final.items()), Decimal(0))
        self.house += house
        balances = self.balances()
        assert sum(balances.values()) + self.house == sum(self.deposits.values()), "conserved"
        for player, start in self.start_balances.items():
            staked = sum((s for pl, s in stakes.values() if pl == player), Decimal(0))
            assert balances[player] == start - staked + paid[player], f"wallet of {player}"
            assert balances[player] >= 0
        if view["phase"] == "cancelled":
            assert all(p["result"] == "refund" for p in final.values())
            assert balances == self.start_balances, "ERR-1: every wallet where it started"

    def check_table_facts(self, events: list[Json]) -> None:
        placed = {p["wager_id"]: p for p in _of(events, "BetPlaced")}
        seats = self.app.round(self.rid).seats
        for p in placed.values():
            if p["kind"] == "main":  # DLX-1: only on one's own seat
                assert seats.get(p["spot"]) == p["player"]
            elif p["kind"] == "behind":  # DLX-5: never behind one's own seat
                assert p["spot"] in seats
                assert seats[p["spot"]] != p["player"]
            else:  # DLX-PAIR: on an occupied seat
                assert p["spot"] in seats
        assert OUTSIDER not in self.app.table(TABLE).seats.values()
        assert all(p["player"] != OUTSIDER for p in placed.values()), "real money at a test table"
        for m in _of(events, "SeatBetMirrored"):  # DLX-2
            owner = next(
                p for p in placed.values() if p["player"] == m["player"] and p["kind"] == "main"
            )
            assert m["stake"] == owner["stake"], "DLX-2: equal seat bets"
            stake, requested = Decimal(owner["stake"]), Decimal(owner["requested"])
            seen = Decimal(owner["balance_seen"])
            if m["mode"] == "mirrored":
                assert stake == requested
                assert 2 * stake <= seen
            else:
                assert m["mode"] == "split"
                if m["rule"] == "D17":  # an odd unit left by the equal split stays unstaked
                    assert requested - 2 * stake == Decimal("0.01")
                else:
                    assert 2 * stake == requested
                assert 2 * requested > seen
                assert stake >= RULES.min_bet
        for p in _of(events, "BehindFollowed"):  # DLX-7 / DLX-8
            # a bet behind, or the stake it put on a second split hand (DLX-8), which keeps
            # the bet behind's choices
            origin = f"{p['hand'].split('.')[0]}:behind:{p['player']}"
            bet = placed.get(p["wager_id"]) or placed[origin]
            wants = bet["follow_double"] if p["seat_action"] == "double" else bet["follow_split"]
            assert p["rule"] == ("DLX-7" if p["seat_action"] == "double" else "DLX-8")
            if p["followed"]:
                assert wants
                assert Decimal(p["balance_seen"]) >= Decimal(p["needed"])
            elif p["reason"] == "too little balance":
                assert wants
                assert Decimal(p["balance_seen"]) < Decimal(p["needed"])
            else:
                assert not wants
                assert p["reason"] == f"follow {p['seat_action']} is No"
        follows = [p for p in _of(events, "WagerAdded") if p["kind"].startswith("behind_")]
        yes = Counter(
            (p["player"], p["seat_action"]) for p in _of(events, "BehindFollowed") if p["followed"]
        )
        got = Counter(
            (p["player"], "double" if p["kind"] == "behind_double" else "split") for p in follows
        )
        assert got == yes, "a bet behind stakes more exactly when it followed"
        for p in _of(events, "DecisionConverted"):  # FUNDS-1 / FUNDS-2
            assert Decimal(p["balance_seen"]) < Decimal(p["needed"])
            assert p["rule"] == ("FUNDS-1" if p["requested"] == "double" else "FUNDS-2")

    def check_seats(self, events: list[Json], view: Json) -> None:
        """DLX-3: a seat without a seat bet when the countdown ended is vacated (every player
        sat down for the first round, or kept the seat from the first); bets on it refunded."""
        if not _of(events, "BettingClosed"):
            return
        seats = self.app.round(self.rid).seats
        with_bets = {w["wager_id"].split(":")[0] for w in view["wagers"] if w["kind"] == "main"}
        for s in _of(events, "WagerSettled"):
            spot = s["wager_id"].split(":")[0]
            if s["rule"] == "DLX-3":
                assert spot in seats
                assert spot not in with_bets
                assert s["kind"] in ("behind", "pair")
                assert s["payout"] == s["stake"]
            elif s["kind"] in ("behind", "pair"):
                assert spot in with_bets
        table = self.app.table(TABLE)
        if self.number == 1:
            assert table.seat_map() == {s: p for s, p in seats.items() if s in with_bets}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_random_deluxe_rounds_conserve_money_settle_and_reexecute(data):
    game = Game(data)
    game.seat_players()
    game.start(1)
    game.place_bets()
    game.play()
    game.check()
    if not game.draw(st.booleans(), "second round?"):
        return
    # DLX-4: at the start of round 2, seated players below the minimum seat bet are removed
    before = dict(game.app.table(TABLE).seats)
    game.start(2)
    removed = {(p["seat"], p["player"]): p for p in _of(game.table_events(), "SeatRemoved")}
    for seat, player in before.items():
        if game.app.balance(player) < RULES.min_bet:
            assert removed[(seat, player)]["rule"] == "DLX-4"
            event("DLX-4 removal")
    kept = {str(s): p for s, p in sorted(before.items()) if game.app.balance(p) >= RULES.min_bet}
    assert game.app.round(game.rid).seats == kept == game.app.table(TABLE).seat_map()
    game.place_bets()
    game.play()
    game.check()

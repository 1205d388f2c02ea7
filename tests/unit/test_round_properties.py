"""Property tests over random rounds of every variant, played through ``RoundAudit`` (in-memory
store) on stacked test shoes: a random permutation of the variant's decks, random bets (1-3
players, seats/boxes, side bets and bets behind where the variant has them), random legal
decisions taken from each due hand's ``options`` (timeouts and disconnections included), the
occasional pause/resume and cancellation. After every round:

* money is conserved: deposits == sum of balances + house result, the house result computed
  from each wager's final settlement; every wallet matches the round's own events; a cancelled
  round leaves every wallet where it started (ERR-1);
* every settlement's payout follows from its stake, result and ratio, rounded down (MONEY-1);
* no card appears more often than the decks allow; the round used a prefix of the shoe, each
  card once, in order (SHOE-3);
* the round ends settled or cancelled, every wager settled exactly once;
* the dealer's final hand obeys DEALER-1 unless the round ended early (END-1, END-2, D15) or
  was cancelled;
* replay equals live state: the view each command returned equals the view of the Round
  rebuilt from the stored events.
"""

from __future__ import annotations

from collections import Counter
from decimal import ROUND_DOWN, Decimal
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from domain.application import RoundAudit
from domain.cards import decks, parse_cards
from domain.errors import DomainError, InsufficientFunds
from domain.rules import VARIANTS, get_rules
from domain.scoring import is_blackjack, score

CENT = Decimal("0.01")
# hypothesis favours the first element of sampled_from: put the rare decisions first
PREFERENCE = [
    "split",
    "double",
    "hit",
    "even_money",
    "insurance",
    "stand",
    "surrender",
    "no_insurance",
]
SUP = "sup"
Json = dict[str, Any]


def _kind(e: Json) -> str:
    return str(e["type"]).rsplit(".", 1)[-1]


def _of(events: list[Json], name: str) -> list[Json]:
    return [e["payload"] for e in events if _kind(e) == name]


class Table:
    """One random round and everything needed to check it."""

    def __init__(self, data: st.DataObject, variant: str) -> None:
        self.data = data
        self.variant = variant
        self.rules = get_rules(variant)
        self.app = RoundAudit()
        self.deposits: dict[str, Decimal] = {}
        self.views: list[Json] = []
        self.cancelled_on_purpose = False
        deck = [c.code for c in decks(self.rules.decks)]
        shuffled = list(data.draw(st.permutations(deck), label="shoe"))
        # Bias the first cards towards pairs, aces, tens and sevens so that splits, insurance,
        # blackjacks and Lucky 7s are common: each rank drawn pulls the next card of that rank
        # to the front (the order stays a permutation of the decks).
        ranks = data.draw(
            st.lists(st.sampled_from(["A", "8", "7", "10", "K", "5"]), min_size=4, max_size=14),
            label="front ranks",
        )
        front = []
        for rank in ranks:
            card = next((c for c in shuffled if c[:-1] == rank), None)
            if card is None:
                continue
            shuffled.remove(card)
            front.append(card)
        self.order = [*front, *shuffled]
        self.rid = self.app.start_round(
            table_id="prop",
            round_number=1,
            variant=variant,
            production=False,
            test_order=list(self.order),
        )

    # ----------------------------------------------------------------- commands
    def fund(self, player: str, amount: Decimal) -> None:
        self.app.open_wallet(player, account_type="test")
        self.app.deposit(player, str(amount), transaction_id=f"dep-{player}")
        self.deposits[player] = amount

    def balances(self) -> dict[str, Decimal]:
        return {p: self.app.balance(p) for p in self.deposits}

    def attempt(self, command, *, may_refuse: tuple[type[DomainError], ...] = ()) -> bool:
        """Run a command; a refusal must be one allowed here and must record nothing."""
        before = self.app.round_events(self.rid)
        money = self.balances()
        try:
            view = command()
        except may_refuse:
            assert self.app.round_events(self.rid) == before, "a refusal recorded events"
            assert self.balances() == money, "a refusal moved money"
            return False
        whole = self.app.round_view(self.rid)
        self.views.append(whole)
        if self.rules.shared_hand and view != whole:
            # a boundless player's own command answers the round with that player's part only
            # (Engine.players_view): the whole round cut down to the one player it shows
            who = {h["player"] for h in view["hands"]} | {w["player"] for w in view["wagers"]}
            assert len(who) == 1, who
            whole = {
                **whole,
                "hands": [h for h in whole["hands"] if h["player"] in who],
                "wagers": [w for w in whole["wagers"] if w["player"] in who],
            }
        assert view == whole, "replay differs from the live state"
        return True

    def view(self) -> Json:
        return self.app.round_view(self.rid)

    # ------------------------------------------------------------------- bets
    def place_bets(self) -> None:
        d, r = self.data, self.rules
        n_players = d.draw(st.integers(1, 3), label="players")
        players = ["P1", "P2", "P3"][:n_players]
        spots = list(range(1, r.max_spots + 1)) if r.max_spots else [0]
        free = list(spots)
        for p in players:
            cents = d.draw(st.integers(100, 5000), label="stake cents")
            stake = Decimal(cents) * CENT
            rich = d.draw(st.integers(0, 3), label="poor?") < 3
            self.fund(p, Decimal("2000.00") if rich else stake * 2 + Decimal("0.37"))
            if r.shared_hand:
                if d.draw(st.integers(0, 4), label="main?") < 4:
                    self.attempt(
                        lambda p=p, s=stake: self.app.place_bet(self.rid, player=p, amount=str(s)),
                        may_refuse=(InsufficientFunds,),
                    )
            else:
                k = min(len(free), d.draw(st.integers(1, r.max_spots_per_player), label="spots"))
                for _ in range(k):
                    if not free:
                        break
                    spot = d.draw(st.sampled_from(free), label="spot")
                    free.remove(spot)
                    self.attempt(
                        lambda p=p, s=stake, sp=spot: self.app.place_bet(
                            self.rid, player=p, amount=str(s), spot=str(sp)
                        ),
                        may_refuse=(InsufficientFunds,),
                    )
            for kind in r.side_bets:
                if d.draw(st.integers(0, 2), label=f"{kind}?") == 0:
                    continue
                amounts = ["0.50", "0.75", "1.00"] if kind == "lucky7" else ["0.50", "2.35", "5.00"]
                amount = d.draw(st.sampled_from(amounts), label=f"{kind} stake")
                targets = (
                    [None]
                    if r.shared_hand
                    else sorted({int(s) for s, o in self._owners().items() if o == p})
                    if kind == "lucky7"
                    else sorted({int(s) for s in self._owners()})
                )
                if not targets:
                    continue
                target = d.draw(st.sampled_from(targets), label="side spot")
                self.attempt(
                    lambda p=p, k=kind, a=amount, t=target: self.app.place_bet(
                        self.rid, player=p, kind=k, amount=a, spot=None if t is None else str(t)
                    ),
                    may_refuse=(InsufficientFunds,),
                )
        if r.bet_behind and d.draw(st.integers(0, 2), label="behind?") == 0:
            owners = self._owners()
            if owners:
                seat = d.draw(st.sampled_from(sorted(owners)), label="behind seat")
                who = "B9"
                self.fund(who, Decimal(d.draw(st.sampled_from(["15.00", "500.00"]))))
                self.attempt(
                    lambda: self.app.place_behind(
                        self.rid,
                        player=who,
                        seat=seat,
                        amount="10.00",
                        follow_double=d.draw(st.booleans(), label="follow double"),
                        follow_split=d.draw(st.booleans(), label="follow split"),
                    ),
                    may_refuse=(InsufficientFunds,),
                )

    def _owners(self) -> dict[str, str]:
        return {
            w["wager_id"].split(":")[0]: w["player"]
            for w in self.view()["wagers"]
            if w["kind"] == "main"
        }

    # ------------------------------------------------------------------- play
    def maybe_interrupt(self) -> bool:
        """Occasionally pause and resume, or cancel. True when the round was cancelled."""
        # hypothesis favours small integers: the rare events sit at the top of the range
        roll = self.data.draw(st.integers(0, 60), label="interrupt")
        if roll == 60:
            before = self.view()
            self.attempt(lambda: self.app.pause(self.rid, reason="fault", supervisor=SUP))
            if self.data.draw(st.booleans(), label="cancel while paused"):
                self.attempt(lambda: self.app.cancel(self.rid, reason="fault", supervisor=SUP))
                self.cancelled_on_purpose = True
                return True
            self.attempt(lambda: self.app.resume(self.rid, reason="ok", supervisor=SUP))
            assert self.view() == before, "ERR-1: resume does not continue as it was"
        elif roll == 59:
            self.attempt(lambda: self.app.cancel(self.rid, reason="fault", supervisor=SUP))
            self.cancelled_on_purpose = True
            return True
        return False

    def play(self) -> None:
        if self.maybe_interrupt():
            return
        self.attempt(lambda: self.app.close_betting(self.rid))
        for _ in range(300):
            view = self.view()
            if view["phase"] in ("settled", "cancelled"):
                return
            assert view["card_needed"] is None, f"round waits for a card: {view['card_needed']}"
            if self.maybe_interrupt():
                return
            due = [h for h in view["hands"] if h["options"]]
            if view["phase"] == "insurance":
                choices = [(h, a) for h in due for a in [*h["options"], "timeout"]]
                behind = [w["player"] for w in view["wagers"] if w["kind"] == "behind"]
                pick = self.data.draw(st.integers(0, len(choices) + len(behind) + 1))
                if pick < len(choices):
                    h, action = choices[pick]
                    self._decide(h, action)
                elif pick < len(choices) + len(behind):
                    who = behind[pick - len(choices)]
                    action = self.data.draw(st.sampled_from(["insurance", "no_insurance"]))
                    self.attempt(
                        lambda w=who, a=action: self.app.decide(self.rid, player=w, action=a),
                        may_refuse=(DomainError,),
                    )
                else:
                    self.attempt(lambda: self.app.close_insurance_window(self.rid))
                continue
            assert view["phase"] == "playing", f"stuck in phase {view['phase']}"
            assert due, "playing, but no hand has a decision open"
            if not self.rules.shared_hand:
                assert len(due) == 1, "more than one hand due at once"
            if self.rules.pre_decisions and hasattr(self.app, "preselect"):
                self.maybe_preselect(view)
                view = self.view()
                if view["phase"] != "playing":
                    continue
                due = [h for h in view["hands"] if h["options"]]
            h = self.data.draw(st.sampled_from(due), label="hand")
            extra = self.data.draw(st.integers(0, 9), label="timeout/disconnect")
            if extra == 9:
                self.attempt(
                    lambda h=h: self.app.time_out(self.rid, player=h["player"], hand=h["hand"])
                )
            elif extra == 8:
                self.attempt(lambda h=h: self.app.disconnect(self.rid, player=h["player"]))
            else:
                options = sorted(h["options"], key=PREFERENCE.index)
                while not self._decide(h, self._choose(options)):
                    options = [o for o in options if o not in ("split", "double", "insurance")]
        raise AssertionError("the round did not end in 300 steps")

    def maybe_preselect(self, view: Json) -> None:
        """PRE-1: now and then choose a decision for a hand whose turn has not started."""
        waiting = [h for h in view["hands"] if not h["finished"] and not h["options"]]
        if not waiting or self.data.draw(st.integers(0, 2), label="preselect?") != 0:
            return
        h = self.data.draw(st.sampled_from(waiting), label="preselect hand")
        action = self._choose(["split", "double", "hit", "stand", "surrender"])
        self.attempt(
            lambda: self.app.preselect(self.rid, player=h["player"], action=action, hand=h["hand"]),
            may_refuse=(DomainError,),
        )

    def _choose(self, options: list[str]) -> str:
        """One of ``options``, the first (rarest) one more often than the others."""
        if self.data.draw(st.integers(0, 2), label="first option?") == 0:
            return options[0]
        return self.data.draw(st.sampled_from(options), label="action")

    def _decide(self, h: Json, action: str) -> bool:
        """Decide ``action`` on hand ``h``; False when refused for lack of balance."""
        if action == "timeout":
            self.attempt(lambda: self.app.time_out(self.rid, player=h["player"], hand=h["hand"]))
            return True
        ok = self.attempt(
            lambda: self.app.decide(self.rid, player=h["player"], action=action, hand=h["hand"]),
            may_refuse=(InsufficientFunds,),
        )
        if not ok:
            assert action in ("double", "split", "insurance"), f"{action} refused"
            assert (
                action == "insurance"
                or self.rules.double_funds == "refuse"
                or (action == "split" and self.rules.split_funds == "refuse")
            )
        return ok

    # ----------------------------------------------------------------- checks
    def check(self) -> None:
        events = self.app.round_events(self.rid)
        event(f"{self.variant} {self.view()['phase']}")
        for name in (
            "HandSplit",
            "HandDoubled",
            "PaymentReversed",
            "DecisionConverted",
            "AutoActed",
            "InsuranceWindowOpened",
            "BehindFollowed",
            "HandSurrendered",
            "DecisionPreselected",
        ):
            if _of(events, name):
                event(name)
        if any(p["rule"] in ("END-2", "D15") for p in _of(events, "DealerStood")):
            event("dealer stopped early")
        view = self.view()
        dealer = parse_cards(view["dealer"]["cards"])  # a finished round shows every card
        assert view["phase"] in ("settled", "cancelled"), view["phase"]
        if self.cancelled_on_purpose:
            assert view["phase"] == "cancelled"
        if self.views:
            assert self.views[-1] == view, "replay differs from the last live view"
        self.check_cards(events)
        self.check_money(events, view)
        self.check_dealer(events, dealer)
        self.check_hands(events, view)

    def check_cards(self, events: list[Json]) -> None:
        dealt = [p["card"] for p in _of(events, "CardDealt")]
        shoe = self.app.shoe(events[0]["payload"]["shoe_id"])  # the Started event
        drawn = [d.card for d in shoe.drawn]
        assert drawn == dealt, "the round's cards are the shoe's, in order"
        assert dealt == list(self.order[: len(dealt)]), "a prefix of the stacked order"
        counts = Counter(dealt)
        assert max(counts.values(), default=0) <= self.rules.decks, "SHOE-3"
        routed = [p["card"] for p in _of(events, "CardToDealer")] + [
            p["card"]
            for p in _of(events, "CardToHand")
            if not self.rules.shared_hand or p["hand"] in ("shared", "sequence")
        ]
        assert Counter(routed) == counts, "every card dealt goes to exactly one place"
        settled_at = [i for i, e in enumerate(events) if _kind(e) in ("RoundSettled",)]
        if settled_at:
            assert not any(_kind(e) == "CardDealt" for e in events[settled_at[0] :])

    def check_money(self, events: list[Json], view: Json) -> None:
        stakes: dict[str, tuple[str, Decimal]] = {}
        for p in _of(events, "BetPlaced") + _of(events, "WagerAdded"):
            assert p["wager_id"] not in stakes, "wager staked twice"
            stakes[p["wager_id"]] = (p["player"], Decimal(p["stake"]))
        final: dict[str, Json] = {}
        paid: Counter[str] = Counter()
        for e in events:
            k, p = _kind(e), e["payload"]
            if k == "WagerSettled":
                assert p["wager_id"] not in final, f"{p['wager_id']} settled twice"
                check_payout(p)
                final[p["wager_id"]] = p
                paid[p["player"]] += Decimal(p["payout"])
            elif k == "PaymentReversed":
                assert p["wager_id"] in final, "reversal of an unsettled wager"
                assert Decimal(p["amount"]) == Decimal(final.pop(p["wager_id"])["payout"])
                paid[p["player"]] -= Decimal(p["amount"])
        assert set(final) == set(stakes), "every wager settled exactly once"
        assert all(w["settled"] for w in view["wagers"])
        house = sum((stakes[w][1] - Decimal(p["payout"]) for w, p in final.items()), Decimal(0))
        balances = self.balances()
        assert sum(self.deposits.values()) == sum(balances.values()) + house, "money conserved"
        for player, deposit in self.deposits.items():
            staked = sum((s for pl, s in stakes.values() if pl == player), Decimal(0))
            assert balances[player] == deposit - staked + paid[player], f"wallet of {player}"
        if view["phase"] == "cancelled":
            assert all(p["result"] == "refund" and p["rule"] == "ERR-1" for p in final.values())
            assert balances == self.deposits, "ERR-1: every wallet ends where it started"
        else:
            assert all(p["result"] != "refund" for p in final.values() if p["kind"] == "main")

    def check_dealer(self, events: list[Json], dealer) -> None:
        if self.view()["phase"] == "cancelled":
            return
        dealer = list(dealer)
        s = score(dealer)
        stood = _of(events, "DealerStood")
        early = {p["rule"] for p in stood} & {"END-2", "D15"}
        peeked_bj = any(p["blackjack"] for p in _of(events, "DealerChecked"))
        if peeked_bj:
            assert is_blackjack(dealer, split=False)
            assert not _of(events, "PlayStarted"), "END-1: no play after a dealer BJ"
            return
        if early:
            assert self.rules.dealer_draws == "while_result_depends"
            assert len(dealer) == 2
            return
        if not dealer:
            assert not self.view()["wagers"], "a round with bets dealt no dealer card"
            return
        assert s.total >= 17 or s.bust, f"DEALER-1: dealer stopped at {s.total}: {dealer}"
        if len(dealer) > 2:
            before = score(dealer[:-1])
            assert before.total <= 16, f"DEALER-1: dealer drew on {before.total}: {dealer}"
        if s.bust:
            assert score(dealer[:-1]).total <= 16

    def check_outcomes(self, events: list[Json], view: Json) -> None:
        dealer = list(parse_cards(view["dealer"]["cards"]))
        dealer_bj = len(dealer) == 2 and is_blackjack(dealer, split=False)
        hands = {h["hand"]: h for h in view["hands"]}
        for p in _of(events, "WagerSettled"):
            if p["kind"] in ("main", "split", "double"):
                hand = hands[p["hand"]]
                result, rules = expected_main(hand, dealer, self.variant)
                if p["kind"] == "double" and result == "even_money":
                    raise AssertionError("a doubled hand took even money")
                assert p["result"] == result, f"{p['wager_id']}: {p} vs {hand}, dealer {dealer}"
                assert p["rule"] in rules, f"{p['wager_id']}: rule {p['rule']} not in {rules}"
            elif p["kind"] == "insurance":
                assert p["result"] == ("win" if dealer_bj else "lose"), p

    def check_hands(self, events: list[Json], view: Json) -> None:
        rules = self.rules
        for h in view["hands"]:
            cards = parse_cards(h["cards"])
            if h["doubled"]:
                assert len(cards) == 3, f"DBL-1: a doubled hand has 3 cards: {h}"
            if "." in h["hand"] and cards[0].is_ace and rules.split_aces == "one_card":
                assert len(cards) <= 2, f"SPLIT-3: {h}"
            if len(cards) > 2:
                assert score(cards[:-1]).total < 21, f"HAND-1: drew past 21/BJ: {h}"
        if view["phase"] == "settled":
            self.check_outcomes(events, view)
        for p in _of(events, "AutoActed"):
            assert (p["action"] == "hit") is (p["total"] <= 11), f"AUTO-1: {p}"
        if view["phase"] == "settled" and rules.variant == "lucky7":
            dealer_bj = any(p["blackjack"] for p in _of(events, "DealerChecked"))
            for p in _of(events, "WagerSettled"):
                if p["kind"] == "lucky7" and dealer_bj:
                    spot = p["wager_id"].split(":")[0]
                    box = [h for h in view["hands"] if h["spot"] == spot]
                    assert all(len(h["cards"]) == 2 for h in box), "L7-3"


def expected_main(hand: Json, dealer: list, variant: str) -> tuple[str, set[str]]:
    """An independent reading of OUT-1..4, SCORE-3/4, SURR-1, EVEN-1 and D8: the result of a
    main, split or double wager and the rule IDs that may decide it."""
    if hand["surrendered"]:
        return "surrender", {"SURR-1"}
    if hand["finish_reason"] == "even_money":
        return "even_money", {"EVEN-1"}
    cards = parse_cards(hand["cards"])
    player = score(cards)
    split = "." in hand["hand"]
    player_bj = is_blackjack(cards, split=split)
    dealer_bj = len(dealer) == 2 and is_blackjack(dealer, split=False)
    d = score(dealer)
    if player_bj:
        return ("push", {"OUT-1"}) if dealer_bj else ("blackjack", {"OUT-1"})
    if player.bust:
        return "lose", {"OUT-3"}  # whatever the dealer later does
    if dealer_bj:
        return "lose", {"D8"} if variant == "european" else {"OUT-1"}
    if d.bust or player.total > d.total:
        return "win", {"OUT-2"}
    if player.total < d.total:
        return "lose", {"OUT-3"}
    return "push", {"OUT-4"}


def check_payout(p: Json) -> None:
    """MONEY-1: a payout follows from stake, result and ratio, rounded down and recorded."""
    stake, payout = Decimal(p["stake"]), Decimal(p["payout"])
    assert payout == payout.quantize(CENT)
    assert stake == stake.quantize(CENT)
    assert Decimal(p["net"]) == payout - stake
    result, ratio = p["result"], p["ratio"]
    if result in ("lose",):
        assert (payout, ratio) == (0, None), p
    elif result == "refund":
        assert payout == stake, p
    elif result == "surrender":
        exact = stake / 2
        assert payout == exact.quantize(CENT, rounding=ROUND_DOWN), p
        assert Decimal(p["rounding"]) == exact - payout, p
    else:
        num, den = (int(x) for x in ratio.split(":"))
        exact = stake * num / den
        win = exact.quantize(CENT, rounding=ROUND_DOWN)
        assert payout == stake + win, p
        assert Decimal(p["rounding"]) == exact - win, p


PROPS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPS
@given(variant=st.sampled_from(VARIANTS), data=st.data())
def test_random_rounds_conserve_money_cards_and_replay(variant, data):
    table = Table(data, variant)
    table.place_bets()
    table.play()
    table.check()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_rounds_with_cancellation_leave_every_wallet_where_it_started(data):
    variant = data.draw(st.sampled_from(VARIANTS), label="variant")
    table = Table(data, variant)
    table.place_bets()
    table.attempt(lambda: table.app.close_betting(table.rid))
    steps = data.draw(st.integers(0, 6), label="steps before cancel")
    for _ in range(steps):
        view = table.view()
        if view["phase"] not in ("insurance", "playing"):
            break
        due = [h for h in view["hands"] if h["options"]]
        if not due:
            table.attempt(lambda: table.app.close_insurance_window(table.rid))
            continue
        h = data.draw(st.sampled_from(due))
        table._decide(h, data.draw(st.sampled_from(h["options"])))
    if table.view()["phase"] not in ("settled", "cancelled"):
        table.attempt(lambda: table.app.cancel(table.rid, reason="fault", supervisor=SUP))
        table.cancelled_on_purpose = True
    table.check()

"""Plays a hand-worked round of ../shared/conformance/scenarios.yaml through the application.

Each scenario runs on a test shoe holding exactly its cards, through ``RoundAudit`` commands,
and must end settled with each player's net, the dealer's cards and the named hands as the
scenario says, having used every card of the scenario and no other.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from domain.application import RoundAudit

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SCENARIOS_FILE = SHARED / "conformance" / "scenarios.yaml"
WINDOW = {"insurance", "no_insurance", "even_money"}


def _load() -> list[dict[str, Any]]:
    if not SCENARIOS_FILE.exists():
        return []
    data = yaml.safe_load(SCENARIOS_FILE.read_text())
    assert isinstance(data, list)
    return data


SCENARIOS = _load()


def _rank(code: str) -> str:
    return code[:-1]


def play_scenario(app: RoundAudit, scenario: dict[str, Any]) -> str:
    balances = {p: Decimal(str(v)) for p, v in (scenario.get("balances") or {}).items()}
    bets: dict[str, dict[str, Any]] = scenario["bets"]
    for player in bets:
        app.open_wallet(player, account_type="test")  # a test table takes play money only
        app.deposit(
            player, str(balances.get(player, Decimal(1000))), transaction_id=f"dep-{player}"
        )
    start = {p: app.balance(p) for p in bets}
    table = f"conformance-{scenario['id']}"
    if scenario["variant"] == "deluxe":  # a deluxe table: seat the players first (DLX-1)
        app.open_table(table, production=False)
        for player, bet in bets.items():
            for seat in bet.get("seats") or ([bet["seat"]] if "seat" in bet else []):
                app.sit(table, player=player, seat=int(seat))
    rid = app.start_round(
        table_id=table,
        round_number=1,
        variant=scenario["variant"],
        production=False,
        test_order=list(scenario["cards"]),
    )
    # main bets first, in seat/box order, then bets behind and side bets
    mains: list[tuple[int, str, Any]] = []
    for player, bet in bets.items():
        spots = bet.get("seats") or bet.get("boxes") or [bet.get("seat") or bet.get("box")]
        if "behind" in bet:
            continue
        if "main" in bet:
            for s in spots:
                mains.append((int(s) if s is not None else 0, player, s))
    placed: set[str] = set()
    for _, player, s in sorted(mains, key=lambda t: t[0]):
        if scenario["variant"] == "deluxe" and player in placed:
            continue  # DLX-2: a two-seat player's seat bet is mirrored on the other seat
        app.place_bet(rid, player=player, amount=str(bets[player]["main"]), spot=s)
        placed.add(player)
    for player, bet in bets.items():
        if "behind" in bet:
            app.place_behind(
                rid,
                player=player,
                seat=bet["behind"],
                amount=str(bet["main"]),
                follow_double=bool(bet.get("follow_double", False)),
                follow_split=bool(bet.get("follow_split", False)),
            )
        spots = (
            bet.get("seats")
            or bet.get("boxes")
            or [bet.get("seat") or bet.get("box") or bet.get("behind")]
        )
        for side in ("pair", "lucky7", "bust", "trio", "poker"):
            if side in bet:
                app.place_bet(rid, player=player, kind=side, amount=str(bet[side]), spot=spots[0])
    app.close_betting(rid)
    for decision in scenario.get("decisions") or []:
        player, action = decision[0], decision[1]
        amount = str(decision[2]) if len(decision) > 2 else None
        view = app.round_view(rid)
        if action not in WINDOW and view["phase"] == "insurance":
            app.close_insurance_window(rid)
        if action == "timeout":
            app.time_out(rid, player=player)
        else:
            app.decide(rid, player=player, action=action, amount=amount)
    if app.round_view(rid)["phase"] == "insurance":
        app.close_insurance_window(rid)

    view = app.round_view(rid)
    assert view["phase"] == "settled", f"round ended in phase {view['phase']}: {view}"
    # boundless: the shared hand holds the dealer's cards (players' hands are Participations)
    rnd = app.boundless.shared(rid) if app.boundless.owns(rid) else app.round(rid)
    shoe = app.shoe(rnd.shoe_id)
    assert [d.card for d in shoe.drawn] == list(scenario["cards"]), "every card used, in order"

    expect = scenario["expect"]
    for player, net in expect["net"].items():
        got = app.balance(player) - start[player]
        assert got == Decimal(str(net)), f"{player}: net {got}, expected {net}"
    if "dealer" in expect:
        dealer = [c.code for c in rnd.dealer]
        text = expect["dealer"]
        ranks = [t.split()[0] for t in text.split("=")[0].split(",")]
        if "covered" in text:  # lucky7 "9 covered, 10 up": dealer's first two in order
            assert [_rank(c) for c in dealer[: len(ranks)]] == ranks, (dealer, text)
        else:
            assert [_rank(c) for c in dealer] == ranks, (dealer, text)
        total = re.search(r"= (\d+)", text)
        if total:
            from domain.cards import parse_cards
            from domain.scoring import score

            assert score(parse_cards(dealer)).total == int(total.group(1)), (dealer, text)
        if "bust" in text:
            from domain.cards import parse_cards
            from domain.scoring import score

            assert score(parse_cards(dealer)).bust
    for label, text in (expect.get("hands") or {}).items():
        player = label.rstrip("0123456789")
        index = int(label[len(player) :] or 1) - 1
        hands = [h for h in view["hands"] if h["player"] == player]
        hand = hands[index]
        if "=" in text:
            ranks = [t.strip() for t in text.split("=")[0].split(",")]
            if len(ranks) > 1:
                assert [_rank(c) for c in hand["cards"]] == ranks, (label, hand, text)
            total = int(re.search(r"= (\d+)", text).group(1))  # type: ignore[union-attr]
            assert hand["total"] == total, (label, hand, text)
        if text == "BJ":
            assert hand["blackjack"], (label, hand)
        if "doubled" in text:
            assert hand["doubled"], (label, hand)
        if "not BJ" in text:
            assert not hand["blackjack"], (label, hand)
        if "stood automatically" in text:
            assert hand["finish_reason"] in ("21", "blackjack"), (label, hand)
        m = re.match(r"^(\d+) (push|lose|win)", text)
        if m:
            assert hand["total"] == int(m.group(1)), (label, hand, text)
    return rid

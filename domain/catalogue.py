"""The event catalogue: every stored event class, its fields, its kind and the rules behind it.

``docs/events.md`` is generated from this module (``python -m domain.catalogue >
docs/events.md``) and a test fails when the two differ, so the documentation cannot drift from
the code. Fields and kinds are read from the classes themselves; the sentence and the rule IDs
of each event are kept here, beside a test that every event class has them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

from eventsourcing.domain import CanMutateAggregate

from domain.boundless.participation import Participation
from domain.boundless.shared import SharedHand
from domain.events import Consequence, Derived, Input, Requested
from domain.keys import ApiKey
from domain.round import Round
from domain.shoe import Shoe
from domain.table import Table
from domain.wallet import Wallet

AGGREGATES = (Round, SharedHand, Participation, Shoe, Table, Wallet, ApiKey)
_LIBRARY_FIELDS = {"originator_id", "originator_version", "timestamp", "originator_topic"}
_REQUESTED = {f.name for f in dataclasses.fields(Requested)}

ABOUT: dict[str, tuple[str, str]] = {
    # Round: inputs
    "Round.Started": (
        "A round opens on a table under a published rules key, on a shoe; never under "
        "shared-hand rules (a boundless round is a SharedHand and one Participation per "
        "player, BDL-1).",
        "PHASE-1",
    ),
    "Round.BetPlaced": (
        "A bet accepted in the betting phase (main, side bet or bet behind); the stake is "
        "debited in the same transaction. Records the balance seen.",
        "PHASE-1, DLX-5, DLX-PAIR, L7-1",
    ),
    "Round.DecisionPreselected": (
        "A deluxe player chose (or changed) a decision before the hand's turn; the last choice "
        "is played as the hand's first decision when the turn starts (a DecisionMade by the "
        "system with id PRE-1).",
        "PRE-1",
    ),
    "Round.SeatBetMirrored": (
        "A two-seat player's seat bet is mirrored on the other seat, or split equally between "
        "the two when the balance does not cover both; debited in the same transaction. An "
        "odd cent left by the split stays in the wallet (rule D17; the BetPlaced records the "
        "amount requested).",
        "DLX-2, D17",
    ),
    "Round.BettingClosed": ("The betting countdown ended.", "PHASE-1"),
    "Round.CardDealt": (
        "A card left the shoe for this round (with its shoe position).",
        "SHOE-3, PHASE-2",
    ),
    "Round.DecisionMade": (
        "A player's decision, with the options open at that moment and the balance seen "
        "(and, for a double or split, the balances of the bets behind that may follow it).",
        "PHASE-3, PHASE-4, INS-1, EVEN-1, DLX-6",
    ),
    "Round.DecisionTimedOut": ("No decision arrived in time: the system plays the hand.", "AUTO-1"),
    "Round.PlayerDisconnected": ("The player dropped; the round goes on.", "DISC-1, AUTO-1"),
    "Round.InsuranceWindowClosed": (
        "The insurance timer ran out; undecided hands decline.",
        "INS-1",
    ),
    "Round.Paused": ("A supervisor paused the round, with a reason code.", "ERR-1"),
    "Round.Resumed": ("A supervisor resumed the round as it was.", "ERR-1"),
    "Round.CancelRequested": ("A supervisor cancelled the round, with a reason code.", "ERR-1"),
    # Round: consequences
    "Round.HandOpened": ("A seat or box gets its hand.", "PHASE-2"),
    "Round.CardToHand": (
        "Which hand a card went to, with the hand's total after it.",
        "PHASE-2, PHASE-4, DBL-1, SPLIT-1, SPLIT-3, AUTO-1, FUNDS-1, FUNDS-2",
    ),
    "Round.CardToDealer": (
        "A card to the dealer, face up or not; a draw cites DEALER-1, or H17 when it hits a "
        "soft 17 under a variant's `dealer_hits_soft_17` setting.",
        "PHASE-2, DEALER-1, H17",
    ),
    "Round.InsuranceWindowOpened": ("The dealer shows an ace: the window opens.", "INS-1, EVEN-1"),
    "Round.InsuranceWindowCompleted": (
        "Every hand in the window decided, so it closes before the timer.",
        "INS-1",
    ),
    "Round.DealerChecked": ("The dealer checked the hole card for a blackjack.", "D5"),
    "Round.HoleCardRevealed": ("The hole card is shown.", "END-1, PHASE-5"),
    "Round.PlayStarted": ("Decisions begin, hand by hand.", "PHASE-4"),
    "Round.HandHit": ("A hand is owed one more card.", "PHASE-4, AUTO-1, FUNDS-1, FUNDS-2"),
    "Round.WagerAdded": (
        "A stake added by a decision (double, split, insurance, a bet behind following); "
        "debited in the same transaction.",
        "DBL-1, SPLIT-1, INS-1, DLX-6, DLX-7, DLX-8",
    ),
    "Round.HandSplit": ("A pair became two hands.", "SPLIT-1, SPLIT-2, SPLIT-3"),
    "Round.HandDoubled": ("A hand doubled: one more card, then it stands.", "DBL-1"),
    "Round.HandSurrendered": ("A hand surrendered half its stake.", "SURR-1"),
    "Round.DecisionConverted": (
        "A double or split found too little balance and became a hit or a stand; records "
        "the balance seen and the amount needed.",
        "FUNDS-1, FUNDS-2",
    ),
    "Round.BehindFollowed": (
        "Whether a bet behind followed its seat's double or split, and why.",
        "DLX-7, DLX-8",
    ),
    "Round.AutoActed": ("The system hit or stood for a player.", "AUTO-1"),
    "Round.HandStood": (
        "A hand is complete: the player stood, or it stood by itself (21, BJ, bust, after a "
        "double's card, split aces, AUTO-1, surrender, even money).",
        "HAND-1, SCORE-2, AUTO-1, SURR-1, EVEN-1, FUNDS-2",
    ),
    "Round.DealerTurnStarted": ("The players are done; the dealer plays.", "PHASE-5"),
    "Round.DealerStood": (
        "The dealer's hand is final (or no draw was needed because the result was decided).",
        "DEALER-1, D15, END-2",
    ),
    "Round.WagerSettled": (
        "One wager's result: ratio, payout (stake included), net, rounding, and for side "
        "bets the pattern and paytable used. A payout is credited in the same transaction.",
        "OUT-1..4, SCORE-3, SCORE-4, INS-1, EVEN-1, SURR-1, D8, MONEY-1, ERR-1, DLX-PAIR, L7-2..4",
    ),
    "Round.PaymentReversed": (
        "A payment already made in a cancelled round is taken back.",
        "ERR-1",
    ),
    "Round.RoundSettled": ("Every wager is settled.", "PHASE-6"),
    "Round.RoundCancelled": ("Every stake is refunded; the round is closed.", "ERR-1"),
    # SharedHand (boundless): inputs
    "SharedHand.Started": (
        "A boundless round opens on a table under a published rules key, on a shoe; its id is "
        "the round's id. Players' hands live in their Participations.",
        "PHASE-1, BDL-1",
    ),
    "SharedHand.BettingClosed": (
        "The betting countdown ended; bets recorded after it are refunded (PHASE-1).",
        "PHASE-1",
    ),
    "SharedHand.CardDealt": (
        "A card left the shoe for this round (with its shoe position): a shared initial card, "
        "a dealer's card, or the next card of the sequence when some player's hand needs it.",
        "SHOE-3, PHASE-2, BDL-2",
    ),
    "SharedHand.InsuranceWindowClosed": (
        "The insurance timer ran out; every undecided player declines.",
        "INS-1",
    ),
    "SharedHand.Paused": ("A supervisor paused the round, with a reason code.", "ERR-1"),
    "SharedHand.Resumed": ("A supervisor resumed the round as it was.", "ERR-1"),
    "SharedHand.CancelRequested": (
        "A supervisor cancelled the round, with a reason code; every player's stakes are then "
        "refunded.",
        "ERR-1",
    ),
    # SharedHand: consequences
    "SharedHand.CardToHand": (
        "Where a card went: `shared` (the shared initial hand, with its total) or `sequence` "
        "(the next card of the sequence, at `index`).",
        "BDL-1, BDL-2",
    ),
    "SharedHand.CardToDealer": (
        "A card to the dealer, face up or not; a draw cites DEALER-1 (H17 under "
        "`dealer_hits_soft_17`).",
        "PHASE-2, DEALER-1, H17",
    ),
    "SharedHand.HandsOpened": (
        "After the initial deal, the number of seated players whose hand opened.",
        "PHASE-2, BDL-1",
    ),
    "SharedHand.InsuranceWindowOpened": (
        "The dealer shows an ace and some player is seated: the window opens.",
        "INS-1",
    ),
    "SharedHand.InsuranceWindowCompleted": (
        "Every seated player decided (or was declined by a timeout or a disconnection), so "
        "the window closes before the timer.",
        "INS-1",
    ),
    "SharedHand.DealerChecked": ("The dealer checked the hole card for a blackjack.", "D5"),
    "SharedHand.HoleCardRevealed": ("The hole card is shown.", "END-1, PHASE-5"),
    "SharedHand.PlayStarted": ("Decisions begin, every player at once.", "PHASE-4, BDL-1"),
    "SharedHand.DealerTurnStarted": (
        "Every player's hands are complete: the dealer plays.",
        "PHASE-5",
    ),
    "SharedHand.DealerStood": (
        "The dealer's hand is complete, whatever the players did.",
        "DEALER-1, BDL-3, D10",
    ),
    "SharedHand.RoundSettled": ("Every wager of every player is settled.", "PHASE-6"),
    "SharedHand.RoundCancelled": (
        "Every stake of every player is refunded; the round is closed.",
        "ERR-1",
    ),
    # Participation (boundless, one per round and player): inputs
    "Participation.Joined": (
        "A player's first accepted bet in a boundless round opens their participation (id: "
        "uuid5 of round id and player).",
        "BDL-1",
    ),
    "Participation.BetPlaced": (
        "A bet accepted in the betting phase: the main bet (a seated player) or a side bet, "
        "with or without a main bet; the stake is debited in the same transaction. Records "
        "the balance seen.",
        "PHASE-1, BDL-1, BDL-AVAIL",
    ),
    "Participation.DecisionMade": (
        "The player's decision on their due hand, with the options open and the balance seen.",
        "PHASE-3, PHASE-4, INS-1",
    ),
    "Participation.DecisionTimedOut": (
        "No decision in time: the insurance offer is declined (`window`), or the system plays "
        "the hand.",
        "AUTO-1, INS-1",
    ),
    "Participation.PlayerDisconnected": (
        "The player dropped; the round goes on and the system plays their hands.",
        "DISC-1, AUTO-1",
    ),
    # Participation: consequences
    "Participation.HandOpened": (
        "After the initial deal a seated player's hand holds the shared initial cards.",
        "BDL-1",
    ),
    "Participation.CardToHand": (
        "The player's due hand took sequence card `index`: the next one this player had not "
        "taken, in their own play order.",
        "BDL-2, D9",
    ),
    "Participation.HandHit": (
        "A hand is owed the player's next sequence card.",
        "PHASE-4, FUNDS-2",
    ),
    "Participation.HandDoubled": ("A hand doubled: one more card, then it stands.", "DBL-1"),
    "Participation.HandSplit": (
        "A pair became two hands, played one after the other.",
        "SPLIT-1, SPLIT-2, SPLIT-3, D9",
    ),
    "Participation.HandSurrendered": ("A hand surrendered half its stake.", "SURR-1"),
    "Participation.WagerAdded": (
        "A stake added by a decision (double, split, insurance); debited in the same transaction.",
        "DBL-1, SPLIT-1, INS-1",
    ),
    "Participation.DecisionConverted": (
        "A double or split found too little balance and became a hit (11 or less) or a stand; "
        "records the balance seen and the amount needed.",
        "FUNDS-2",
    ),
    "Participation.AutoActed": ("The system hit or stood for the player.", "AUTO-1"),
    "Participation.HandStood": (
        "A hand is complete: the player stood, or it stood by itself (21, BJ, bust, after a "
        "double's card, split aces, AUTO-1, surrender, FUNDS-2).",
        "HAND-1, SCORE-2, AUTO-1, SURR-1, FUNDS-2",
    ),
    "Participation.WagerSettled": (
        "One wager's result: ratio, payout (stake included), net, rounding, and for side bets "
        "the pattern and paytable used; a refund (ERR-1, or PHASE-1 for a bet recorded after "
        "betting closed). A payout is credited in the same transaction.",
        "OUT-1..4, SCORE-3, SCORE-4, INS-1, SURR-1, MONEY-1, ERR-1, PHASE-1, BDL-PAIR, "
        "BDL-BUST, BDL-TRIO, BDL-POKER",
    ),
    "Participation.PaymentReversed": (
        "A payment already made in a cancelled round (`result`: the settlement paid) is taken "
        "back.",
        "ERR-1",
    ),
    # Shoe
    "Shoe.Opened": (
        "A shoe opens: rng (commitment only, never the seed), live, or test (its order; refused "
        "on production tables).",
        "SHOE-1, SHOE-3, D3",
    ),
    "Shoe.CardDrawn": ("A card left the shoe, at a position, for a round.", "SHOE-3"),
    "Shoe.BurnCardShown": ("The first card after a shuffle is shown.", "SHOE-2"),
    "Shoe.CardBurned": ("A card burned face down after the shown card.", "SHOE-2"),
    "Shoe.CutCardCameOut": ("The dealer reports the cut card (live shoes).", "SHOE-1"),
    "Shoe.CutCardReached": ("The round in progress is the last of the shoe.", "SHOE-1"),
    "Shoe.SeedRevealed": ("The rng seed is revealed when the shoe retires.", "SHOE-3"),
    "Shoe.Retired": ("The shoe is finished; nothing more leaves it.", "SHOE-1"),
    # Table
    "Table.Opened": (
        "An admin opens a table: its rules key and whether it is a production table (its "
        "rounds and shoes are production as it is; a test table takes test shoes and "
        "play-money accounts only). Deluxe tables also keep seats.",
        "DLX-1",
    ),
    "Table.SeatTaken": (
        "A player sits (two seats at most; real accounts only at a production table, play-money "
        "accounts only at a test table); records the balance seen.",
        "DLX-1",
    ),
    "Table.SeatLeft": ("A player leaves a seat.", "DLX-1"),
    "Table.RoundBegun": (
        "A round starts at the table, with the seated players' balances.",
        "DLX-4",
    ),
    "Table.RoundBetsClosed": ("The countdown ended; which seats carried a seat bet.", "DLX-3"),
    "Table.SeatRemoved": (
        "A player loses a seat: no valid seat bet in the round they sat down for (DLX-3), no "
        "seat bet in the previous round or a balance below the minimum bet (DLX-4).",
        "DLX-3, DLX-4",
    ),
    "Table.SeatKeptForOneRound": (
        "A seated player placed no seat bet: the seat is kept for this round only.",
        "DLX-4",
    ),
    # Wallet
    "Wallet.Opened": ("A player's wallet opens (real, test or play-for-fun account).", "DLX-1"),
    "Wallet.Deposited": ("Money in.", "MONEY-1"),
    "Wallet.Withdrawn": ("Money out, never beyond the balance.", "MONEY-1"),
    "Wallet.StakeDebited": ("A stake taken for a round's wager.", "MONEY-1"),
    "Wallet.PayoutCredited": ("A payout for a round's wager.", "MONEY-1"),
    "Wallet.RefundCredited": ("A stake refunded (cancellation, seat removal).", "ERR-1, DLX-3"),
    "Wallet.PaymentReversed": ("A payout taken back when its round was cancelled.", "ERR-1"),
    # ApiKey
    "ApiKey.Issued": (
        "An API key is issued: its role, the tables or player it is bound to, a label and the "
        "SHA-256 hash of its secret (never the secret).",
        "(access control: docs/api.md)",
    ),
    "ApiKey.Revoked": (
        "An API key is revoked: it authenticates nothing from then on, in every process.",
        "(access control: docs/api.md)",
    ),
}


def event_classes() -> Iterator[tuple[str, type]]:
    """Every stored event class by ``Aggregate.Event`` name: in the order of :data:`ABOUT`
    (inputs, then consequences, aggregate by aggregate), then any it does not describe."""
    found: dict[str, type] = {}
    for agg in AGGREGATES:
        for name, obj in vars(agg).items():
            if (
                isinstance(obj, type)
                and issubclass(obj, CanMutateAggregate)
                and name not in ("Event", "Created")
            ):
                found[f"{agg.__name__}.{name}"] = obj
    for name in ABOUT:
        if name in found:
            yield name, found.pop(name)
    yield from found.items()


#: What each stored format version changed, as the catalogue says it.
_UPCAST = {
    2: "version 1 recorded no `actor`: read back with the system actor, "
    "`domain.events.Derived.upcast_v1_v2`",
}


def kind_of(cls: type) -> str:
    if issubclass(cls, Input):
        return "input"
    if issubclass(cls, Consequence):
        return "consequence"
    return "lifecycle"


def render() -> str:
    lines = [
        "# Event catalogue",
        "",
        "Generated from the code by `python -m domain.catalogue > docs/events.md`; a test fails",
        "when this file and the code differ. Every event is stored under its class's topic",
        "(`domain.round:Round.CardDealt`). **Inputs** are facts from outside (verification",
        "re-executes them); **consequences** are derived by the rules and name the rule ID in",
        "their `rule` field (verification requires the same ones). `PHASE-n` cites item n of",
        '"Round phases" in RULES.md. Every event carries `actor` (`player`, `system`, `dealer`',
        "or `supervisor`), and for a command sent with an API key also the key's id (`key`)",
        "and `role`; inputs carry `request_id` and `client_time` beside the server's",
        "`timestamp`. Consequences are caused by the system: their `actor` is",
        '`{"kind": "system", "id": "roundaudit"}`. An event class whose payload changed',
        "says its stored format version; events stored in an older one are read back",
        "(upcast) as the entry says, their stored bytes unchanged. Money is a decimal",
        "string, cards are codes (`AS`, `10H`).",
        "",
    ]
    current = ""
    for name, cls in event_classes():
        agg = name.split(".")[0]
        if agg != current:
            current = agg
            lines += [f"## {agg}", ""]
        about, rules = ABOUT[name]
        own = [f for f in dataclasses.fields(cls) if f.name not in _LIBRARY_FIELDS]
        if issubclass(cls, Requested):  # a round's input: its own fields first
            own.sort(key=lambda f: f.name in _REQUESTED)
        if issubclass(cls, Derived):  # a consequence: its own fields first, then the actor
            own.sort(key=lambda f: f.name == "actor")
        fields = [f"`{f.name}`: {f.type}" for f in own]
        version = getattr(cls, "class_version", 1)
        lines += [
            f"### {name} ({kind_of(cls)})",
            "",
            about,
            "",
            f"- rules: {rules}",
            f"- fields: {', '.join(fields) if fields else '(none)'}",
            *(
                [f"- stored format: version {version} (`class_version`; {_UPCAST[version]})"]
                if version > 1
                else []
            ),
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())

"""Record the reference rounds in ``replays/recordings/``: ``python -m replays.record``.

This module owns the scripted rounds that the test suite re-executes and verifies (every
recording must re-execute to byte-identical consequence events, and verify clean from the file
alone). Each script plays one round on a stacked test shoe through the application's public
commands, into a fresh in-memory store with the production transcoder (canonical orjson bytes),
checks that the round finished and that the rules it is meant to cover were applied (their rule
IDs appear in the round's events; every transaction sealed its events in the store's Merkle
log at commit), signs a checkpoint with a key generated for this run, and exports it with
:func:`replays.export.export_round` (the export carries that key's public half: it proves the
file is intact, not who made it).

It also writes ``recordings/README.md``, the index of what each recording covers. Recordings are
regenerated whole (the server timestamps and the key change from run to run, nothing else).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.application import RoundAudit
from domain.persistence import environment_for
from domain.rules import get_rules
from replays.export import export_round
from replays.log import MerkleLog
from replays.merkle import generate_key
from replays.signer import Signer

RECORDINGS = Path(__file__).resolve().parent / "recordings"
#: The origin of the throwaway log each recording is checkpointed in.
ORIGIN = "roundaudit.invalid/recordings"
SUPERVISOR = "supervisor-1"

Step = tuple[Any, ...]


class RecordingError(RuntimeError):
    """A script could not be recorded as a reference round."""


@dataclass(frozen=True)
class Script:
    """One scripted round: who has what, the stacked cards, the commands in order.

    Steps: ``("bet", player, amount, spot)``, ``("side", player, kind, amount, spot)``,
    ``("behind", player, seat, amount, follow_double, follow_split)``, ``("close",)``,
    ``("decide", player, action[, hand[, amount]])``, ``("preselect", player, action, hand)``,
    ``("timeout", player)``, ``("disconnect", player)``, ``("window",)`` (the insurance timer
    runs out), ``("pause", reason)``, ``("resume", reason)``, ``("cancel", reason)``."""

    name: str
    variant: str
    title: str
    covers: tuple[str, ...]
    cards: tuple[str, ...]
    steps: tuple[Step, ...]
    balances: dict[str, str] = field(default_factory=dict)
    seats: dict[str, tuple[int, ...]] = field(default_factory=dict)  # deluxe table: who sits
    outcome: str = "settled"


SCRIPTS: tuple[Script, ...] = (
    # ------------------------------------------------------------------------------ deluxe
    Script(
        "deluxe-bet-behind-pair-funds1",
        "deluxe",
        "A double short of funds becomes a hit (FUNDS-1) on a seat whose Pair pays a coloured "
        "pair; a bet behind another seat that doubles does not follow the double (DLX-7)",
        ("DLX-5", "DLX-7", "DLX-PAIR", "FUNDS-1", "DBL-1", "DEALER-1", "OUT-2"),
        ("5H", "6S", "9C", "5D", "5C", "7D", "9S", "KH", "2D"),
        (
            ("bet", "ana", "10", 1),
            ("side", "ana", "pair", "5", 1),
            ("bet", "cruz", "10", 2),
            ("behind", "bea", 2, "10", False, False),
            ("close",),
            ("decide", "ana", "double"),
            ("decide", "ana", "stand"),
            ("decide", "cruz", "double"),
        ),
        balances={"ana": "20", "bea": "100"},
    ),
    Script(
        "deluxe-two-seats-surrender-split-double",
        "deluxe",
        "A two-seat player (the seat bet mirrored on the second seat) surrenders one seat and "
        "splits and doubles on the other",
        ("DLX-1", "DLX-2", "SURR-1", "SPLIT-1", "DBL-1", "OUT-2"),
        ("10H", "8D", "9S", "6C", "8S", "7H", "3C", "10D", "9H", "KD"),
        (
            ("bet", "ana", "10", 1),
            ("close",),
            ("decide", "ana", "surrender"),
            ("decide", "ana", "split"),
            ("decide", "ana", "double"),
            ("decide", "ana", "stand"),
        ),
        seats={"ana": (1, 3)},
    ),
    Script(
        "deluxe-pause-cancel-refunds",
        "deluxe",
        "A supervisor pauses, resumes, pauses again and cancels: every stake is refunded",
        ("ERR-1",),
        ("10S", "4H", "9D", "6C", "8H", "7S", "3D"),
        (
            ("bet", "ana", "10", 1),
            ("side", "ana", "pair", "5", 1),
            ("bet", "ben", "10", 2),
            ("close",),
            ("pause", "card-reader-fault"),
            ("resume", "fault-cleared"),
            ("decide", "ana", "hit"),
            ("pause", "card-reader-fault"),
            ("cancel", "unrecoverable-fault"),
        ),
        outcome="cancelled",
    ),
    Script(
        "deluxe-end2-every-hand-blackjack",
        "deluxe",
        "Every seated hand is a blackjack and the dealer has none: no further card",
        ("END-2", "OUT-1", "HAND-1"),
        ("AH", "QS", "9H", "KD", "AC", "7C"),
        (("bet", "ana", "10", 1), ("bet", "ben", "10", 2), ("close",)),
    ),
    # ---------------------------------------------------------------------------- multihand
    Script(
        "multihand-d7-split-aces-hit",
        "multihand",
        "Split aces may be hit (D7) and are played to completion",
        ("D7", "SPLIT-1", "DEALER-1", "OUT-3"),
        ("AH", "9C", "AC", "7D", "5H", "9S", "4C", "10D", "2S"),
        (
            ("bet", "ana", "10", 1),
            ("close",),
            ("decide", "ana", "split"),
            ("decide", "ana", "hit"),
            ("decide", "ana", "stand"),
            ("decide", "ana", "hit"),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "multihand-even-money-dealer-blackjack",
        "multihand",
        "Even money on a blackjack box, no insurance on the other; the dealer's blackjack ends "
        "the round",
        ("EVEN-1", "INS-1", "D5", "END-1"),
        ("AH", "10D", "AS", "KC", "9S", "QD"),
        (
            ("bet", "ana", "10", 1),
            ("bet", "ana", "10", 2),
            ("close",),
            ("decide", "ana", "even_money", "1"),
            ("decide", "ana", "no_insurance", "2"),
        ),
    ),
    Script(
        "multihand-three-boxes-auto1",
        "multihand",
        "Three boxes: a stand, a timeout played by AUTO-1, a double",
        ("AUTO-1", "DBL-1", "D5", "OUT-2"),
        ("10H", "5D", "9H", "10C", "7S", "4C", "2C", "8H", "2D", "KD", "10S"),
        (
            ("bet", "ana", "10", 1),
            ("bet", "ana", "10", 2),
            ("bet", "ana", "10", 3),
            ("close",),
            ("decide", "ana", "stand"),
            ("timeout", "ana"),
            ("decide", "ana", "double"),
        ),
    ),
    # ------------------------------------------------------------------------------- lucky7
    Script(
        "lucky7-three-sevens-after-split",
        "lucky7",
        "Three sevens: after a split the box's third card is the first split hand's (L7-3), "
        "paid 500:1 (L7-2)",
        ("L7-2", "SPLIT-1", "OUT-4"),
        ("7H", "8C", "7D", "9S", "7C", "10D"),
        (
            ("bet", "ana", "10", 1),
            ("side", "ana", "lucky7", "1", 1),
            ("close",),
            ("decide", "ana", "split"),
            ("decide", "ana", "stand"),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "lucky7-l7-3-dealer-blackjack",
        "lucky7",
        "The dealer's blackjack after the insurance window: no third card, two sevens paid as two",
        ("L7-3", "INS-1", "END-1"),
        ("7H", "KC", "7D", "AS"),
        (
            ("bet", "ana", "10", 1),
            ("side", "ana", "lucky7", "1", 1),
            ("close",),
            ("decide", "ana", "no_insurance"),
        ),
    ),
    Script(
        "lucky7-three-boxes",
        "lucky7",
        "Three boxes with a Lucky 7 each: one seven on a hit hand, a losing side bet, a double",
        ("L7-1", "L7-2", "DBL-1", "OUT-2"),
        ("7S", "10D", "5H", "9C", "9H", "10C", "6S", "8D", "3C", "KH"),
        (
            ("bet", "ana", "10", 1),
            ("bet", "ana", "10", 2),
            ("bet", "ana", "10", 3),
            ("side", "ana", "lucky7", "1", 1),
            ("side", "ana", "lucky7", "1", 2),
            ("side", "ana", "lucky7", "0.50", 3),
            ("close",),
            ("decide", "ana", "hit"),
            ("decide", "ana", "stand"),
            ("decide", "ana", "stand"),
            ("decide", "ana", "double"),
        ),
    ),
    # ----------------------------------------------------------------------------- european
    Script(
        "european-d8-double-lost-to-late-blackjack",
        "european",
        "No hole card: the dealer's second card after the double makes a blackjack, which "
        "takes the double too (D8)",
        ("D8", "DBL-1"),
        ("5H", "KS", "6C", "9D", "AS"),
        (("bet", "ana", "10", 1), ("close",), ("decide", "ana", "double")),
    ),
    Script(
        "european-insurance-no-hole-card",
        "european",
        "Insurance against an ace without a hole card pays when the late second card is a ten",
        ("INS-1", "D8"),
        ("10H", "AS", "9C", "KD"),
        (
            ("bet", "ana", "10", 1),
            ("close",),
            ("decide", "ana", "insurance", None, "5"),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "european-split-double-dealer-bust",
        "european",
        "A split, a double on hard 11 after it, the dealer busts",
        ("SPLIT-1", "DBL-1", "OUT-2"),
        ("8S", "6H", "8C", "3C", "9H", "10S", "10D", "7S"),
        (
            ("bet", "ana", "10", 1),
            ("close",),
            ("decide", "ana", "split"),
            ("decide", "ana", "double"),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "european-even-money",
        "european",
        "A blackjack against an ace takes even money (no insurance with a blackjack)",
        ("EVEN-1",),
        ("AH", "AS", "KD", "6C"),
        (("bet", "ana", "10", 1), ("close",), ("decide", "ana", "even_money")),
    ),
    # ---------------------------------------------------------------------------- boundless
    Script(
        "boundless-d9-split-on-the-shared-sequence",
        "boundless",
        "Three players share one hand; a split takes the next unconsumed cards of the sequence "
        "(D9); a Pair and a Bust Bonus",
        ("BDL-1", "BDL-2", "D9", "BDL-PAIR", "BDL-BUST", "DBL-1"),
        ("8H", "6C", "8D", "9S", "3C", "9D", "KH", "5S"),
        (
            ("bet", "ana", "10", None),
            ("bet", "ben", "10", None),
            ("bet", "cai", "10", None),
            ("side", "ana", "pair", "5", None),
            ("side", "ben", "bust", "5", None),
            ("close",),
            ("decide", "ana", "split"),
            ("decide", "ben", "hit"),
            ("decide", "cai", "double"),
            ("decide", "ben", "stand"),
            ("decide", "ana", "double"),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "boundless-side-bets-dealer-busts",
        "boundless",
        "7-7-7 on the shared hand and the dealer's first card: Lucky Trio, Poker Trio, Pair, and "
        "a three-card dealer bust (Bust Bonus)",
        ("BDL-TRIO", "BDL-POKER", "BDL-PAIR", "BDL-BUST", "DEALER-1"),
        ("7H", "7C", "7D", "9S", "KD"),
        (
            ("bet", "ana", "10", None),
            ("side", "sol", "trio", "5", None),
            ("side", "sol", "poker", "5", None),
            ("side", "sol", "pair", "5", None),
            ("side", "sol", "bust", "5", None),
            ("close",),
            ("decide", "ana", "stand"),
        ),
    ),
    Script(
        "boundless-timeout-disconnect-funds2",
        "boundless",
        "A disconnected player and a timed-out one played by AUTO-1; a double short of funds "
        "becomes a hit (FUNDS-2)",
        ("AUTO-1", "DISC-1", "FUNDS-2", "BDL-2"),
        ("5H", "9C", "6D", "8S", "KD"),
        (
            ("bet", "ana", "10", None),
            ("bet", "ben", "10", None),
            ("bet", "cai", "10", None),
            ("close",),
            ("disconnect", "cai"),
            ("timeout", "ana"),
            ("decide", "ben", "double"),
        ),
        balances={"ben": "15"},
    ),
)


def play(app: RoundAudit, script: Script) -> str:
    """Play one script into ``app``; return the round id."""
    table = f"rec-{script.name}"
    players: dict[str, None] = {}
    for step in script.steps:
        if step[0] in ("bet", "side", "behind"):
            players.setdefault(str(step[1]))
    for p in (*players, *script.seats):
        if p in script.seats or p in players:
            try:
                app.wallet(p)
            except Exception:
                app.open_wallet(p, account_type="test")  # a test table: play money
                app.deposit(p, script.balances.get(p, "1000"), transaction_id=f"deposit-{p}")
    if script.seats:
        app.open_table(table, variant=script.variant, production=False)
        for player, seats in script.seats.items():
            for seat in seats:
                app.sit(table, player=player, seat=seat)
    rid = app.start_round(
        table_id=table,
        round_number=1,
        variant=script.variant,
        production=False,
        test_order=list(script.cards),
    )
    for step in script.steps:
        op, *a = step
        if op == "bet":
            app.place_bet(rid, player=a[0], amount=a[1], spot=a[2])
        elif op == "side":
            app.place_bet(rid, player=a[0], kind=a[1], amount=a[2], spot=a[3])
        elif op == "behind":
            app.place_behind(
                rid, player=a[0], seat=a[1], amount=a[2], follow_double=a[3], follow_split=a[4]
            )
        elif op == "close":
            app.close_betting(rid)
        elif op == "decide":
            hand = a[2] if len(a) > 2 else None
            amount = a[3] if len(a) > 3 else None
            app.decide(rid, player=a[0], action=a[1], hand=hand, amount=amount)
        elif op == "preselect":
            app.preselect(rid, player=a[0], action=a[1], hand=a[2])
        elif op == "timeout":
            app.time_out(rid, player=a[0])
        elif op == "disconnect":
            app.disconnect(rid, player=a[0])
        elif op == "window":
            app.close_insurance_window(rid)
        elif op in ("pause", "resume", "cancel"):
            getattr(app, op)(rid, reason=a[0], supervisor=SUPERVISOR)
        else:  # pragma: no cover - a typo in a script
            raise ValueError(f"unknown step {op!r}")
    return rid


def check(app: RoundAudit, rid: str, script: Script) -> None:
    """The round finished as the script says, and cites every rule it is meant to cover."""
    view = app.round_view(rid)
    if view["phase"] != script.outcome:
        raise AssertionError(f"{script.name}: ended in {view['phase']}, not {script.outcome}")
    if get_rules(view["rules_key"]).variant != script.variant:
        raise AssertionError(f"{script.name}: not a {script.variant} round")
    events = app.round_events(rid)
    cited = {str(e["payload"].get("rule")) for e in events}
    if any(e["type"].endswith(".PlayerDisconnected") for e in events):
        cited.add("DISC-1")  # the disconnection is an input; AUTO-1 cites what it did
    missing = [r for r in script.covers if r not in cited and not _covered_otherwise(r, view)]
    if missing:
        raise AssertionError(f"{script.name}: no event cites {', '.join(missing)}")


def _covered_otherwise(rule: str, view: dict[str, Any]) -> bool:
    """Rules that no consequence event cites by name but that the round visibly applies."""
    if rule == "DLX-1":  # two seats of one player
        owners = [h["player"] for h in view["hands"]]
        return any(owners.count(p) > 1 for p in owners)
    if rule == "DLX-5":
        return any(w["kind"] == "behind" for w in view["wagers"])
    if rule == "BDL-1":
        return len({h["player"] for h in view["hands"]}) > 1
    if rule == "L7-1":
        return any(w["kind"] == "lucky7" for w in view["wagers"])
    return False


def record(scripts: Sequence[Script] = SCRIPTS, out: Path = RECORDINGS) -> list[Path]:
    """Play, check, seal and export the scripts, then write them and the index (of every
    script); nothing is written unless every script recorded. Returns the files written."""
    key = generate_key()
    made: list[tuple[Path, bytes]] = []
    for script in scripts:
        app = RoundAudit(env=environment_for("sqlite:///:memory:"))
        try:
            rid = play(app, script)
            check(app, rid, script)
            log = MerkleLog(app)
            Signer(app, key=key, origin=ORIGIN, log=log).run_once()
            data = export_round(app, UUID(rid), log=log, public_key=key.public_key())
        finally:
            app.close()
        made.append((out / f"{script.name}.jsonl", data))
    out.mkdir(parents=True, exist_ok=True)
    for path, data in made:
        path.write_bytes(data)
    index = [
        "# Recorded rounds",
        "",
        "Generated by `python -m replays.record` (do not edit by hand). Each file is a "
        "`roundaudit export` of one round on a stacked test shoe; `tests/replays/` re-executes "
        "and verifies every one of them (see docs/verification.md).",
        "",
        "| file | variant | what it shows | rules |",
        "|---|---|---|---|",
    ]
    index += [
        f"| `{s.name}.jsonl` | {s.variant} | {s.title} | {', '.join(s.covers)} |" for s in SCRIPTS
    ]
    (out / "README.md").write_text("\n".join(index) + "\n")
    return [path for path, _ in made]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replays.record", description=__doc__)
    parser.add_argument("--out", type=Path, default=RECORDINGS, help="folder to write")
    parser.add_argument("--only", nargs="*", default=None, help="script names to record")
    args = parser.parse_args(argv)
    scripts = [s for s in SCRIPTS if not args.only or s.name in args.only]
    for path in record(scripts, args.out):
        print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

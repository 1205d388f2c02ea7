"""``roundaudit replay ROUND_ID``: the table after each event of a round, step by step.

Prints, for every stored event of the round in order, what it records and the table right after
it: every hand with its cards, total, stakes and the options the rules allowed, the dealer's
cards (the hole card shown apart, marked face down), the balances the events recorded as seen,
and the wallet movements the step caused (``replays.steps``). A boundless round (a shared hand
and one participation per player) is replayed from its merged log, each step showing the players
it concerns, grouped per player, and the whole table at the last step. ``--json`` prints the same
as JSON (every step with the whole view); ``--file`` replays an export instead of a round of
the store. Steps are printed as they are replayed, so a large round is never held whole.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.main import Context


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="print a round step by step: the table after each event",
        description="Replay a round's stored events one by one and print the table after each.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("round", nargs="?", default=None, help="round id (UUID or TABLE#NUMBER)")
    which.add_argument("--file", default=None, help="replay an export file instead")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    from replays.steps import iter_bundle, json_chunks, text_chunks

    if args.file:
        from replays.export import read_export

        with open(args.file, "rb") as f:
            bundle = read_export(f).bundle
    else:
        from replays.bundle import StoreReader
        from replays.verify import round_id_of

        try:
            rid = round_id_of(args.round)
        except ValueError:
            print(
                f"error: {args.round!r} is not a round id (UUID or TABLE#NUMBER)", file=sys.stderr
            )
            return 2
        bundle = StoreReader(ctx.app()).round_bundle(rid)
        if not bundle.round:
            print(f"error: round {args.round} not found", file=sys.stderr)
            return 2
    # one step at a time: a round of thousands of players is never held whole
    steps = iter_bundle(bundle)
    try:
        if args.json:
            for chunk in json_chunks(steps.round_id, steps, lambda: steps.stopped):
                sys.stdout.write(chunk.decode())
            sys.stdout.write("\n")
        else:
            for text in text_chunks(steps.round_id, steps.events, steps, lambda: steps.stopped):
                sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped reading (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 1 if steps.stopped else 0


__all__ = ["add_parser", "run"]

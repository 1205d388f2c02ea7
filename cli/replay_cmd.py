"""``roundaudit replay ROUND_ID``: the table after each event of a round, step by step.

Prints, for every stored event of the round in order, what it records and the table right after
it: every hand with its cards, total, stakes and the options the rules allowed, the dealer's
cards (the hole card shown apart, marked face down), the balances the events recorded as seen,
and the wallet movements the step caused (``replays.steps``). ``--json`` prints the same as
JSON; ``--file`` replays an export instead of a round of the store.
"""

from __future__ import annotations

import argparse
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
    import orjson

    from replays.steps import replay_bundle, replay_text

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
    replay = replay_bundle(bundle)
    if args.json:
        sys.stdout.write(
            orjson.dumps(replay.as_json(), option=orjson.OPT_INDENT_2, default=str).decode() + "\n"
        )
    else:
        sys.stdout.write(replay_text(replay))
    return 1 if replay.stopped else 0


__all__ = ["add_parser", "run"]

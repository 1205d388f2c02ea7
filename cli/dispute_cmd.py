"""``roundaudit dispute ROUND_ID --player PLAYER_ID``: the dispute timeline of one player.

``ROUND_ID`` is the round's UUID or ``TABLE#NUMBER``. The timeline is read from the round's
own events (no projection to wait for); ``--json`` prints it as JSON for tools.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any
from uuid import UUID

from domain.errors import RoundNotFound
from domain.round import Round
from projections.dispute import format_timeline, timeline

if TYPE_CHECKING:
    from cli.main import Context


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "dispute",
        help="timeline of one player in one round (decisions, options, balances, rules)",
        description=(
            "Every event of the round that touched the player, in order: actor, client and "
            "server times, options open and the action taken, balances seen and after, the "
            "rule of every automatic action, and the cards each decision led to."
        ),
    )
    p.add_argument("round_id", metavar="ROUND_ID", help="round UUID, or TABLE#NUMBER")
    p.add_argument("--player", required=True, help="player id")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def round_uuid(text: str) -> UUID:
    """A round id from its UUID or ``TABLE#NUMBER``.

    >>> round_uuid("t1#1") == Round.create_id("t1", 1)
    True
    """
    try:
        return UUID(text)
    except ValueError:
        pass
    table, sep, number = text.rpartition("#")
    if not sep or not table or not number.isdigit():
        raise RoundNotFound(f"{text!r} is neither a round UUID nor TABLE#NUMBER")
    return Round.create_id(table, int(number))


def run(args: argparse.Namespace, ctx: Context) -> int:
    t = timeline(ctx.app(), round_uuid(args.round_id), args.player)
    if args.json:
        print(json.dumps(t.as_json(), indent=2))
    else:
        print(format_timeline(t))
    return 0


__all__ = ["add_parser", "round_uuid", "run"]

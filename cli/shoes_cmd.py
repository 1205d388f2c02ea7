"""``roundaudit shoes retire SHOE_ID``: retire a shoe from the command line.

Retiring a shoe ends it (SHOE-1: nothing more is drawn from it) and, for an RNG shoe, reveals
its seed as a ``SeedRevealed`` event, after which anyone can recompute every card it dealt
(``docs/spec/shuffle.md``). This is what a floor supervisor does at the end of a live shoe, or
an operator for a shoe left open; the same command as ``POST /shoes/{id}/retire``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.main import Context

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    s: argparse.ArgumentParser = subparsers.add_parser(
        "shoes", help="shoes: retire one (reveals an RNG shoe's seed)"
    )
    sub = s.add_subparsers(dest="shoes_command", metavar="ACTION", required=True)
    retire = sub.add_parser("retire", help="retire a shoe; an RNG shoe's seed is revealed")
    retire.add_argument("shoe", help="the shoe id (UUID)")
    retire.add_argument("--json", action="store_true", help="print the shoe as JSON")
    s.set_defaults(handler=run)
    return s


def run(args: argparse.Namespace, ctx: Context) -> int:
    import orjson

    view = ctx.app().retire_shoe(args.shoe)
    if args.json:
        sys.stdout.write(orjson.dumps(view, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(
        f"retired shoe {view['shoe_id']} ({view['kind']}, table {view['table_id']}, "
        f"{view['position']} card(s) drawn)"
    )
    if view.get("revealed_seed"):
        print(f"seed {view['revealed_seed']} (commitment {view['commitment']})")
    return 0

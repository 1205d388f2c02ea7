"""``roundaudit export ROUND_ID`` and ``roundaudit import FILE``: a round's log as a file.

``export`` writes the round's canonical JSON lines (``replays.export``: header, the round's
events, its shoe, its wallet movements, the leaves committing to them with their inclusion
proofs, and the checkpoint that proves them) to ``--output`` or standard output. ``import``
verifies an export completely and writes its records, as they were stored, into the store
(refused, with nothing written, when it does not verify, unless ``--force``). Both parsers
carry their own handler; :func:`run` dispatches on the command name.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.main import Context


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from cli.trust import add_key_options

    e: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="write a round's log as canonical JSON lines",
        description="Export a round: header, events, shoe, wallet movements and seal, one "
        "canonical JSON object per line.",
    )
    e.add_argument("round", help="round id (UUID or TABLE#NUMBER)")
    e.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    add_key_options(e)
    e.set_defaults(handler=run)

    i: argparse.ArgumentParser = subparsers.add_parser(
        "import",
        help="verify an exported round and write its records into the store",
        description="Import an export into the store, records exactly as stored, after "
        "verifying it completely.",
    )
    i.add_argument("file", help="the export file")
    i.add_argument("--force", action="store_true", help="import even if it does not verify")
    add_key_options(i)
    i.set_defaults(handler=run)
    return e


def run(args: argparse.Namespace, ctx: Context) -> int:
    from cli.trust import trust_policy
    from replays.verify import round_id_of, verdict_lines

    policy = trust_policy(args)
    key = policy.operator.ed25519() if policy.operator is not None else None
    if args.command == "export":
        from replays.export import export_round

        try:
            rid = round_id_of(args.round)
        except ValueError:
            print(f"error: {args.round!r} is not a round id", file=sys.stderr)
            return 2
        data = export_round(ctx.app(), rid, public_key=key, policy=policy)
        if args.output:
            with open(args.output, "wb") as f:
                f.write(data)
            lines = data.count(b"\n")
            print(f"exported round {rid} to {args.output} ({lines} lines)")
        else:
            sys.stdout.buffer.write(data)
        return 0
    from replays.export import import_round

    with open(args.file, "rb") as f:
        result = import_round(ctx.app(), f, policy=policy, force=args.force)
    for line in verdict_lines(result.verdict):
        print(line)
    print(
        f"imported round {result.round_id}: {result.written} record(s) written, "
        f"{result.skipped} already present"
    )
    return 0


__all__ = ["add_parser", "run"]

"""``roundaudit rtp``: the theoretical return of every variant and bet, and its findings.

Reads the report stored for the variant's current rules key (``domain/rtp/reports``; a published
key never changes, so neither does its RTP) and prints the main game, bets behind, every side
bet and insurance, the published figure and the findings (``RTP-PUBLISHED-MISMATCH``,
``RTP-BELOW-FLOOR``). ``--json`` prints the same as ``GET /rules/{key}/rtp``.

``--compute`` recomputes instead of reading (a few seconds of CPU per variant; what-if figures
take longer); ``--write-cache`` recomputes and stores the reports (for a new rules key).
The floor is a jurisdiction setting: ``--floor`` or ``ROUNDAUDIT_RTP_FLOOR`` (default 0.85).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.rtp.report import DEFAULT_FLOOR, cache_name, compute, dumps, load, parse_floor, summary
from domain.rules import CURRENT, PUBLISHED, get_rules

if TYPE_CHECKING:
    from cli.main import Context

FLOOR_ENV = "ROUNDAUDIT_RTP_FLOOR"
DATA_DIR = Path(__file__).resolve().parent.parent / "domain" / "rtp" / "reports"


def _floor_arg(text: str) -> Decimal:
    try:
        return parse_floor(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "rtp",
        help="theoretical RTP of every variant and bet, and its findings",
        description=(
            "The exact return to player of a variant's main game and side bets under its "
            "published rules key, with the findings against the operator's sheets."
        ),
    )
    p.add_argument(
        "variant",
        nargs="?",
        default=None,
        help=f"variant or rules key ({', '.join(CURRENT)}; default: all)",
    )
    p.add_argument("--json", action="store_true", help="JSON, as GET /rules/{key}/rtp")
    p.add_argument("--floor", type=_floor_arg, default=None, help=f"default ${FLOOR_ENV} or 0.85")
    p.add_argument("--compute", action="store_true", help="recompute instead of reading")
    p.add_argument(
        "--write-cache", action="store_true", help="recompute and store the reports (new keys)"
    )
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    floor = args.floor
    if floor is None:
        try:
            floor = parse_floor(os.environ.get(FLOOR_ENV, str(DEFAULT_FLOOR)))
        except ValueError as e:
            print(f"error: {FLOOR_ENV}: {e}", file=sys.stderr)
            return 2
    keys = [get_rules(args.variant).key] if args.variant else [CURRENT[v] for v in CURRENT]
    reports = []
    for key in keys:
        if args.compute or args.write_cache:
            started = time.process_time()
            report = compute(PUBLISHED[key])
            print(f"{key}: computed in {time.process_time() - started:.1f} s CPU", file=sys.stderr)
            if args.write_cache:
                (DATA_DIR / cache_name(key)).write_text(dumps(report), encoding="utf-8")
        else:
            report = load(key)
        reports.append(summary(report, floor=floor))
    if args.json:
        out: Any = reports[0] if args.variant else reports
        print(json.dumps(out, indent=2))
        return 0
    for r in reports:
        _print(r)
    return 0


def _pct(text: str, places: int = 4) -> str:
    return f"{(Decimal(text) * 100).quantize(Decimal(1).scaleb(-places))}%"


def _print(r: dict[str, Any]) -> None:
    main = r["main"]
    print(f"{r['variant']} ({r['rules_key']})")
    published = r["published"]
    stated = f", published {published['wording']}" if published else ", no published RTP"
    print(
        f"  main game       RTP {_pct(main['rtp'])}  house edge {main['house_edge_percent'][:8]}%"
        f"  variance {main['variance']}{stated}"
    )
    print(f"    strategy {main['strategy']['name']}: {main['strategy']['composition_dependent']}")
    for follow, fig in main.get("behind", {}).items():
        print(f"  behind {follow:<14} RTP {_pct(fig['rtp'])}  variance {fig['variance']}")
    for name, fig in r["side_bets"].items():
        hits = ", ".join(
            f"{p} {_pct(f, 3)}" for p, f in fig["hit_frequency"].items() if p != "lose"
        )
        print(f"  {name:<15} RTP {_pct(fig['rtp'])}  variance {Decimal(fig['variance']):.4f}")
        print(f"    {hits}")
    for f in r["findings"]:
        print(f"  FINDING {f['code']}: {f['message']}")
    print()


__all__ = ["FLOOR_ENV", "add_parser", "run"]

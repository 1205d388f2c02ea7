"""``roundaudit verify``, ``roundaudit seal`` and ``roundaudit proof``: the audit commands.

This module adds three subcommands (each parser carries its own handler; :func:`run` dispatches
on the command name):

``verify ROUND_ID | --file FILE... | --since DATE [--until DATE] | --all``
    Verify rounds (``replays.verify``): re-execution, the shoe, the money, and the seal. A round
    is a UUID or ``TABLE#NUMBER``. With a progress bar on a terminal; each failing round is
    printed with its discrepancies; the last line is ``N passed, N failed``; the exit code is 1
    when anything failed (a round, or the Merkle log itself). ``--json PATH`` also writes the
    whole report as JSON (``-`` for standard output, before the last line).
``seal [--follow SECONDS]``
    Append the head of every round finished since the last run to the Merkle log and sign a
    checkpoint (``replays.log``). Run it periodically, or as a worker with ``--follow``: it then
    seals again every SECONDS (printing only runs that sealed something), which keeps the window
    between a round's end and its seal that short.
``proof ROUND_ID | --consistency FIRST SECOND | --checkpoint [N] | --key``
    Print, as JSON, the inclusion proof of a sealed round, a consistency proof between two
    checkpoints, a checkpoint, or the public key that checks the checkpoints.

Keys: the checkpoint signing key is a PEM file named by ``--signing-key`` or
``ROUNDAUDIT_SIGNING_KEY`` (default ``data/roundaudit-signing-key.pem``; ``seal`` generates it
when absent, for development, and says so). Verification takes the public key from
``--public-key`` or ``ROUNDAUDIT_PUBLIC_KEY`` (PEM, or 64 hex digits), else from the signing
key file if it exists; without one, signatures are reported as not checked.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from cli.main import Context

SIGNING_KEY_ENV = "ROUNDAUDIT_SIGNING_KEY"
PUBLIC_KEY_ENV = "ROUNDAUDIT_PUBLIC_KEY"
DEFAULT_SIGNING_KEY = "data/roundaudit-signing-key.pem"


# ------------------------------------------------------------------------------ keys
def signing_key_path(args: argparse.Namespace) -> Path:
    return Path(
        getattr(args, "signing_key", None) or os.environ.get(SIGNING_KEY_ENV) or DEFAULT_SIGNING_KEY
    )


def public_key(args: argparse.Namespace) -> Ed25519PublicKey | None:
    """The key that checks checkpoints (see the module docstring)."""
    from replays.merkle import load_public_key, parse_public_key

    given = getattr(args, "public_key", None) or os.environ.get(PUBLIC_KEY_ENV)
    if given:
        path = Path(given)
        return load_public_key(path) if path.exists() else parse_public_key(given)
    path = signing_key_path(args)
    if path.exists():
        return load_public_key(path)
    return None


def _key_options(p: argparse.ArgumentParser, *, signing: bool = False) -> None:
    p.add_argument(
        "--public-key",
        default=None,
        help=f"public key checking the checkpoints: PEM file or hex (default ${PUBLIC_KEY_ENV}, "
        "else the signing key's)",
    )
    p.add_argument(
        "--signing-key",
        default=None,
        help=f"checkpoint signing key, PEM (default ${SIGNING_KEY_ENV} or {DEFAULT_SIGNING_KEY})"
        + ("; generated when absent" if signing else ""),
    )


# ------------------------------------------------------------------------------ parsers
def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    v: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="verify rounds: re-execution, shoe, money, seal",
        description=(
            "Verify rounds: re-execute their inputs under the stored rules, check the shoe's "
            "cards, the wallet movements and the tamper-evident seal. Ends with the line "
            "'N passed, N failed'; exits 1 when anything failed."
        ),
    )
    which = v.add_mutually_exclusive_group(required=True)
    which.add_argument("round", nargs="?", default=None, help="round id (UUID or TABLE#NUMBER)")
    which.add_argument(
        "--file", nargs="+", default=None, help="verify export files (no store needed)"
    )
    which.add_argument("--since", default=None, help="rounds started on or after DATE (ISO 8601)")
    which.add_argument("--all", action="store_true", help="every round of the store")
    v.add_argument("--until", default=None, help="with --since: rounds started before DATE")
    v.add_argument("--json", default=None, metavar="PATH", help="write the JSON report ('-')")
    v.add_argument("-v", "--verbose", action="store_true", help="print passing rounds too")
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _key_options(v)
    v.set_defaults(handler=run)

    s: argparse.ArgumentParser = subparsers.add_parser(
        "seal",
        help="append finished rounds to the Merkle log and sign a checkpoint",
        description="Seal every round finished since the last run into the Merkle log, then "
        "sign a checkpoint of the log with Ed25519.",
    )
    s.add_argument(
        "--checkpoint-every",
        type=int,
        default=1000,
        metavar="N",
        help="also sign a checkpoint every N new leaves (default 1000)",
    )
    s.add_argument("--no-checkpoint", action="store_true", help="append only, sign nothing")
    s.add_argument(
        "--follow",
        type=float,
        default=None,
        metavar="SECONDS",
        help="keep running: seal again every SECONDS (a worker; stop it with Ctrl-C/SIGTERM)",
    )
    s.add_argument(
        "--max-runs",
        type=int,
        default=None,
        metavar="N",
        help="with --follow: stop after N runs (default: never)",
    )
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _key_options(s, signing=True)
    s.set_defaults(handler=run)

    p: argparse.ArgumentParser = subparsers.add_parser(
        "proof",
        help="print an inclusion or consistency proof, a checkpoint or the public key (JSON)",
        description="Proofs a third party checks without the service (RFC 9162, Ed25519).",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("round", nargs="?", default=None, help="inclusion proof of this round")
    what.add_argument(
        "--consistency",
        nargs=2,
        type=int,
        metavar=("FIRST", "SECOND"),
        help="consistency proof between two checkpoint numbers",
    )
    what.add_argument(
        "--checkpoint",
        nargs="?",
        type=int,
        const=0,
        default=None,
        metavar="N",
        help="checkpoint N (default the latest)",
    )
    what.add_argument("--key", action="store_true", help="the public key (PEM, hex, key id)")
    p.add_argument(
        "--in-checkpoint",
        type=int,
        default=None,
        metavar="N",
        help="inclusion in checkpoint N instead of the latest covering the round",
    )
    _key_options(p)
    p.set_defaults(handler=run)
    return v


def run(args: argparse.Namespace, ctx: Context) -> int:
    if args.command == "seal":
        return _seal(args, ctx)
    if args.command == "proof":
        return _proof(args, ctx)
    return _verify(args, ctx)


# ------------------------------------------------------------------------------ verify
def _verify(args: argparse.Namespace, ctx: Context) -> int:
    import orjson
    from tqdm import tqdm

    from replays.reexecute import Verdict
    from replays.verify import (
        StoreVerifier,
        parse_when,
        round_id_of,
        summary_line,
        verdict_lines,
        verify_log,
    )

    key = public_key(args)
    verdicts: list[Verdict] = []
    report: dict[str, Any] = {}
    log_failed = False
    if args.file:
        from replays.export import read_export, verify_export

        for name in args.file:
            with open(name, "rb") as f:
                exported = read_export(f)
            verdict = verify_export(exported, public_key=key)
            verdicts.append(verdict)
            _print(verdict_lines(verdict, verbose=args.verbose))
    else:
        if args.until and not (args.since or args.all):
            print("error: --until goes with --since", file=sys.stderr)
            return 2
        verifier = StoreVerifier(ctx.app(), public_key=key)
        log = verify_log(verifier.log, key)
        report["log"] = log.as_json()
        if not log.ok:
            log_failed = True
            _print(["FAIL merkle log", *(f"  {p}" for p in log.problems)])
        elif args.verbose:
            _print([f"ok merkle log ({log.size} leaves, {log.checkpoints} checkpoints)"])
        if args.round:
            try:
                ids = [round_id_of(args.round)]
            except ValueError:
                print(
                    f"error: {args.round!r} is not a round id (UUID or TABLE#NUMBER)",
                    file=sys.stderr,
                )
                return 2
        else:
            since = parse_when(args.since) if args.since else None
            until = parse_when(args.until, end=True) if args.until else None
            ids = verifier.round_ids(since=since, until=until)
        progress = not args.no_progress and sys.stderr.isatty() and len(ids) > 1
        bar = tqdm(
            total=len(ids),
            desc="verify",
            unit="round",
            file=sys.stderr,
            disable=not progress,
            dynamic_ncols=True,
        )
        try:
            for verdict in verifier.verify_many(ids):
                verdicts.append(verdict)
                if not verdict.ok or args.verbose:
                    for line in verdict_lines(verdict, verbose=args.verbose):
                        tqdm.write(line, file=sys.stdout)
                bar.update(1)
        finally:
            bar.close()
    failed = sum(not v.ok for v in verdicts)
    passed = len(verdicts) - failed
    if args.json:
        report["rounds"] = [v.as_json() for v in verdicts]
        report["passed"], report["failed"] = passed, failed
        data = orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS, default=str)
        if args.json == "-":
            sys.stdout.write(data.decode() + "\n")
        else:
            Path(args.json).write_bytes(data + b"\n")
    print(summary_line(passed, failed))
    return 1 if failed or log_failed else 0


# ------------------------------------------------------------------------------ seal
def _seal(args: argparse.Namespace, ctx: Context) -> int:
    from tqdm import tqdm

    from replays.log import seal
    from replays.merkle import key_id, load_private_key

    key = None
    if not args.no_checkpoint:
        path = signing_key_path(args)
        key, created = load_private_key(path, create=True)
        if created:
            print(
                f"warning: generated a new checkpoint signing key at {path} (development); "
                f"key id {key_id(key.public_key())}",
                file=sys.stderr,
            )
    if args.checkpoint_every < 1:
        print("error: --checkpoint-every must be 1 or more", file=sys.stderr)
        return 2
    if args.follow is not None and not args.follow > 0:
        print("error: --follow takes a number of seconds greater than 0", file=sys.stderr)
        return 2
    if args.max_runs is not None and (args.follow is None or args.max_runs < 1):
        print("error: --max-runs takes 1 or more, with --follow", file=sys.stderr)
        return 2
    progress = not args.no_progress and sys.stderr.isatty() and args.follow is None
    if args.follow is not None:
        _stop_on_sigterm()
    runs = 0
    try:
        while True:
            bar = tqdm(desc="seal", unit="round", file=sys.stderr, disable=not progress)
            try:
                report = seal(
                    ctx.app(),
                    key=key,
                    checkpoint_every=args.checkpoint_every,
                    on_round=functools.partial(bar.update, 1),
                )
            finally:
                bar.close()
            runs += 1
            if args.follow is None or report.sealed or report.checkpoints:
                _print(report.lines())
            if args.follow is None or (args.max_runs is not None and runs >= args.max_runs):
                return 0
            time.sleep(args.follow)
    except KeyboardInterrupt:
        # each leaf is appended with its seal row in one transaction: nothing is half-written,
        # and the next run carries on from the last sealed round
        print(f"stopped after {runs} run(s)", file=sys.stderr)
        return 0


def _stop_on_sigterm() -> None:
    """A worker stopped by its supervisor (SIGTERM) stops as on Ctrl-C."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


# ------------------------------------------------------------------------------ proof
def _proof(args: argparse.Namespace, ctx: Context) -> int:
    import orjson

    from replays.log import LogError, MerkleLog, consistency_document, inclusion_document
    from replays.merkle import key_id, public_pem, raw_public

    if args.key:
        key = public_key(args)
        if key is None:
            print("error: no key: give --public-key or --signing-key", file=sys.stderr)
            return 2
        doc: Any = {"pem": public_pem(key), "raw": raw_public(key).hex(), "key_id": key_id(key)}
    else:
        from replays.verify import round_id_of

        log = MerkleLog(ctx.app()).refresh()
        try:
            if args.round:
                doc = inclusion_document(
                    log, round_id_of(args.round), checkpoint=args.in_checkpoint
                )
            elif args.consistency:
                doc = consistency_document(log, *args.consistency)
            else:
                cps = log.checkpoints()
                if not cps:
                    raise LogError("the log has no checkpoint yet")
                n = args.checkpoint or cps[-1].number
                if not 1 <= n <= len(cps):
                    raise LogError(f"the log has checkpoints 1..{len(cps)}")
                doc = cps[n - 1].as_json()
        except (LogError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    sys.stdout.write(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
    )
    return 0


def _print(lines: Any) -> None:
    for line in lines:
        print(line)


__all__ = ["add_parser", "public_key", "run", "signing_key_path"]

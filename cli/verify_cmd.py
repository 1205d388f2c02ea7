"""``roundaudit verify``, ``roundaudit seal`` and ``roundaudit proof``: the audit commands.

This module adds three subcommands (each parser carries its own handler; :func:`run` dispatches
on the command name). Keys, origin and witnesses: ``cli.trust``.

``verify ROUND_ID | --file FILE... | --since DATE [--until DATE] | --all``
    Verify rounds (``replays.verify``): re-execution, the shoe, the money, and the log (every
    record byte for byte in its transaction's leaf, the leaves in a checkpoint signed by the
    pinned operator key, final when a quorum of the trusted witnesses cosigned it). A store
    verification also checks the log as a whole: every stored event in exactly one leaf (with
    ``--all`` and ``--since``; one round's records are checked by the round), every checkpoint
    signed and consistent, and the log consistent with what each witness with a URL
    cosigned last (a rollback or a fork fails). A round is a UUID or ``TABLE#NUMBER``. With a
    progress bar on a terminal; each failing round is printed with its discrepancies, a failing
    log with its findings; the last line is ``N passed, N failed`` (``, N not final`` with
    witnesses; ``; the log failed: <checks>``); the exit code is 1 when anything failed.
    ``--json PATH`` also writes the whole report as JSON (``-`` for standard output).
    ``--workers N`` (a local Dask cluster) or ``--scheduler tcp://HOST:8786`` fans the rounds
    out by position ranges (``replays.distributed``) and gathers one report, the same.
    ``--state PATH`` (``ROUNDAUDIT_VERIFIER_STATE``; default one file per database URL under
    ``$XDG_STATE_HOME/roundaudit/verifier/``, ``none`` for no state) is the verifier's own
    record of the log it checked (``replays.logstate``): one round reads only the log's new
    leaves; ``--all`` and ``--since`` read the whole log and check it against the state.
``seal [--follow [SECONDS]]``
    The checkpoint signer (``replays.signer``): signs a C2SP checkpoint of the log when it has
    grown, has it cosigned by the witnesses, stores it. Once, or as a worker with ``--follow``
    (every second by default): the window in which an edit of stored events could go unseen.
``proof ROUND_ID | --consistency FIRST SECOND | --checkpoint [N] | --key``
    Print, as JSON, the inclusion proofs of a round's leaves in one checkpoint (each also as a
    C2SP tlog-proof), a consistency proof between two checkpoints, a checkpoint, or the
    operator's public key (its vkey, PEM and raw hex).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.trust import add_key_options, origin, signing_key, trust_policy

if TYPE_CHECKING:
    from cli.main import Context

DEFAULT_INTERVAL = 1.0
#: Said under a log that failed against the verifier's state (fork, rollback): which file it
#: was compared with, and the one case where that is no attack.
_STATE_HINT = (
    "the log was compared with this verifier's state of it, {state}: a store replaced on "
    "purpose by a new one at the same URL is verified with a new --state file (or --state "
    "none); otherwise the store's log was rewritten or cut back since this verifier checked it"
)

__all__ = ["add_parser", "run"]


# ------------------------------------------------------------------------------ parsers
def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    v: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="verify rounds and the log: re-execution, shoe, money, commit, checkpoints",
        description=(
            "Verify rounds: re-execute their inputs under the stored rules, check the shoe's "
            "cards, the wallet movements, and that every record is the one its transaction "
            "committed to in the Merkle log, proven by a signed (and witnessed) checkpoint. "
            "Ends with the line 'N passed, N failed'; exits 1 when anything failed."
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
    v.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait for a witness"
    )
    v.add_argument(
        "--state",
        default=None,
        metavar="PATH",
        help=(
            "the verifier's own state of the store's log (an SQLite file it creates; "
            "$ROUNDAUDIT_VERIFIER_STATE; default: one file per database URL under "
            "$XDG_STATE_HOME/roundaudit/verifier/; 'none': keep no state). It keeps what this "
            "verifier already checked: the tree's size, root and node hashes (each leaf's "
            "hash) and its own index of which record each leaf commits to, all computed from "
            "leaves it read and hashed itself, never taken from the operator. With it, "
            "verifying a round reads only the log's new leaves and the round's own, compares "
            "each with the hash kept (a rewritten leaf, a cut-back or forked log, a deleted "
            "record fail); --all and --since read the whole log and check it against the state. "
            "Keep it where the operator cannot write"
        ),
    )
    add_key_options(v)
    _add_distributed_options(v)
    v.set_defaults(handler=run)

    s: argparse.ArgumentParser = subparsers.add_parser(
        "seal",
        help="sign and witness a checkpoint of the Merkle log (once, or as a worker)",
        description="Every transaction seals its own events at commit; this signs a C2SP "
        "checkpoint of the log when it has grown, sends it to the witnesses for their "
        "cosignatures, and stores it. With --follow, again every SECONDS (default 1).",
    )
    s.add_argument(
        "--follow",
        type=float,
        nargs="?",
        const=DEFAULT_INTERVAL,
        default=None,
        metavar="SECONDS",
        help=f"keep running: sign every SECONDS while the log grows (default {DEFAULT_INTERVAL};"
        " a worker, stopped by Ctrl-C/SIGTERM)",
    )
    s.add_argument(
        "--max-runs",
        type=int,
        default=None,
        metavar="N",
        help="with --follow: stop after N runs (default: never)",
    )
    s.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait for a witness"
    )
    add_key_options(s, signing=True)
    s.set_defaults(handler=run)

    p: argparse.ArgumentParser = subparsers.add_parser(
        "proof",
        help="print a round's inclusion proofs, a consistency proof, a checkpoint or the key",
        description="Proofs a third party checks without the service (RFC 6962, C2SP).",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("round", nargs="?", default=None, help="inclusion proofs of this round")
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
    what.add_argument("--key", action="store_true", help="the operator key (vkey, PEM, hex)")
    p.add_argument(
        "--in-checkpoint",
        type=int,
        default=None,
        metavar="N",
        help="inclusion in checkpoint N instead of the latest covering the round",
    )
    add_key_options(p)
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

    from replays.logstate import StateError
    from replays.reexecute import Verdict
    from replays.verify import (
        LogVerdict,
        StoreVerifier,
        parse_when,
        round_id_of,
        summary_line,
        verdict_lines,
        verify_log,
    )

    if (args.workers is not None or args.scheduler) and not (args.since or args.all):
        print("error: --workers and --scheduler go with --since or --all", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print("error: --workers takes 1 or more", file=sys.stderr)
        return 2
    policy = trust_policy(args)
    verdicts: list[Verdict] = []
    report: dict[str, Any] = {}
    log: LogVerdict | None = None
    if args.file:
        from replays.export import read_export, verify_export

        for name in args.file:
            with open(name, "rb") as f:
                exported = read_export(f)
            verdict = verify_export(exported, policy=policy)
            verdicts.append(verdict)
            _print(verdict_lines(verdict, verbose=args.verbose))
    else:
        if args.until and not (args.since or args.all):
            print("error: --until goes with --since", file=sys.stderr)
            return 2
        app = ctx.reader()  # the read replica, when ROUNDAUDIT_READ_DATABASE_URL names one
        state = _state_path(args, ctx)
        fanned = args.workers is not None or bool(args.scheduler)  # with --all or --since
        try:
            verifier = StoreVerifier(
                app,
                policy=policy,
                state=state,
                reread=not args.round,  # a whole-store run reads the whole log anyway
                deferred=fanned,  # the fan-out's rounds go out before the log is read
            )
        except StateError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        # the whole store's events against the leaves for --all / --since; one round's own
        # records are checked against their leaves by the round's `commit` check
        whole = None if args.round else app
        bars: list[Any] = []

        def checked(merkle: Any, rounds: int | None = None) -> None:
            """The log as a whole checked and its findings printed, then (given ``rounds``)
            the progress bar of that many rounds started: before the first round's verdict."""
            nonlocal log
            log = verify_log(merkle, policy, app=whole, timeout=args.timeout)
            report["log"] = log.as_json()
            if not log.ok:
                _print(["FAIL merkle log", *(f"  {p}" for p in log.problems)])
                if state is not None and {"fork", "rollback"} & set(log.failed_checks):
                    _print([f"  note: {_STATE_HINT.format(state=state)}"])
            elif args.verbose:
                _print([f"ok merkle log ({log.size} leaves, {log.checkpoints} checkpoints)"])
            if not log.ok or args.verbose:
                _print([f"  note: {n}" for n in log.notes])
            if rounds is not None:
                start(rounds)

        def start(rounds: int) -> None:
            progress = not args.no_progress and sys.stderr.isatty() and rounds > 1
            bars.append(
                tqdm(
                    total=rounds,
                    desc="verify",
                    unit="round",
                    file=sys.stderr,
                    disable=not progress,
                    dynamic_ncols=True,
                )
            )

        found: Any
        if fanned:
            since = parse_when(args.since) if args.since else None
            until = parse_when(args.until, end=True) if args.until else None
            found = _fanned(args, ctx, verifier, state, since, until, checked)
        else:
            checked(verifier.log)
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
            start(len(ids))
            found = verifier.verify_many(ids)
        try:
            for verdict in found:
                verdicts.append(verdict)
                if not verdict.ok or args.verbose:
                    for line in verdict_lines(verdict, verbose=args.verbose):
                        tqdm.write(line, file=sys.stdout)
                bars[0].update(1)
        except StateError as exc:
            if not fanned:
                raise
            # the fan-out's driver reads the log (from its state) after listing the rounds
            print(f"error: {exc}", file=sys.stderr)
            return 2
        finally:
            for bar in bars:
                bar.close()
    failed = sum(not v.ok for v in verdicts)
    passed = len(verdicts) - failed
    not_final = sum(v.ok and v.final is False for v in verdicts)
    if args.json:
        report["rounds"] = [v.as_json() for v in verdicts]
        report["passed"], report["failed"], report["not_final"] = passed, failed, not_final
        data = orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS, default=str)
        if args.json == "-":
            sys.stdout.write(data.decode() + "\n")
        else:
            Path(args.json).write_bytes(data + b"\n")
    print(summary_line(passed, failed, not_final=not_final, log=log))
    return 1 if failed or (log is not None and not log.ok) else 0


def _state_path(args: argparse.Namespace, ctx: Context) -> Path | None:
    """The verifier's state file: ``--state``, else ``$ROUNDAUDIT_VERIFIER_STATE``, else one
    per database URL under ``$XDG_STATE_HOME``; None for ``none``."""
    from replays.logstate import STATE_ENV, state_path

    given = args.state or os.environ.get(STATE_ENV)
    return state_path(given, ctx.database_url, os.environ.get("XDG_STATE_HOME"))


def _add_distributed_options(v: argparse.ArgumentParser) -> None:
    """``--workers N`` / ``--scheduler URL``: the rounds fanned out over Dask
    (``replays.distributed``); the log as a whole is still checked here, once."""
    where = v.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="verify the rounds on a local Dask cluster of N worker processes",
    )
    where.add_argument(
        "--scheduler",
        default=None,
        metavar="URL",
        help="verify the rounds on a running Dask cluster (tcp://HOST:8786)",
    )


def _fanned(
    args: argparse.Namespace,
    ctx: Context,
    verifier: Any,
    state: Path | None,
    since: Any,
    until: Any,
    on_log: Any,
) -> Any:
    """The rounds' verdicts on Dask (``--workers``/``--scheduler``), in the order of
    ``verifier.round_ids``: ``replays.distributed.verify_store`` submits the store's rounds
    before the driver's ``verifier`` (deferred) reads the log, then ships the log (a local
    cluster's workers read it through ``state`` when it holds the log read here, which no
    finding contradicts), and calls ``on_log`` (the log checked as a whole, its findings
    printed before the rounds)."""
    from replays.distributed import verify_store

    return verify_store(
        ctx.read_url(),
        verifier,
        since=since,
        until=until,
        workers=args.workers,
        scheduler=args.scheduler,
        state=state,
        on_log=on_log,
    )


# ------------------------------------------------------------------------------ seal
def _seal(args: argparse.Namespace, ctx: Context) -> int:
    from cli.trust import witnesses
    from replays.log import DEFAULT_ORIGIN
    from replays.signer import Signer

    if args.follow is not None and not args.follow > 0:
        print("error: --follow takes a number of seconds greater than 0", file=sys.stderr)
        return 2
    if args.max_runs is not None and (args.follow is None or args.max_runs < 1):
        print("error: --max-runs takes 1 or more, with --follow", file=sys.stderr)
        return 2
    name = origin(args)
    if name is None:
        name = DEFAULT_ORIGIN
        print(
            f"warning: no ROUNDAUDIT_LOG_ORIGIN: checkpoints name the log {name!r} "
            "(development; set one per deployment)",
            file=sys.stderr,
        )
    trusted = witnesses(args)
    signer = Signer(
        ctx.app(),
        key=signing_key(args, create=True),
        origin=name,
        witnesses=trusted,
        timeout=args.timeout,
    )
    if args.follow is not None:
        _stop_on_sigterm()
    runs = 0
    said: list[str] = []
    failed = False
    try:
        while True:
            report = signer.run_once()
            runs += 1
            _print(report.lines())
            if report.problems != said:  # a worker says a problem once, not every second
                for problem in report.problems:
                    print(f"error: {problem}", file=sys.stderr)
                said = report.problems
            failed = failed or bool(report.problems)
            if args.follow is None:
                if report.checkpoint is None and not report.problems:
                    print(f"the log holds {report.size} leaves; its last checkpoint covers them")
                return 1 if report.problems else 0
            if args.max_runs is not None and runs >= args.max_runs:
                return 1 if failed else 0
            time.sleep(args.follow)
    except KeyboardInterrupt:
        # a checkpoint is one row, written after its witnesses answered: nothing is half-done
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

    from replays.log import LogError, MerkleLog, consistency_document, round_proof_document
    from replays.merkle import public_pem, raw_public

    if args.key:
        policy = trust_policy(args)
        if policy.operator is None:
            print("error: no key: give --public-key or --signing-key", file=sys.stderr)
            return 2
        key = policy.operator
        pub = key.ed25519()
        doc: Any = {
            "vkey": key.vkey(),
            "origin": key.name,
            "pem": public_pem(pub),
            "raw": raw_public(pub).hex(),
        }
    else:
        from replays.verify import round_id_of

        log = MerkleLog(ctx.app()).refresh()
        try:
            if args.round:
                rid = round_id_of(args.round)
                doc = round_proof_document(ctx.app(), log, rid, checkpoint=args.in_checkpoint)
            elif args.consistency:
                doc = consistency_document(log, *args.consistency)
            else:
                cps = log.checkpoints()
                if not cps:
                    raise LogError("the log has no checkpoint yet")
                n = args.checkpoint or cps[-1].number
                doc = log.checkpoint(n).as_json()
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

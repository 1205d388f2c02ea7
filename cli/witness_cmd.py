"""``roundaudit witness serve`` and ``roundaudit witness key``: a C2SP witness of its own.

A witness (``replays.witness``) runs as its own process, with its own state folder and its
own key, on a machine the operator does not control (a regulator's, a third party's); it needs
no database. It witnesses the logs whose operator vkeys it is given (``--log``, as
``roundaudit proof --key`` prints them; the vkey's name is the log's origin).

``serve --state DIR --name NAME --log VKEY... [--host H] [--port P] [--prefix /PATH]``
    Answer add-checkpoint and the monitoring endpoint over HTTP until Ctrl-C or SIGTERM. The
    key is ``--key PEM`` or ``DIR/witness-key.pem``, generated on first start. Prints the
    witness's vkey (give it to the signer and to verifiers as ``--witness VKEY@URL``).
``key --state DIR --name NAME``
    Print the witness's vkey (generating the key if absent), for configuration.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from cli.main import Context

KEY_FILE = "witness-key.pem"

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    w: argparse.ArgumentParser = subparsers.add_parser(
        "witness",
        help="run a transparency-log witness (C2SP tlog-witness) as its own process",
        description="A witness cosigns a log's checkpoint only when it extends the last one it "
        "cosigned, and refuses rollbacks and forks.",
    )
    sub = w.add_subparsers(dest="witness_command", metavar="ACTION", required=True)
    serve = sub.add_parser("serve", help="serve the witness over HTTP")
    key = sub.add_parser("key", help="print the witness's vkey")
    for p in (serve, key):
        p.add_argument("--state", required=True, type=Path, help="the witness's state folder")
        p.add_argument("--name", required=True, help="the witness's key name (e.g. a URL)")
        p.add_argument(
            "--key", default=None, type=Path, help=f"its Ed25519 key, PEM (default DIR/{KEY_FILE})"
        )
    serve.add_argument(
        "--log",
        action="append",
        required=True,
        metavar="VKEY",
        help="the vkey of a log to witness (repeatable; its name is the log's origin)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8390)
    serve.add_argument("--prefix", default="", help="URL prefix of both endpoints")
    w.set_defaults(handler=run)
    return w


def _key(args: argparse.Namespace) -> Ed25519PrivateKey:
    from replays.merkle import load_private_key

    args.state.mkdir(parents=True, exist_ok=True)
    path = args.key or args.state / KEY_FILE
    key, created = load_private_key(path, create=True)
    if created:
        print(f"generated the witness key {path}", file=sys.stderr)
    return key


def run(args: argparse.Namespace, ctx: Context) -> int:
    from replays.note import ED25519, NoteError, parse_vkey, witness_key

    try:
        key = _key(args)
        public = witness_key(args.name, key.public_key())
    except (NoteError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.witness_command == "key":
        print(public.vkey())
        return 0
    from replays.witness import Witness, WitnessServer

    try:
        logs = [parse_vkey(v) for v in args.log]
    except NoteError as exc:
        print(f"error: --log: {exc}", file=sys.stderr)
        return 2
    if any(k.sig_type != ED25519 for k in logs):
        print("error: --log takes a log's vkey (signature type 0x01)", file=sys.stderr)
        return 2
    witness = Witness(args.state, name=args.name, key=key, logs=logs)
    try:
        witness.hold()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from cli.verify_cmd import _stop_on_sigterm

    _stop_on_sigterm()
    try:
        server = WitnessServer((args.host, args.port), witness, args.prefix)
    except OSError as exc:
        witness.release()
        print(f"error: cannot listen on {args.host}:{args.port} ({exc})", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    prefix = server.prefix
    print(f"witness {public.vkey()}", flush=True)
    print(f"listening on http://{host!s}:{port}{prefix}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
        witness.release()
    return 0

"""``roundaudit keys create|list|revoke|new-token``: API keys from the command line.

The command line has direct access to the store: it is the operator's way to issue the first
keys of a production deployment and to get back in when no admin key is left. Keys it
creates or revokes are recorded as the HTTP routes' are (``domain.keys.ApiKey`` events), with
the operating-system user as the actor (``cli:<user>``).

* ``create --role ROLE [--table T]... [--player P] [--label TEXT]`` prints the token once (it
  is stored only as a hash), then the key's listing; ``--json`` prints both as JSON.
* ``list`` shows every key (never a secret); ``revoke KEY_ID [--reason TEXT]``.
* ``new-token`` prints a fresh token without recording it: a value for
  ``ROUNDAUDIT_ADMIN_KEY``, which the service records as an admin key when it starts.
"""

from __future__ import annotations

import argparse
import getpass
import json
from typing import TYPE_CHECKING, Any

from domain.access import Role

if TYPE_CHECKING:
    from cli.main import Context


def operator_actor() -> dict[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment
        user = "unknown"
    return {"kind": "system", "id": f"cli:{user}", "key": "cli", "role": "admin"}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "keys",
        help="create, list and revoke API keys (direct store access)",
        description="API keys: the operator's recovery path (the store is written directly).",
    )
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="issue a key and print its token once")
    c.add_argument("--role", required=True, choices=[r.value for r in Role])
    c.add_argument(
        "--table",
        action="append",
        default=[],
        dest="tables",
        help="a table the key is bound to (table-feed, supervisor; repeat for several)",
    )
    c.add_argument("--player", default=None, help="the player a player key is bound to")
    c.add_argument("--label", default="", help="who holds the key, in words")
    c.add_argument("--json", action="store_true", help="print the token and key as JSON")
    ls = sub.add_parser("list", help="every key (no secrets)")
    ls.add_argument("--json", action="store_true")
    r = sub.add_parser("revoke", help="revoke a key (at once, for every process)")
    r.add_argument("key_id")
    r.add_argument("--reason", default=None)
    sub.add_parser("new-token", help="print a fresh token without recording it")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    from domain.keys import new_token

    if args.keys_command == "new-token":
        print(new_token())
        return 0
    keys = ctx.app().keys
    if args.keys_command == "create":
        issued = keys.create(
            role=args.role,
            tables=args.tables,
            player=args.player,
            label=args.label,
            actor=operator_actor(),
        )
        if args.json:
            print(json.dumps({"token": issued.token, "key": issued.key}, indent=2))
        else:
            print(issued.token)
            print(
                f"key {issued.key['key_id']} ({issued.key['role']}"
                f"{_binding(issued.key)}): the token above is shown this once"
            )
        return 0
    if args.keys_command == "list":
        listed = [k.view() for k in keys.all()]
        if args.json:
            print(json.dumps(listed, indent=2))
            return 0
        for k in listed:
            state = f"revoked {k['revoked_at']}" if k["revoked"] else "active"
            print(f"{k['key_id']}  {k['role']:<12} {state:<40} {_binding(k)} {k['label']}")
        print(f"{len(listed)} key(s)")
        return 0
    view = keys.revoke(args.key_id, actor=operator_actor(), reason=args.reason)
    print(f"key {view['key_id']} is revoked ({view['revoked_at']})")
    return 0


def _binding(k: dict[str, Any]) -> str:
    if k.get("tables"):
        return " tables " + ",".join(k["tables"])
    if k.get("player"):
        return f" player {k['player']}"
    return ""


__all__ = ["add_parser", "operator_actor", "run"]

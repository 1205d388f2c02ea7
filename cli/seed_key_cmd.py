"""``roundaudit seed-key create|status|add|reseal|migrate|rotate|drop-old``: the seed key.

RNG seeds are sealed at rest with the key file of ``ROUNDAUDIT_SEED_KEY`` (``domain.vault``);
this command manages that file and re-seals the vault:

* ``create [PATH]``: a new key file (never overwrites one);
* ``status``: what the vault holds (sealed seeds per key id, plaintext ones) and the file's keys;
* ``migrate`` (alias of ``reseal``): seal every plaintext seed of a store written before seeds
  were encrypted, and re-seal under the file's first key every seed sealed with another;
* ``add``: put a new key first in the file (the others stay, still opening older seeds);
* ``rotate``: ``add`` then ``reseal``: every seed is under the new key afterwards;
* ``drop-old``: keep only the first key (refused while the vault holds seeds of another).

Re-sealing rewrites the vault's rows in one transaction. On SQLite the file is then
checkpointed and vacuumed so the old bytes leave the disk; on PostgreSQL run
``VACUUM FULL roundaudit_sealed_seeds`` (printed). Restart the services after the file
changes (docs/operations.md, "Seed key").
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.main import Context


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "seed-key",
        help="the key that seals RNG seeds at rest: create, status, migrate, rotate",
        description="Manage ROUNDAUDIT_SEED_KEY's key file and re-seal the seed vault.",
    )
    sub = p.add_subparsers(dest="seed_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="write a new key file (never overwrites)")
    c.add_argument("path", nargs="?", default=None, help="default: $ROUNDAUDIT_SEED_KEY")
    s = sub.add_parser("status", help="what the vault holds, and the file's keys")
    s.add_argument("--json", action="store_true")
    sub.add_parser("reseal", help="re-seal every seed under the file's first key")
    sub.add_parser("migrate", help="seal plaintext seeds (a store from before encryption)")
    sub.add_parser("add", help="put a new key first in the file (old keys still open)")
    sub.add_parser("rotate", help="add a new key, then re-seal every seed under it")
    sub.add_parser("drop-old", help="keep only the first key of the file")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace, ctx: Context) -> int:
    from api.settings import load_seed_key, write_seed_key
    from domain.vault import SeedKeyRing

    path = Path(args.path) if getattr(args, "path", None) else ctx.seed_key_path()
    command = args.seed_command
    if command == "create":
        ring = SeedKeyRing.generate()
        write_seed_key(path, ring)
        print(f"created {path} (seed key {ring.current_id})")
        return 0
    if command in ("add", "rotate"):
        ring = load_seed_key(path).with_new_key()
        write_seed_key(path, ring, replace=True)
        print(f"{path}: new first key {ring.current_id}; still opening {', '.join(ring.ids()[1:])}")
        if command == "add":
            print("restart the services, then run `roundaudit seed-key reseal`")
            return 0
    app = ctx.app()
    vault = app.vault
    if command == "status":
        inv = vault.inventory()
        doc = {"key_file": str(path), "keys": vault.ring.ids(), "vault": inv.as_json()}
        if args.json:
            print(json.dumps(doc, indent=2))
        else:
            print(f"key file {path}: keys {', '.join(vault.ring.ids()) or '(none)'}")
            for kid, n in sorted(inv.sealed.items()):
                known = "" if kid in vault.ring.ids() else "  <- NOT in the key file"
                print(f"  {n} seed(s) sealed with key {kid}{known}")
            print(f"  {inv.plaintext} plaintext seed(s), {inv.damaged} damaged")
        return 1 if vault.problems() else 0
    if command == "drop-old":
        inv = vault.inventory()
        others = {k: n for k, n in inv.sealed.items() if k != vault.ring.current_id}
        if others or inv.plaintext:
            print(
                f"error: the vault still holds seeds of other keys {others} or plaintext "
                f"({inv.plaintext}): run `roundaudit seed-key reseal` first"
            )
            return 2
        write_seed_key(path, SeedKeyRing(vault.ring.keys[:1]), replace=True)
        print(f"{path}: only key {vault.ring.current_id} is left; restart the services")
        return 0
    done = vault.reseal()  # reseal, migrate, rotate
    print(
        f"re-sealed {done['resealed']} seed(s) under key {vault.ring.current_id}; "
        f"{done['kept']} were already"
    )
    _scrub(ctx)
    return 0


def _scrub(ctx: Context) -> None:
    """Let the old bytes leave the disk (SQLite: checkpoint and vacuum; PostgreSQL: advice)."""
    from domain.persistence import sqlite_path

    file = sqlite_path(ctx.database_url)
    if file is None:
        print(
            "run VACUUM FULL on the seed table (roundaudit_sealed_seeds) to drop old row versions"
        )
        return
    ctx.close()
    with sqlite3.connect(file) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn = sqlite3.connect(file, isolation_level=None)
    try:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    print(f"vacuumed {file}: the old seed bytes are gone from the file")


__all__ = ["add_parser", "run"]

"""The ``roundaudit`` console script: one parser, subcommands from a small registry.

This module owns argument parsing, the choice of event store, and the mapping of failures to
exit codes. Subcommands live in their own modules; each module listed in
:data:`SUBCOMMAND_MODULES` provides

* ``add_parser(subparsers) -> argparse.ArgumentParser``: add its subparser, and
* ``run(args: argparse.Namespace, ctx: Context) -> int``: do the work, return the exit code,

so adding ``verify``, ``replay``, ``projections``, ``report`` or ``dispute`` is one line here
and a module there. ``serve`` is small enough to live in this module.

Configuration: ``ROUNDAUDIT_DATABASE_URL`` (default :data:`DEFAULT_DATABASE_URL`, a SQLite file
under ``data/``), or ``--database-url``. For a SQLite file the folder is created. The CLI is
allowed to read the environment; ``domain/`` is not. ``ROUNDAUDIT_SEED_KEY`` (default
``keys/seed.key``) names the seed key file (``domain.vault``): ``serve`` and ``simulate``
create it when it is missing and the store holds no sealed seed yet (never in production);
the other commands read it when it exists and otherwise open no seed at all.

Exit codes: 0 success; 1 a failure a subcommand reports itself (e.g. verification found a
discrepancy); 2 usage errors and domain errors (``error: <message>`` on stderr); 130 when
interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from api.settings import SettingsError
from domain.errors import DomainError
from domain.persistence import (
    DEFAULT_DATABASE_URL,
    DatabaseURLError,
    environment_for,
    sqlite_path,
)

if TYPE_CHECKING:  # the model is imported on first use: `roundaudit --help` stays quick
    from domain.application import RoundAudit
    from domain.vault import SeedKeyRing

DATABASE_URL_ENV = "ROUNDAUDIT_DATABASE_URL"
#: Subcommands that may create the seed key file on a store that has no sealed seed yet.
SEED_KEY_CREATORS = frozenset({"serve", "simulate"})

#: Modules that each add one subcommand (see the module docstring). Order = order in --help.
SUBCOMMAND_MODULES: list[str] = [
    "cli.keys_cmd",
    "cli.seed_key_cmd",
    "cli.simulate",
    "cli.projections_cmd",
    "cli.report_cmd",
    "cli.rtp_cmd",
    "cli.dispute_cmd",
    "cli.verify_cmd",
    "cli.replay_cmd",
    "cli.export_cmd",
    "cli.witness_cmd",
    "cli.shoes_cmd",
    "cli.idempotency_cmd",
]

Handler = Callable[[argparse.Namespace, "Context"], int]


class SubcommandModule(Protocol):
    def add_parser(self, subparsers: Any) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace, ctx: Context) -> int: ...


@dataclass
class Context:
    """What a subcommand gets besides its arguments: the store, opened on first use."""

    database_url: str
    #: May create the seed key file (``serve``, ``simulate``), see the module docstring.
    create_seed_key: bool = False
    _app: RoundAudit | None = field(default=None, repr=False)
    _reader: RoundAudit | None = field(default=None, repr=False)

    def environment(self) -> dict[str, str]:
        """The ``eventsourcing`` environment of the URL; creates a SQLite file's folder."""
        env = environment_for(self.database_url)
        path = sqlite_path(self.database_url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        return env

    def app(self) -> RoundAudit:
        """The application on the configured store (one instance per CLI run), with the seed
        key of ``ROUNDAUDIT_SEED_KEY``."""
        if self._app is None:
            from domain.application import RoundAudit

            self._app = RoundAudit(env=self.environment(), seed_key=self.seed_key())
        return self._app

    def read_url(self) -> str:
        """Where the audit commands read: ``ROUNDAUDIT_READ_DATABASE_URL`` (a read replica)
        when set, else the store."""
        from api.settings import READ_DATABASE_URL_ENV, read_database_url

        return read_database_url(os.environ.get(READ_DATABASE_URL_ENV)) or self.database_url

    def reader(self) -> RoundAudit:
        """The application the audit commands read (``verify``): on the read replica when one
        is configured (opened without creating tables: a standby is read only), else
        :meth:`app`."""
        url = self.read_url()
        if url == self.database_url:
            return self.app()
        if self._reader is None:
            from domain.application import RoundAudit
            from domain.vault import SeedKeyRing

            env = environment_for(url, create_table=False)
            self._reader = RoundAudit(env=env, seed_key=SeedKeyRing.locked())
        return self._reader

    def seed_key_path(self) -> Path:
        from api.settings import SEED_KEY_ENV, seed_key_path

        return seed_key_path(os.environ.get(SEED_KEY_ENV))

    def seed_key(self) -> SeedKeyRing:
        """The seed keys: the file's; when it is missing, a new file for a command that may
        create one on a store without sealed seeds (not in production); else no key (sealing
        and opening a seed are then refused with a message naming the setting)."""
        from api.settings import PRODUCTION_ENV, SettingsError, load_seed_key, write_seed_key
        from domain.application import RoundAudit
        from domain.vault import SeedKeyRing

        path = self.seed_key_path()
        if path.exists():
            return load_seed_key(path)
        production = os.environ.get(PRODUCTION_ENV, "0").strip().lower() in ("1", "true", "yes")
        if not self.create_seed_key or production:
            return SeedKeyRing.locked()
        probe = RoundAudit(env=self.environment(), seed_key=SeedKeyRing.locked())
        try:
            held = probe.vault.inventory().total
        finally:
            probe.close()
        if held:
            raise SettingsError(
                f"the seed key file {str(path)!r} is missing but the store holds {held} sealed "
                "seed(s): restore the key file (a new key would open none of them)"
            )
        ring = SeedKeyRing.generate()
        write_seed_key(path, ring)
        print(
            f"roundaudit: created the seed key file {path} (key {ring.current_id})", file=sys.stderr
        )
        return ring

    def close(self) -> None:
        if self._app is not None:
            self._app.close()
            self._app = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None


# ------------------------------------------------------------------------------- serve


def _add_serve(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run the HTTP API (uvicorn)",
        description="Run the HTTP API with uvicorn on the factory api.main:get_app.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--reload", action="store_true", help="restart on code changes (development)")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="service processes on one socket (default 1); with more than one, the schema and "
        "the first admin key are created once before they start (see docs/scaling.md)",
    )
    p.add_argument(
        "--no-access-log", action="store_true", help="no line per request on stderr (uvicorn)"
    )
    return p


def _run_serve(args: argparse.Namespace, ctx: Context) -> int:
    import uvicorn

    from api import serving
    from api.server import PROTOCOL
    from api.settings import SEED_KEY_ENV, load_seed_key

    ctx.environment()  # validate the URL and create a SQLite folder before the workers start
    ctx.seed_key()  # create the seed key file on first start (see the module docstring)
    load_seed_key(ctx.seed_key_path())  # without one, stop here with the reason
    os.environ[DATABASE_URL_ENV] = ctx.database_url  # the API reads it in its factory
    os.environ[SEED_KEY_ENV] = str(ctx.seed_key_path())
    if args.workers < 1:
        print("error: --workers is at least 1", file=sys.stderr)
        return 2
    if args.workers > 1:
        if args.reload:
            print("error: --reload runs one process: leave out --workers", file=sys.stderr)
            return 2
        _prepare_store()
    app = "api.main:get_app"
    options: dict[str, Any] = {
        "factory": True,
        "host": args.host,
        "port": args.port,
        "access_log": not args.no_access_log,
        "http": PROTOCOL,  # uvicorn's httptools protocol, one write per answer (api.server)
    }
    if args.workers > 1 and serving.supported():
        return _run_workers(uvicorn.Config(app, **options, workers=args.workers), args)
    uvicorn.run(
        app, **options, reload=args.reload, workers=args.workers if args.workers > 1 else None
    )
    return 0


def _run_workers(config: Any, args: argparse.Namespace) -> int:
    """``--workers N`` (``config``: uvicorn's, with the workers): uvicorn's supervisor, each
    worker on a listening socket of its own (``api.serving``: the kernel spreads the
    connections over them; on one shared socket the first worker awake took a burst of
    connections nearly whole)."""
    import logging

    from uvicorn.supervisors import Multiprocess

    from api import serving

    try:
        sock = serving.reserve(args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    address = f"[{args.host}]" if ":" in args.host else args.host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", address, sock.getsockname()[1]
    )
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def _prepare_store() -> None:
    """Before several service processes start: create the schema and record (or generate and
    print) the first admin key once, in this process; the workers then open the store with
    ``CREATE_TABLE`` off (``ROUNDAUDIT_CREATE_TABLE=0``), so no two of them race on DDL."""
    from api.main import prepare
    from api.settings import CREATE_TABLE_ENV, load_settings
    from domain.application import RoundAudit

    settings = load_settings()
    audit = RoundAudit(env=environment_for(settings.database_url), seed_key=settings.seed_key)
    try:
        prepare(audit, settings)
    finally:
        audit.close()
    os.environ[CREATE_TABLE_ENV] = "0"


# ------------------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roundaudit",
        description="Event-sourced audit service for casino blackjack rounds.",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help=f"event store URL (default: ${DATABASE_URL_ENV} or {DEFAULT_DATABASE_URL})",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = _add_serve(subparsers)
    serve.set_defaults(handler=_run_serve)
    for name in SUBCOMMAND_MODULES:
        module = cast(SubcommandModule, importlib.import_module(name))
        sub = module.add_parser(subparsers)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``roundaudit`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:  # --help (0) or a usage error (2)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    url = args.database_url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL
    ctx = Context(database_url=url, create_seed_key=args.command in SEED_KEY_CREATORS)
    handler = cast(Handler, args.handler)
    try:
        return handler(args, ctx)
    except (DatabaseURLError, SettingsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except DomainError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        ctx.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Web-service settings: the one place of the service (besides ``cli/``) that reads the environment.

* ``ROUNDAUDIT_DATABASE_URL``: where events are stored (default
  :data:`domain.persistence.DEFAULT_DATABASE_URL`, a SQLite file under ``data/``); see
  :func:`domain.persistence.environment_for` for the accepted forms.
* ``ROUNDAUDIT_PRODUCTION``: ``1``/``true``/``yes`` on a production deployment (default ``0``).
  In production the health check names the kind of store only, never its URL.
* ``ROUNDAUDIT_PUBLIC_KEY``: the Ed25519 key that checks the Merkle log's checkpoints, as the
  path of a PEM file or 64 hex digits (the raw key), as ``roundaudit verify --public-key``
  takes it. Verifications check checkpoint signatures with it, exports carry it, and
  ``GET /merkle/public-key`` publishes it.
* ``ROUNDAUDIT_SIGNING_KEY``: the path of the checkpoint signing key (PEM), the one
  ``roundaudit seal`` signs with; when no public key is given, its public half is used. The
  service only reads it: it never generates a key, never signs, and keeps only the public half.
  When both are given they must be the same key.

* ``ROUNDAUDIT_LOG_ORIGIN``: the log's origin (its checkpoints' first line, the operator key's
  name); ``ROUNDAUDIT_WITNESSES``: the trusted witnesses, ``vkey[@URL]`` separated by spaces;
  ``ROUNDAUDIT_WITNESS_QUORUM``: how many cosignatures make a checkpoint final (default all):
  verdicts say whether a round is final, exports carry the final checkpoint (``cli.trust``
  documents the same settings for the command line).
* ``ROUNDAUDIT_VERIFIER_STATE``: the file where the service's verifier keeps its own state of
  the Merkle log (``replays.logstate``), as ``roundaudit verify --state`` does: each service
  process then reads only the log's new leaves at start, not the whole log, and finds a log
  cut back or rewritten since (a failing verdict). Default: one file per database URL under
  ``$XDG_STATE_HOME/roundaudit/verifier/`` (``~/.local/state`` when unset); ``none`` keeps no
  state. Several processes (``serve --workers N``) may share the file. A file that is not a
  verifier state is refused at start.
* ``ROUNDAUDIT_RTP_FLOOR``: the jurisdiction's minimum RTP for any bet, a fraction (default
  ``0.85``); a bet below it is an ``RTP-BELOW-FLOOR`` finding on ``GET /rules/{key}/rtp``.

Neither key has a default: without them the service checks no checkpoint signature (verdicts say
so in a note) and publishes no key. Unlike the command line, the service does not fall back on
``data/roundaudit-signing-key.pem``: it reads a private key only where told to.

Access (``api.auth``, ``domain.access``):

* ``ROUNDAUDIT_ADMIN_KEY``: a first admin API key, as the token itself or ``@/path/to/file``
  (the file's first line). The service records it when the store does not hold it yet, and
  refuses to start when the store holds it revoked. Without it, a service that is not in
  production generates one admin key when the store has no usable one, and prints it once.
* ``ROUNDAUDIT_SEED_KEY``: the file of the seed key that seals RNG seeds at rest (default
  :data:`DEFAULT_SEED_KEY_FILE`, ``keys/seed.key`` beside ``data/``). ``roundaudit serve``
  (``make run``) creates it on first start; the service itself only reads it and refuses to
  start without it (see ``domain.vault``).
* ``ROUNDAUDIT_ALLOWED_HOSTS``: the host names the ``Host`` header may carry, comma-separated
  (default ``localhost,127.0.0.1,[::1]``; ``*`` turns the check off, behind a proxy that checks).
* ``ROUNDAUDIT_CORS_ORIGINS``: origins allowed to call the API from a browser page of another
  origin, comma-separated (default none: no CORS headers at all).

Read side (``api.readside``):

* ``ROUNDAUDIT_READ_WAIT``: seconds a read of a projection (searches, the feed, reports) waits
  for the projection to reach the head of the log read when the request arrived (default 5;
  ``0``: answer at once with what the projection holds). Every such answer names the
  projection's position and the head, so a reader sees how far behind it is.
* ``ROUNDAUDIT_READ_DATABASE_URL``: a read replica (a PostgreSQL streaming standby) for the
  audit reads and the projections' reads, with read-your-writes (``api.replica``); default
  none: everything reads the primary.
* ``ROUNDAUDIT_READ_DRIVE``: ``1`` (default) the service applies the projections' batches
  itself while a read waits (no worker needed, read-your-writes); ``0``: it only waits for a
  ``roundaudit projections run --follow`` worker.

:func:`load_settings` also creates the folder of a SQLite file, because the domain never
touches the file system.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm

from domain.idempotency import DEFAULT_WINDOW
from domain.persistence import DEFAULT_DATABASE_URL, sqlite_path
from domain.rtp.report import DEFAULT_FLOOR, parse_floor
from domain.vault import SeedKeyError, SeedKeyRing
from replays.log import DEFAULT_ORIGIN, TrustPolicy, WitnessKey, make_policy, parse_witness
from replays.logstate import STATE_ENV, StateError, VerifierState, state_path
from replays.merkle import key_id, load_private_key, load_public_key, parse_public_key
from replays.note import NoteError, operator_key

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

DATABASE_URL_ENV = "ROUNDAUDIT_DATABASE_URL"
PRODUCTION_ENV = "ROUNDAUDIT_PRODUCTION"
PUBLIC_KEY_ENV = "ROUNDAUDIT_PUBLIC_KEY"
SIGNING_KEY_ENV = "ROUNDAUDIT_SIGNING_KEY"
ORIGIN_ENV = "ROUNDAUDIT_LOG_ORIGIN"
WITNESSES_ENV = "ROUNDAUDIT_WITNESSES"
QUORUM_ENV = "ROUNDAUDIT_WITNESS_QUORUM"
RTP_FLOOR_ENV = "ROUNDAUDIT_RTP_FLOOR"
ADMIN_KEY_ENV = "ROUNDAUDIT_ADMIN_KEY"
SEED_KEY_ENV = "ROUNDAUDIT_SEED_KEY"
ALLOWED_HOSTS_ENV = "ROUNDAUDIT_ALLOWED_HOSTS"
CORS_ORIGINS_ENV = "ROUNDAUDIT_CORS_ORIGINS"
READ_WAIT_ENV = "ROUNDAUDIT_READ_WAIT"
READ_DRIVE_ENV = "ROUNDAUDIT_READ_DRIVE"
READ_DATABASE_URL_ENV = "ROUNDAUDIT_READ_DATABASE_URL"
THREADS_ENV = "ROUNDAUDIT_THREADS"
#: Threads of a service process for the routes' store work. Few: the store's connection pool
#: keeps 5 connections (more are opened and closed per use), and on 2 cores 40 threads spent
#: 20-30 % more CPU per request than 6 did (docs/performance-history.md). Each request waiting for
#: another's idempotency key or for a projection holds one while it waits.
DEFAULT_THREADS = 8
CREATE_TABLE_ENV = "ROUNDAUDIT_CREATE_TABLE"
DEFAULT_SEED_KEY_FILE = "keys/seed.key"
DEFAULT_ALLOWED_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")
_RAW_KEY = re.compile(r"[0-9a-fA-F]{64}")
#: What reading a PEM key can raise: unreadable file, not PEM, encrypted, not an Ed25519 key.
_KEY_ERRORS = (OSError, ValueError, TypeError, UnsupportedAlgorithm)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class SettingsError(ValueError):
    """An environment variable has a value the service cannot use."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the web service needs to start."""

    database_url: str = DEFAULT_DATABASE_URL
    production: bool = False
    #: The Ed25519 key that checks the Merkle log's checkpoints (None: none configured).
    public_key: Ed25519PublicKey | None = None
    #: The jurisdiction's RTP floor for every bet (RTP-BELOW-FLOOR).
    rtp_floor: Decimal = DEFAULT_FLOOR
    #: The log's origin, the trusted witnesses and their quorum (``ROUNDAUDIT_LOG_ORIGIN``...).
    origin: str | None = None
    witnesses: tuple[WitnessKey, ...] = ()
    quorum: int | None = None

    @property
    def trust(self) -> TrustPolicy:
        """What verifications trust: the operator key named by the origin, the witnesses."""
        operator = None
        if self.public_key is not None:
            operator = operator_key(self.origin or DEFAULT_ORIGIN, self.public_key)
        return make_policy(
            operator, origin=self.origin, witnesses=self.witnesses, quorum=self.quorum
        )

    #: The first admin key's token (``ROUNDAUDIT_ADMIN_KEY``), recorded at start if new.
    admin_key: str | None = None
    #: Generate (and print once) an admin key when the store has no usable one.
    generate_admin_key: bool = False
    #: The seed keys (``ROUNDAUDIT_SEED_KEY``); None: a key for this process only (tests).
    seed_key: SeedKeyRing | None = None
    #: Host names the Host header may carry (``*``: any).
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS
    #: Origins a browser may call the API from (none: no CORS).
    cors_origins: tuple[str, ...] = ()
    #: How long idempotency records are kept at least (``ROUNDAUDIT_IDEMPOTENCY_WINDOW``).
    idempotency_window: timedelta = DEFAULT_WINDOW
    #: How long a repeat waits for the first request of its key before 409 request-in-progress.
    idempotency_wait: float = 5.0
    #: After how long a claim without an answer is taken for one whose process died.
    idempotency_lease: float = 60.0
    #: Seconds between two prunes of the records (0: the service does not prune).
    idempotency_prune_every: float = 3600.0
    #: Read side (``api.readside``): how long a read of a projection waits for it to reach
    #: the log's head, and whether the service applies the batches itself meanwhile (False:
    #: a ``roundaudit projections run --follow`` worker does).
    read_wait: float = 5.0
    read_drive: bool = True
    #: A read replica for audit and projection reads (``api.replica``); None: the primary.
    read_database_url: str | None = None
    #: Threads that run the routes' store work (``ROUNDAUDIT_THREADS``); None: AnyIO's 40.
    threads: int | None = DEFAULT_THREADS
    #: Create the store's tables at start (``ROUNDAUDIT_CREATE_TABLE``, default on); off for
    #: the processes of ``roundaudit serve --workers N`` once the first created them.
    create_table: bool = True
    #: The verifier's state file of the log (``ROUNDAUDIT_VERIFIER_STATE``); None: none.
    verifier_state: Path | None = None


IDEMPOTENCY_WINDOW_ENV = "ROUNDAUDIT_IDEMPOTENCY_WINDOW"
IDEMPOTENCY_WAIT_ENV = "ROUNDAUDIT_IDEMPOTENCY_WAIT"
IDEMPOTENCY_LEASE_ENV = "ROUNDAUDIT_IDEMPOTENCY_LEASE"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(name: str, value: str | None, default: timedelta) -> timedelta:
    """A duration: seconds, or a number with s, m, h or d (``7d``, ``90s``).

    >>> parse_duration("X", "7d", timedelta(0)), parse_duration("X", "1.5", timedelta(0))
    (datetime.timedelta(days=7), datetime.timedelta(seconds=1, microseconds=500000))
    """
    if value is None or not value.strip():
        return default
    text = value.strip().lower()
    unit = _UNITS.get(text[-1])
    number = text[:-1] if unit is not None else text
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise SettingsError(f"{name}={value!r} is not a duration (e.g. 7d, 12h, 90s)") from None
    if seconds < 0:
        raise SettingsError(f"{name}={value!r} is negative")
    return timedelta(seconds=seconds)


def _flag(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}={value!r} is not a flag: use 1/0, true/false, yes/no")


def public_key_setting(value: str) -> Ed25519PublicKey:
    """``ROUNDAUDIT_PUBLIC_KEY``: the path of a PEM file (a public key, or a private key whose
    public half is taken), else 64 hex digits; anything else is a :class:`SettingsError`."""
    text = value.strip()
    path = Path(text)
    if path.is_file():
        try:
            return load_public_key(path)
        except _KEY_ERRORS as exc:
            raise SettingsError(
                f"{PUBLIC_KEY_ENV}={value!r}: the file does not hold an Ed25519 key in PEM ({exc})"
            ) from None
    if _RAW_KEY.fullmatch(text):
        try:
            return parse_public_key(text)
        except ValueError as exc:
            raise SettingsError(f"{PUBLIC_KEY_ENV}={value!r}: not an Ed25519 key ({exc})") from None
    raise SettingsError(
        f"{PUBLIC_KEY_ENV}={value!r} is neither a PEM file nor 64 hex digits (a raw Ed25519 "
        "public key)"
    )


def signing_key_setting(value: str) -> Ed25519PublicKey:
    """``ROUNDAUDIT_SIGNING_KEY``: the public half of the Ed25519 private key in the PEM file
    ``value`` (the private key itself is not kept). A missing or unreadable file is a
    :class:`SettingsError`: the service never generates a key."""
    path = Path(value.strip())
    if not path.is_file():
        raise SettingsError(
            f"{SIGNING_KEY_ENV}={value!r}: no such file (the service never generates a key: "
            f"`roundaudit seal` does, or give the public key in {PUBLIC_KEY_ENV})"
        )
    try:
        private, _ = load_private_key(path)
    except _KEY_ERRORS as exc:
        raise SettingsError(
            f"{SIGNING_KEY_ENV}={value!r}: the file does not hold an unencrypted Ed25519 private "
            f"key in PEM ({type(exc).__name__})"
        ) from None
    return private.public_key()


def checkpoint_key(public: str | None, signing: str | None) -> Ed25519PublicKey | None:
    """The key that checks checkpoints: ``public`` (``ROUNDAUDIT_PUBLIC_KEY``), else the public
    half of ``signing`` (``ROUNDAUDIT_SIGNING_KEY``), else None. Both are read when both are
    given, and must then be the same key."""
    key = public_key_setting(public) if public and public.strip() else None
    if signing and signing.strip():
        half = signing_key_setting(signing)
        if key is not None and key != half:
            raise SettingsError(
                f"{PUBLIC_KEY_ENV} (key id {key_id(key)}) is not the public half of "
                f"{SIGNING_KEY_ENV} (key id {key_id(half)}): give one of them, or the same key"
            )
        key = half if key is None else key
    return key


def rtp_floor_setting(value: str | None) -> Decimal:
    """``ROUNDAUDIT_RTP_FLOOR``: a fraction above 0 and at most 1; unset means 0.85."""
    if value is None or not value.strip():
        return DEFAULT_FLOOR
    try:
        return parse_floor(value)
    except ValueError as exc:
        raise SettingsError(f"{RTP_FLOOR_ENV}: {exc}") from None


def admin_key_setting(value: str | None) -> str | None:
    """``ROUNDAUDIT_ADMIN_KEY``: the token itself, or ``@path`` of a file whose first
    non-empty line is the token."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
        except OSError as exc:
            raise SettingsError(
                f"{ADMIN_KEY_ENV}={value!r}: cannot read the file ({exc})"
            ) from None
        found = [ln for ln in lines if ln and not ln.startswith("#")]
        if not found:
            raise SettingsError(f"{ADMIN_KEY_ENV}={value!r}: the file holds no key")
        text = found[0]
    return text


def seed_key_path(value: str | None) -> Path:
    """The seed key file ``ROUNDAUDIT_SEED_KEY`` names (default ``keys/seed.key``)."""
    return Path(value.strip() if value and value.strip() else DEFAULT_SEED_KEY_FILE)


def load_seed_key(path: Path) -> SeedKeyRing:
    """The seed keys of a key file; :class:`SettingsError` when it is missing or unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SettingsError(
            f"{SEED_KEY_ENV}: the seed key file {str(path)!r} does not exist; create it with "
            f"`roundaudit seed-key create {path}` (roundaudit serve and make run create it on "
            "first start)"
        ) from None
    except OSError as exc:
        raise SettingsError(f"{SEED_KEY_ENV}: cannot read {str(path)!r} ({exc})") from None
    try:
        return SeedKeyRing.parse(text)
    except SeedKeyError as exc:
        raise SettingsError(f"{SEED_KEY_ENV}: {str(path)!r}: {exc}") from None


def write_seed_key(path: Path, ring: SeedKeyRing, *, replace: bool = False) -> None:
    """Write a key file readable by its owner only (0600, folder 0700). Never overwrites
    unless ``replace``, and then through a new file renamed over the old one."""
    if path.exists() and not replace:
        raise SettingsError(f"{str(path)!r} exists already: it is never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(ring.render())
    os.replace(tmp, path)


def _seconds(name: str, value: str) -> float:
    """A number of seconds from 0 to 600.

    >>> _seconds("X", "2.5")
    2.5
    """
    try:
        seconds = float(value.strip())
    except ValueError:
        raise SettingsError(f"{name}={value!r} is not a number of seconds") from None
    if not 0 <= seconds <= 600:
        raise SettingsError(f"{name}={value!r}: give 0 to 600 seconds")
    return seconds


def _threads(value: str | None) -> int:
    """``ROUNDAUDIT_THREADS``: 1 to 256 (default :data:`DEFAULT_THREADS`)."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_THREADS
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise SettingsError(f"{THREADS_ENV}={value!r} is not a whole number from 1 to 256")
    return int(text)


def _list(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return default
    return tuple(part.strip() for part in value.split(",") if part.strip())


def ensure_sqlite_folder(database_url: str) -> None:
    """Create the folder of the SQLite file ``database_url`` names (nothing for other stores)."""
    path = sqlite_path(database_url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def read_database_url(text: str | None) -> str | None:
    """``ROUNDAUDIT_READ_DATABASE_URL``: a PostgreSQL URL (multi-host allowed), or None."""
    from domain.persistence import DatabaseURLError, environment_for

    text = (text or "").strip()
    if not text:
        return None
    try:
        env = environment_for(text)
    except DatabaseURLError as exc:
        raise SettingsError(f"{READ_DATABASE_URL_ENV}: {exc}") from None
    if "POSTGRES_DBNAME" not in env:
        raise SettingsError(
            f"{READ_DATABASE_URL_ENV} must name a PostgreSQL replica (postgresql://...): "
            "a SQLite file has no replicas"
        )
    return text


def verifier_state_setting(
    value: str | None, database_url: str, state_home: str | None
) -> Path | None:
    """``ROUNDAUDIT_VERIFIER_STATE`` (see the module docstring): the file, opened once here when
    it exists so that one that is not a verifier state is refused at start (a missing one is
    made at the first audit read)."""
    path = state_path(value, database_url, state_home)
    if path is not None and path.exists():
        try:
            VerifierState(path).close()
        except (StateError, OSError) as exc:
            raise SettingsError(f"{STATE_ENV}: {exc}") from None
    return path


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``environ`` (default ``os.environ``); creates the SQLite folder if needed."""
    env = os.environ if environ is None else environ
    url = env.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL
    try:
        witnesses = tuple(parse_witness(w) for w in env.get(WITNESSES_ENV, "").split())
    except NoteError as exc:
        raise SettingsError(f"{WITNESSES_ENV}: {exc}") from None
    quorum_text = env.get(QUORUM_ENV, "").strip()
    if quorum_text and not quorum_text.isdigit():
        raise SettingsError(f"{QUORUM_ENV}={quorum_text!r} is not a whole number")
    production = _flag(PRODUCTION_ENV, env.get(PRODUCTION_ENV, "0"))
    settings = Settings(
        database_url=url,
        production=production,
        public_key=checkpoint_key(env.get(PUBLIC_KEY_ENV), env.get(SIGNING_KEY_ENV)),
        origin=env.get(ORIGIN_ENV, "").strip() or None,
        witnesses=witnesses,
        quorum=int(quorum_text) if quorum_text else None,
        rtp_floor=rtp_floor_setting(env.get(RTP_FLOOR_ENV)),
        admin_key=admin_key_setting(env.get(ADMIN_KEY_ENV)),
        generate_admin_key=not production,
        seed_key=load_seed_key(seed_key_path(env.get(SEED_KEY_ENV))),
        allowed_hosts=_list(env.get(ALLOWED_HOSTS_ENV), DEFAULT_ALLOWED_HOSTS),
        cors_origins=_list(env.get(CORS_ORIGINS_ENV), ()),
        idempotency_window=parse_duration(
            IDEMPOTENCY_WINDOW_ENV, env.get(IDEMPOTENCY_WINDOW_ENV), DEFAULT_WINDOW
        ),
        idempotency_wait=parse_duration(
            IDEMPOTENCY_WAIT_ENV, env.get(IDEMPOTENCY_WAIT_ENV), timedelta(seconds=5)
        ).total_seconds(),
        idempotency_lease=parse_duration(
            IDEMPOTENCY_LEASE_ENV, env.get(IDEMPOTENCY_LEASE_ENV), timedelta(seconds=60)
        ).total_seconds(),
        read_wait=_seconds(READ_WAIT_ENV, env.get(READ_WAIT_ENV, "5")),
        read_drive=_flag(READ_DRIVE_ENV, env.get(READ_DRIVE_ENV, "1")),
        read_database_url=read_database_url(env.get(READ_DATABASE_URL_ENV)),
        threads=_threads(env.get(THREADS_ENV)),
        create_table=_flag(CREATE_TABLE_ENV, env.get(CREATE_TABLE_ENV, "1")),
        verifier_state=verifier_state_setting(env.get(STATE_ENV), url, env.get("XDG_STATE_HOME")),
    )
    try:
        settings.trust  # noqa: B018 - checked once at start, not at the first request
    except ValueError as exc:
        raise SettingsError(f"{QUORUM_ENV}: {exc}") from None
    ensure_sqlite_folder(settings.database_url)
    return settings


__all__ = [
    "ADMIN_KEY_ENV",
    "ALLOWED_HOSTS_ENV",
    "CORS_ORIGINS_ENV",
    "CREATE_TABLE_ENV",
    "DATABASE_URL_ENV",
    "DEFAULT_SEED_KEY_FILE",
    "PRODUCTION_ENV",
    "PUBLIC_KEY_ENV",
    "READ_DATABASE_URL_ENV",
    "READ_DRIVE_ENV",
    "READ_WAIT_ENV",
    "RTP_FLOOR_ENV",
    "SEED_KEY_ENV",
    "SIGNING_KEY_ENV",
    "THREADS_ENV",
    "Settings",
    "SettingsError",
    "admin_key_setting",
    "checkpoint_key",
    "ensure_sqlite_folder",
    "load_seed_key",
    "load_settings",
    "public_key_setting",
    "rtp_floor_setting",
    "seed_key_path",
    "signing_key_setting",
    "verifier_state_setting",
    "write_seed_key",
]

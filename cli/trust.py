"""The command line's keys and trust settings: whom ``verify``, ``seal``, ``export`` and
``proof`` trust, and with which key ``seal`` signs.

This module owns the options and environment variables every audit command shares:

* ``--public-key`` / ``ROUNDAUDIT_PUBLIC_KEY``: the operator's key that checks checkpoints,
  **pinned**: a vkey (``<origin>+<key id>+<base64>``, as ``roundaudit proof --key`` prints
  it), a PEM file, or 64 hex digits (the raw Ed25519 key). Without it the public half of the
  signing key file is used when that file exists, else signatures are reported unchecked.
* ``--signing-key`` / ``ROUNDAUDIT_SIGNING_KEY``: the operator's Ed25519 private key, PEM
  (default ``data/roundaudit-signing-key.pem``; ``seal`` generates one when absent, for
  development, and says so).
* ``--origin`` / ``ROUNDAUDIT_LOG_ORIGIN``: the log's name in its checkpoints, one per
  deployment (e.g. ``casino.example/roundaudit/prod``); the signer's key name. ``seal`` uses
  :data:`replays.log.DEFAULT_ORIGIN` when none is set, and says so; a verifier given one (or a
  vkey, whose name it is) refuses checkpoints of another origin.
* ``--witness VKEY[@URL]`` (repeatable) / ``ROUNDAUDIT_WITNESSES`` (separated by spaces): the
  witnesses trusted, by their cosignature vkey, and where they answer (the signer sends them
  every checkpoint; a verifier asks them what they cosigned last).
* ``--quorum N`` / ``ROUNDAUDIT_WITNESS_QUORUM``: how many of them must have cosigned a
  checkpoint for it to be final (default: all of them).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from domain.errors import DomainError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    from replays.log import TrustPolicy, WitnessKey
    from replays.note import NoteKey

SIGNING_KEY_ENV = "ROUNDAUDIT_SIGNING_KEY"
PUBLIC_KEY_ENV = "ROUNDAUDIT_PUBLIC_KEY"
ORIGIN_ENV = "ROUNDAUDIT_LOG_ORIGIN"
WITNESSES_ENV = "ROUNDAUDIT_WITNESSES"
QUORUM_ENV = "ROUNDAUDIT_WITNESS_QUORUM"
DEFAULT_SIGNING_KEY = "data/roundaudit-signing-key.pem"

__all__ = [
    "TrustError",
    "add_key_options",
    "origin",
    "public_key",
    "signing_key",
    "signing_key_path",
    "trust_policy",
    "witnesses",
]


class TrustError(DomainError):
    """A key or witness setting that cannot be used (the message names it)."""

    code = "invalid-trust-setting"


def add_key_options(
    p: argparse.ArgumentParser, *, signing: bool = False, witnesses: bool = True
) -> None:
    p.add_argument(
        "--public-key",
        default=None,
        help=f"the operator key checking checkpoints, pinned: vkey, PEM file or hex (default "
        f"${PUBLIC_KEY_ENV}, else the signing key's public half)",
    )
    p.add_argument(
        "--signing-key",
        default=None,
        help=f"the operator's signing key, PEM (default ${SIGNING_KEY_ENV} or "
        f"{DEFAULT_SIGNING_KEY})" + ("; generated when absent" if signing else ""),
    )
    p.add_argument(
        "--origin",
        default=None,
        help=f"the log's origin (default ${ORIGIN_ENV})",
    )
    if witnesses:
        p.add_argument(
            "--witness",
            action="append",
            default=None,
            metavar="VKEY[@URL]",
            help=f"a trusted witness (repeatable; default ${WITNESSES_ENV})",
        )
        p.add_argument(
            "--quorum",
            type=int,
            default=None,
            metavar="N",
            help=f"cosignatures that make a checkpoint final (default ${QUORUM_ENV}, else all)",
        )


def signing_key_path(args: argparse.Namespace) -> Path:
    return Path(
        getattr(args, "signing_key", None) or os.environ.get(SIGNING_KEY_ENV) or DEFAULT_SIGNING_KEY
    )


def signing_key(args: argparse.Namespace, *, create: bool) -> Ed25519PrivateKey:
    from replays.merkle import key_id, load_private_key

    path = signing_key_path(args)
    key, created = load_private_key(path, create=create)
    if created:
        print(
            f"warning: generated a new checkpoint signing key at {path} (development); "
            f"key id {key_id(key.public_key())}",
            file=sys.stderr,
        )
    return key


def origin(args: argparse.Namespace) -> str | None:
    """The origin given (option, environment), or None."""
    return getattr(args, "origin", None) or os.environ.get(ORIGIN_ENV) or None


def _operator(args: argparse.Namespace) -> NoteKey | None:
    from replays.merkle import load_public_key, parse_public_key
    from replays.note import NoteError, operator_key, parse_vkey

    given = getattr(args, "public_key", None) or os.environ.get(PUBLIC_KEY_ENV)
    name = origin(args)
    if given:
        if "+" in given and not Path(given).exists():
            try:
                key = parse_vkey(given)
            except NoteError as exc:
                raise TrustError(f"--public-key: {exc}") from None
            if name is not None and key.name != name:
                raise TrustError(f"--public-key names origin {key.name!r}, not {name!r}")
            return key
        path = Path(given)
        try:
            pub = load_public_key(path) if path.exists() else parse_public_key(given)
        except ValueError as exc:
            raise TrustError(f"--public-key {given!r}: not an Ed25519 key ({exc})") from None
    else:
        path = signing_key_path(args)
        if not path.exists():
            return None
        pub = load_public_key(path)
    from replays.log import DEFAULT_ORIGIN

    return operator_key(name or DEFAULT_ORIGIN, pub)


def public_key(args: argparse.Namespace) -> Ed25519PublicKey | None:
    key = _operator(args)
    return key.ed25519() if key is not None else None


def witnesses(args: argparse.Namespace) -> list[WitnessKey]:
    from replays.log import parse_witness
    from replays.note import NoteError

    given = getattr(args, "witness", None)
    if given is None:
        given = os.environ.get(WITNESSES_ENV, "").split()
    try:
        return [parse_witness(text) for text in given]
    except NoteError as exc:
        raise TrustError(f"--witness: {exc}") from None


def trust_policy(args: argparse.Namespace) -> TrustPolicy:
    """The operator key, origin, witnesses and quorum the command trusts."""
    from replays.log import make_policy

    operator = _operator(args)
    pinned = origin(args)
    given = getattr(args, "public_key", None) or os.environ.get(PUBLIC_KEY_ENV, "")
    if operator is not None and pinned is None and "+" in given and not Path(given).exists():
        pinned = operator.name  # a vkey pins its origin
    quorum = getattr(args, "quorum", None)
    if quorum is None and os.environ.get(QUORUM_ENV):
        try:
            quorum = int(os.environ[QUORUM_ENV])
        except ValueError:
            raise TrustError(f"{QUORUM_ENV} must be a whole number") from None
    try:
        return make_policy(operator, origin=pinned, witnesses=witnesses(args), quorum=quorum)
    except ValueError as exc:
        raise TrustError(str(exc)) from None

"""C2SP signed notes, checkpoints and Ed25519 cosignatures, exactly as specified.

This module owns the text formats a transparency-log ecosystem exchanges, so that existing
witnesses and verifiers can read ours and ours can read theirs:

* ``c2sp.org/signed-note``: a text ending in a newline, a blank line, then signature lines
  ``— <key name> base64(key ID (4 bytes) || signature)``; the key ID is
  ``SHA-256(key name || 0x0A || signature type || public key)[:4]``; Ed25519 signatures (type
  ``0x01``) sign the note text. Verifier keys (*vkeys*): ``<name>+<hex key ID>+base64(type ||
  public key)``.
* ``c2sp.org/tlog-checkpoint``: the note text is the log's **origin**, the tree **size** in
  decimal and the **root hash** in base64 (RFC 6962 / 9162 Merkle tree), one per line, then
  optional extension lines (this log writes none).
* ``c2sp.org/tlog-cosignature`` v1: a witness's note signature of type ``0x04`` over
  ``"cosignature/v1\\n" || "time <POSIX seconds>\\n" || checkpoint text``; the signature bytes are
  the timestamp (8 bytes, big-endian) followed by the 64-byte Ed25519 signature.

It is pure (hashlib, base64 and the ``cryptography`` package) and imports nothing else of the
project.

>>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
>>> key = Ed25519PrivateKey.from_private_bytes(bytes(32))
>>> text = checkpoint_text("example.com/log", 0, EMPTY_ROOT)
>>> note = Note(text, (sign(text, "example.com/log", key),))
>>> parse_note(note.encode()) == note
True
>>> verify(note, operator_key("example.com/log", key.public_key()))
'valid'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Final, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "COSIGNATURE_V1",
    "ED25519",
    "EMPTY_ROOT",
    "MAX_SIGNATURES",
    "CheckpointBody",
    "Note",
    "NoteError",
    "NoteKey",
    "NoteSignature",
    "checkpoint_text",
    "cosign",
    "cosignature_message",
    "cosignature_time",
    "key_id",
    "operator_key",
    "parse_checkpoint",
    "parse_note",
    "parse_vkey",
    "raw_public",
    "sign",
    "verify",
    "witness_key",
]

ED25519: Final = 0x01
COSIGNATURE_V1: Final = 0x04
EM_DASH: Final = "\u2014"
#: Signatures a note may carry here (the spec requires accepting at least 16).
MAX_SIGNATURES: Final = 100
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()


class NoteError(ValueError):
    """Text that is not a well-formed signed note, checkpoint or vkey (the message says why)."""


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(name: str, sig_type: int, public: bytes) -> bytes:
    """The 4-byte key ID: SHA-256(name || 0x0A || signature type || public key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([sig_type]) + public).digest()[:4]


def _check_name(name: str) -> None:
    if not name or any(c.isspace() for c in name) or "+" in name:
        raise NoteError(f"key name {name!r}: non-empty, without spaces or '+'")


@dataclass(frozen=True)
class NoteKey:
    """A public key as notes name it: key name, signature type (``0x01`` for a log's Ed25519
    signature, ``0x04`` for a cosignature v1) and the 32-byte Ed25519 public key."""

    name: str
    sig_type: int
    public: bytes

    def __post_init__(self) -> None:
        _check_name(self.name)
        if self.sig_type not in (ED25519, COSIGNATURE_V1):
            raise NoteError(f"signature type {self.sig_type:#04x}: only 0x01 and 0x04 are known")
        if len(self.public) != 32:
            raise NoteError("an Ed25519 public key is 32 bytes")

    @property
    def id(self) -> bytes:
        return key_id(self.name, self.sig_type, self.public)

    def vkey(self) -> str:
        material = base64.b64encode(bytes([self.sig_type]) + self.public).decode()
        return f"{self.name}+{self.id.hex()}+{material}"

    def ed25519(self) -> Ed25519PublicKey:
        return Ed25519PublicKey.from_public_bytes(self.public)


def operator_key(name: str, key: Ed25519PublicKey) -> NoteKey:
    """The key that signs a log's checkpoints, named (by convention) like its origin."""
    return NoteKey(name, ED25519, raw_public(key))


def witness_key(name: str, key: Ed25519PublicKey) -> NoteKey:
    return NoteKey(name, COSIGNATURE_V1, raw_public(key))


def parse_vkey(text: str) -> NoteKey:
    """A verifier key ``<name>+<hex key ID>+<base64(type || key)>``; its key ID must match."""
    parts = text.strip().split("+", 2)  # the base64 key may hold '+', the name may not
    if len(parts) != 3:
        raise NoteError(f"{text!r} is not a vkey: <name>+<key id>+<base64 key>")
    name, hex_id, material = parts
    try:
        raw = base64.b64decode(material, validate=True)
        given = bytes.fromhex(hex_id)
    except (binascii.Error, ValueError):
        raise NoteError(f"{text!r}: the key ID or the key is not valid hex / base64") from None
    if len(given) != 4 or not raw:
        raise NoteError(f"{text!r}: a 4-byte key ID and a key are required")
    key = NoteKey(name, raw[0], raw[1:])
    if key.id != given:
        raise NoteError(f"{text!r}: the key ID does not match the name and key")
    return key


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: bytes  # 4 bytes
    signature: bytes

    def line(self) -> str:
        return f"{EM_DASH} {self.name} {base64.b64encode(self.key_id + self.signature).decode()}\n"


@dataclass(frozen=True)
class Note:
    text: str  # ends with a newline
    signatures: tuple[NoteSignature, ...]

    def encode(self) -> bytes:
        return (self.text + "\n" + "".join(s.line() for s in self.signatures)).encode()

    def with_signatures(self, *more: NoteSignature) -> Note:
        known = {(s.name, s.key_id, s.signature) for s in self.signatures}
        added = tuple(s for s in more if (s.name, s.key_id, s.signature) not in known)
        return Note(self.text, self.signatures + added)


def parse_note(data: bytes | str) -> Note:
    """A signed note (signed-note: valid UTF-8, no control characters but newline, the text
    separated from one or more signature lines by the last blank line)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise NoteError("a note is UTF-8") from None
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("a note contains no control characters other than newline")
    if not text.endswith("\n"):
        raise NoteError("a note ends with a newline")
    split = text.rfind("\n\n")
    if split < 0:
        raise NoteError("a note has a blank line between its text and its signatures")
    body, sig_lines = text[: split + 1], text[split + 2 :].splitlines()
    if not sig_lines:
        raise NoteError("a note has at least one signature")
    if len(sig_lines) > MAX_SIGNATURES:
        raise NoteError(f"more than {MAX_SIGNATURES} signatures")
    sigs = []
    for line in sig_lines:
        prefix = EM_DASH + " "
        if not line.startswith(prefix):
            raise NoteError(f"signature line {line!r} does not start with '— '")
        parts = line[len(prefix) :].split(" ")
        if len(parts) != 2:
            raise NoteError(f"signature line {line!r}: '— <name> <base64>'")
        name, b64 = parts
        _check_name(name)
        try:
            raw = base64.b64decode(b64, validate=True)
        except binascii.Error:
            raise NoteError(f"signature line {line!r}: not base64") from None
        if len(raw) < 5:
            raise NoteError(f"signature line {line!r}: too short")
        sigs.append(NoteSignature(name, raw[:4], raw[4:]))
    return Note(body, tuple(sigs))


def sign(text: str, name: str, key: Ed25519PrivateKey) -> NoteSignature:
    """An Ed25519 (type 0x01) note signature of ``text`` by ``name``."""
    kid = key_id(name, ED25519, raw_public(key.public_key()))
    return NoteSignature(name, kid, key.sign(text.encode()))


def cosignature_message(text: str, timestamp: int) -> bytes:
    """What a cosignature v1 signs: ``cosignature/v1``, ``time <t>``, then the checkpoint."""
    return f"cosignature/v1\ntime {timestamp}\n".encode() + text.encode()


def cosign(text: str, name: str, key: Ed25519PrivateKey, timestamp: int) -> NoteSignature:
    """A witness's cosignature v1 (type 0x04) of a checkpoint's text at ``timestamp``."""
    if not 0 < timestamp < 2**63:
        raise NoteError("a cosignature's timestamp is a POSIX time in 1..2**63-1")
    kid = key_id(name, COSIGNATURE_V1, raw_public(key.public_key()))
    sig = key.sign(cosignature_message(text, timestamp))
    return NoteSignature(name, kid, timestamp.to_bytes(8, "big") + sig)


def cosignature_time(sig: NoteSignature) -> int:
    return int.from_bytes(sig.signature[:8], "big")


Verdict = Literal["valid", "invalid", "absent"]


def verify(note: Note, key: NoteKey) -> Verdict:
    """Whether ``key`` signed ``note``: ``absent`` when no signature line has its name and key
    ID (signatures of unknown keys are ignored), ``invalid`` when one has and does not verify
    (the note is then to be rejected), else ``valid``."""
    found: Verdict = "absent"
    for sig in note.signatures:
        if sig.name != key.name or sig.key_id != key.id:
            continue
        if key.sig_type == COSIGNATURE_V1:
            if len(sig.signature) != 72:
                return "invalid"
            message = cosignature_message(note.text, cosignature_time(sig))
            raw = sig.signature[8:]
        else:
            message, raw = note.text.encode(), sig.signature
        try:
            key.ed25519().verify(raw, message)
        except InvalidSignature:
            return "invalid"
        found = "valid"
    return found


# ------------------------------------------------------------------------------ checkpoints
@dataclass(frozen=True)
class CheckpointBody:
    origin: str
    size: int
    root: bytes  # 32 bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        return checkpoint_text(self.origin, self.size, self.root, self.extensions)


def checkpoint_text(origin: str, size: int, root: bytes, extensions: tuple[str, ...] = ()) -> str:
    """The note text of a checkpoint (tlog-checkpoint).

    >>> checkpoint_text("example.com/log", 0, EMPTY_ROOT)
    'example.com/log\\n0\\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\\n'
    """
    if not origin or "\n" in origin:
        raise NoteError("a checkpoint's origin is one non-empty line")
    if size < 0 or len(root) != 32:
        raise NoteError("a checkpoint has a size >= 0 and a 32-byte root")
    lines = [origin, str(size), base64.b64encode(root).decode(), *extensions]
    return "".join(line + "\n" for line in lines)


def parse_checkpoint(text: str) -> CheckpointBody:
    """The origin, size, root and extension lines of a checkpoint's note text."""
    if not text.endswith("\n"):
        raise NoteError("a checkpoint's text ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise NoteError("a checkpoint has at least three non-empty lines")
    origin, size, root = lines[:3]
    if not (size.isascii() and size.isdigit()) or (size != "0" and size.startswith("0")):
        raise NoteError(f"tree size {size!r} is not a decimal without leading zeros")
    try:
        digest = base64.b64decode(root, validate=True)
    except binascii.Error:
        raise NoteError(f"root hash {root!r} is not base64") from None
    if len(digest) != 32:
        raise NoteError("the root hash is 32 bytes")
    return CheckpointBody(origin, int(size), digest, tuple(lines[3:]))

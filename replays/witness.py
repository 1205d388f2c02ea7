"""A transparency-log witness (C2SP ``tlog-witness``), and the client that talks to one.

This module owns the witness's rules and state and its HTTP face, and the client side the
checkpoint signer (``replays.signer``) and the verifier use. ``roundaudit witness serve`` runs
a witness as its own process, with its own state folder and key; in production a regulator or
a third party runs it, which is what makes a rewrite of the operator's history visible: the
witness remembers the last tree it cosigned and cosigns a new checkpoint only when it extends
that tree.

**add-checkpoint** (``POST <prefix>/add-checkpoint``): the body is ``old <size>``, up to 63
consistency-proof lines (base64 hashes), an empty line, and the checkpoint (a signed note).
The witness answers, exactly as the specification says:

* ``404`` the origin is not a log it witnesses; ``403`` no valid signature of a trusted key of
  that log, or a signature of a trusted key that does not verify;
* ``400`` a malformed request, or an old size larger than the checkpoint's;
* ``409`` the old size is not the size of the last checkpoint it cosigned for that log (a
  rollback, or a client that does not know it yet): the body is that size and a newline,
  ``Content-Type: text/x.tlog.size``;
* ``422`` a size-0 checkpoint whose root is not the empty tree's, a proof given with old size
  0, a consistency proof that does not verify, or the same size with another root (a fork);
* ``200`` the cosignature line(s) ``— <witness name> <base64>`` (``tlog-cosignature`` v1,
  Ed25519, with the time of signing), after the new checkpoint is **persisted**; the check of
  the old size and the update are one atomic step (a lock in the process, a lock file against
  a second process on the same folder).

Refused requests from a known log with a valid signature are appended to ``refused.jsonl`` in
the state folder: they may be evidence of the log's misbehaviour.

**Monitoring** (``GET <prefix>/<lowercase hex SHA-256 of the origin>/checkpoint``): the last
checkpoint cosigned for that log, with the log's signature and the witness's cosignature; 404
when it has cosigned none.

**State folder**: ``logs/<origin hash>`` holds that last checkpoint (written to a temporary
file, flushed, then renamed over the old one), ``lock`` is held for the life of the process.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Final

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from replays.merkle import verify_consistency
from replays.note import (
    EMPTY_ROOT,
    MAX_SIGNATURES,
    CheckpointBody,
    Note,
    NoteError,
    NoteKey,
    cosign,
    parse_checkpoint,
    parse_note,
    verify,
    witness_key,
)

__all__ = [
    "MAX_PROOF_LINES",
    "SIZE_CONTENT_TYPE",
    "Answer",
    "Witness",
    "WitnessServer",
    "add_checkpoint_body",
    "fetch_checkpoint",
    "origin_hash",
    "submit",
]

MAX_PROOF_LINES: Final = 63
MAX_BODY: Final = 1 << 20
SIZE_CONTENT_TYPE: Final = "text/x.tlog.size"
TEXT: Final = "text/plain; charset=utf-8"


def origin_hash(origin: str) -> str:
    return hashlib.sha256(origin.encode()).hexdigest()


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str = TEXT


def _refuse(status: int, why: str) -> Answer:
    return Answer(status, (why.rstrip("\n") + "\n").encode())


class Witness:
    """A witness's rules and state (the HTTP server is :class:`WitnessServer`)."""

    def __init__(
        self,
        state: Path,
        *,
        name: str,
        key: Ed25519PrivateKey,
        logs: Sequence[NoteKey],
        clock: Any = time.time,
    ) -> None:
        self.state = state
        self.name = name
        self.key = key
        self.public = witness_key(name, key.public_key())
        self.logs: dict[str, list[NoteKey]] = {}
        for k in logs:
            self.logs.setdefault(k.name, []).append(k)
        self.clock = clock
        self._lock = threading.Lock()
        (state / "logs").mkdir(parents=True, exist_ok=True)
        self._lockfile: IO[bytes] | None = None

    def hold(self) -> None:
        """Take the state folder for this process (a second witness on it is refused)."""
        f = open(self.state / "lock", "ab")  # noqa: SIM115 - held for the process's life
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise RuntimeError(f"another witness process holds {self.state}") from None
        self._lockfile = f

    def release(self) -> None:
        if self._lockfile is not None:
            self._lockfile.close()
            self._lockfile = None

    # ------------------------------------------------------------------------ state
    def _path(self, origin: str) -> Path:
        return self.state / "logs" / origin_hash(origin)

    def latest(self, origin: str) -> Note | None:
        """The last checkpoint this witness cosigned for ``origin``."""
        path = self._path(origin)
        if not path.exists():
            return None
        return parse_note(path.read_bytes())

    def _persist(self, origin: str, note: Note) -> None:
        path = self._path(origin)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(note.encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _evidence(self, origin: str, answer: Answer, request: str) -> None:
        line = {
            "time": int(self.clock()),
            "origin": origin,
            "status": answer.status,
            "answer": answer.body.decode(errors="replace"),
            "request": request,
        }
        with open(self.state / "refused.jsonl", "ab") as f:
            f.write(orjson.dumps(line) + b"\n")

    # ------------------------------------------------------------------------ add-checkpoint
    def add_checkpoint(self, body: bytes) -> Answer:
        """One ``add-checkpoint`` request (see the module docstring)."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return _refuse(400, "the request is not UTF-8")
        head, sep, rest = text.partition("\n\n")
        if not sep:
            return _refuse(400, "no empty line between the proof and the checkpoint")
        lines = head.split("\n")
        old_line, proof_lines = lines[0], lines[1:]
        old_text = old_line.removeprefix("old ")
        if (
            old_line == old_text
            or not (old_text.isascii() and old_text.isdigit())
            or (old_text != "0" and old_text.startswith("0"))
        ):
            return _refuse(400, f"the first line must be 'old <size>', not {old_line!r}")
        old = int(old_text)
        if len(proof_lines) > MAX_PROOF_LINES:
            return _refuse(400, f"more than {MAX_PROOF_LINES} consistency proof lines")
        proof = []
        for line in proof_lines:
            try:
                h = base64.b64decode(line, validate=True)
            except binascii.Error:
                return _refuse(400, f"proof line {line!r} is not base64")
            if len(h) != 32:
                return _refuse(400, f"proof line {line!r} is not a 32-byte hash")
            proof.append(h)
        try:
            note = parse_note(rest)
            cp = parse_checkpoint(note.text)
        except NoteError as exc:
            return _refuse(400, f"not a checkpoint: {exc}")
        keys = self.logs.get(cp.origin)
        if not keys:
            return _refuse(404, f"unknown log origin {cp.origin!r}")
        verdicts = [verify(note, k) for k in keys]
        if "invalid" in verdicts:
            return _refuse(403, "a signature of a trusted log key does not verify")
        if "valid" not in verdicts:
            return _refuse(403, "no signature of a trusted key of this log")
        with self._lock:
            answer = self._check_and_cosign(cp, note, keys, old, proof)
        if answer.status != 200:
            self._evidence(cp.origin, answer, text)
        return answer

    def _check_and_cosign(
        self, cp: CheckpointBody, note: Note, keys: list[NoteKey], old: int, proof: list[bytes]
    ) -> Answer:
        if old > cp.size:
            return _refuse(400, f"old size {old} is larger than the checkpoint's {cp.size}")
        latest = self.latest(cp.origin)
        held = parse_checkpoint(latest.text) if latest is not None else None
        held_size = held.size if held is not None else 0
        if old != held_size:
            return Answer(409, f"{held_size}\n".encode(), SIZE_CONTENT_TYPE)
        if cp.size == 0 and cp.root != EMPTY_ROOT:
            return _refuse(422, "a checkpoint of size 0 has the empty tree's root")
        if old == 0:
            if proof:
                return _refuse(422, "no consistency proof is given from size 0")
        else:
            assert held is not None
            if old == cp.size:
                if cp.root != held.root or proof:
                    return _refuse(422, f"another root at size {old}: the log forked")
            elif not verify_consistency(old, cp.size, held.root, cp.root, proof):
                return _refuse(
                    422,
                    f"the consistency proof from size {old} does not verify: the new tree does "
                    "not extend the one cosigned before",
                )
        stamp = max(1, int(self.clock()))
        cosignature = cosign(note.text, self.name, self.key, stamp)
        trusted = [
            s for s in note.signatures if any(s.name == k.name and s.key_id == k.id for k in keys)
        ]
        self._persist(cp.origin, Note(note.text, (*trusted, cosignature)))
        return Answer(200, cosignature.line().encode())

    def monitor(self, digest: str) -> Answer:
        """``GET <prefix>/<origin hash>/checkpoint``."""
        for origin in self.logs:
            if origin_hash(origin) == digest:
                latest = self.latest(origin)
                if latest is None:
                    break
                return Answer(200, latest.encode())
        return _refuse(404, "this witness has cosigned no checkpoint of that log")


class WitnessServer(ThreadingHTTPServer):
    """The witness over HTTP (loopback or behind a proxy; no authentication beyond the
    checkpoint's signature, as the specification says)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], witness: Witness, prefix: str = "") -> None:
        self.witness = witness
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: WitnessServer
    protocol_version = "HTTP/1.1"
    server_version = "roundaudit-witness"

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)

    def _route(self) -> str | None:
        path = self.path.split("?", 1)[0]
        prefix = self.server.prefix
        if prefix and not path.startswith(prefix + "/"):
            return None
        return path[len(prefix) :]

    def do_POST(self) -> None:
        route = self._route()
        if route != "/add-checkpoint":
            self._send(_refuse(404, "no such endpoint"))
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._send(_refuse(411, "a Content-Length is required"))
            return
        if int(length) > MAX_BODY:
            self._send(_refuse(413, "the request is too large"))
            self.close_connection = True
            return
        self._send(self.server.witness.add_checkpoint(self.rfile.read(int(length))))

    def do_GET(self) -> None:
        route = self._route() or ""
        parts = route.strip("/").split("/")
        if len(parts) == 2 and parts[1] == "checkpoint" and len(parts[0]) == 64:
            self._send(self.server.witness.monitor(parts[0]))
            return
        self._send(_refuse(404, "no such endpoint"))

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged line by line (refusals go to ``refused.jsonl``)."""


# ------------------------------------------------------------------------------ client
def add_checkpoint_body(old: int, proof: Sequence[bytes], note: Note) -> bytes:
    """The body of an add-checkpoint request."""
    lines = [f"old {old}", *(base64.b64encode(h).decode() for h in proof)]
    return ("\n".join(lines) + "\n\n").encode() + note.encode()


def _request(req: urllib.request.Request, timeout: float) -> Answer:
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            return Answer(resp.status, resp.read(), resp.headers.get("Content-Type", ""))
    except urllib.error.HTTPError as err:
        return Answer(err.code, err.read(), err.headers.get("Content-Type", ""))


def _check_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a witness URL is http:// or https://, not {url!r}")
    return url.rstrip("/")


def submit(url: str, old: int, proof: Sequence[bytes], note: Note, *, timeout: float) -> Answer:
    """POST an add-checkpoint request to the witness at ``url`` (its submission prefix).
    Network failures raise ``OSError``."""
    req = urllib.request.Request(  # noqa: S310 - _check_url allows http(s) only
        _check_url(url) + "/add-checkpoint",
        data=add_checkpoint_body(old, proof, note),
        method="POST",
        headers={"Content-Type": TEXT},
    )
    return _request(req, timeout)


def fetch_checkpoint(url: str, origin: str, *, timeout: float) -> Note | None:
    """The last checkpoint the witness at ``url`` (its monitoring prefix) cosigned for
    ``origin`` (None when it has cosigned none). Network failures raise ``OSError``; an answer
    that is not a note raises :class:`~replays.note.NoteError`."""
    target = f"{_check_url(url)}/{origin_hash(origin)}/checkpoint"
    req = urllib.request.Request(target)  # noqa: S310 - _check_url allows http(s) only
    answer = _request(req, timeout)
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise NoteError(f"the witness answered {answer.status}: {answer.body[:200]!r}")
    note = parse_note(answer.body)
    if len(note.signatures) > MAX_SIGNATURES:
        raise NoteError("too many signatures")
    return note

"""The witness (C2SP tlog-witness, tlog-cosignature v1): every status code the specification
names, in process; then as its own process on loopback, fed by the checkpoint signer, refusing
a rollback and a fork, keeping its state across a restart, refusing a second process on its
folder, and consulted by ``roundaudit verify``."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from storekit import ORIGIN, ROOT, WitnessProcess, operator, sign

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.merkle import MerkleTree, generate_key, leaf_hash
from replays.note import (
    EMPTY_ROOT,
    Note,
    NoteKey,
    checkpoint_text,
    cosignature_time,
    operator_key,
    parse_note,
    verify,
    witness_key,
)
from replays.note import (
    sign as sign_note,
)
from replays.witness import (
    SIZE_CONTENT_TYPE,
    Witness,
    add_checkpoint_body,
    fetch_checkpoint,
    origin_hash,
    submit,
)

NAME = "witness.example/w1"
LEAVES = [f"leaf {i}".encode() for i in range(20)]
NOW = 1_700_000_000


class Log:
    """A log of test leaves with its operator key (signs C2SP checkpoints)."""

    def __init__(self, origin: str = ORIGIN) -> None:
        self.origin = origin
        self.key = generate_key()
        self.vkey = operator_key(origin, self.key.public_key())
        self.tree = MerkleTree(leaf_hash(d) for d in LEAVES)

    def note(self, size: int, root: bytes | None = None) -> Note:
        text = checkpoint_text(self.origin, size, self.tree.root(size) if root is None else root)
        return Note(text, (sign_note(text, self.origin, self.key),))

    def body(self, old: int, size: int, proof: list[bytes] | None = None) -> bytes:
        if proof is None:
            proof = self.tree.consistency_proof(old, size) if old else []
        return add_checkpoint_body(old, proof, self.note(size))


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def witness(tmp_path: Path, log: Log) -> Witness:
    return Witness(tmp_path, name=NAME, key=generate_key(), logs=[log.vkey], clock=lambda: NOW)


def test_a_first_checkpoint_is_cosigned_persisted_and_served(witness: Witness, log: Log) -> None:
    answer = witness.add_checkpoint(log.body(0, 5))
    assert answer.status == 200, answer.body
    line = answer.body.decode()
    assert line.startswith(f"\u2014 {NAME} ")
    assert line.endswith("\n")
    cosigned = parse_note(log.note(5).text + "\n" + line)
    assert verify(cosigned, witness.public) == "valid"
    sig = cosigned.signatures[0]
    assert cosignature_time(sig) == NOW
    # the cosignature v1 message, rebuilt from the specification's text
    message = f"cosignature/v1\ntime {NOW}\n".encode() + log.note(5).text.encode()
    witness.public.ed25519().verify(sig.signature[8:], message)
    key_id = hashlib.sha256(NAME.encode() + b"\n\x04" + witness.public.public).digest()[:4]
    assert sig.key_id == key_id
    # persisted: with the log's signature and the cosignature
    stored = witness.latest(ORIGIN)
    assert stored is not None
    assert verify(stored, log.vkey) == "valid"
    assert verify(stored, witness.public) == "valid"
    served = witness.monitor(origin_hash(ORIGIN))
    assert served.status == 200
    assert parse_note(served.body) == stored


def test_a_consistent_larger_checkpoint_is_cosigned(witness: Witness, log: Log) -> None:
    assert witness.add_checkpoint(log.body(0, 5)).status == 200
    assert witness.add_checkpoint(log.body(5, 13)).status == 200
    assert witness.add_checkpoint(log.body(13, 13)).status == 200  # the same tree again
    stored = witness.latest(ORIGIN)
    assert stored is not None
    assert stored.text == log.note(13).text


def test_an_unknown_origin_is_404(witness: Witness) -> None:
    other = Log("other.example/log")
    assert witness.add_checkpoint(other.body(0, 3)).status == 404
    assert witness.monitor(origin_hash("other.example/log")).status == 404


def test_no_trusted_signature_is_403_and_a_failing_one_too(witness: Witness, log: Log) -> None:
    impostor = Log()  # the same origin, another key
    assert witness.add_checkpoint(impostor.body(0, 3)).status == 403
    note = log.note(3)
    sig = note.signatures[0]
    broken = Note(note.text, (type(sig)(sig.name, sig.key_id, bytes(64)),))
    assert witness.add_checkpoint(add_checkpoint_body(0, [], broken)).status == 403
    assert witness.latest(ORIGIN) is None


@pytest.mark.parametrize(
    "body",
    [
        b"old 01\n\n",
        b"nope\n\n",
        b"old 0\nnot base64!\n\n",
        b"old 0\n" + base64.b64encode(b"short") + b"\n\n",
        b"old 0\n" + b"".join(base64.b64encode(bytes(32)) + b"\n" for _ in range(64)) + b"\n",
        b"old 0\nno empty line",
        b"\xff\xfe",
    ],
    ids=["leading-zero", "no-old", "bad-base64", "short-hash", "64-lines", "no-blank", "utf8"],
)
def test_a_malformed_request_is_400(witness: Witness, log: Log, body: bytes) -> None:
    if body.endswith(b"\n\n"):
        body += log.note(3).encode()
    assert witness.add_checkpoint(body).status == 400


def test_an_old_size_above_the_checkpoint_is_400(witness: Witness, log: Log) -> None:
    assert witness.add_checkpoint(log.body(0, 5)).status == 200
    assert witness.add_checkpoint(log.body(5, 3, proof=[])).status == 400


def test_a_wrong_old_size_is_409_with_the_size_it_holds(witness: Witness, log: Log) -> None:
    assert witness.add_checkpoint(log.body(0, 8)).status == 200
    for old in (0, 5):  # a client that does not know, and a rollback attempt
        answer = witness.add_checkpoint(log.body(old, 12))
        assert answer.status == 409
        assert answer.body == b"8\n"
        assert answer.content_type == SIZE_CONTENT_TYPE
    refused = (witness.state / "refused.jsonl").read_bytes().splitlines()
    assert [orjson.loads(r)["status"] for r in refused] == [409, 409]


def test_inconsistency_is_422(witness: Witness, log: Log) -> None:
    # size 0 with another root than the empty tree's
    text = checkpoint_text(ORIGIN, 0, bytes(32))
    bad_empty = Note(text, (sign_note(text, ORIGIN, log.key),))
    assert witness.add_checkpoint(add_checkpoint_body(0, [], bad_empty)).status == 422
    # a proof given from size 0
    assert witness.add_checkpoint(log.body(0, 5, proof=[bytes(32)])).status == 422
    assert witness.add_checkpoint(log.body(0, 5)).status == 200
    # a fork: another tree extending to 9 from a different first 5 leaves
    fork = Log()
    fork.key, fork.vkey = log.key, log.vkey
    fork.tree = MerkleTree(leaf_hash(d + b"!") for d in LEAVES)
    assert witness.add_checkpoint(fork.body(5, 9)).status == 422
    # the same size with another root
    assert witness.add_checkpoint(add_checkpoint_body(5, [], log.note(5, bytes(32)))).status == 422
    # a proof that does not verify
    proof = log.tree.consistency_proof(5, 9)
    proof[0] = bytes(32)
    assert witness.add_checkpoint(log.body(5, 9, proof=proof)).status == 422
    stored = witness.latest(ORIGIN)
    assert stored is not None
    assert stored.text == log.note(5).text  # nothing refused was recorded
    assert hashlib.sha256(b"").digest() == EMPTY_ROOT


# ------------------------------------------------------------------------------ a process
def test_the_witness_process_cosigns_what_the_signer_sends_and_refuses_a_rollback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    key = tmp_path / "operator.pem"
    app = RoundAudit(env=environment_for(url))
    simulate(app, variant="european", rounds=1, players=2)
    w = WitnessProcess(tmp_path / "witness", NAME, [operator(key)])
    with w:
        first = sign(url, key, [w.trusted])
        assert first.witnessed == [NAME], first.problems
        simulate(app, variant="european", rounds=1, players=2)
        second = sign(url, key, [w.trusted])
        assert second.witnessed == [NAME], second.problems
        assert second.checkpoint is not None
        assert first.checkpoint is not None
        note = fetch_checkpoint(w.url, ORIGIN, timeout=5)
        assert note is not None
        assert second.checkpoint.note is not None
        assert note.text == second.checkpoint.note.text
        assert verify(note, w.key) == "valid"
        # an older checkpoint from the witness's size: 400; from its own size: 409 (rollback)
        assert first.checkpoint.note is not None
        older = first.checkpoint.note
        assert submit(w.url, second.checkpoint.size, [], older, timeout=5).status == 400
        assert submit(w.url, first.checkpoint.size, [], older, timeout=5).status == 409
        # verify asks the witness: the log extends what it cosigned
        capsys.readouterr()
        code = main(["--database-url", url, "verify", "--all", "--public-key",
                     operator(key).vkey(), "--witness", w.option, "--no-progress"])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        assert out.splitlines()[-1] == "2 passed, 0 failed"
        # a second process on the same state folder is refused
        again = subprocess.run(
            [sys.executable, "-m", "cli.main", "witness", "serve", "--state", str(w.state),
             "--name", NAME, "--log", operator(key).vkey(), "--port", "0"],
            check=False, cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert again.returncode == 2
        assert "another witness process holds" in again.stderr
    app.close()
    # restarted on the same folder, it still holds the size it cosigned
    with WitnessProcess(w.state, NAME, [operator(key)]) as again_w:
        assert submit(again_w.url, 0, [], older, timeout=5).status == 409


def test_the_witness_process_stops_cleanly_and_prints_its_vkey(tmp_path: Path) -> None:
    log = operator(tmp_path / "operator.pem")
    w = WitnessProcess(tmp_path / "witness", NAME, [log]).start()
    code, out, err = w.stop()
    assert code == 0, err
    assert f"witness {w.key.vkey()}" in out
    assert "listening on http://127.0.0.1:" in out
    assert isinstance(w.key, NoteKey)
    assert w.key == witness_key(NAME, w.key.ed25519())

"""The open specification (``docs/spec/``) holds: its vectors are what the project computes, an
implementation written from the pages alone (``independent.py``, which imports nothing of the
project) reproduces the vectors, and it checks a simulated round's export: every record against
its leaf, every leaf in the signed and cosigned checkpoint, and the RNG shoe's cards from the
revealed seed."""

from __future__ import annotations

import ast
import base64
import sys
from pathlib import Path
from uuid import UUID

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import independent as spec

from cli.main import main
from cli.simulate import simulate
from domain.application import RoundAudit
from domain.persistence import environment_for
from replays.vectors import VECTORS, render, vectors

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("domain", "replays", "api", "cli", "projections", "tests")


def load(name: str) -> dict:  # type: ignore[type-arg]
    data: dict = orjson.loads((VECTORS / name).read_bytes())  # type: ignore[type-arg]
    return data


def test_the_independent_verifier_imports_nothing_of_the_project() -> None:
    tree = ast.parse((Path(__file__).parent / "independent.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names
    assert not [n for n in names if n.split(".")[0] in PROJECT], names


@pytest.mark.parametrize(
    "name", ["shuffle.json", "shuffle-v2.json", "leaves.json", "trees.json", "checkpoint.json"]
)
def test_the_vectors_are_what_the_project_computes(name: str) -> None:
    """``python -m replays.vectors`` regenerates them; a change of format shows here."""
    assert (VECTORS / name).read_bytes() == render(vectors()[name])


@pytest.mark.parametrize(
    ("name", "version", "known"),
    [
        ("shuffle.json", "v1", ["4S", "4C", "3H", "6H", "9C"]),
        ("shuffle-v2.json", "v2", ["9S", "2C", "2H", "JH", "3S"]),
    ],
)
def test_the_shuffle_vectors_from_the_spec(name: str, version: str, known: list[str]) -> None:
    """Each version's vectors, recomputed by the spec's own implementation of that version;
    the other version gives another order (their streams' tags and directions differ); the
    known answer of shuffle.md (32 zero bytes, one deck)."""
    shoe, other = (spec.shoe, spec.shoe_v2) if version == "v1" else (spec.shoe_v2, spec.shoe)
    data = load(name)
    assert data["algorithm"] == f"hmac-sha256-ctr-fisher-yates-{version}"
    assert len(data["cases"]) >= 4
    for case in data["cases"]:
        seed = bytes.fromhex(case["seed"])
        assert spec.commitment(seed) == case["commitment"]
        assert shoe(seed, case["decks"])[:52] == case["first_52"]
        assert other(seed, case["decks"])[:52] != case["first_52"]
    assert shoe(bytes(32), 1)[:5] == known


def test_the_leaf_vectors_from_the_spec() -> None:
    for case in load("leaves.json")["cases"]:
        events = [
            (e["notification_id"], e["originator_id"], e["version"], e["topic"],
             base64.b64decode(e["state"]))
            for e in case["events"]
        ]  # fmt: skip
        leaf = spec.leaf_text(case["kind"], events)
        assert leaf.decode() == case["leaf"]
        assert spec.leaf_hash(leaf).hex() == case["leaf_hash"]


def test_the_tree_vectors_from_the_spec() -> None:
    data = load("trees.json")
    leaves = [x.encode() for x in data["leaves"]]
    for size, root in enumerate(data["roots"]):
        assert spec.mth(leaves[:size]).hex() == root
    for p in data["inclusion"]:
        path = [bytes.fromhex(x) for x in p["path"]]
        root = spec.mth(leaves[: p["size"]])
        lh = spec.leaf_hash(leaves[p["index"]])
        assert spec.verify_inclusion(p["index"], p["size"], lh, path, root)
        assert not spec.verify_inclusion(p["index"], p["size"], spec.leaf_hash(b"x"), path, root)
    for p in data["consistency"]:
        proof = [bytes.fromhex(x) for x in p["proof"]]
        a, b = spec.mth(leaves[: p["first"]]), spec.mth(leaves[: p["second"]])
        assert spec.verify_consistency(p["first"], p["second"], a, b, proof)
        if 0 < p["first"] < p["second"]:
            assert not spec.verify_consistency(p["first"], p["second"], b, b, proof)


def test_the_checkpoint_vectors_from_the_spec() -> None:
    data = load("checkpoint.json")
    operator = spec.vkey(data["operator"]["vkey"])
    witness = spec.vkey(data["witness"]["vkey"])
    assert operator[:2] == (data["operator"]["name"], 0x01)
    assert witness[:2] == (data["witness"]["name"], 0x04)
    leaves = [x.encode() for x in load("trees.json")["leaves"]]
    origin, size, root = spec.checkpoint(data["signed"])
    assert (origin, size, root) == (operator[0], len(leaves), spec.mth(leaves))
    assert data["signed"].startswith(data["checkpoint_text"] + "\n")
    assert spec.signed_by(data["signed"], operator) == 0
    assert spec.signed_by(data["signed"], witness) is None
    assert spec.signed_by(data["cosigned"], operator) == 0
    assert spec.signed_by(data["cosigned"], witness) == data["cosigned_at"]
    forged = data["cosigned"].replace(f"\n{size}\n", f"\n{size + 1}\n")
    assert spec.signed_by(forged, operator) is None
    example = data["c2sp_signed_note_example"]  # the signed-note specification's own
    assert spec.signed_by(example["note"], spec.vkey(example["vkey"])) == 0


def test_the_independent_verifier_checks_a_simulated_rounds_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A european round (its RNG shoe retired at its end, so its seed revealed), checkpointed
    and cosigned by a witness process, exported: the spec's verifier checks every record, every
    leaf, the checkpoint and the witness's cosignature, and recomputes every card."""
    from storekit import ORIGIN, WitnessProcess, operator

    url = f"sqlite:///{tmp_path}/events.db"
    key = tmp_path / "operator.pem"
    app = RoundAudit(env=environment_for(url))
    (rid,) = simulate(app, variant="european", rounds=1, players=3).round_ids
    app.close()
    with WitnessProcess(tmp_path / "witness", "witness.example/spec", [operator(key)]) as w:
        assert main(["--database-url", url, "seal", "--signing-key", str(key), "--origin",
                     ORIGIN, "--witness", w.option]) == 0  # fmt: skip
        witness_vkey = w.key.vkey()
    out = tmp_path / "round.jsonl"
    assert main(["--database-url", url, "export", rid, "-o", str(out), "--signing-key", str(key),
                 "--origin", ORIGIN]) == 0  # fmt: skip
    summary = spec.check_export(out.read_bytes().splitlines(), operator(key).vkey(), [witness_vkey])
    assert summary["origin"] == ORIGIN
    assert summary["cosigned"] == [witness_vkey]
    assert summary["cards"] >= 4  # dealt and checked against the shuffle from the seed
    lines = out.read_bytes().splitlines()
    dealt = [orjson.loads(x) for x in lines if b'"Round.CardDealt"' in x]
    assert len(dealt) == summary["cards"]
    # a changed byte of any record is found by the spec's verifier
    changed = list(lines)
    i = next(i for i, x in enumerate(changed) if b'"stream":"round"' in x)
    obj = orjson.loads(changed[i])
    obj["state"] = base64.b64encode(base64.b64decode(obj["state"]) + b" ").decode()
    changed[i] = orjson.dumps(obj)
    with pytest.raises(AssertionError, match="changed"):
        spec.check_export(changed, operator(key).vkey())
    assert str(UUID(rid)) == rid


def test_the_independent_verifier_proves_leaves_from_the_stored_nodes(tmp_path: Path) -> None:
    """Two checkpoints signed the signer's way: every leaf's path built from the node rows by
    the spec's reading of nodes.md alone is the project's, and leads to the signed root; a
    changed node row leads elsewhere."""
    from replays.log import MerkleLog
    from replays.merkle import generate_key
    from replays.signer import Signer

    app = RoundAudit(env=environment_for(f"sqlite:///{tmp_path}/events.db"))
    try:
        key = generate_key()
        for rounds in (2, 3):
            simulate(app, variant="european", rounds=rounds)
            assert Signer(app, key=key, origin="example.test/log").run_once().checkpoint
        log = MerkleLog(app).refresh()
        table = log.table

        def rows(oid: UUID) -> list[tuple[int, str, bytes]]:
            return [(s.originator_version, s.topic, s.state) for s in table.select_events(oid)]

        for cp in log.checkpoints():
            _, size, root = spec.checkpoint(cp.text)
            for m in range(size):
                path = spec.path_from_nodes(rows, m, size)
                assert path == log.tree.inclusion_proof(m, size)
                assert spec.verify_inclusion(m, size, spec.leaf_hash(log.leaf(m)), path, root)
        size = log.checkpoints()[-1].size

        def changed(oid: UUID) -> list[tuple[int, str, bytes]]:
            found = rows(oid)
            if oid != UUID(str(spec.uuid5(spec.NS, "merkle-log:nodes:0:0"))):
                return found
            v, t, state = found[0]
            data = orjson.loads(state)
            raw = bytearray(base64.b64decode(data["hashes"]))
            raw[32] ^= 1  # leaf 1's hash: leaf 0's sibling
            data["hashes"] = base64.b64encode(bytes(raw)).decode()
            return [(v, t, orjson.dumps(data)), *found[1:]]

        path = spec.path_from_nodes(changed, 0, size)
        assert path is not None
        assert not spec.verify_inclusion(0, size, spec.leaf_hash(log.leaf(0)), path, root)
    finally:
        app.close()

"""A round's log as canonical JSON lines, and its import into another store.

This module owns the export format (``roundaudit-round-log`` version 2, and the reading of
version 1) and :func:`import_round`. Specified for third parties in ``docs/spec/proofs.md``.

**Format.** UTF-8 text, one JSON object per line, each line canonical (orjson, keys sorted, no
whitespace), in this order:

1. a ``header`` line: ``format``, ``format_version``, ``round_id``, ``rules_key``, ``variant``,
   ``table_id``, ``round_number``, ``shoe_id``, ``events`` (how many round lines follow),
   ``chain`` (the chain algorithm) and ``transcoder`` (the encoder of the stored bytes);
2. one ``event`` line per stored event of the round, by version (``stream: "round"``);
3. one ``event`` line per stored event of the round's **shoe**, the whole stream as of the
   checkpoint that proves the round (``stream: "shoe"``): the commitment and the reveal of an
   RNG shoe, the burn, every card drawn (a line whose ``round`` is true is one of this round's
   cards). A live shoe outlives its rounds; its full stream is what lets a reader check the
   burn (SHOE-2) and that no card came out more often than the decks hold (SHOE-3), and it
   keeps the shoe loadable in the store it is imported into;
4. one ``event`` line per wallet movement of the round (``stream: "wallet"``), found by the
   movement's ``round_id``, by (wallet id, version);
5. one ``leaf`` line per leaf committing to those records (``index``, ``leaf`` text,
   ``inclusion``: its base64 path in the checkpoint), then one ``checkpoint`` line (``number``,
   ``note``: the C2SP checkpoint with the operator's signature and the witnesses'
   cosignatures, ``signed_at``, and for convenience ``vkey``, the operator key the exporter was
   given: a reader compares it with the published key). Every record of the round is proven
   against that one checkpoint. (Version 1 ended with a ``seal`` line of the per-round seal
   instead; it is still read.)

**Redacted exports.** Exported while the round (or its shoe) still hides a card the table has
not shown (a face-down hole card, a test shoe's order: ``domain.disclosure``), the lines that
hold it have ``state`` null, the hidden values null in ``payload`` and their names under
``redacted``, and the header counts them (``redacted``). Such a file cannot be verified or
imported (:func:`read_export` refuses it): export again once the round has ended.

An ``event`` line holds the record exactly as stored (``originator_id``, ``version``, ``topic``,
``state``: the stored bytes in base64) and, for reading, ``class``, ``kind`` (input /
consequence), ``timestamp`` and ``payload`` (decoded from ``state``; a reader must check they
agree, and :func:`read_export` does). Round lines also carry ``position`` (= version).

**Import** writes the exported records into the target store **as they were stored**: same
originator ids and versions, same topics, same bytes (so the original timestamps, the same round
and shoe ids, the same chain head). It does not re-execute the round through the application:
re-execution would stamp new timestamps, draw from a new shoe and need the players' wallets
funded exactly as they were, so it could not give the same events; the rules are re-executed
*before* anything is written instead (the whole verification of :mod:`replays.verify` must pass,
unless forced). The imported store is a faithful partial copy of the source: the round and its
shoe load as aggregates there; the players' wallets hold only this round's movements (at their
original versions), which the verifier reads as records, but which are not loadable wallets.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

import orjson
from eventsourcing.persistence import Mapper, StoredEvent

from domain.boundless.participation import participation_id
from domain.commit_leaf import LeafFormatError, ParsedLeaf, parse_leaf
from domain.disclosure import Secrets
from domain.errors import DomainError
from domain.persistence import OrjsonTranscoder
from domain.rules import get_rules
from replays.bundle import (
    SHARED_STARTED_TOPIC,
    CommitEvidence,
    Decoded,
    RoundBundle,
    Seal,
    StoreReader,
    decode,
    kind_of,
    payload_json,
    stored_version,
    transcoder_name,
    upcast_payload,
)
from replays.chain import CHAIN_VERSION, Record, canonical
from replays.disclosure import redact_line
from replays.log import DEFAULT_ORIGIN, StoredCheckpoint
from replays.merkle import Checkpoint, key_id, parse_public_key, raw_public
from replays.note import NoteError, operator_key, parse_note, parse_vkey
from replays.reexecute import Discrepancy, Verdict

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from domain.application import RoundAudit
    from replays.log import MerkleLog, TrustPolicy

FORMAT: Final = "roundaudit-round-log"
FORMAT_VERSION: Final = 2
#: Versions read: 1 (the per-round seal's ``seal`` line) and 2 (``leaf`` and ``checkpoint``).
READABLE_VERSIONS: Final = (1, 2)
Json = dict[str, Any]


class ExportError(DomainError):
    """A file is not a round log this version can read, or it cannot be imported."""

    code = "export-error"


# ------------------------------------------------------------------------------ export
def _event_line(stream: str, d: Decoded, round_id: str | None = None) -> Json:
    r = d.record
    line: Json = {
        "line": "event",
        "stream": stream,
        "originator_id": str(r.originator_id),
        "version": r.version,
        "topic": r.topic,
        "class": d.name,
        "state": base64.b64encode(r.state).decode(),
    }
    if d.event is not None:
        line["kind"] = kind_of(d)
        line["timestamp"] = d.event.timestamp.isoformat()
        line["payload"] = payload_json(d.event)
    else:
        line["kind"] = None
        line["timestamp"] = None
        line["payload"] = None
        line["error"] = d.error
    if stream == "round":
        line["position"] = d.position
    if stream == "shoe":
        line["round"] = round_id is not None and getattr(d.event, "round_id", None) == round_id
    return line


def export_lines(
    bundle: RoundBundle,
    *,
    public_key: Ed25519PublicKey | None = None,
    secrets: Secrets | None = None,
) -> list[bytes]:
    """The export of a bundle: canonical JSON lines (without their newlines); with
    ``secrets``, what they hide redacted (see the module docstring)."""
    started = bundle.started
    header: Json = {
        "line": "header",
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "round_id": str(bundle.round_id),
        "events": len(bundle.round),
        "chain": CHAIN_VERSION,
        "transcoder": bundle.transcoder,
        "rules_key": None,
        "variant": None,
        "table_id": None,
        "round_number": None,
        "shoe_id": str(bundle.shoe_id) if bundle.shoe_id else None,
    }
    if started is not None:
        header.update(
            rules_key=started.rules_key,
            table_id=started.table_id,
            round_number=started.round_number,
        )
        try:
            header["variant"] = get_rules(started.rules_key).variant
        except DomainError:
            header["variant"] = None
    lines = [header]
    lines += [_event_line("round", d) for d in bundle.round]
    rid = str(bundle.round_id)
    lines += [_event_line("shoe", d, rid) for d in _proven_shoe(bundle)]
    money = sorted(bundle.money, key=lambda d: (d.record.originator_id.hex, d.record.version))
    lines += [_event_line("wallet", d) for d in money]
    if secrets:
        redacted = sum(redact_line(line, secrets, bundle.shoe_id) for line in lines[1:])
        if redacted:
            header["redacted"] = redacted
    seal = bundle.seal
    if seal is not None and seal.leaf_bytes:
        lines.append(
            {
                "line": "seal",
                "leaf_index": seal.leaf_index,
                "leaf": seal.leaf_bytes.decode("utf-8"),
                "chain": seal.chain,
                "checkpoint": seal.checkpoint.as_json() if seal.checkpoint else None,
                "inclusion": seal.inclusion,
                "public_key": raw_public(public_key).hex() if public_key else None,
                "key_id": key_id(public_key) if public_key else None,
            }
        )
    ev = bundle.evidence
    if ev is not None:
        cp = ev.checkpoint
        wanted = _needed_leaves(bundle)
        for index in sorted(wanted):
            path = ev.inclusion.get(index)
            lines.append(
                {
                    "line": "leaf",
                    "index": index,
                    "leaf": ev.text(index).decode("utf-8"),
                    "inclusion": None if path is None else [_b64(h) for h in path],
                }
            )
        if cp is not None and cp.note is not None:
            line: Json = {
                "line": "checkpoint",
                "number": cp.number,
                "note": cp.text,
                "signed_at": cp.signed_at,
            }
            if public_key is not None:
                line["vkey"] = operator_key(cp.origin, public_key).vkey()
            lines.append(line)
    return [canonical(line) for line in lines]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _proven_shoe(bundle: RoundBundle) -> list[Decoded]:
    """The shoe's records as of the checkpoint that proves the round (a live shoe goes on
    after the round: its records committed after that checkpoint are not exported); all of
    them when nothing proves the round yet."""
    ev = bundle.evidence
    if ev is None or ev.checkpoint is None or bundle.shoe_id is None:
        return list(bundle.shoe)
    size = ev.checkpoint.size
    out = []
    for d in bundle.shoe:
        index = _leaf_of(ev, d.record.key)
        if index is None or index < size:
            out.append(d)
    return out


def _parsed(ev: CommitEvidence) -> Iterator[tuple[int, ParsedLeaf | None]]:
    """Each leaf of the evidence parsed (None: not a leaf), those given as text first (an
    export's), then those given parsed (the store's log's)."""
    for index, data in ev.leaves.items():
        try:
            yield index, parse_leaf(data)
        except LeafFormatError:
            yield index, None
    for index, (_, parsed) in ev.parsed.items():
        yield index, parsed


def _leaf_of(ev: CommitEvidence, key: tuple[UUID, int]) -> int | None:
    for index, parsed in _parsed(ev):
        if parsed is not None and any(e.key == key for e in parsed.entries):
            return index
    return None


def _needed_leaves(bundle: RoundBundle) -> set[int]:
    """The leaves committing to the exported records (and the round's own transactions)."""
    ev = bundle.evidence
    assert ev is not None
    keys = {d.record.key for d in (*bundle.round, *_proven_shoe(bundle), *bundle.money)}
    streams = {bundle.round_id, *(d.record.originator_id for d in bundle.round)}
    out = set()
    for index, parsed in _parsed(ev):
        if parsed is None or any(
            e.key in keys or e.originator_id in streams for e in parsed.entries
        ):
            out.add(index)
    return out


def export_round(
    app: RoundAudit,
    round_id: UUID,
    *,
    log: MerkleLog | None = None,
    public_key: Ed25519PublicKey | None = None,
    policy: TrustPolicy | None = None,
    secrets: Secrets | None = None,
) -> bytes:
    """The round's export as one UTF-8 text (lines ending with a newline). The checkpoint that
    proves it is the latest final one under ``policy`` (the witnesses' quorum) covering the
    round, else the latest covering it."""
    from replays.log import MerkleLog

    reader = StoreReader(app, log=(log or MerkleLog(app)).refresh(), policy=policy)
    bundle = reader.round_bundle(round_id)
    if not bundle.round:
        raise ExportError(f"round {round_id} has no stored events")
    lines = export_lines(bundle, public_key=public_key, secrets=secrets)
    return b"".join(line + b"\n" for line in lines)


# ------------------------------------------------------------------------------ reading
@dataclass
class ExportedRound:
    header: Json
    bundle: RoundBundle
    problems: list[Discrepancy] = field(default_factory=list)
    public_key: str | None = None  # raw hex carried by the file, if any (legacy seal)
    vkey: str | None = None  # the operator's vkey carried by the file, if any

    @property
    def records(self) -> list[Record]:
        b = self.bundle
        return [d.record for d in (*b.round, *b.shoe, *b.money)]


_MAPPER: Mapper[UUID] = Mapper(transcoder=OrjsonTranscoder())


def read_export(lines: Iterable[bytes | str]) -> ExportedRound:
    """Parse an export; the bundle is checked by :func:`replays.verify.verify_bundle`. Lines whose
    readable part disagrees with their stored bytes are reported in ``problems``."""
    parsed: list[Json] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.strip() if isinstance(raw, str | bytes) else raw
        if not text:
            continue
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ExportError(f"line {number} is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ExportError(f"line {number} is not a JSON object")
        parsed.append(obj)
    if not parsed or parsed[0].get("line") != "header" or parsed[0].get("format") != FORMAT:
        raise ExportError(f"not a {FORMAT} file: the first line must be its header")
    header = parsed[0]
    if header.get("redacted"):
        raise ExportError(
            f"this export is redacted ({header['redacted']} line(s) hide cards the table had not "
            "shown when it was made): export the round again once it has ended"
        )
    if header.get("format_version") not in READABLE_VERSIONS:
        raise ExportError(f"format version {header.get('format_version')!r} is not supported")
    try:
        rid = UUID(str(header["round_id"]))
    except (KeyError, ValueError):
        raise ExportError("the header names no valid round_id") from None
    bundle = RoundBundle(rid, [], transcoder=str(header.get("transcoder", "")))
    if header.get("shoe_id"):
        bundle.shoe_id = UUID(str(header["shoe_id"]))
    out = ExportedRound(header, bundle)
    streams: dict[str, list[Decoded]] = {
        "round": bundle.round,
        "shoe": bundle.shoe,
        "wallet": bundle.money,
    }
    for number, obj in enumerate(parsed[1:], start=2):
        kind = obj.get("line")
        if kind == "seal":
            bundle.seal = _seal_from(obj, number)
            pk = obj.get("public_key")
            out.public_key = str(pk) if pk else None
            continue
        if kind in ("leaf", "checkpoint"):
            ev = bundle.evidence = bundle.evidence or CommitEvidence()
            _evidence_line(ev, obj, number)
            if kind == "checkpoint" and obj.get("vkey"):
                out.vkey = str(obj["vkey"])
            continue
        if kind != "event":
            raise ExportError(f"line {number}: unknown line type {kind!r}")
        stream = obj.get("stream")
        if stream not in streams:
            raise ExportError(f"line {number}: unknown stream {stream!r}")
        try:
            record = Record(
                UUID(str(obj["originator_id"])),
                int(obj["version"]),
                str(obj["topic"]),
                base64.b64decode(str(obj["state"]), validate=True),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise ExportError(f"line {number}: not a stored record ({exc})") from None
        d = decode(_MAPPER, record)
        streams[stream].append(d)
        if stream == "round" and bundle.round[0].record.topic == SHARED_STARTED_TOPIC:
            d.at = len(bundle.round)  # a boundless round's lines are its merged log, in order
        if d.event is not None:
            shown = {
                "payload": obj.get("payload"),
                "timestamp": obj.get("timestamp"),
                "class": obj.get("class"),
            }
            real = {
                "payload": payload_json(d.event),
                "timestamp": d.event.timestamp.isoformat(),
                "class": d.name,
            }
            version = stored_version(record.state)
            if isinstance(shown["payload"], dict) and version < getattr(
                type(d.event), "class_version", 1
            ):  # written before the class's format changed: read it the library's way
                shown["payload"] = upcast_payload(type(d.event), shown["payload"], version)
            for fld in ("payload", "timestamp", "class"):
                if shown[fld] != real[fld]:
                    out.problems.append(
                        Discrepancy(
                            d.position if stream == "round" else None,
                            d.name,
                            f"(line {number}).{fld}",
                            _short(real[fld]),
                            _short(shown[fld]),
                            None,
                            f"the readable {fld} of a {stream} line is not what its stored "
                            "bytes say",
                            "export",
                        )
                    )
    if stream_mismatch := _foreign(bundle):
        raise ExportError(
            f"{len(stream_mismatch)} round line(s) belong to another round than the header's"
        )
    if header.get("events") != len(bundle.round):
        out.problems.append(
            Discrepancy(
                None,
                "(header)",
                "events",
                header.get("events"),
                len(bundle.round),
                None,
                "the header's event count is not the number of round lines",
                "export",
            )
        )
    return out


def _foreign(bundle: RoundBundle) -> list[Decoded]:
    """Round lines that are not the round's: for a ``Round``, any other stream; for a boundless
    round, any stream other than the shared hand's and its participations' (a participation's
    id is ``participation_id(round, player)``, for the player its events name)."""
    rid = bundle.round_id
    if not bundle.shared:
        return [d for d in bundle.round if d.record.originator_id != rid]
    out: list[Decoded] = []
    owners = bundle.owners()
    for oid, decoded in bundle.participations().items():
        if oid != participation_id(rid, owners[oid]):
            out.extend(decoded)
    return out


def _short(value: Any) -> Any:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    return value if len(text) <= 200 else text[:200] + "..."


def _evidence_line(ev: CommitEvidence, obj: Json, number: int) -> None:
    try:
        if obj["line"] == "leaf":
            index = int(obj["index"])
            ev.leaves[index] = str(obj["leaf"]).encode("utf-8")
            if obj.get("inclusion") is not None:
                ev.inclusion[index] = [
                    base64.b64decode(str(h), validate=True) for h in obj["inclusion"]
                ]
        else:
            ev.checkpoint = StoredCheckpoint.from_note(
                int(obj["number"]), parse_note(str(obj["note"])), str(obj.get("signed_at", ""))
            )
    except (KeyError, TypeError, ValueError, NoteError) as exc:
        raise ExportError(f"line {number}: unreadable {obj.get('line')} line ({exc})") from None


def _seal_from(obj: Json, number: int) -> Seal:
    try:
        cp = obj.get("checkpoint")
        return Seal(
            leaf_index=int(obj["leaf_index"]),
            leaf_bytes=str(obj["leaf"]).encode("utf-8"),
            chain=[str(v) for v in obj.get("chain") or []],
            checkpoint=Checkpoint.from_json(cp) if cp else None,
            inclusion=[str(h) for h in obj["inclusion"]]
            if obj.get("inclusion") is not None
            else None,
            public_key=str(obj["public_key"]) if obj.get("public_key") else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportError(f"line {number}: unreadable seal ({exc})") from None


def verify_export(exported: ExportedRound, *, policy: TrustPolicy | None = None) -> Verdict:
    """Verify an export on its own: no store, no service. The operator key is the pinned one
    (``policy``), else the one the file carries, which proves only that the file is intact
    (a note says so)."""
    from replays.log import TrustPolicy
    from replays.verify import verify_bundle

    note = ""
    policy = policy or TrustPolicy()
    if policy.operator is None and (exported.vkey or exported.public_key):
        if exported.vkey:
            carried = parse_vkey(exported.vkey)
        else:
            assert exported.public_key is not None
            raw = parse_public_key(exported.public_key)
            carried = operator_key(DEFAULT_ORIGIN, raw)
        policy = TrustPolicy(carried, policy.witnesses, policy.quorum)
        note = (
            f"checkpoint signature checked against the key carried by the file "
            f"({carried.vkey()}): compare it with the operator's published key"
        )
    verdict = verify_bundle(exported.bundle, policy=policy, key_note=note)
    verdict.discrepancies[:0] = exported.problems
    return verdict


# ------------------------------------------------------------------------------ import
@dataclass
class ImportResult:
    round_id: UUID
    written: int
    skipped: int
    verdict: Verdict


def import_round(
    app: RoundAudit,
    lines: Iterable[bytes | str],
    *,
    policy: TrustPolicy | None = None,
    force: bool = False,
) -> ImportResult:
    """Write an exported round into ``app``'s store, records as they were (see the module
    docstring). Refused, with nothing written, when the export does not verify (unless
    ``force``), when the store already holds a different record under one of the keys, or when
    it already holds part of the round. Importing the same export twice writes nothing."""
    exported = read_export(lines)
    verdict = verify_export(exported, policy=policy)
    if not verdict.ok and not force:
        first = verdict.discrepancies[0]
        raise ExportError(
            f"the export does not verify ({len(verdict.discrepancies)} discrepancies; first: "
            f"{first.check} at position {first.position}: {first.message}); nothing imported"
        )
    records = exported.records
    existing = _existing(app, records)
    round_keys = {d.record.key for d in exported.bundle.round}
    present_round = [k for k in round_keys if k in existing]
    if present_round and len(present_round) != len(round_keys):
        raise ExportError("the store already holds part of this round; nothing imported")
    new: list[Record] = []
    for r in records:
        held = existing.get(r.key)
        if held is None:
            new.append(r)
        elif held != (r.topic, r.state):
            raise ExportError(
                f"the store already holds a different record {r.originator_id} version "
                f"{r.version}; nothing imported"
            )
    ids = app.recorder.insert_events([_stored(app.mapper, r) for r in new]) if new else None
    if exported.bundle.shared:
        _register_start(app, exported.bundle.round_id, new, ids)
    return ImportResult(exported.bundle.round_id, len(new), len(records) - len(new), verdict)


def _register_start(
    app: RoundAudit, rid: UUID, new: Sequence[Record], ids: Sequence[int] | None
) -> None:
    """A boundless round is found in the log from its start (``BoundlessService``): record
    where the imported ``SharedHand.Started`` landed in this store."""
    svc = app.boundless
    if svc.start_position(rid) is not None:
        return
    if ids and new and new[0].key == (rid, 1):
        svc.register_start(rid, ids[0])
        return
    position = 0
    while True:
        page = app.recorder.select_notifications(
            start=position, limit=1000, topics=(SHARED_STARTED_TOPIC,), inclusive_of_start=False
        )
        for n in page:
            position = n.id
            if n.originator_id == rid or str(n.originator_id) == str(rid):
                svc.register_start(rid, n.id)
                return
        if len(page) < 1000:
            return


def _existing(
    app: RoundAudit, records: Sequence[Record]
) -> dict[tuple[UUID, int], tuple[str, bytes]]:
    out: dict[tuple[UUID, int], tuple[str, bytes]] = {}
    reader = StoreReader(app)
    for oid in dict.fromkeys(r.originator_id for r in records):
        for held in reader.records(oid):
            out[held.key] = (held.topic, held.state)
    return out


def _stored(mapper: Mapper[UUID], r: Record) -> StoredEvent:
    state = r.state
    if mapper.compressor:
        state = mapper.compressor.compress(state)
    if mapper.cipher:
        state = mapper.cipher.encrypt(state)
    return StoredEvent(r.originator_id, r.version, r.topic, state)


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ExportError",
    "ExportedRound",
    "ImportResult",
    "export_lines",
    "export_round",
    "import_round",
    "read_export",
    "transcoder_name",
    "verify_export",
]

"""The disclosure policy (``domain.disclosure``) on the audit documents: replays, exports and
verification details of a round that still hides something.

* **Replay** (:func:`redact_steps`): while the hole card is face down, no step shows it apart
  (``dealer_hole`` is empty) and the steps of the events that carry it say "face down"
  instead of the card, their ``payload`` has ``card: null`` (``redacted: ["card"]``); each
  step's ``view`` already hides it (it is the view of its moment).
* **Export** (:func:`redact_line`, used by ``replays.export.export_lines``): a line that holds
  a hidden value loses its stored bytes (``state: null``) and the value (``null`` in
  ``payload``), and names what was hidden under ``redacted``; the header counts such lines.
  A redacted export is an interim copy: ``roundaudit verify --file`` and ``import`` refuse it
  (export again once the round has ended and its shoe retired).
* **Verification** (:func:`redact_verdict`): while the round hides something, a discrepancy
  keeps its position, event, field, rule and check, but not its expected and recorded values
  or its message, which could name a hidden card.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, Final
from uuid import UUID

from domain.disclosure import HIDDEN_MARK, Secrets
from replays.bundle import RoundBundle
from replays.steps import Step

Json = dict[str, Any]
FACE_DOWN: Final = "a card to the dealer, face down (shown when the dealer turns it)"
WITHHELD: Final = "withheld while the round hides a card the table has not shown"


def hidden_positions(bundle: RoundBundle, secrets: Secrets) -> frozenset[int]:
    """The positions (in the round's log) of the events whose card is hidden."""
    return frozenset(
        d.position
        for d in bundle.round
        if secrets.hides_record(d.record.originator_id, d.record.version)
    )


def redact_steps(
    steps: Iterable[Step], positions: frozenset[int], secrets: Secrets
) -> Iterator[Step]:
    """The replay's steps with the hidden cards taken out (see the module docstring)."""
    if not secrets:
        yield from steps
        return
    for step in steps:
        shown = step
        if step.position in positions:
            payload = step.payload
            if payload is not None and payload.get("card") is not None:
                payload = {**payload, "card": None, HIDDEN_MARK: ["card"]}
            shown = replace(shown, summary=FACE_DOWN, payload=payload)
        if step.hole and secrets.records:
            shown = replace(shown, hole=[])
        yield shown


def redact_line(line: Json, secrets: Secrets, shoe_id: UUID | None) -> bool:
    """Redact one export ``event`` line in place; True when something was hidden."""
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return False
    hidden: list[str] = []
    stream = line.get("stream")
    if stream == "round":
        if secrets.hides_record(UUID(str(line["originator_id"])), int(line["version"])):
            payload = {**payload, "card": None}
            hidden.append("card")
    elif stream == "shoe" and shoe_id is not None:
        payload, hidden = secrets.redact_shoe_event(shoe_id, str(line["class"]), payload)
    if not hidden:
        return False
    line["payload"] = payload
    line["state"] = None
    line[HIDDEN_MARK] = hidden
    return True


def redact_verdict(doc: Json, secrets: Secrets) -> Json:
    """A verification verdict (``Verdict.as_json``) for a round that hides something."""
    if not secrets:
        return doc
    out = dict(doc)
    out["discrepancies"] = [
        {**d, "expected": None, "recorded": None, "message": WITHHELD, HIDDEN_MARK: True}
        for d in doc.get("discrepancies", [])
    ]
    out["notes"] = [*doc.get("notes", []), "the round is in play: " + WITHHELD]
    return out


__all__ = ["hidden_positions", "redact_line", "redact_steps", "redact_verdict"]

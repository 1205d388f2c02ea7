"""The rule book: the text of every rule ID of RULES.md, as the service serves it.

Events, problems and the investigation page cite rule IDs (``AUTO-1``, ``FUNDS-1``, ``D9``,
``PHASE-4``...). This module owns the text each ID stands for, so that a reader can follow a
rule ID to its words without the repository: :func:`parse` reads the rule book's Markdown
(``../shared/RULES.md``) into entries, and the service ships them as package data,
``domain/rulebook.json``, made by::

    python -m domain.rulebook ../shared/RULES.md

What becomes an entry: every row of a table whose first cell is a rule ID (``| AUTO-1 | ... |``),
every decision on a silent sheet (``- **D9** ...``), and each numbered round phase
(``PHASE-1`` .. ``PHASE-6``, the IDs the events cite for the phases). Each entry keeps the
section it belongs to. ``tests/unit/test_rulebook.py`` holds the shipped file to the rule book
beside the repository (same IDs, same words) and checks that every rule ID the recorded rounds
cite has an entry.

>>> book = parse("## Common\\n\\n| ID | Rule |\\n|---|---|\\n| AUTO-1 | Hit on 11 or less. |\\n")
>>> book["AUTO-1"]["text"], book["AUTO-1"]["section"]
('Hit on 11 or less.', 'Common')
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import cache
from importlib import resources
from typing import Any, Final

RULE_ID: Final = re.compile(r"^(?:[A-Z][A-Z0-9]*)(?:-[A-Z0-9]+)*$")
_DECISION: Final = re.compile(r"^- \*\*(D\d+)\*\*\s+(.*)$")
DATA_FILE: Final = "rulebook.json"

Entry = dict[str, str]


def _plain(text: str) -> str:
    """Markdown emphasis and code marks taken out; spaces made single.

    >>> _plain("**D5** the `deluxe` sheet")
    'D5 the deluxe sheet'
    """
    return re.sub(r"\s+", " ", text.replace("**", "").replace("`", "")).strip()


def parse(markdown: str) -> dict[str, Entry]:
    """Rule ID -> ``{"id", "section", "text"}`` of the rule book's Markdown (module docstring)."""
    out: dict[str, Entry] = {}
    section = ""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        text = line.strip()
        if text.startswith("#"):
            section = text.lstrip("#").strip()
            if section.lower() == "round phases":
                _phases(lines[i + 1 :], section, out)
            continue
        if text.startswith("|"):
            cells = [c.strip() for c in text.strip("|").split("|")]
            if len(cells) >= 2 and RULE_ID.match(cells[0]) and cells[0] != "ID":
                out[cells[0]] = {"id": cells[0], "section": section, "text": _plain(cells[1])}
            continue
        found = _DECISION.match(text)
        if found:
            out[found.group(1)] = {
                "id": found.group(1),
                "section": section,
                "text": _plain(found.group(2)),
            }
    for entry in list(out.values()):  # a decision stated inside a rule (L7-4's D14)
        for ref in re.findall(r"\b(D\d+)\b", entry["text"]):
            if ref not in out:
                out[ref] = {
                    "id": ref,
                    "section": entry["section"],
                    "text": f"stated in {entry['id']}: {entry['text']}",
                }
    return out


def _phases(lines: list[str], section: str, out: dict[str, Entry]) -> None:
    """``1. **Bets** (countdown). 2. **Initial deal**: ...``: the phases' paragraph."""
    paragraph: list[str] = []
    for line in lines:
        if not line.strip():
            if paragraph:
                break
            continue
        if line.lstrip().startswith(("|", "#")):
            break
        paragraph.append(line.strip())
    text = " ".join(paragraph)
    parts = re.split(r"(?:^|\s)(\d+)\.\s+(?=\*\*)", text)
    # parts: ['', '1', '**Bets** (countdown).', '2', '**Initial deal**: ...', ...]
    for number, body in zip(parts[1::2], parts[2::2], strict=False):
        rid = f"PHASE-{number}"
        out[rid] = {"id": rid, "section": section, "text": _plain(body)}


def fingerprint(markdown: str) -> str:
    """The SHA-256 of the rule book the entries were made from (hex)."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def document(markdown: str) -> dict[str, Any]:
    """What ``domain/rulebook.json`` holds: the entries in rule book order and the source's
    fingerprint."""
    return {"source": "RULES.md", "sha256": fingerprint(markdown), "rules": parse(markdown)}


@cache
def shipped() -> dict[str, Any]:
    """The rule book shipped with the service (``domain/rulebook.json``)."""
    raw = resources.files("domain").joinpath(DATA_FILE).read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(raw)
    return doc


def rule_text(rule_id: str) -> Entry | None:
    """One rule's entry, or None. A compound citation (``FUNDS-1/2``) is not an ID."""
    found: Entry | None = shipped()["rules"].get(rule_id)
    return found


def main(argv: list[str]) -> int:
    """``python -m domain.rulebook RULES.md [OUT]``: write the rule book's JSON."""
    if not argv:
        print("usage: python -m domain.rulebook RULES.md [OUT]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        markdown = f.read()
    text = json.dumps(document(markdown), indent=1, ensure_ascii=False) + "\n"
    target = argv[1] if len(argv) > 1 else str(resources.files("domain").joinpath(DATA_FILE))
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {len(parse(markdown))} rules to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["RULE_ID", "document", "fingerprint", "parse", "rule_text", "shipped"]

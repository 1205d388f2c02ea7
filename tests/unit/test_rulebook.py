"""The rule book the service serves (``domain/rulebook.json``) is RULES.md's, word for word,
and has a text for every rule ID the recorded rounds cite."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from domain.rulebook import RULE_ID, document, parse, shipped

ROOT = Path(__file__).resolve().parents[2]
RULES_MD = ROOT.parent / "shared" / "RULES.md"
RECORDINGS = sorted((ROOT / "replays" / "recordings").glob("*.jsonl"))


def test_the_shipped_rule_book_is_the_one_beside_the_repository() -> None:
    if not RULES_MD.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{RULES_MD} is missing in CI")
        pytest.skip(f"no rule book at {RULES_MD}")
    text = RULES_MD.read_text(encoding="utf-8")
    assert shipped() == document(text), (
        "domain/rulebook.json is stale: run `python -m domain.rulebook ../shared/RULES.md`"
    )
    rules = shipped()["rules"]
    for rid in ("AUTO-1", "FUNDS-1", "FUNDS-2", "DLX-7", "HAND-1", "DISC-1", "D9", "PHASE-4"):
        assert rid in rules
    # every table row of RULES.md whose first cell is an ID is an entry, with its words
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and RULE_ID.match(cells[0]) and cells[0] != "ID":
            assert rules[cells[0]]["text"] == cells[1].replace("**", "").replace("`", "")


def test_every_rule_the_recorded_rounds_cite_has_a_text() -> None:
    cited: set[str] = set()
    for path in RECORDINGS:
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            rule = (line.get("payload") or {}).get("rule")
            if isinstance(rule, str) and rule:
                cited.add(rule)
    assert {"AUTO-1", "FUNDS-1", "DLX-7", "HAND-1"} <= cited
    missing = sorted(r for r in cited if r not in shipped()["rules"])
    assert not missing, missing


def test_phases_and_decisions_are_parsed() -> None:
    book = parse(
        "## Round phases\n\n1. **Bets** (countdown). 2. **Deal**: cards.\n\n"
        "| ID | Rule |\n|---|---|\n| END-1 | The end. |\n\n- **D7** split aces may hit.\n"
    )
    assert book["PHASE-1"]["text"] == "Bets (countdown)."
    assert book["PHASE-2"]["text"] == "Deal: cards."
    assert book["END-1"]["section"] == "Round phases"
    assert book["D7"]["text"] == "split aces may hit."

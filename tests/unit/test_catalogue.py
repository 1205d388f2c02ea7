"""docs/events.md is generated from the event classes and must stay true to them."""

from pathlib import Path

from domain.catalogue import ABOUT, event_classes, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_every_event_class_is_described() -> None:
    names = {name for name, _ in event_classes()}
    assert names == set(ABOUT), (names - set(ABOUT), set(ABOUT) - names)


def test_docs_events_md_matches_the_code() -> None:
    assert DOC.read_text() == render(), "regenerate: python -m domain.catalogue > docs/events.md"


def test_consequences_name_a_rule_field() -> None:
    import dataclasses

    from domain.catalogue import kind_of

    for name, cls in event_classes():
        fields = {f.name for f in dataclasses.fields(cls)}
        if kind_of(cls) == "consequence":
            assert "rule" in fields, name
        if kind_of(cls) == "input" and not name.startswith("Wallet."):
            assert {"actor", "request_id", "client_time"} <= fields, name

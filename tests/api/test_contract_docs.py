"""docs/api.md tells what the OpenAPI document tells (issue 12): the route table of answers
(success status, body schema, problem statuses) between the ``<!-- answers -->`` markers is
the document's, the grammars it states are the service's, and its problem types are every
code the service can answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

import api.errors
import api.idempotency
import api.routes.audit
import api.routes.batches
from api.wire import KEY_ID_PATTERN
from domain.cards import CARD_PATTERN
from domain.errors import DomainError
from domain.ids import ID_PATTERN, PLAYER_PATTERN, ROUND_ID_PATTERN
from domain.money import AMOUNT_PATTERN
from domain.times import TIME_PATTERN

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def answers_table(doc: dict[str, Any]) -> str:
    """The markdown table of every operation's answers, as docs/api.md shows it."""
    rows = ["| route | success | body | problems |", "|---|---|---|---|"]
    for path, item in doc["paths"].items():
        for method, op in item.items():
            codes = sorted(op["responses"], key=str)
            ok = [c for c in codes if c.startswith("2")]
            bad = [c for c in codes if not c.startswith("2")]
            content = op["responses"][ok[0]].get("content", {}) if ok else {}
            schema = next(iter(content.values()), {}).get("schema", {}) if content else {}
            ref = schema.get("$ref", "").rsplit("/", 1)[-1] or next(iter(content), "-")
            rows.append(
                f"| `{method.upper()} {path}` | {', '.join(ok)} | {ref} | {', '.join(bad)} |"
            )
    return "\n".join(rows)


def between(text: str, marker: str) -> str:
    start, end = f"<!-- {marker}: start -->", f"<!-- {marker}: end -->"
    return text.split(start)[1].split(end, maxsplit=1)[0].strip()


def test_the_answers_table_is_the_openapi_documents(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    expected = answers_table(doc)
    assert between(DOCS.read_text(), "answers") == expected, "\n" + expected


def test_every_2xx_body_has_a_schema_and_every_problem_is_problem_json(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                content = response.get("content", {})
                if status.startswith("2"):
                    assert content, (method, path, status)
                    for media in content.values():
                        assert media.get("schema"), (method, path, status)
                else:
                    assert list(content) == ["application/problem+json"], (method, path, status)
                    ref = content["application/problem+json"]["schema"]["$ref"]
                    assert ref.endswith("/Problem")
            if method != "get" and (path, method) not in PUBLIC:
                assert {"401", "403", "422"} <= set(op["responses"]), (method, path)


PUBLIC: set[tuple[str, str]] = set()


def test_the_grammars_are_stated_as_the_service_enforces_them(client: TestClient) -> None:
    text = DOCS.read_text()
    schema = str(client.get("/openapi.json").json())
    for pattern in (
        ID_PATTERN,
        PLAYER_PATTERN,
        ROUND_ID_PATTERN,
        AMOUNT_PATTERN,
        CARD_PATTERN,
        TIME_PATTERN,
        KEY_ID_PATTERN,
    ):
        assert f"`{pattern}`" in text, pattern
        assert pattern.replace("\\", "\\\\") in schema, pattern


def _codes() -> set[str]:
    seen: set[str] = set()
    todo: list[type[DomainError]] = [DomainError]
    while todo:
        cls = todo.pop()
        if not cls.__module__.startswith("cli."):  # the command line's own, never HTTP answers
            seen.add(cls.code)
        todo.extend(cls.__subclasses__())
    return seen | {
        "validation-error",
        "malformed-json",
        "payload-too-large",
        "invalid-host",
        "internal-error",
    }


def test_every_problem_type_is_documented() -> None:
    for module in (api.errors, api.idempotency, api.routes.batches, api.routes.audit):
        assert module  # imported: their problem classes are counted
    table = between(DOCS.read_text(), "problem-types")
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, flags=re.M))
    missing = _codes() - documented - {"domain-error", "not-found", "conflict", "seed-vault"}
    assert not missing, sorted(missing)
    assert not documented - _codes(), sorted(documented - _codes())


def test_real_answers_fit_their_declared_models(api: Any) -> None:
    """The 2xx bodies of a played round (seated and boundless), its shoe, wallet, table, keys
    and audit reads validate against the models the OpenAPI document declares."""
    from api import schemas as S

    api.wallet("alice", deposit="50.00")
    rid = api.start("T1", "lucky7", ["10H", "9C", "7D", "8S", "5C", "6H", "2D", "3S"])
    S.RoundView.model_validate(api.bet(rid, "alice", "10.00", 1))
    S.RoundView.model_validate(api.close(rid))
    view = api.decide(rid, "alice", "stand")
    S.RoundView.model_validate(view)
    S.RoundEvents.model_validate(api.ok("GET", f"/rounds/{rid}/events"))
    inv = api.key("investigator")
    S.VerificationView.model_validate(api.ok("GET", f"/rounds/{rid}/verification", key=inv))
    S.ReplayView.model_validate(api.ok("GET", f"/rounds/{rid}/replay", key=inv))
    S.WalletView.model_validate(api.ok("GET", "/wallets/alice"))
    S.TableView.model_validate(api.ok("GET", "/tables/T1"))
    round_view = api.ok("GET", f"/rounds/{rid}")
    table_shoes = api.ok("GET", f"/shoes/{round_view['round_id'] and _shoe_of(api, rid)}")
    S.ShoeView.model_validate(table_shoes)
    issued = api.ok("POST", "/api-keys", 201, json={"role": "cashier"}, key=api.admin)
    S.KeyIssued.model_validate(issued)
    S.KeyList.model_validate(api.ok("GET", "/api-keys", key=api.admin))
    S.RulesIndex.model_validate(api.ok("GET", "/rules", key=inv))
    S.HealthView.model_validate(api.raw.get("/health").json())
    brid = api.start("B1", "boundless", ["10H", "9C", "7D", "8S", "5C", "6H", "2D", "3S"])
    api.wallet("bob", deposit="50.00")
    answer = api.ok(
        "POST", f"/rounds/{brid}/bets/batch", json={"bets": [{"player": "bob", "amount": "10.00"}]}
    )
    S.BatchAnswer.model_validate(answer)


def _shoe_of(api: Any, rid: str) -> str:
    events = api.events(rid)
    shoe: str = events[0]["payload"]["shoe_id"]
    return shoe

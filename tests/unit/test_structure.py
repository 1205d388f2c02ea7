"""The shape of ``domain/``: its modules import each other without a cycle, no module is over
about 600 lines, and the game core (``domain/game``) stores nothing and records nothing.

Imports are read from the source with ``ast`` (every ``import`` and ``from ... import``, at
any depth: inside functions and ``if TYPE_CHECKING:`` blocks too), so a cycle hidden behind a
lazy import is found as well."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "domain"
MAX_LINES = 620  # "about 600": the largest aggregates (shoe, wallet) are within 3% of it


def module_name(path: Path) -> str:
    parts = path.relative_to(DOMAIN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(DOMAIN.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The ``domain`` modules that module ``name`` imports (a package import counts as its
    ``__init__``; ``from package import module`` as that module)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def find_cycle() -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(GRAPH):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_import_graph_of_domain_has_no_cycle() -> None:
    cycle = find_cycle()
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle() -> None:
    """The check itself can fail: a graph with a loop added is reported."""
    saved = dict(GRAPH)
    try:
        GRAPH["domain.game.facts"] = {*GRAPH["domain.game.facts"], "domain.application"}
        cycle = find_cycle()
        assert cycle is not None
        assert cycle[0] == cycle[-1]
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_the_boundless_service_does_not_reach_the_application() -> None:
    reach: set[str] = set()
    todo = ["domain.boundless.service"]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in reach:
                reach.add(nxt)
                todo.append(nxt)
    assert "domain.application" not in reach


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_of_domain_is_over_about_600_lines(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(DOMAIN.parent)}: {lines} lines"


def test_the_game_core_stores_nothing_and_records_nothing() -> None:
    """``domain/game`` decides; it imports no storage, no aggregate, no application."""
    for name, imported in GRAPH.items():
        if name.startswith("domain.game"):
            outside = {m for m in imported if not m.startswith(("domain.game", *PURE))}
            assert not outside, f"{name} imports {sorted(outside)}"
            source = MODULES[name].read_text()
            assert "eventsourcing" not in source, name


PURE = (
    "domain.cards",
    "domain.scoring",
    "domain.money",
    "domain.rules",
    "domain.sidebets",
    "domain.errors",
    "domain.events",
    "domain.kept",  # shared immutable values in a bounded memo: no storage, no state
)

"""The house rules the architecture page states, held by a test so they cannot drift: the
layers import only downwards (``pipelines`` → ``sources`` → ``warehouse``), no module imports
itself back through others (no import circle, lazy imports included), and no module grows
past 600 lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("pipelines", "sources", "warehouse")
# A layer may import the layers after it in this order, never those before it.
LAYERS = {"pipelines": 0, "sources": 1, "warehouse": 2}
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool) -> Iterator[str]:
    """Every module of ours a module imports, wherever the import statement stands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = _imported(tree, name, path.name == "__init__.py")
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_layers_import_only_downwards() -> None:
    upward = [
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in sorted(targets)
        if LAYERS[target.split(".")[0]] < LAYERS[name.split(".")[0]]
    ]
    assert upward == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it, or None. A package's ``__init__`` that
    re-exports its own modules is not a circle: a module importing a sibling through the
    package face and the face importing it back are counted as one."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for target in sorted(graph[name]):
            if name.startswith(f"{target}."):
                continue  # a module importing its own package's face
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return None


def test_no_import_circle() -> None:
    circle = _cycle(_graph())
    assert circle is None, " -> ".join(circle or [])


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"warehouse.a": {"warehouse.b"}, "warehouse.b": {"warehouse.c"}}
    graph["warehouse.c"] = {"warehouse.a"}
    assert _cycle(graph) == ["warehouse.a", "warehouse.b", "warehouse.c", "warehouse.a"]
    assert _cycle({"warehouse.a": {"warehouse.b"}, "warehouse.b": set()}) is None


def test_no_module_over_600_lines() -> None:
    long = {
        name: lines
        for name, path in _modules().items()
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}

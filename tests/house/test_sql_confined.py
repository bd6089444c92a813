"""``warehouse/`` owns every SQL statement and the connection.

Outside it (pipelines/, sources/, demo/, bench/) no string may start with a SQL statement
keyword, nothing may reach for the warehouse's private connection or query helpers, and
nothing may open a DuckDB connection of its own: other packages call typed functions of
``warehouse`` that return named rows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

CHECKED = ("pipelines", "sources", "demo", "bench")

# SQL as this code base writes it: an uppercase statement keyword, then whitespace. Prose
# ("With a pin ...", "Select the ...") does not match.
SQL_START = re.compile(r"(SELECT|INSERT|WITH|CREATE|COPY|UPDATE|DELETE|ATTACH)\s")

# The warehouse's private members: the connection and the raw query helpers (reached on
# another object: a class's own ``self._transaction`` is its own business).
PRIVATE = frozenset({"_con", "_scalar", "_first_row", "_transaction", "_connection_for_tests"})

# (file, function) pairs allowed to hold SQL and open DuckDB themselves. Only benchmarks'
# floors: they measure the least any importer must do (hash + one Arrow insert into a
# DuckDB of their own) beside the real path, so they must not go through the warehouse.
ALLOWED = frozenset(
    {
        ("bench/floor.py", "backfill_floor"),
        ("bench/floor.py", "_insert"),
        ("bench/floor.py", "_documents_sql"),
        ("bench/floor.py", "floor_hashes"),
        ("bench/floor.py", "ingest_floor"),
    }
)


def _functions(tree: ast.AST) -> dict[int, str]:
    """The name of the outermost function around each line of a module."""
    around: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                around.setdefault(line, node.name)
    return around


def _texts(node: ast.AST) -> Iterator[str]:
    """The string literals of a node: a constant, or an f-string as written (each replacement
    field as ``{}``; its literal parts are constants of their own and are checked too)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(
            str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
        )


def violations(source: str, name: str) -> list[str]:
    """``name:line: why`` for every SQL string, private warehouse member and DuckDB
    connection in ``source`` (the text of module ``name``), allowlist aside."""
    tree = ast.parse(source, name)
    functions = _functions(tree)
    found: dict[tuple[int, str], str] = {}  # one report per line and kind
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if (name, functions.get(line)) in ALLOWED:
            continue
        for text in _texts(node):
            if SQL_START.match(text.strip()):
                found.setdefault((line, "sql"), f"SQL {text.strip().splitlines()[0][:60]!r}")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in PRIVATE
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.setdefault((line, node.attr), f"private warehouse member .{node.attr}")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "connect"
            and isinstance(node.value, ast.Name)
            and node.value.id == "duckdb"
        ):
            found.setdefault((line, "connect"), "a DuckDB connection of its own")
    return [f"{name}:{at}: {why}" for (at, _), why in sorted(found.items())]


def checked_files() -> list[Path]:
    return sorted(
        path
        for top in CHECKED
        for path in (REPO / top).rglob("*.py")
        # not a virtual environment kept beside the code (bench/.venv-dlt holds dlt)
        if not any(part.startswith(".") for part in path.relative_to(REPO).parts)
    )


def test_sql_and_the_connection_stay_inside_the_warehouse() -> None:
    files = checked_files()
    assert len(files) > 40, "the walk found too few modules to be checking anything"
    found = []
    for path in files:
        found += violations(path.read_text("utf-8"), path.relative_to(REPO).as_posix())
    assert not found, "move these into a typed function of warehouse/:\n" + "\n".join(found)


def test_every_allowlisted_function_exists_and_still_needs_its_exemption() -> None:
    for name, function in sorted(ALLOWED):
        tree = ast.parse((REPO / name).read_text("utf-8"))
        body = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == function
        ]
        assert body, f"{name} has no function {function}: drop it from ALLOWED"
        texts = [text for node in ast.walk(body[0]) for text in _texts(node)]
        assert any(SQL_START.match(t.strip()) for t in texts), f"{name}:{function} has no SQL"


# What the check must catch, and what it must let through.
CAUGHT = {
    "a query": 'ROWS = "SELECT doc_id FROM revisions"',
    "a multi-line query": 'Q = """\n    WITH cut AS (SELECT 1)\n    SELECT * FROM cut\n"""',
    "an f-string": 'def f(t):\n    return f"SELECT count(*) FROM {t}"',
    "an f-string's later part": 'def f(c):\n    return f"{c}\\nINSERT INTO runs VALUES (1)"',
    "a statement": 'def f(wh, limit):\n    wh.run(f"CREATE TABLE t (x INT)")',
    "an attach": "S = 'ATTACH \\'ducklake:x.db\\' AS lake'",
    "the private connection": "def f(warehouse):\n    return warehouse._con",
    "a private helper": "def f(warehouse):\n    return warehouse._scalar('x')",
    "a connection of its own": "import duckdb\ncon = duckdb.connect(':memory:')",
}
LET_THROUGH = {
    "prose": '"""With a pin, the file is fetched at its commit.\n\nSelect the entries."""',
    "an HTTP method": 'METHOD = "DELETE"',
    "a word in a message": 'M = "cannot update the document: Selected is not a field"',
    "a lowercase keyword": 'S = "select the newest revision"',
    "public functions": "from warehouse import corpus\nrows = corpus.members(wh, 'c')",
    "a class's own member": "class S:\n    def f(self):\n        return self._transaction()",
}


@pytest.mark.parametrize("source", CAUGHT.values(), ids=list(CAUGHT))
def test_the_check_catches(source: str) -> None:
    assert violations(source, "pipelines/example.py")


@pytest.mark.parametrize("source", LET_THROUGH.values(), ids=list(LET_THROUGH))
def test_the_check_lets_through(source: str) -> None:
    assert violations(source, "pipelines/example.py") == []


def test_the_allowlist_names_functions_not_files() -> None:
    floor = "def ingest_floor(con):\n    con.execute('CREATE TABLE t AS SELECT 1')\n"
    other = "def table_sizes(con):\n    return con.execute('SELECT count(*) FROM t')\n"
    assert violations(floor, "bench/floor.py") == []
    assert violations(other, "bench/floor.py") == ["bench/floor.py:2: SQL 'SELECT count(*) FROM t'"]

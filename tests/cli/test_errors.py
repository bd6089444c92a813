"""One exception tree; exit codes mapped at the command line's edge; a bug says so."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fakes.nhtsa import cmpl_row, write_zip
from pipelines.backfill import run as backfill_module
from pipelines.cli import exits
from pipelines.cli.common import print_run
from pipelines.ingest import RunResult
from sources.registry import SOURCES
from tests.conftest import REPO, cli
from warehouse import errors
from warehouse.errors import (
    BodyTooLarge,
    ManifestError,
    NamespaceViolation,
    ReceiptsError,
    TerminalHttpError,
    UsageError,
    WarehouseBusy,
)
from warehouse.store import Warehouse

PACKAGES = ("pipelines", "sources", "warehouse")
# The single-file verifier of proof bundles runs where receipts is not installed: it imports
# nothing of ours, so its one exception (a step that does not hold) is its own.
STANDALONE = (REPO / "pipelines" / "proofs" / "verify_receipt.py",)


def _exception_classes_outside_the_tree() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path == REPO / "warehouse" / "errors.py" or path in STANDALONE:
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.ClassDef):
                    bases = {ast.unparse(b) for b in node.bases}
                    if any(b.endswith(("Error", "Exception")) or b in dir(errors) for b in bases):
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    return found


def test_every_exception_class_lives_in_the_one_tree() -> None:
    assert _exception_classes_outside_the_tree() == []


def test_the_tree_has_one_root_and_its_docstring_draws_every_class() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert all(issubclass(c, ReceiptsError) for c in classes)
    drawing = errors.__doc__ or ""
    assert [c.__name__ for c in classes if c.__name__ not in drawing] == []


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ManifestError("m.toml: bad"), exits.EXIT_USAGE),
        (UsageError("no"), exits.EXIT_USAGE),
        (NamespaceViolation("outside"), exits.EXIT_FAILURE),
        (WarehouseBusy("w.duckdb", 3, 42), exits.EXIT_FAILURE),
        (BodyTooLarge("too big", "https://x"), exits.EXIT_FAILURE),
    ],
)
def test_exit_codes_are_mapped_at_the_edge(error: ReceiptsError, code: int) -> None:
    assert exits.for_error(error) == code
    assert not hasattr(error, "exit_code")
    assert isinstance(BodyTooLarge("x", "u"), TerminalHttpError)


MANIFEST = """
[corpus]
name = "broken"
namespace = "broken"

[[nhtsa]]
make = "HONDA"
model = "CR-V"
years = [2020, 2020]
kinds = ["recalls"]
"""


@pytest.fixture
def broken_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The NHTSA source with a bug in its fetch (a programming error, not an upstream one)."""

    def fetch(entry: Any, ctx: Any) -> Any:
        raise TypeError("'NoneType' object is not subscriptable")

    monkeypatch.setitem(SOURCES, "nhtsa", dataclasses.replace(SOURCES["nhtsa"], fetch=fetch))
    path = tmp_path / "broken.toml"
    path.write_text(MANIFEST)
    return path


def test_a_bug_is_an_internal_error_not_an_upstream_failure(
    broken_source: Path, warehouse_path: Path
) -> None:
    result = cli("ingest", broken_source, "--warehouse", warehouse_path)
    assert result.exit_code == exits.EXIT_FAILURE
    assert "receipts: internal error: TypeError" in result.stderr
    assert "--debug" in result.stderr
    assert "Traceback" not in result.stderr
    (run,) = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert run["status"] == "internal error"
    (failure,) = run["failures"]
    assert failure["reason"].startswith("internal error: TypeError")
    assert failure["internal"] is True


def test_debug_shows_the_traceback(broken_source: Path, warehouse_path: Path) -> None:
    result = cli("--debug", "ingest", broken_source, "--warehouse", warehouse_path)
    assert result.exit_code == exits.EXIT_FAILURE
    assert "Traceback (most recent call last)" in result.stderr
    assert "receipts: internal error: TypeError" in result.stderr


def test_a_known_error_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    result = cli("manifest", "check", tmp_path / "missing.toml")
    assert result.exit_code == exits.EXIT_USAGE
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("receipts: ")


OUT_OF_MEMORY = "Out of Memory Error: could not allocate block of size 256.0 KiB (1.0 MiB used)"


def test_an_entry_out_of_memory_fails_as_itself_not_as_a_bug(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, warehouse_path: Path
) -> None:
    def fetch(entry: Any, ctx: Any) -> Any:
        raise duckdb.OutOfMemoryException(OUT_OF_MEMORY)

    monkeypatch.setitem(SOURCES, "nhtsa", dataclasses.replace(SOURCES["nhtsa"], fetch=fetch))
    manifest = tmp_path / "m.toml"
    manifest.write_text(MANIFEST)
    result = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert result.exit_code == exits.EXIT_FAILURE
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    (run,) = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert run["status"] == "failed"
    (failure,) = run["failures"]
    assert failure["reason"].startswith("the warehouse's database ran out of memory")
    assert "RECEIPTS_DUCKDB_MEMORY_LIMIT=" in failure["hint"] and "internal" not in failure


def test_a_backfill_out_of_memory_says_what_to_change(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, warehouse_path: Path
) -> None:
    def scan(*args: Any) -> Any:
        raise duckdb.OutOfMemoryException(OUT_OF_MEMORY)

    monkeypatch.setattr(backfill_module, "scan", scan)
    path = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", [cmpl_row(11999001, 1)])
    result = cli(
        "backfill", "nhtsa", "--file", path, "--kind", "complaints", "--warehouse", warehouse_path
    )
    assert result.exit_code == exits.EXIT_FAILURE
    assert "ran out of memory under its limit: Out of Memory Error" in result.stderr
    assert "--memory-limit" in result.stderr and "internal error" not in result.stderr
    (run,) = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert run["status"] == "failed"
    assert run["failures"][0]["reason"].startswith("the warehouse's database ran out of memory")


def test_text_from_outside_is_printed_with_its_control_characters_written_out(
    warehouse_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error naming what the user typed, and a run's failures and warnings (reasons that
    quote upstream answers), print an escape sequence as text, never to the terminal."""
    with Warehouse.open(str(warehouse_path)):
        pass
    missing = cli("history", "nhtsa/x\x1b[2Jy", "--warehouse", warehouse_path)
    assert missing.exit_code == 1
    assert "\x1b" not in missing.stderr and "'nhtsa/x\\x1b[2Jy'" in missing.stderr
    result = RunResult(
        run_id=1,
        status="failed",
        counts={},
        failures=[
            {"source": "forem", "entry": "a", "reason": "HTTP 500: \x1b]0;t\x07", "hint": "\x9b"}
        ],
        warnings=[{"source": "forem", "entry": "b", "warning": "odd\u202etext"}],
    )
    print_run(result)
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x9b\u202e")
    assert "HTTP 500: \\x1b]0;t\\x07" in out and "hint: \\x9b" in out and "odd\\u202etext" in out

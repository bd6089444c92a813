"""A backfill that runs out of memory says which setting governs the statement that failed:
``--memory-limit`` for the warehouse's connection (``RECEIPTS_DUCKDB_MEMORY_LIMIT`` does not
apply to a backfill), ``RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT`` for the build database."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from bench.nhtsa_backfill import generate
from tests.conftest import cli
from warehouse.bulk.out_of_memory import is_out_of_memory


@pytest.fixture(scope="module")
def complaints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("flat") / "FLAT_CMPL.zip", 20_000)


def _failed(warehouse: Path, path: Path, *args: str) -> dict[str, str]:
    done = cli(
        "backfill", "nhtsa", "--file", path, "--kind", "complaints",
        "--warehouse", warehouse, "--json", *args,
    )  # fmt: skip
    assert done.exit_code == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "OutOfMemory", error
    return dict(error)


def test_the_warehouse_running_out_names_the_backfills_memory_limit(
    tmp_path: Path, complaints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECEIPTS_DUCKDB_MEMORY_LIMIT", "2GB")  # replaced for the run
    error = _failed(tmp_path / "w.duckdb", complaints, "--memory-limit", "2MB")
    assert "--memory-limit" in error["hint"] and "it ran with 2MB" in error["hint"]
    assert "RECEIPTS_DUCKDB_MEMORY_LIMIT does not apply" in error["hint"]
    assert "Possible solutions" not in error["message"]  # DuckDB's advice is left out


def test_the_build_database_running_out_names_its_own_limit(
    tmp_path: Path, complaints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT", "1MB")
    error = _failed(tmp_path / "w.duckdb", complaints)
    assert "RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT=" in error["hint"]
    assert "it ran with 1MB" in error["hint"] and "--memory-limit does not apply" in error["hint"]


def test_a_commit_refused_for_want_of_memory_is_out_of_memory() -> None:
    """DuckDB raises a commit that cannot pin a buffer as a TransactionException."""
    refused = duckdb.TransactionException(
        "TransactionContext Error: Failed to commit: failed to pin block of size 256.0 KiB "
        "(3.7 MiB/3.8 MiB used)"
    )
    assert is_out_of_memory(refused)
    assert is_out_of_memory(duckdb.OutOfMemoryException("Out of Memory Error: failed"))
    assert not is_out_of_memory(duckdb.TransactionException("Conflict on tuple deletion"))

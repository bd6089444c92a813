"""A batch whose commit conflicts with another writer of a lake is written again, bounded,
and counted in the run summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import cli, write_manifest
from warehouse import conflicts
from warehouse.conflicts import CONFLICT_RETRIES
from warehouse.ingest import Ingestor
from warehouse.store import Warehouse

MANIFEST = """
[corpus]
name = "c"
namespace = "c"

[[synthetic]]
name = "a"
count = 30
size = 100
complete = true
"""

CONFLICT = (
    "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\n"
    "Exceeded the maximum retry count of 0 set by the ducklake_max_retry_count setting."
)


def _conflicting(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """The next ``times`` batch commits fail as DuckLake reports a conflict."""
    real = Ingestor._commit_once
    failed = [0]

    def commit_once(self: Ingestor, *args: Any) -> Any:
        if failed[0] < times:
            failed[0] += 1
            with self.warehouse._transaction():
                pass
            raise duckdb.TransactionException(CONFLICT)
        return real(self, *args)

    monkeypatch.setattr(Ingestor, "_commit_once", commit_once)
    monkeypatch.setattr(conflicts.time, "sleep", lambda _seconds: None)
    return failed


def test_a_conflicting_batch_is_written_again_and_counted(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _conflicting(monkeypatch, 2)
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--batch-size", "10", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["counts"]["synthetic"]["new"] == 30
    assert summary["counts"]["warehouse"] == {"conflicts_retried": 2}
    text = cli("ingest", manifest, "--warehouse", warehouse_path)
    assert "warehouse" not in text.stdout  # no conflict, nothing said
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        (documents,) = (
            wh._connection_for_tests().execute("SELECT count(*) FROM documents").fetchone()
        )
    assert documents == 30  # written once, whatever the retries


def test_retries_are_bounded(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _conflicting(monkeypatch, CONFLICT_RETRIES + 1)
    manifest = write_manifest(tmp_path, MANIFEST)
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    assert result.exit_code == 1
    (failure,) = json.loads(result.stdout)["failures"]
    assert "conflicted with other writers 11 times" in failure["reason"]
    assert "re-run to finish" in failure["reason"]


def test_other_errors_are_not_retried() -> None:
    assert Warehouse.is_commit_conflict(duckdb.TransactionException(CONFLICT))
    assert not Warehouse.is_commit_conflict(duckdb.TransactionException("cannot start"))
    assert not Warehouse.is_commit_conflict(ValueError("Failed to commit DuckLake transaction"))

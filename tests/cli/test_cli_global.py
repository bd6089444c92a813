"""Global options given before the command: --warehouse (and --data-path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest

MANIFEST = """
[corpus]
name = "g"
namespace = "g"

[[synthetic]]
name = "a"
count = 3
size = 100
"""


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    manifest = write_manifest(tmp_path, MANIFEST)
    assert cli("ingest", manifest, "--warehouse", path).exit_code == 0
    return path


def _runs(*args: object) -> list[dict[str, object]]:
    result = cli(*args)
    assert result.exit_code == 0, result.output
    value: list[dict[str, object]] = json.loads(result.stdout)
    return value


def test_warehouse_before_the_command(warehouse: Path) -> None:
    assert len(_runs("--warehouse", warehouse, "runs", "--json")) == 1
    assert len(_runs("runs", "--warehouse", warehouse, "--json")) == 1


def test_the_global_option_beats_the_environment_and_the_commands_own_beats_both(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere.duckdb"
    monkeypatch.setenv("RECEIPTS_WAREHOUSE", str(elsewhere))
    assert len(_runs("--warehouse", warehouse, "runs", "--json")) == 1
    own = cli("--warehouse", warehouse, "runs", "--warehouse", elsewhere, "--json")
    assert own.exit_code != 0 and "elsewhere.duckdb" in own.stderr
    assert not elsewhere.exists()

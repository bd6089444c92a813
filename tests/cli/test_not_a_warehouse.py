"""A file that is not a warehouse is "not a receipts warehouse" (exit 2), and nothing is
written beside it: no lock file, no WAL, no spill folder."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, cli, write_manifest

MANIFEST = """
[corpus]
name = "n"
namespace = "n"

[[synthetic]]
name = "a"
count = 2
size = 100
"""


def _foreign_duckdb(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER)")
    con.close()
    return path


@pytest.mark.parametrize(
    "command", [["runs"], ["ls"], ["verify"], ["show", "x/y/z"], ["ingest", "MANIFEST"]]
)
@pytest.mark.parametrize("what", ["readme", "folder"])
def test_a_file_that_is_not_a_duckdb_database_is_not_a_warehouse(
    tmp_path: Path, command: list[str], what: str
) -> None:
    if what == "readme":
        target = tmp_path / "README.md"
        target.write_bytes((REPO / "README.md").read_bytes())
    else:
        target = tmp_path / "folder"
        target.mkdir()
    manifest = write_manifest(tmp_path, MANIFEST)
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [str(manifest) if a == "MANIFEST" else a for a in command]
    result = cli(*args, "--warehouse", target)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"receipts: {target} is not a receipts warehouse (not a DuckDB database file); point "
        "--warehouse at a warehouse, or at a path where none exists yet to create one"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if what == "readme":
        assert target.read_bytes() == (REPO / "README.md").read_bytes()


def test_another_programs_duckdb_database_is_not_a_warehouse_nor_migrated_into(
    tmp_path: Path,
) -> None:
    foreign = _foreign_duckdb(tmp_path / "shop.duckdb")
    manifest = write_manifest(tmp_path, MANIFEST)
    for args in (["runs"], ["ingest", str(manifest)]):
        result = cli(*args, "--warehouse", foreign)
        assert result.exit_code == 2, result.output
        assert "is not a receipts warehouse (a DuckDB database without receipts' tables" in (
            result.stderr
        )
    con = duckdb.connect(str(foreign), read_only=True)
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert tables == {"orders"}


def test_a_damaged_warehouse_is_still_damaged_not_foreign(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    manifest = write_manifest(tmp_path, MANIFEST)
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    warehouse.write_bytes(warehouse.read_bytes()[:20_000])
    result = cli("runs", "--warehouse", warehouse)
    assert result.exit_code == 1 and "is damaged" in result.stderr

"""A warehouse file from a newer DuckDB: one line saying what happened and what to do.

``data/written-by-duckdb-2.0.1.duckdb.gz`` is a file DuckDB 2.0.1 (the engine of receipts
0.1.0) wrote, holding one empty table: ``duckdb.connect(path).execute("CREATE TABLE t (x
INT)")``, gzipped. The DuckDB receipts runs refuses its storage version."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.conftest import cli

NEWER = Path(__file__).parent / "data" / "written-by-duckdb-2.0.1.duckdb.gz"


@pytest.fixture
def newer_file(tmp_path: Path) -> Path:
    path = tmp_path / "receipts.duckdb"
    path.write_bytes(gzip.decompress(NEWER.read_bytes()))
    return path


@pytest.mark.parametrize("command", [("runs",), ("verify",)])
def test_a_file_from_a_newer_duckdb_is_refused_with_the_way_out(
    newer_file: Path, command: tuple[str, ...]
) -> None:
    result = cli(*command, "--warehouse", newer_file)
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"receipts: cannot open warehouse {newer_file}: ")
    assert "written by a newer DuckDB (storage version" in line
    assert "A file from a newer DuckDB" in line
    # the file is left as it was: opening it wrote nothing
    assert newer_file.read_bytes() == gzip.decompress(NEWER.read_bytes())


def test_the_backends_page_gives_the_statements_the_message_points_to() -> None:
    page = (Path(__file__).parents[2] / "docs" / "backends.md").read_text()
    assert "## A file from a newer DuckDB" in page
    assert "COPY FROM DATABASE old TO new;" in page

"""The warehouse `make demo` makes, opened by everything else of the one engine: the DuckDB
command line (the `duckdb-cli` release the dev extra installs) reads it, and `receipts copy`
moves it into a DuckLake on each catalog, which reads back the same documents."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, TEST_PG, cli
from tests.lake_support import clean_env

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse made as `make demo` makes it (``python -m demo.run --warehouse X``)."""
    root = tmp_path_factory.mktemp("demo")
    warehouse = root / "receipts.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "demo.run", "--warehouse", warehouse, "--out", root / "out"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return warehouse


def table_counts(warehouse: Path) -> dict[str, int]:
    """Each table's row count, as the engine receipts runs on reads it."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            name
            for (name,) in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_type = 'BASE TABLE' ORDER BY table_name"
            ).fetchall()
        ]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def test_the_duckdb_command_line_opens_the_demo_warehouse(demo_warehouse: Path) -> None:
    duckdb_cli = BIN / "duckdb"
    if not duckdb_cli.exists():
        pytest.skip("needs the DuckDB command line (duckdb-cli, in the dev extra): make install")
    counts = table_counts(demo_warehouse)
    assert counts["revisions"] > 0 and counts["snapshots"] > 0
    query = " UNION ALL ".join(
        f"SELECT '{table}' AS name, count(*) AS n FROM \"{table}\"" for table in counts
    )
    done = subprocess.run(
        [duckdb_cli, "-readonly", "-json", demo_warehouse, "-c", query],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert {row["name"]: row["n"] for row in json.loads(done.stdout)} == counts


@pytest.mark.parametrize("catalog", ["sqlite", "postgres"])
def test_the_demo_warehouse_copies_into_a_lake_that_reads_back_the_same_documents(
    demo_warehouse: Path, catalog: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if catalog == "sqlite":
        lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    else:
        create: Callable[[], str] = request.getfixturevalue("lake_postgres")
        lake = f"ducklake:postgres:dbname={create()} {TEST_PG}"
    data = tmp_path / "data"
    copied = subprocess.run(
        [
            BIN / "receipts",
            "copy",
            "--warehouse",
            demo_warehouse,
            "--to",
            lake,
            "--to-data-path",
            data,
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert copied.returncode == 0, copied.stderr
    assert "every table's digest matches" in copied.stdout

    exports = {}
    for name, warehouse in (("file", str(demo_warehouse)), ("lake", lake)):
        out = tmp_path / f"export-{name}"
        done = cli("export", "--warehouse", warehouse, "--format", "ndjson", "--out", out)
        assert done.exit_code == 0, done.stderr
        exports[name] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert exports["lake"] == exports["file"]
    assert len(exports["file"]["documents.ndjson"].splitlines()) > 0
    assert cli("verify", "--warehouse", lake).exit_code == 0

"""A lake's snapshots are written in Parquet row groups small enough to read at the default
memory limit (:data:`warehouse.backends.SNAPSHOTS_ROW_GROUP_SIZE`).

A Parquet reader holds a whole row group's column, one per DuckDB thread: in row groups of
16,384 complaint bodies (37 MB a column), `verify` and `export` of a lake holding a
600,000-row backfill ran out of memory at the defaults, and `verify` named the file it
could not read as altered. Needs ``receipts[lake]`` (``make install``)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.conftest import cli, write_manifest
from tests.warehouse.test_table_digests import MANIFEST  # a synthetic corpus: count, size
from warehouse.backends import ROW_GROUP_SIZE, SNAPSHOTS_ROW_GROUP_SIZE
from warehouse.store import Warehouse

pytest.importorskip("duckdb_extension_ducklake", reason="needs receipts[lake]: make install")


VECTOR_SIZE = 2048  # DuckDB closes a row group after the chunk that reaches its size


def _row_groups(folder: Path) -> list[int]:
    """The rows of each row group of the Parquet files under ``folder``."""
    files = sorted(str(f) for f in folder.rglob("*.parquet"))
    assert files, f"no data file under {folder}"
    rows = duckdb.sql(
        f"SELECT row_group_num_rows FROM parquet_metadata({files!r}) "
        "WHERE path_in_schema = 'content_hash'"
    ).fetchall()
    return [int(r[0]) for r in rows]


def _row_group_options(url: str) -> list[tuple[str | None, str]]:
    """The lake's ``parquet_row_group_size`` options: (scope entry, rows), lake-wide first."""
    with Warehouse.open(url, read_only=True) as wh:
        rows = wh._con.execute(
            "SELECT scope_entry, value FROM ducklake_options('lake') "
            "WHERE option_name = 'parquet_row_group_size' ORDER BY scope_entry NULLS FIRST"
        ).fetchall()
    return [(entry, str(value)) for entry, value in rows]


def test_a_lakes_snapshots_take_small_row_groups_and_its_other_tables_the_usual(
    tmp_path: Path,
) -> None:
    url = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    data = tmp_path / "data"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=6000, size=400))
    done = cli("ingest", manifest, "--warehouse", url, "--data-path", data)
    assert done.exit_code == 0, done.stderr
    snapshots = _row_groups(data / "main" / "snapshots")
    assert sum(snapshots) == 6000 and len(snapshots) >= 2  # one commit, several row groups
    assert max(snapshots) < SNAPSHOTS_ROW_GROUP_SIZE + VECTOR_SIZE
    assert max(_row_groups(data / "main" / "revisions")) == 6000 < ROW_GROUP_SIZE
    assert _row_group_options(url) == [(None, str(ROW_GROUP_SIZE)), ("main.snapshots", "2048")]
    verified = cli("verify", "--warehouse", url, "--json")
    assert verified.exit_code == 0, verified.stderr
    assert json.loads(verified.stdout)["checked"] == 6000


def test_a_copy_into_a_lake_writes_its_snapshots_in_small_row_groups(tmp_path: Path) -> None:
    """In the copy's transaction the tables are its own, and DuckLake takes no option for
    a table not yet committed: the snapshots are written with the lake-wide size lowered,
    and their own option is set once committed."""
    source = tmp_path / "w.duckdb"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=6000, size=400))
    assert cli("ingest", manifest, "--warehouse", source).exit_code == 0
    url = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    data = tmp_path / "data"
    copied = cli("copy", "--warehouse", source, "--to", url, "--to-data-path", data)
    assert copied.exit_code == 0, copied.stderr
    snapshots = _row_groups(data / "main" / "snapshots")
    assert sum(snapshots) == 6000 and max(snapshots) < SNAPSHOTS_ROW_GROUP_SIZE + VECTOR_SIZE
    assert max(_row_groups(data / "main" / "revisions")) == 6000
    assert _row_group_options(url) == [(None, str(ROW_GROUP_SIZE)), ("main.snapshots", "2048")]


def test_a_data_file_read_beyond_the_memory_limit_is_not_called_altered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader out of memory is not a damaged file: ``verify`` fails naming the limit. The
    lake is written as before the snapshots had row groups of their own (one of 6,000)."""
    monkeypatch.setattr("warehouse.backends.SNAPSHOTS_ROW_GROUP_SIZE", ROW_GROUP_SIZE)
    url = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=6000, size=8000))
    made = cli("ingest", manifest, "--warehouse", url, "--data-path", tmp_path / "data")
    assert made.exit_code == 0, made.stderr
    assert _row_groups(tmp_path / "data" / "main" / "snapshots") == [6000]
    small = {"RECEIPTS_DUCKDB_MEMORY_LIMIT": "48MB", "RECEIPTS_DUCKDB_THREADS": "2"}
    verified = cli("verify", "--warehouse", url, "--json", env=small)
    assert verified.exit_code == 1, verified.stdout
    assert "ran out of memory" in verified.stderr, verified.stderr
    assert "altered" not in verified.stdout + verified.stderr

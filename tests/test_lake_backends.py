"""Warehouse URLs, and the commands that look after a warehouse: ``copy`` between a DuckDB
file and a DuckLake (verified by table digests) and ``maintain``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from warehouse.backends import parse
from warehouse.digests import table_digests
from warehouse.errors import UsageError, WarehouseError
from warehouse.store import Warehouse

HAS_LAKE = importlib.util.find_spec("duckdb_extension_ducklake") is not None
needs_lake = pytest.mark.skipif(not HAS_LAKE, reason="needs receipts[lake] (make install-lake)")

MANIFEST = """
[corpus]
name = "alpha"
namespace = "alpha"

[[synthetic]]
name = "a"
count = {count}
size = 200
seed = {seed}
complete = true
"""


def test_warehouse_urls() -> None:
    assert parse("w.duckdb").kind == "file"
    lake = parse("ducklake:sqlite:cat.sqlite", data_path="d")
    assert (lake.backend, lake.catalog_dsn, lake.data_path) == (
        "ducklake:sqlite",
        "cat.sqlite",
        "d",
    )
    pg = parse("ducklake:postgres:dbname=r host=db")
    assert (pg.backend, pg.catalog_dsn) == ("ducklake:postgres", "dbname=r host=db")
    for bad in ("ducklake:mysql:x", "ducklake:sqlite:", "s3://bucket/w.duckdb"):
        with pytest.raises(UsageError, match=r"ducklake:sqlite:CATALOG\.sqlite"):
            parse(bad)


@pytest.mark.skipif(HAS_LAKE, reason="the extension is installed here")
def test_without_the_extension_one_line_names_the_extra(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match=r"pip install 'receipts\[lake\]'"):
        Warehouse.open(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}", data_path=str(tmp_path))


@needs_lake
def test_a_new_lake_needs_a_data_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--data-path DIR"):
        Warehouse.open(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}")


@needs_lake
def test_copy_file_to_lake_and_back_then_maintain(tmp_path: Path) -> None:
    manifest = tmp_path / "m.toml"
    source = tmp_path / "w.duckdb"
    for seed in (0, 1):
        write_manifest(tmp_path, MANIFEST.format(count=40, seed=seed))
        assert cli("ingest", manifest, "--warehouse", source).exit_code == 0
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    there = cli("copy", "--warehouse", source, "--to", lake, "--to-data-path", tmp_path / "d")
    assert there.exit_code == 0, there.stderr
    assert "every table's digest matches" in there.stdout
    again = cli("copy", "--warehouse", source, "--to", lake)
    assert again.exit_code == 2 and "copy needs a new warehouse" in again.stderr
    back = tmp_path / "back.duckdb"
    assert cli("copy", "--warehouse", lake, "--to", back).exit_code == 0
    with Warehouse.open(str(source), read_only=True) as a, Warehouse.open(str(back)) as b:
        assert table_digests(a) == table_digests(b)

    # The lake goes on as a warehouse: a third revision, then maintenance keeps every one.
    write_manifest(tmp_path, MANIFEST.format(count=40, seed=2))
    assert cli("ingest", manifest, "--warehouse", lake).exit_code == 0
    before = json.loads(
        cli("history", "synthetic/record/a-1", "--warehouse", lake, "--json").stdout
    )
    done = cli("maintain", "--warehouse", lake, "--keep-days", 0, "--json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["snapshots_after"] < report["snapshots_before"]
    after = json.loads(cli("history", "synthetic/record/a-1", "--warehouse", lake, "--json").stdout)
    assert after == before and len(after["revisions"]) == 3
    assert cli("verify", "--warehouse", lake).exit_code == 0

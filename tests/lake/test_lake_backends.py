"""Warehouse URLs, and the commands that look after a warehouse: ``copy`` between a DuckDB
file and a DuckLake (verified by table digests) and ``maintain``."""

from __future__ import annotations

import importlib
import importlib.util
import json
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import cli, write_manifest
from tests.spill_checks import assert_each_spills_apart
from warehouse.backends import parse, without_password
from warehouse.digests import table_digests
from warehouse.errors import IntegrityError, UsageError, WarehouseError
from warehouse.maintain import _check_unchanged, maintain
from warehouse.runs import finish_run, start_run
from warehouse.store import Warehouse

HAS_LAKE = importlib.util.find_spec("duckdb_extension_ducklake") is not None
needs_lake = pytest.mark.skipif(not HAS_LAKE, reason="needs receipts[lake]: make install")

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


def test_without_the_extension_one_line_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on an install without the lake extra: no extension wheel to import, and nothing in
    DuckDB's own extension folder (under $HOME)."""
    import_module = importlib.import_module

    def without_wheels(name: str, package: str | None = None) -> ModuleType:
        if name.startswith("duckdb_extension_"):
            raise ImportError(name)
        return import_module(name, package)

    monkeypatch.setattr(importlib, "import_module", without_wheels)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(WarehouseError, match=r"pip install 'receipts\[lake\]'"):
        Warehouse.open(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}", data_path=str(tmp_path))


def test_a_password_in_the_warehouse_url_is_never_shown() -> None:
    """The catalog connects with it; what is shown (messages, errors) has ``***`` in its
    place."""
    pg = parse("ducklake:postgres:dbname=r host=db password=s3cret user=u")
    assert pg.catalog_dsn == "dbname=r host=db password=s3cret user=u"
    assert pg.location == "ducklake:postgres:dbname=r host=db password=*** user=u"
    assert (
        without_password("dbname=r password='a b\\' c' host=db") == "dbname=r password=*** host=db"
    )
    assert (
        without_password('at "dbname=r password=pw": failed')
        == 'at "dbname=r password=***": failed'
    )
    assert without_password("postgresql://bob:pw@db:5432/r") == "postgresql://bob:***@db:5432/r"
    with pytest.raises(UsageError) as refused:
        parse("ducklake:mysql:password=s3cret")
    assert "s3cret" not in str(refused.value)


@needs_lake
def test_a_catalog_that_cannot_be_reached_is_named_without_its_password() -> None:
    """DuckDB's own error quotes the whole connection string, twice."""
    url = "ducklake:postgres:dbname=receipts_nosuchdb host=127.0.0.1 user=postgres password=pw9s3"
    with pytest.raises(WarehouseError) as failed:
        Warehouse.open(url, read_only=True)
    message = str(failed.value)
    assert "pw9s3" not in message and "password=***" in message


@needs_lake
def test_a_new_lake_needs_a_data_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--data-path DIR"):
        Warehouse.open(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}")


@needs_lake
def test_a_sqlite_catalog_is_read_on_the_transactions_own_connection(tmp_path: Path) -> None:
    """Scans of a SQLite catalog that open connections of their own beside the
    transaction's made a backfill's final commit fail with "database is locked" in a
    process with no other writer; the lake's connection turns them off."""
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    for read_only in (False, True):
        warehouse = Warehouse.open(lake, data_path=str(tmp_path / "data"), read_only=read_only)
        try:
            setting = (
                warehouse._connection_for_tests()
                .execute("SELECT current_setting('sqlite_disable_multithreaded_scans')")
                .fetchone()
            )
        finally:
            warehouse.close()
        assert setting == (True,)


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


@needs_lake
def test_maintain_tells_another_writers_rows_from_a_change_it_made(tmp_path: Path) -> None:
    """A lake has writers on other processes, and maintenance takes no corpus lock: a run
    committed between the digests before and after is reported as written meanwhile, and
    every other table is still compared (it was taken for a change maintenance made, with
    "restore from a backup")."""
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    manifest = write_manifest(tmp_path, MANIFEST.format(count=40, seed=0))
    made = cli("ingest", manifest, "--warehouse", lake, "--data-path", tmp_path / "d")
    assert made.exit_code == 0, made.stderr
    wrote: list[int] = []
    with Warehouse.open(lake) as other, Warehouse.open(lake) as wh:

        def progress(step: str, done: int, total: int | None) -> None:
            if step == "rows digested after" and not wrote:  # another writer commits a run
                run = start_run(other, "ingest", "beta", "h")
                finish_run(other, run.run_id, "ok", {}, [])
                wrote.append(run.run_id)

        report = maintain(wh, timedelta(days=7), progress)
        tables = len(table_digests(wh))
    assert wrote and report.written_meanwhile == ("runs",)
    assert report.tables_checked == tables - 1


def test_a_table_written_meanwhile_is_the_only_one_not_compared() -> None:
    before = {"runs": "a", "revisions": "b"}
    _check_unchanged(before, {"runs": "a2", "revisions": "b"}, {"runs"})
    with pytest.raises(IntegrityError, match="maintenance changed revisions"):
        _check_unchanged(before, {"runs": "a2", "revisions": "b2"}, {"runs"})


@needs_lake
def test_each_lake_connection_spills_to_a_directory_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two lake connections opened in one working directory spill to two directories of
    their own under the system's temporary directory, each removed when its connection
    closes. (DuckDB's default for them, ``.tmp`` in the working directory, is shared: two
    backfills started there read each other's spill files as their own.)"""
    import tempfile

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.chdir(tmp_path)
    url = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    first = Warehouse.open(url, data_path=str(tmp_path / "data"))
    second = Warehouse.open(url)
    assert_each_spills_apart(first, second, temporary, "receipts-lake-")
    assert list(temporary.iterdir()) == []
    assert not (tmp_path / ".tmp").exists()

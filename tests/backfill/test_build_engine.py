"""The build statements' own DuckDB database: what it reads, its limit, its spill directory."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tests.conftest import REPO
from warehouse.bulk.build_engine import BuildEngine
from warehouse.spill import remove_abandoned


def test_a_statement_reads_the_table_it_is_given_under_its_name(tmp_path: Path) -> None:
    engine = BuildEngine("64MB", tmp_path)
    try:
        table = pa.table({"n": [3, 1, 2], "s": ["c", "a", "b"]})
        out = engine.run("SELECT s FROM _lines WHERE n > 1 ORDER BY n", table, "_lines")
        assert out.column("s").to_pylist() == ["b", "c"]
        # The table is registered for that statement only.
        with pytest.raises(duckdb.CatalogException):
            engine.run("SELECT * FROM _lines", pa.table({"x": [1]}), "_other")
    finally:
        engine.close()


def test_it_is_a_database_of_its_own_with_its_own_limit(tmp_path: Path) -> None:
    warehouse = duckdb.connect(str(tmp_path / "w.duckdb"))
    warehouse.execute("CREATE TABLE revisions (doc_id VARCHAR)")
    engine = BuildEngine("96MB", tmp_path)
    try:
        one = pa.table({"x": [1]})
        limit = engine.run("SELECT current_setting('memory_limit') AS m FROM _t", one, "_t")
        assert limit.column("m")[0].as_py().startswith("91.")  # 96 MB is 91.5 MiB
        with pytest.raises(duckdb.CatalogException):
            engine.run("SELECT * FROM revisions", one, "_t")
    finally:
        engine.close()
        warehouse.close()


def test_its_spill_directory_is_made_at_its_first_statement_and_removed_at_close(
    tmp_path: Path,
) -> None:
    engine = BuildEngine("64MB", tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing until it is used
    spill = (
        engine.run(
            "SELECT current_setting('temp_directory') AS d FROM _t", pa.table({"x": [1]}), "_t"
        )
        .column("d")[0]
        .as_py()
    )
    made = list(tmp_path.iterdir())
    assert len(made) == 1 and made[0].name.startswith("receipts-build-")
    assert Path(spill) == made[0]
    engine.close()
    assert list(tmp_path.iterdir()) == []
    engine.close()  # closing twice is harmless


def test_a_missing_spill_parent_is_made_and_removed_at_close_when_nothing_else_is_in_it(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "w.duckdb.tmp"
    engine = BuildEngine("64MB", parent)
    assert _spill_of(engine).parent == parent
    engine.close()
    assert not parent.exists()

    # Something else spilled there meanwhile (the warehouse's own files): it stays.
    engine = BuildEngine("64MB", parent)
    _spill_of(engine)
    (parent / "duckdb_temp_storage-0.tmp").write_bytes(b"x")
    engine.close()
    assert [p.name for p in parent.iterdir()] == ["duckdb_temp_storage-0.tmp"]


def test_a_spill_parent_that_was_there_is_left(tmp_path: Path) -> None:
    parent = tmp_path / "there"
    parent.mkdir()
    engine = BuildEngine("64MB", parent)
    _spill_of(engine)
    engine.close()
    assert parent.is_dir() and list(parent.iterdir()) == []


def _spill_of(engine: BuildEngine) -> Path:
    one = pa.table({"x": [1]})
    out = engine.run("SELECT current_setting('temp_directory') AS d FROM _t", one, "_t")
    return Path(out.column("d")[0].as_py())


_KILLED_OWNER = """
import os, signal, sys
from pathlib import Path
import pyarrow as pa
from warehouse.bulk.build_engine import BuildEngine
engine = BuildEngine("64MB", Path(sys.argv[1]))
engine.run("SELECT 1 AS x FROM _t", pa.table({"x": [1]}), "_t")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_spill_directory_left_by_a_killed_owner_goes_with_the_next_engine(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_OWNER, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    (left,) = tmp_path.iterdir()
    assert left.name.startswith("receipts-build-")

    engine = BuildEngine("64MB", tmp_path)
    try:
        mine = _spill_of(engine)
        assert list(tmp_path.iterdir()) == [mine]
    finally:
        engine.close()


def test_a_live_engine_s_directory_and_one_not_yet_owned_are_left_alone(tmp_path: Path) -> None:
    unowned = tmp_path / "receipts-build-starting"
    unowned.mkdir()
    first, second = BuildEngine("64MB", tmp_path), BuildEngine("64MB", tmp_path)
    try:
        theirs = _spill_of(first)
        mine = _spill_of(second)
        assert sorted(tmp_path.iterdir()) == sorted([unowned, theirs, mine])
        assert remove_abandoned(tmp_path, "receipts-build-") == []
        second.close()
        first.close()
        assert list(tmp_path.iterdir()) == [unowned]
    finally:
        first.close()
        second.close()

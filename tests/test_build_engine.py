"""The build statements' own DuckDB database: what it reads, its limit, its spill directory."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from warehouse.build_engine import BuildEngine


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

"""A backfill into a DuckDB file leaves its revisions' log entries unstored (their leaf hashes
are stored, and readers rebuild the bytes from the rows); a lake stores every entry, so
copying such a file into a lake stores them rebuilt, and the copy checks out both ways."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fakes.nhtsa import cmpl_row, write_zip
from tests.conftest import cli
from warehouse.digests import table_digests
from warehouse.store import Warehouse
from warehouse.tlog import entries, store

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None,
    reason="needs receipts[lake]: make install",
)


def _sql(location: str, statement: str) -> list[tuple[object, ...]]:
    with Warehouse.open(location) as wh:
        return wh._connection_for_tests().execute(statement).fetchall()


@pytest.fixture
def backfilled(tmp_path: Path) -> str:
    """A DuckDB file holding a backfill of four complaints (one of two rows)."""
    rows = [cmpl_row(11999000 + n, n + 1) for n in range(4)] + [cmpl_row(11999001, 9)]
    flat = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", rows)
    location = str(tmp_path / "w.duckdb")
    done = cli("backfill", "nhtsa", "--file", flat, "--kind", "complaints",
               "--warehouse", location)  # fmt: skip
    assert done.exit_code == 0, done.stderr
    return location


def test_a_backfilled_files_entries_are_rebuilt_from_their_rows(backfilled: str) -> None:
    assert _sql(backfilled, "SELECT count(entry), count(*) FROM tlog_entries") == [(0, 4)]
    rebuilt = _sql(backfilled, f"SELECT entry FROM {store.entries_sql()} ORDER BY idx")
    assert [entries.parse(bytes(e)).get("kind") for (e,) in rebuilt] == ["revision"] * 4  # type: ignore[arg-type]
    assert cli("log", "verify", "--warehouse", backfilled).exit_code == 0
    doc = str(_sql(backfilled, "SELECT min(doc_id) FROM revisions")[0][0])
    _sql(backfilled, f"UPDATE revisions SET source_url = 'https://forged.example/' "
         f"WHERE doc_id = '{doc}'")  # fmt: skip
    logged = cli("log", "verify", "--json", "--warehouse", backfilled)
    assert logged.exit_code == 1
    [problem] = json.loads(logged.stdout)["problems"]
    assert problem["doc_id"] == doc and "the row was rewritten" in problem["message"]


def test_a_copy_into_a_lake_stores_the_entries_rebuilt_and_copies_back(
    backfilled: str, tmp_path: Path
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    copied = cli("copy", "--warehouse", backfilled, "--to", lake,
                 "--to-data-path", tmp_path / "data")  # fmt: skip
    assert copied.exit_code == 0, copied.stderr
    in_file = _sql(backfilled, f"SELECT idx, entry FROM {store.entries_sql()} ORDER BY idx")
    assert _sql(lake, "SELECT idx, entry FROM tlog_entries ORDER BY idx") == in_file
    assert cli("log", "verify", "--warehouse", lake).exit_code == 0
    back = str(tmp_path / "back.duckdb")
    again = cli("copy", "--warehouse", lake, "--to", back)
    assert again.exit_code == 0, again.stderr
    with Warehouse.open(lake) as source, Warehouse.open(back) as copy:
        assert table_digests(source) == table_digests(copy)
    assert cli("log", "verify", "--warehouse", back).exit_code == 0


def test_a_copy_refuses_entries_whose_rows_are_gone_before_writing(
    backfilled: str, tmp_path: Path
) -> None:
    _sql(backfilled, "DELETE FROM revisions WHERE doc_id = (SELECT min(doc_id) FROM revisions)")
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    copied = cli("copy", "--warehouse", backfilled, "--to", lake,
                 "--to-data-path", tmp_path / "data")  # fmt: skip
    assert copied.exit_code == 1
    assert "1 log entries" in copied.stderr and "cannot be rebuilt" in copied.stderr
    assert not list((tmp_path / "data").rglob("*.parquet"))


def test_the_entries_read_a_range_at_a_time_are_the_entries_read_whole(backfilled: str) -> None:
    """Copies and digests read the log's entries a range of indexes at a time (whole, the
    rebuilt entries of a large log ran out of memory): the ranges hold every entry once."""
    columns = "idx, kind, doc_id, revision, push_id, entry"
    whole = _sql(backfilled, f"SELECT {columns} FROM {store.entries_sql()} ORDER BY idx")
    with Warehouse.open(backfilled) as wh:
        con = wh._connection_for_tests()
        ranges = store.entry_ranges_sql(con, step=3)
        assert len(ranges) == 2
        read = [
            row
            for item in ranges
            for row in con.execute(f"SELECT {columns} FROM {item}").fetchall()
        ]
    assert sorted(read) == whole and len(whole) == 4

"""A backfill's second pass on a lake reads the plan's lines on a connection whose default
catalog is its scratch database, not the lake: on a lake, each statement of a connection
whose default is the lake first reads the catalog's latest snapshot, and on a SQLite catalog
that read, beside the commit of the committing thread, failed with "database is locked"
(the read or the commit; one backfill in six into a new lake)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fakes.nhtsa import cmpl_row
from sources.nhtsa.flatfile.layouts import LAYOUTS
from sources.nhtsa.flatfile.lines import checked_table
from sources.nhtsa.flatfile.rows import RowChecker, VehicleFilter
from sources.nhtsa.flatfile.spec import flat_spec
from warehouse.bulk.engine import FlatBulk
from warehouse.bulk.plan_sql import SCRATCH
from warehouse.store import Warehouse

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("duckdb_extension_ducklake") is None,
    reason="needs receipts[lake]: make install",
)


def test_the_build_reads_its_lines_outside_the_lake(tmp_path: Path) -> None:
    cmpl = LAYOUTS["complaints"]
    data = "\n".join("\t".join(cmpl_row(11999000 + n, n + 1)) for n in range(3))
    lake = f"ducklake:sqlite:{tmp_path / 'c.sqlite'}"
    with Warehouse.open(lake, data_path=str(tmp_path / "data")) as wh:
        bulk = FlatBulk(wh, flat_spec(cmpl, VehicleFilter()), RowChecker(cmpl, VehicleFilter()))
        try:
            bulk.check(checked_table(1, data.encode("iso-8859-1")))
            build = bulk._scratch_con
            assert build.execute("SELECT current_database()").fetchall() == [(SCRATCH,)]
            assert build.execute(f"SELECT count(*) FROM {SCRATCH}.rows").fetchall() == [(3,)]
            # the warehouse's own connection still defaults to the lake
            assert wh._scalar("SELECT current_database()") == "lake"
        finally:
            bulk.close()

"""Moving a warehouse between backends (a DuckDB file into a DuckLake and back), verified by
a digest of every table."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import orjson

from warehouse.digests import dump_tables, row_counts
from warehouse.errors import IntegrityError, UsageError
from warehouse.store import Warehouse


def table_digests(warehouse: Warehouse) -> dict[str, str]:
    """SHA-256 of every table's rows (sorted, as plain JSON values), by table."""
    return {
        table: hashlib.sha256(orjson.dumps(rows)).hexdigest()
        for table, rows in dump_tables(warehouse).items()
    }


@dataclass(frozen=True)
class CopyReport:
    source: str
    destination: str
    rows: dict[str, int]
    digests: dict[str, str]


def copy_warehouse(source: Warehouse, destination: Warehouse) -> CopyReport:
    """Copy every row of ``source`` into ``destination`` (opened with ``migrate=False``, a
    new warehouse) in one transaction, then check that every table of both has the same
    digest."""
    destination.create_schema()
    tables = [t.name for t in source.tables() if not t.view]
    theirs = {t.name for t in destination.tables() if not t.view}
    missing = [t for t in tables if t not in theirs]
    if missing:
        raise UsageError(f"{destination.location} has no table {', '.join(missing)}")
    with destination._transaction() as con:
        for table in tables:
            rows = source._con.sql(f'SELECT * FROM "{table}"').to_arrow_table()
            assert rows is not None
            columns = ", ".join(f'"{name}"' for name in rows.column_names)
            con.register("_copy_rows", rows)
            try:
                con.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM _copy_rows')
            finally:
                con.unregister("_copy_rows")
    before, after = table_digests(source), table_digests(destination)
    differ = sorted(t for t in before if before[t] != after.get(t))
    if differ:
        raise IntegrityError(
            f"the copy in {destination.location} differs from {source.location} in "
            f"{', '.join(differ)}; do not use it"
        )
    return CopyReport(source.location, destination.location, row_counts(source, tables), after)

"""What the warehouse holds, table by table: row counts, and every row as plain JSON values
so that two warehouses can be compared (or digested) without a database at hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from warehouse.errors import NotFound
from warehouse.store import Warehouse


def _known(warehouse: Warehouse, tables: Iterable[str], *, views: bool) -> list[str]:
    names = {t.name for t in warehouse.tables() if views or not t.view}
    wanted = list(tables)
    unknown = [t for t in wanted if t not in names]
    if unknown:
        raise NotFound(
            f"no table {', '.join(map(repr, unknown))} in {warehouse.location}; "
            f"tables: {', '.join(sorted(names))}"
        )
    return wanted


def row_counts(warehouse: Warehouse, tables: Iterable[str]) -> dict[str, int]:
    """The number of rows of each of ``tables`` (tables or views of the schema)."""
    return {
        table: int(warehouse._scalar(f'SELECT count(*) FROM "{table}"'))
        for table in _known(warehouse, tables, views=True)
    }


def plain(value: Any) -> Any:
    """A stored value as a JSON value: bytes as hex, times as ISO-8601, decimals as text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def dump_tables(
    warehouse: Warehouse, leave_out: Mapping[str, frozenset[str]] | None = None
) -> dict[str, list[list[Any]]]:
    """Every row of every table (not views), sorted, as plain JSON values in column order,
    without the columns ``leave_out`` names per table."""
    leave_out = leave_out or {}
    dump = {}
    for table in warehouse.tables():
        if table.view:
            continue
        skipped = leave_out.get(table.name, frozenset())
        listed = ", ".join(f'"{c.name}"' for c in table.columns if c.name not in skipped)
        rows = warehouse._con.execute(f'SELECT {listed} FROM "{table.name}" ORDER BY ALL')
        dump[table.name] = [[plain(v) for v in row] for row in rows.fetchall()]
    return dump

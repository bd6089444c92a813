"""What the warehouse holds, table by table: row counts; a digest of each table's rows, read
as a stream (two warehouses, or one before and after maintenance, compare by digest); and
every row as plain JSON values so that two small warehouses can be compared without a
database at hand."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import orjson

from warehouse.errors import NotFound
from warehouse.store import Warehouse
from warehouse.tlog import store as tlog_store


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


# Rows read from DuckDB at a time while a table is digested: the digest's memory is this
# many rows and DuckDB's buffers, whatever the table's size.
DIGEST_ROWS = 4_096
_DIGEST_MODULUS = 1 << 256

# ``progress(step, done, total)``: how far a long step is (rows digested, snapshots hashed).
Progress = Callable[[str, int, int | None], None]


def _json_fallback(value: Any) -> str:
    """What orjson does not write itself, as :func:`plain` writes it."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"no digest form for {type(value).__name__}")


def table_digest(
    warehouse: Warehouse, table: str, read: Callable[[int], None] | None = None
) -> str:
    """A digest of ``table``'s rows in any order: the sum, modulo 2**256, of the SHA-256 of
    each row as a JSON array of its values (bytes as hex, times as ISO 8601, decimals as
    text), as 64 hex digits. The same rows give the same digest whatever order a backend
    reads them in, so the table is read as a stream and never sorted (sorting a table of
    bodies needed more than the warehouse's memory limit, and held every row at once). A
    check against accidental change: a sum of hashes is no defence against rows crafted to
    cancel out. ``read(n)`` hears of every ``n`` rows digested. The log's entries are
    digested as they read (:func:`rows_read`)."""
    columns = next((t.columns for t in warehouse.tables() if t.name == table), None)
    if columns is None:
        raise NotFound(f"no table {table!r} in {warehouse.location}")
    return _digest(warehouse, table, [c.name for c in columns], read)


def rows_read(warehouse: Warehouse, table: str) -> list[str]:
    """The FROM items a table's rows are read from to be digested: the table, but for the
    log's entries, the entries as they read (stored, or rebuilt from their rows: a DuckDB
    file leaves an ingest's and a backfill's unstored, a lake stores them; see
    :func:`warehouse.tlog.store.append`), a range at a time
    (:func:`warehouse.tlog.store.entry_ranges_sql`), so that a copy between the two digests
    the same."""
    if table == tlog_store.ENTRIES:
        return tlog_store.entry_ranges_sql(warehouse._con)
    return [f'"{table}"']


def _digest(
    warehouse: Warehouse, table: str, columns: list[str], read: Callable[[int], None] | None
) -> str:
    listed = ", ".join(f'"{name}"' for name in columns)
    sha256, dumps, options = hashlib.sha256, orjson.dumps, orjson.OPT_NON_STR_KEYS
    total = 0
    for source in rows_read(warehouse, table):
        result = warehouse._con.execute(f"SELECT {listed} FROM {source}")
        while rows := result.fetchmany(DIGEST_ROWS):
            for row in rows:
                digest = sha256(dumps(row, default=_json_fallback, option=options)).digest()
                total += int.from_bytes(digest, "big")
            if read is not None:
                read(len(rows))
    return f"{total % _DIGEST_MODULUS:064x}"


def table_digests(
    warehouse: Warehouse, progress: Progress | None = None, step: str = "tables digested"
) -> dict[str, str]:
    """:func:`table_digest` of every table (not views), by table; ``progress(step, rows
    done, rows in all)`` hears of every :data:`DIGEST_ROWS` rows."""
    tables = {t.name: [c.name for c in t.columns] for t in warehouse.tables() if not t.view}
    total = sum(row_counts(warehouse, tables).values()) if progress is not None else None
    done = 0
    if progress is not None:
        progress(step, done, total)

    def read(rows: int) -> None:
        nonlocal done
        done += rows
        if progress is not None:
            progress(step, done, total)

    return {name: _digest(warehouse, name, columns, read) for name, columns in tables.items()}


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

"""Where one document's rows are (migration 0013), so that reading a document reads its rows
and not every table's whole key column.

A DuckDB file keeps min/max statistics of only the first 8 bytes of a text column, and
every NHTSA complaint's doc_id starts ``nhtsa/co``: without help, ``WHERE doc_id = $d`` reads
the doc_id of every row of the table (measured on 2,000,000 rows: about 50 ms a statement on
a quiet machine, where ``WHERE rowid IN (...)`` takes about 2 ms). ``receipts index`` records
the rowid of every row of :data:`TABLES` under a number derived from its doc_id (or, for the
snapshot tables, its content hash), stored in that number's order so that a lookup reads
one row group.

A hint, never an answer. A reader asks :func:`source` for a FROM item of a table and keeps
its own ``WHERE doc_id = ...`` (or content hash) filter; the item holds the hinted rows and
every row added since the build (rowid at or past the table's end at the build, read
directly), so a document revised, added or restored later is read as it is now. Before a
hint is used, every hinted row is checked to hold its key (one query for all tables of a
key): a hint that does not hold (a warehouse copied with its rows in another order, a key
shared by two doc ids) gives the whole table, as without an index. The tables are
append-only (nothing but the search tables is ever deleted from), so rowids below a
table's end never move.

Only a DuckDB file has hints: a lake's rowids are DuckLake's row ids, and its files carry
their own statistics.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from warehouse.store import Warehouse

# Each table a document's page reads, and the column its rows are found by.
TABLES = {
    "documents": "doc_id",
    "revisions": "doc_id",
    "sightings": "doc_id",
    "tlog_entries": "doc_id",
    "snapshots": "content_hash",
    "snapshot_forms": "content_hash",
}
_KEY = "md5_number_upper"
# Each hinted row is read by a select of its own (``rowid = N``, in a UNION ALL): DuckDB
# 1.5 skips the row groups of a single rowid, but reads every row group for an IN or OR of
# two or more. Measured on 2,000,000 rows, where ``doc_id = ...`` took 22 ms: 1 row 2 ms,
# 4 rows 3 ms, 8 rows 6 ms, 16 rows 17 ms, 32 rows 21 ms. More hinted rows than this read
# the table instead.
MOST_ROWS = 12


def build(con: duckdb.DuckDBPyConnection) -> int:
    """Record where every row of :data:`TABLES` is (the caller has emptied the tables, in
    its transaction); returns how many rows were recorded."""
    present = _present(con)
    if not present:
        return 0
    selects = " UNION ALL ".join(
        f"SELECT {_KEY}({column}) AS key, '{table}' AS tbl, rowid AS row FROM {table} "
        f"WHERE {column} IS NOT NULL"
        for table, column in TABLES.items()
        if table in present
    )
    con.execute(f"INSERT INTO search_rows SELECT * FROM ({selects}) ORDER BY key, tbl, row")
    ends = " UNION ALL ".join(
        f"SELECT '{table}', coalesce(max(rowid) + 1, 0) FROM {table}"
        for table in TABLES
        if table in present
    )
    con.execute(f"INSERT INTO search_row_ends {ends}")
    [(count,)] = con.execute("SELECT count(*) FROM search_rows").fetchall()
    return int(count)


def _present(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = "
        "current_database() AND table_type = 'BASE TABLE'"
    ).fetchall()
    names = {str(name) for (name,) in rows}
    return set(TABLES) & names if "search_rows" in names else set()


@dataclass(frozen=True)
class _Hint:
    rows: tuple[int, ...]  # rowids below ``end`` holding the key
    end: int  # rows at or past it were added after the build


# Per open warehouse: each key's checked hints by table (None: no hint holds for the key).
_CACHE: weakref.WeakKeyDictionary[Warehouse, dict[str, dict[str, _Hint] | None]] = (
    weakref.WeakKeyDictionary()
)


def source(warehouse: Warehouse, table: str, keys: str | Iterable[str]) -> str:
    """A FROM item for ``table`` holding at least every row whose key column
    (:data:`TABLES`) is one of ``keys``: their hinted rows and the rows added since the
    build; the table itself unless every key has a hint that holds. The caller still
    filters by its keys."""
    wanted = [keys] if isinstance(keys, str) else list(keys)
    found = hints(warehouse, wanted)
    parts = [(found.get(k) or {}).get(table) for k in wanted]
    if not parts or any(p is None for p in parts):
        return table
    tail = f"SELECT * FROM {table} WHERE rowid >= {min(p.end for p in parts if p)}"
    rows = sorted({r for p in parts if p for r in p.rows})
    if len(rows) > MOST_ROWS:
        return table
    selects = [f"SELECT * FROM {table} WHERE rowid = {row}" for row in rows]
    return f"({' UNION ALL '.join([*selects, tail])})"


def hints(warehouse: Warehouse, keys: Iterable[str]) -> dict[str, dict[str, _Hint] | None]:
    """Each key's checked hints, by table (None for a key whose hints do not hold; empty
    when the warehouse has none)."""
    keys = list(keys)
    if warehouse.is_lake:
        return {}
    cache = _CACHE.setdefault(warehouse, {})
    wanted = [k for k in dict.fromkeys(keys) if k not in cache]
    if wanted:
        con = warehouse._con
        if not _has_hints(con):
            return {}
        ends = dict(con.execute("SELECT tbl, rows FROM search_row_ends").fetchall())
        for key in wanted:
            cache[key] = _checked(con, key, {str(t): int(n) for t, n in ends.items()})
    return {k: cache[k] for k in keys if k in cache}


def _has_hints(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether hints were recorded (never, in a warehouse whose schema predates migration
    0013: asked of the catalog, since a failed statement would end the caller's
    transaction)."""
    [(tables,)] = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'search_row_ends' "
        "AND database_name = current_database()"
    ).fetchall()
    if not tables:
        return False
    [(ends,)] = con.execute("SELECT count(*) FROM search_row_ends").fetchall()
    return bool(ends)


def _checked(
    con: duckdb.DuckDBPyConnection, key: str, ends: dict[str, int]
) -> dict[str, _Hint] | None:
    """The key's hinted rows by table, each table's checked to hold the key (one query);
    None if one does not."""
    [(number,)] = con.execute(f"SELECT {_KEY}($k)", {"k": key}).fetchall()
    rows: dict[str, list[int]] = {}
    for table, row in con.execute(
        f"SELECT tbl, row FROM search_rows WHERE key = {int(number)}"
    ).fetchall():
        rows.setdefault(str(table), []).append(int(row))
    # each hinted row read by itself (see MOST_ROWS), and whether it holds the key; a table
    # with more rows than a read takes through hints is not read through them
    checks = [
        f"SELECT '{table}', {TABLES[table]} = $k FROM {table} WHERE rowid = {row}"
        for table, found in rows.items()
        if table in TABLES and len(found) <= MOST_ROWS
        for row in found
    ]
    if checks:
        held: dict[str, int] = {}
        for table, holds in con.execute(" UNION ALL ".join(checks), {"k": key}).fetchall():
            held[str(table)] = held.get(str(table), 0) + (1 if holds else 0)
        if any(
            held.get(table, 0) != len(found)
            for table, found in rows.items()
            if table in TABLES and len(found) <= MOST_ROWS
        ):
            return None
    return {
        table: _Hint(tuple(sorted(rows.get(table, ()))), end)
        for table, end in ends.items()
        if table in TABLES
    }

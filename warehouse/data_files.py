"""Whether a lake's data path still holds the files its catalog lists, as it wrote them.

DuckLake reads a table through the catalog's list of its data files, and skips a file whose
recorded statistics (each column's least and greatest value) rule it out of a query. A file
deleted, truncated or altered in the data path, or two files swapped, can then go unseen by
a query that reads everything and still answer others wrongly. So each file the catalog
lists now is read whole, from the data path, and compared with what the catalog recorded
of it: its size in bytes, its row count, and the least and greatest value of each text and
integer column. Nothing is compared for a DuckDB file (it has no data files).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import duckdb

from warehouse.backends import LAKE_ALIAS
from warehouse.sql_literal import string as _quote
from warehouse.store import Warehouse

# Where DuckDB attaches a lake's catalog tables (DuckLake's specification names them).
_META = f"__ducklake_metadata_{LAKE_ALIAS}"
# Column types whose recorded least and greatest values read back as DuckDB prints them.
_COMPARED_TYPES = ("varchar", "int8", "int16", "int32", "int64", "uint32", "uint64")


class DataFile(NamedTuple):
    data_file_id: int
    table: str
    path: str
    size: int
    rows: int


def listed_files(warehouse: Warehouse) -> list[DataFile]:
    """The data files of every table as of the catalog's latest snapshot, full paths."""
    rows = warehouse._con.execute(
        f"""
        SELECT f.data_file_id, t.table_name,
               CASE WHEN NOT f.path_is_relative THEN f.path
                    WHEN NOT t.path_is_relative THEN t.path || f.path
                    WHEN NOT s.path_is_relative THEN s.path || t.path || f.path
                    ELSE (SELECT value FROM {_META}.ducklake_metadata
                          WHERE key = 'data_path' AND scope IS NULL)
                         || s.path || t.path || f.path END,
               f.file_size_bytes, f.record_count
        FROM {_META}.ducklake_data_file f
        JOIN {_META}.ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL
        JOIN {_META}.ducklake_schema s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL
        WHERE f.end_snapshot IS NULL
        ORDER BY t.table_name, f.data_file_id
        """
    ).fetchall()
    return [DataFile(int(i), str(t), str(p), int(s), int(n)) for i, t, p, s, n in rows]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _recorded_bounds(warehouse: Warehouse, file: DataFile) -> dict[int, tuple[Any, Any]]:
    """The least and greatest value the catalog recorded for each compared column of the
    file, by column id (a Parquet file's field id)."""
    types = ", ".join(_quote(t) for t in _COMPARED_TYPES)
    rows = warehouse._con.execute(
        f"""
        SELECT s.column_id, s.min_value, s.max_value
        FROM {_META}.ducklake_file_column_stats s
        JOIN {_META}.ducklake_column c ON c.column_id = s.column_id AND c.table_id = s.table_id
             AND c.end_snapshot IS NULL AND c.column_type IN ({types})
        WHERE s.data_file_id = $id AND s.min_value IS NOT NULL
        """,
        {"id": file.data_file_id},
    ).fetchall()
    return {int(c): (lo, hi) for c, lo, hi in rows}


def _problem(file: DataFile, message: str) -> dict[str, Any]:
    return {
        "check": "data file",
        "doc_id": None,
        "revision": None,
        "table": file.table,
        "path": file.path,
        "message": f"table {file.table}'s data file {file.path} {message}",
    }


def _file_problem(warehouse: Warehouse, file: DataFile) -> dict[str, Any] | None:
    """What is wrong with one data file, or None."""
    con = warehouse._con
    path = _quote(file.path)
    try:
        size = con.execute(f"SELECT size FROM read_blob({path})").fetchall()
        if not size:
            return _problem(file, "is missing: the lake's data path was damaged")
        if int(size[0][0]) != file.size:
            return _problem(
                file,
                f"holds {size[0][0]} bytes where the catalog recorded {file.size}: it was "
                "truncated, altered or replaced",
            )
        fields = con.execute(
            f"SELECT name, field_id FROM parquet_schema({path}) WHERE field_id IS NOT NULL"
        ).fetchall()
        bounds = _recorded_bounds(warehouse, file)
        names = {int(f): str(n) for n, f in fields if int(f) in bounds}
        measures = ["count(*)", "count(hash(t))"] + [
            f"min(t.{_ident(n)})::VARCHAR, max(t.{_ident(n)})::VARCHAR" for n in names.values()
        ]
        row = con.execute(f"SELECT {', '.join(measures)} FROM read_parquet({path}) t").fetchone()
    except duckdb.OutOfMemoryException:
        raise  # not the file's fault: the run fails, naming the limit (never "altered")
    except duckdb.Error as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "no files found" in text.lower() or "no such file" in text.lower():
            return _problem(file, "is missing: the lake's data path was damaged")
        return _problem(file, f"cannot be read ({text}): it was truncated or altered")
    assert row is not None
    if int(row[0]) != file.rows:
        return _problem(
            file, f"holds {row[0]} rows where the catalog recorded {file.rows}: it was replaced"
        )
    for index, column in enumerate(names):
        found = (row[2 + 2 * index], row[3 + 2 * index])
        if tuple(map(str, found)) != tuple(map(str, bounds[column])):
            return _problem(
                file,
                f"holds {names[column]} values from {found[0]} to {found[1]} where the catalog "
                f"recorded {bounds[column][0]} to {bounds[column][1]}: it was replaced "
                "(by another of the lake's files?)",
            )
    return None


def check_data_files(
    warehouse: Warehouse, files: list[DataFile] | None = None
) -> Iterator[dict[str, Any]]:
    """A problem (``{"check": "data file", "table", "path", "message", …}``) for each data
    file (``files``, else every one the catalog lists) that is missing, unreadable or not
    the file the catalog recorded."""
    if not warehouse.is_lake:
        return
    for file in listed_files(warehouse) if files is None else files:
        problem = _file_problem(warehouse, file)
        if problem is not None:
            yield problem

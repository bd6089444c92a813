"""Ad-hoc questions: one SELECT statement against a warehouse, on a connection that cannot
write.

Two locks, either one enough on its own:

- the statement is parsed by DuckDB first (``duckdb.extract_statements``) and anything but a
  single SELECT (``WITH``, ``FROM``-first, ``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``
  are SELECTs too) is refused before it runs: :class:`QueryRefused`, a usage error;
- the connection itself is read-only: the warehouse (a DuckDB file or a DuckLake catalog) is
  attached ``READ_ONLY``, and file-system access is switched off and the configuration
  locked before the statement runs, so no ``ATTACH``, ``COPY ... TO``, ``EXPORT`` or file
  reader can reach the disk and no ``SET`` can switch it back on. A temporary table lives
  in the connection's memory and goes with it.

Rows are read :data:`warehouse.staged.STREAM_ROWS` at a time, so an answer of millions of
rows is printed as it comes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

from warehouse import backends
from warehouse.errors import QueryFailed, QueryRefused, UsageError
from warehouse.staged import fetched
from warehouse.store import Warehouse


@dataclass
class Answer:
    """The columns of a query's answer and its rows, read as they are iterated."""

    columns: list[str]
    rows: Iterator[tuple[Any, ...]]


def check_read_only(sql: str) -> None:
    """Refuse anything but one SELECT statement, naming what was given."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryFailed(f"the query does not parse: {_first_line(exc)}") from None
    if not statements:
        raise QueryRefused("the query is empty: give one SELECT statement")
    if len(statements) > 1:
        raise QueryRefused(
            f"the query holds {len(statements)} statements; give one SELECT statement"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefused(
            f"refusing a {kind.name} statement: receipts query runs SELECT statements only, "
            "on a read-only connection"
        )


# DuckDB's own databases of every connection: the in-memory ones (``memory``, ``temp``)
# hold nothing once the connection closes; ``system`` is the catalog of built-ins.
_CONNECTION_DATABASES = ("memory", "system", "temp")


def lock_down(warehouse: Warehouse) -> None:
    """Detach every writable database but the connection's own in-memory ones (a
    PostgreSQL catalog's lock connection, say), then switch file-system access off (but for
    a lake's own data path, where its rows are) and lock
    the configuration for the rest of the connection's life. Refuses a warehouse that is
    not attached read-only."""
    con = warehouse._con
    if not con.execute(
        "SELECT bool_and(readonly) FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()[0]:  # type: ignore[index]
        raise UsageError("a query needs a warehouse opened read-only")
    writable = con.execute(
        "SELECT database_name FROM duckdb_databases() WHERE NOT readonly AND NOT internal "
        f"AND database_name NOT IN {_CONNECTION_DATABASES}"
    ).fetchall()
    for (name,) in writable:
        con.execute(f'DETACH "{name}"')
    if warehouse.is_lake:
        # A lake's rows live in its data files: reading them stays allowed (only them).
        data_path = backends.lake_data_path(con)
        if data_path:
            con.execute("SET allowed_directories = $d", {"d": [data_path]})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def run_query(warehouse: Warehouse, sql: str, params: Mapping[str, Any] | None = None) -> Answer:
    """The answer to one SELECT statement on a read-only, locked-down connection (see the
    module docstring). ``warehouse`` must have been opened read-only."""
    check_read_only(sql)
    lock_down(warehouse)
    try:
        result = warehouse._con.execute(sql, dict(params) if params else None)
    except duckdb.Error as exc:
        raise QueryFailed(f"the query failed: {_first_line(exc)}") from None
    columns = [str(d[0]) for d in result.description or []]
    return Answer(columns, (row for rows in fetched(result) for row in rows))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

"""Asking the warehouse ad-hoc questions: ``query`` (one SELECT, read-only) and ``schema``
(what each table and column holds)."""

from __future__ import annotations

from typing import Any

import click

from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.cli.listing import emit, page, page_options, table_format_options
from warehouse.query import run_query
from warehouse.store import Warehouse
from warehouse.table_notes import TABLE_NOTES, column_notes


@click.command("query")
@click.argument("sql", metavar="SQL")
@warehouse_option
@page_options
@table_format_options
@handle_errors
def query(sql: str, warehouse: str, limit: int | None, offset: int, fmt: str | None) -> None:
    """Answer one SELECT statement (DuckDB SQL) from the warehouse, read-only, printed as a
    table (default), --json, --nl, --csv, --tsv or --markdown, row by row as it comes.

    Runs on a DuckDB file and on a DuckLake lake alike. Anything but one SELECT (INSERT,
    CREATE, COPY, ATTACH, SET, several statements) is refused with exit 2 before it runs;
    the connection itself is read-only, with no file-system access, so no statement can
    write. `receipts schema` lists the tables and what they hold.

    \b
    Examples:
      receipts query "SELECT source, count(*) AS documents FROM documents GROUP BY ALL"
      receipts query "FROM run_summary ORDER BY run_id DESC" --limit 5 --markdown
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        answer = run_query(wh, sql)
        columns = _unique(answer.columns)
        rows = (dict(zip(columns, row, strict=True)) for row in answer.rows)
        emit(page(rows, limit, offset), columns, fmt, empty="no rows")


def _unique(columns: list[str]) -> list[str]:
    """Column names made unique (``id``, ``id_2``), so every value of a row has a key."""
    seen: dict[str, int] = {}
    out = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


@click.command("schema")
@warehouse_option
@json_option
@handle_errors
def schema(warehouse: str, as_json: bool) -> None:
    """The warehouse's tables and views, each with what it holds, then one line per column
    (name, type, nullable, and its meaning where the migration that made it says).

    \b
    Example:
      receipts schema --json | jq '.[] | select(.name == "revisions")'
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        tables = wh.tables()
    notes = column_notes()
    described: list[dict[str, Any]] = [
        {
            "name": t.name,
            "view": t.view,
            "description": TABLE_NOTES.get(t.name),
            "columns": [
                {**c._asdict(), "description": notes.get((t.name, c.name))} for c in t.columns
            ],
        }
        for t in tables
    ]
    if as_json:
        emit_json(described)
        return
    for table in described:
        click.echo(f"{'view' if table['view'] else 'table'} {table['name']}")
        if table["description"]:
            click.echo(f"  {table['description']}")
        for column in table["columns"]:
            null = "" if column["nullable"] else " NOT NULL"
            note = f"  -- {column['description']}" if column["description"] else ""
            click.echo(f"    {column['name']} {column['data_type']}{null}{note}")

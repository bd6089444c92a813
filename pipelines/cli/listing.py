"""Listings as tables, JSON, NDJSON or CSV: one way for every command that lists rows.

Text tables show timestamps as ISO-8601 UTC to the second with ``Z`` and numbers with
thousands separators; ``--json`` / ``--nl`` keep full precision and plain numbers.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = ("table", "json", "nl", "csv")


def listing_options(func: F) -> F:
    """``--json``, ``--nl`` and ``--csv`` (default: an aligned table); sets ``fmt``."""
    options = [
        click.option("--csv", "fmt", flag_value="csv", help="Print CSV with a header row."),
        click.option("--nl", "fmt", flag_value="nl", help="Print one JSON object per line."),
        click.option("--json", "fmt", flag_value="json", help="Print one JSON array."),
    ]
    for option in options:
        func = option(func)
    return func


def text_value(value: Any) -> str:
    """How a value reads in a text table."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


def emit(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    fmt: str | None,
    *,
    empty: str = "nothing to list",
) -> None:
    fmt = fmt or "table"
    if fmt == "json":
        payload = [{c: json_value(r.get(c)) for c in columns} for r in rows]
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    elif fmt == "nl":
        for row in rows:
            line = {c: json_value(row.get(c)) for c in columns}
            click.echo(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else json_value(row.get(c)) for c in columns])
        click.echo(buffer.getvalue(), nl=False)
    elif not rows:
        click.echo(empty)
    else:
        table = Table(box=None, header_style="bold", pad_edge=False)
        for column in columns:
            numeric = any(isinstance(r.get(column), int | float) for r in rows)
            table.add_column(column, justify="right" if numeric else "left", no_wrap=True)
        for row in rows:
            table.add_row(*(text_value(row.get(c)) for c in columns))
        buffer = io.StringIO()
        width = Console().width if sys.stdout.isatty() else 1000
        Console(file=buffer, width=width, soft_wrap=True).print(table)
        click.echo("\n".join(line.rstrip() for line in buffer.getvalue().splitlines()))

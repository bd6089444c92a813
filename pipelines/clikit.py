"""Shared pieces of the command line: options, error handling, JSON output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pipelines.errors import EXIT_FAILURE, ReceiptsError
from sources.http import HttpError
from warehouse.errors import WarehouseError
from warehouse.ingest import MassRetireRefused
from warehouse.store import DEFAULT_WAREHOUSE, ENV_WAREHOUSE

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def handle_errors(func: F) -> F:
    """Turn known errors into one line on stderr and their exit code; no stack trace."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ReceiptsError as exc:
            click.echo(f"receipts: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (WarehouseError, MassRetireRefused, HttpError) as exc:
            click.echo(f"receipts: {exc}", err=True)
            sys.exit(EXIT_FAILURE)

    return wrapper  # type: ignore[return-value]


warehouse_option = click.option(
    "--warehouse",
    envvar=ENV_WAREHOUSE,
    default=DEFAULT_WAREHOUSE,
    show_default=True,
    help=f"DuckDB connection string of the warehouse (a file path). Env: {ENV_WAREHOUSE}.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")

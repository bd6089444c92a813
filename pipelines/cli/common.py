"""Shared pieces of the command line: options, error handling, JSON output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pipelines import USER_AGENT
from pipelines.errors import EXIT_FAILURE, ReceiptsError
from pipelines.ingest import IngestOptions, RunResult
from pipelines.manifest import Manifest, load_manifest
from sources.http import HttpError, HttpFactory
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


def ingest_options(func: F) -> F:
    """The options of every command that runs an ingest (``ingest``, ``refresh``)."""
    decorators = [
        click.option(
            "--only",
            multiple=True,
            metavar="SOURCE",
            help="Ingest only this source (repeatable), e.g. --only nhtsa.",
        ),
        click.option(
            "--allow-mass-retire",
            is_flag=True,
            help="Allow a run to retire more than half of a scope or of the corpus at once.",
        ),
        click.option(
            "--record",
            "record_dir",
            type=click.Path(path_type=Path, file_okay=False),
            help="Save every HTTP exchange under DIR as evidence of the fetch.",
        ),
        click.option(
            "--replay",
            "replay_dir",
            type=click.Path(path_type=Path, file_okay=False),
            help="Serve HTTP from a recorded session in DIR, offline; unrecorded requests fail.",
        ),
        click.option(
            "--batch-size", default=5_000, show_default=True, help="Records per transaction."
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def check_only(only: tuple[str, ...], manifest: Manifest) -> None:
    unknown = [s for s in only if s not in manifest.entries]
    if unknown:
        raise click.BadParameter(
            f"unknown source(s) {', '.join(unknown)}; valid: {', '.join(manifest.entries)}",
            param_hint="--only",
        )


def print_run(result: RunResult) -> None:
    """The human summary of an ingest run."""
    click.echo(f"run {result.run_id}: {result.status}")
    if result.resumes_run:
        click.echo(f"  completes interrupted run {result.resumes_run}")
    for source, counts in result.counts.items():
        listed = ", ".join(f"{k} {v}" for k, v in counts.items())
        click.echo(f"  {source}: {listed}")
    for warning in result.warnings:
        click.echo(f"  warning: {warning['source']}: {warning['entry']}: {warning['warning']}")
    for failure in result.failures:
        click.echo(f"  FAILED {failure['source']}: {failure['entry']}: {failure['reason']}")


def prepare_ingest(
    manifest_file: Path,
    only: tuple[str, ...],
    allow_mass_retire: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    batch_size: int,
) -> tuple[Manifest, HttpFactory, IngestOptions]:
    """What ``ingest`` and ``refresh`` build from the options of :func:`ingest_options`."""
    loaded = load_manifest(manifest_file)
    check_only(only, loaded)
    http = HttpFactory(user_agent=USER_AGENT, record_dir=record_dir, replay_dir=replay_dir)
    options = IngestOptions(
        only=list(only) or None, allow_mass_retire=allow_mass_retire, batch_size=batch_size
    )
    return loaded, http, options

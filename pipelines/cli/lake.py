"""Looking after the warehouse itself: ``migrate`` (bring its schema up to this version),
``maintain`` (compact a DuckLake) and ``copy`` (move a warehouse between a DuckDB file and a
DuckLake)."""

from __future__ import annotations

import sys
from datetime import timedelta

import click

from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, quiet, warehouse_option
from pipelines.progress import steps_for
from warehouse.backends import WarehouseURL
from warehouse.copy import copy_warehouse
from warehouse.maintain import maintain as maintain_warehouse
from warehouse.store import Warehouse


@click.command()
@warehouse_option
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: list the pending migrations and exit 1 if there are any.",
)
@json_option
@handle_errors
def migrate(warehouse: str, check: bool, as_json: bool) -> None:
    """Bring the warehouse's schema up to this version of receipts: apply each pending
    migration in a transaction of its own, in order. Read-only commands (ls, drift,
    verify, ...) refuse a warehouse that is behind; any writing command (ingest, refresh,
    backfill, maintain) migrates it first too. A warehouse whose schema is newer than this
    receipts is refused, read or written: upgrade receipts.

    Exit codes: 0 up to date or migrated; 1 migrations pending (with --check), or a schema
    this version cannot use.

    \b
    Examples:
      receipts migrate --check
      receipts migrate --json
    """
    with Warehouse.open(warehouse, read_only=check, migrate=not check) as wh:
        pending = wh.pending_migrations() if check else wh.migrated
        version = wh.schema_version()
    names = [f"{m.version:04d}_{m.name}" for m in pending]
    if as_json:
        key = "pending" if check else "applied"
        emit_json({"warehouse": wh.location, "schema_version": version, key: names})
    elif not names:
        click.echo(f"{wh.location}: schema version {version}, up to date")
    elif check:
        click.echo(f"{wh.location}: schema version {version}; pending: {', '.join(names)}")
    else:
        click.echo(f"{wh.location}: applied {', '.join(names)}; schema version {version}")
    if check:
        sys.exit(exits.for_check(not names))


@click.command()
@warehouse_option
@click.option(
    "--keep-days",
    type=click.FloatRange(min=0),
    default=7.0,
    show_default=True,
    help="Keep the lake's catalog snapshots of the last N days (time travel); older ones expire.",
)
@json_option
@handle_errors
def maintain(warehouse: str, keep_days: float, as_json: bool) -> None:
    """Compact a DuckLake warehouse: merge small data files, expire old catalog snapshots
    and delete the files nothing uses any more. Every table's digest is checked before and
    after: no row, and no revision, changes (a table another writer of the lake committed
    to meanwhile is named, not compared). On a DuckDB file: a checkpoint, with the same
    check. Digests read each table as a stream: memory stays bounded whatever its size.

    \b
    Example:
      receipts --warehouse ducklake:sqlite:lake.sqlite maintain --keep-days 30
    """
    progress = steps_for("maintain: ", quiet=as_json or quiet())
    try:
        with Warehouse.open(warehouse) as wh:
            report = maintain_warehouse(wh, timedelta(days=keep_days), progress)
    finally:
        progress.close()
    if as_json:
        emit_json(report.__dict__)
        return
    click.echo(
        f"{report.backend}: data files {report.data_files_before} -> {report.data_files_after}, "
        f"catalog snapshots {report.snapshots_before} -> {report.snapshots_after}; "
        f"{report.tables_checked} tables unchanged"
        + (
            f"; written by another writer meanwhile, not compared: "
            f"{', '.join(report.written_meanwhile)}"
            if report.written_meanwhile
            else ""
        )
    )


@click.command()
@warehouse_option
@click.option("--to", "to", required=True, help="The new warehouse: a file or a ducklake: URL.")
@click.option("--to-data-path", metavar="DIR", help="The data path of a new DuckLake destination.")
@json_option
@handle_errors
def copy(warehouse: str, to: str, to_data_path: str | None, as_json: bool) -> None:
    """Copy the warehouse into a new one (a DuckDB file into a DuckLake, or back) in one
    transaction, each table streamed in batches of at most 16 MB, then check that every
    table of both has the same digest.

    \b
    Example:
      receipts copy --to ducklake:sqlite:lake.sqlite --to-data-path lake-data/
    """
    progress = steps_for("copy: ", quiet=as_json or quiet())
    try:
        with (
            Warehouse.open(warehouse, read_only=True) as source,
            Warehouse.open(WarehouseURL(to, to_data_path), migrate=False) as destination,
        ):
            report = copy_warehouse(source, destination, progress)
    finally:
        progress.close()
    if as_json:
        emit_json(report.__dict__)
        return
    total = sum(report.rows.values())
    click.echo(
        f"copied {total:,} rows in {len(report.rows)} tables from {report.source} to "
        f"{report.destination}; every table's digest matches"
    )

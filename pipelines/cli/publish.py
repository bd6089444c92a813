"""``receipts publish`` and ``receipts pushes``: the command line over
``pipelines.publish.push``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pipelines import logline
from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    http_factory,
    http_options,
    json_option,
    quiet,
    warehouse_option,
)
from pipelines.cli.ledger import duration, json_lines, moment, seconds_between
from pipelines.cli.listing import emit, listing_options
from pipelines.cli.observing import (
    finished_at,
    observe_options,
    observe_run,
    started_at,
    with_observed,
)
from pipelines.manifest import load_manifest
from pipelines.observe.report import from_push
from pipelines.progress import steps_for
from pipelines.publish.push import PushResult, publish_manifest
from pipelines.publish.targets import ndjson_target_path
from pipelines.publish.writers import describe
from pipelines.visible import visible
from warehouse import pushes as ledger
from warehouse.store import Warehouse

SHOWN = 10

target_option = click.option(
    "--target",
    metavar="ndjson:PATH",
    help="Choose the NDJSON file target explicitly (same as --out PATH). Without it, Sanity "
    "when SANITY_PROJECT_ID, SANITY_DATASET and SANITY_TOKEN are set.",
)
PLAN_KEYS = ("create", "update", "unchanged", "orphan", "delete", "blocked")


def _listed(ids: list[str]) -> str:
    more = f" … and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def _receipt(before: Any, after: Any, touched: Any, others: Any = None) -> str:
    if after is None:
        return f"unrelated documents {before if before is not None else '?'} before"
    edited = f"; edited by others during the push {others}" if others else ""
    return f"unrelated documents before {before}, after {after}; touched by us {touched}{edited}"


def print_push(result: PushResult) -> None:
    counts = result.plan.counts()
    if result.dry_run:
        click.echo(f"dry run, nothing sent: {result.target}, namespace {result.namespace}")
    else:
        click.echo(
            f"push {result.push_id}: {result.status} — {result.target}, "
            f"namespace {result.namespace}"
        )
    click.echo(
        f"  plan: {counts['documents']:,} documents: {counts['create']:,} create, "
        f"{counts['update']:,} update, {counts['unchanged']:,} unchanged, "
        f"{counts['orphan']:,} orphan"
        + (f", {counts['blocked']:,} blocked" if counts["blocked"] else "")
    )
    if result.dry_run:
        for name in ("create", "update"):
            ids = getattr(result.plan, name)
            if ids:
                click.echo(f"  {name}: {_listed(ids)}")
    if result.plan.orphan:
        fate = "deleted" if result.plan.prune else "kept; --prune deletes them"
        click.echo(f"  orphan ({fate}): {_listed(result.plan.orphan)}")
    if not result.dry_run:
        click.echo(
            f"  applied {result.applied:,} mutation(s) in {len(result.transaction_ids):,} "
            "transaction(s)"
            + (f": {_listed(result.transaction_ids)}" if result.transaction_ids else "")
        )
    for item in result.plan.held:
        click.echo(visible(f"  held {item['id']}: {item['reason']}"))
    for item in result.plan.blocked:
        click.echo(visible(f"  blocked {item['id']}: {item['reason']}"))
    for item in result.conflicts:
        click.echo(visible(f"  conflict {item['id']}: {item['reason']}"))
    for notice in result.notices:
        click.echo(visible(f"  notice: {notice}"))
    if result.message and result.status != "conflict":
        label = "GUARD TRIPPED" if result.status == "guard-tripped" else "FAILED"
        event = "guard.tripped" if result.status == "guard-tripped" else "publish.failed"
        logline.emit(visible(f"  {label}: {result.message}"), event=event, level="error")
    click.echo(
        "receipt: "
        + _receipt(
            result.unrelated_before,
            result.unrelated_after,
            result.touched_by_us,
            result.edited_by_others,
        )
    )
    if result.written_by_others_count:
        found, total = result.written_by_others, result.written_by_others_count
        click.echo(visible(f"  {describe(found, total)}"))


@click.command()
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@warehouse_option
@click.option("--dry-run", is_flag=True, help="Print the plan; send nothing, record nothing.")
@click.option(
    "--prune",
    is_flag=True,
    help="Delete orphans: documents of the namespace the corpus no longer has.",
)
@click.option(
    "--allow-mass-prune",
    is_flag=True,
    help="Allow --prune to delete more than half of the namespace's documents in one push.",
)
@click.option(
    "--prune-versions",
    is_flag=True,
    help="With --prune, also delete an orphan that a Content Release or Scheduled Draft "
    "would bring back (or unpublish), together with its release versions. Without it such "
    "orphans are held and reported.",
)
@click.option(
    "--take-over",
    metavar="CORPUS",
    help="This corpus is CORPUS renamed: take over the namespace CORPUS publishes to the "
    "target (recorded with the push; a later push of CORPUS is refused).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write an NDJSON file (sanity dataset import format) to FILE instead of Sanity. "
    "Default when no SANITY_* variable is set: out/<corpus>.ndjson; with some set but "
    "not all, publish refuses (exit 2).",
)
@target_option
@http_options
@observe_options
@json_option
@handle_errors
def publish(
    manifest_file: Path,
    warehouse: str,
    dry_run: bool,
    prune: bool,
    allow_mass_prune: bool,
    prune_versions: bool,
    take_over: str | None,
    out: Path | None,
    target: str | None,
    record_dir: Path | None,
    replay_dir: Path | None,
    as_json: bool,
) -> None:
    """Publish the curated documents of MANIFEST to Sanity (or an NDJSON file).

    Plans create / update / unchanged / orphan against the target, sends only what changed,
    writing only the fields the pipeline owns, and prints the receipt: unrelated documents
    before, after, and touched by this push. Exit 0 ok, 1 a failure or a conflict, 2 bad
    usage, 4 the unrelated-document guard tripped.

    \b
    Examples:
      receipts publish manifests/cr-v-aeb.toml --dry-run
      receipts publish manifests/cr-v-aeb.toml --out out/cr-v-aeb.ndjson
    """
    if prune_versions and not prune:
        raise click.UsageError("--prune-versions goes with --prune")
    out = ndjson_target_path(target, out)
    loaded = load_manifest(manifest_file)
    http = http_factory(record_dir, replay_dir)
    progress = steps_for("publish: ", quiet=as_json or quiet())
    try:
        with Warehouse.open(warehouse, read_only=dry_run) as wh:
            result = publish_manifest(
                loaded,
                wh,
                dry_run=dry_run,
                prune=prune,
                allow_mass_prune=allow_mass_prune,
                prune_versions=prune_versions,
                out=out,
                http=http,
                progress=progress,
                take_over=take_over,
            )
    finally:
        progress.close()
        http.close()
    observed = (
        None
        if dry_run
        else observe_run(from_push(result, loaded.name, started_at(), finished_at()), loaded)
    )
    if as_json:
        emit_json(with_observed(result.as_json(), observed))
    else:
        print_push(result)
    sys.exit(exits.for_push(result))


PUSH_TEXT = ["push_id", "started_at", "duration", "status", "target", "namespace"]
PUSH_TEXT += [*PLAN_KEYS, "applied", "unrelated_before", "unrelated_after", "touched_by_us"]
PUSH_CSV = ["push_id", "manifest", "run_id", "target", "namespace", "status", "started_at"]
PUSH_CSV += ["finished_at", "duration_seconds", *PLAN_KEYS, "applied", "transaction_ids"]
PUSH_CSV += ["unrelated_before", "unrelated_after", "touched_by_us", "message"]


def _push_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **row,
        **{key: int(row["plan"].get(key, 0)) for key in PLAN_KEYS},
        "started_at": moment(row["started_at"]),
        "finished_at": moment(row["finished_at"]),
        "duration": duration(row["duration_seconds"]),
        "transaction_ids": " ".join(row["transaction_ids"]),
    }


@click.command()
@warehouse_option
@click.option(
    "--limit", type=click.IntRange(1), default=None, help="Show only the newest N pushes."
)
@listing_options
@handle_errors
def pushes(warehouse: str, limit: int | None, fmt: str | None) -> None:
    """The push ledger, newest first: when, how long, target, plan, applied mutations,
    transaction ids and the receipt (unrelated documents before, after, touched by us).

    \b
    Examples:
      receipts pushes --limit 5
      receipts pushes --nl | jq .status
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        rows = ledger.pushes(wh, limit)
        if fmt in ("json", "nl"):
            for row in rows:
                row["batches"] = ledger.batches(wh, row["push_id"])
    for row in rows:
        row["duration_seconds"] = seconds_between(row["started_at"], row["finished_at"])
    if fmt == "json":
        emit_json(rows)
        return
    if fmt == "nl":
        json_lines(rows)
        return
    emit(
        [_push_row(row) for row in rows],
        PUSH_CSV if fmt == "csv" else PUSH_TEXT,
        fmt,
        empty="no pushes yet",
    )
    if fmt is None:
        for row in rows:
            if row["message"]:
                click.echo(visible(f"push {row['push_id']}: {row['message']}"))

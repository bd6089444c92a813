"""``receipts refresh``: the scheduled job — ingest, publish, drift summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pipelines import logline
from pipelines.checks.claims import change_json
from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    ingest_options,
    json_option,
    prepare_ingest,
    print_run,
    quiet,
    warehouse_option,
)
from pipelines.cli.observing import (
    finished_at,
    observe_options,
    observe_run,
    started_at,
    with_observed,
)
from pipelines.cli.publish import print_push, target_option
from pipelines.observe.report import from_refresh
from pipelines.progress import reporter_for, steps_for
from pipelines.publish.targets import ndjson_target_path
from pipelines.refresh import RefreshResult, drift_summary, refresh_manifest
from pipelines.reports.wording import change_phrase
from pipelines.visible import visible
from warehouse.store import Warehouse

SHOWN = 20


def _change(doc: dict[str, Any]) -> str:
    """``revision 1 → revision 2 (abc… → def…)``, or ``revision 1 (abc…)`` for a new one."""
    new = f"revision {doc['new_revision']}"
    new_hash = "tombstone" if doc["new_hash"] is None else doc["new_hash"][:12]
    if doc["old_revision"] is None:
        return f"{new} ({new_hash})"
    old_hash = "tombstone" if doc["old_hash"] is None else doc["old_hash"][:12]
    return f"revision {doc['old_revision']} → {new} ({old_hash} → {new_hash})"


def print_refresh(result: RefreshResult) -> None:
    print_run(result.ingest)
    drift = result.target_drift
    if drift is not None:
        if not drift.found:
            click.echo(f"target drift ({drift.target}): none")
        else:
            click.echo(f"target drift ({drift.target}) — reported, nothing overwritten:")
            for label, ids in (
                ("edited in the target (owned fields changed)", drift.edited),
                ("written by someone else (fields we do not own)", drift.written),
                ("deleted in the target", drift.deleted),
                ("open draft (publishing it will replace our update)", drift.drafts),
                ("release version (publishing its release replaces ours)", drift.versions),
            ):
                if ids:
                    more = f" … and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
                    click.echo(f"  {label}: {', '.join(ids[:SHOWN])}{more}")
    if drift is not None and drift.unrecorded:
        click.echo(
            "  ours, committed by a push that did not record them (recorded now as "
            f"reconciled): {', '.join(drift.unrecorded[:SHOWN])}"
        )
    if result.push is not None:
        print_push(result.push)
    if result.publish_error is not None:
        logline.emit(
            visible(f"publish FAILED: {result.publish_error}"),
            event="publish.failed",
            level="error",
        )
    summary = drift_summary(result.drift)
    since = summary["since_run"]
    click.echo(
        f"drift since {'run ' + str(since) if since else 'the beginning'}: "
        + ("none" if not summary["found"] else "")
    )
    for source, counts in summary["counts"].items():
        listed = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        click.echo(f"  {source}: {listed}")
    for doc in summary["documents"]:
        click.echo(
            f"  {doc['outcome']:<8} {doc['doc_id']}: {_change(doc)}"
            + (" (left the corpus)" if doc["left_corpus"] else "")
        )
    if summary["omitted"]:
        click.echo(f"  … and {summary['omitted']:,} more (receipts drift MANIFEST for all)")
    print_metadata(summary)
    for doc in summary["unseen"]:
        click.echo(
            f"  {'unseen':<8} {doc['doc_id']}: unseen since run {doc['last_seen_run']} "
            f"(revision {doc['revision']}; not in this run's listing of {doc['scope']}, "
            "which is not provably complete)"
        )
    print_claims(result)


def print_metadata(summary: dict[str, Any]) -> None:
    """The documents changed in metadata fields only: listed apart, not drift."""
    counts = summary["metadata_counts"]
    if not counts:
        return
    listed = ", ".join(f"{source} {n:,}" for source, n in counts.items())
    click.echo(f"  changed in metadata only (not drift): {listed}")
    for doc in summary["metadata_documents"]:
        fields = ", ".join(doc["change"]["metadata_fields"])
        click.echo(f"  {'metadata':<8} {doc['doc_id']}: {_change(doc)}: {fields}")
    if summary["metadata_omitted"]:
        more = summary["metadata_omitted"]
        click.echo(f"  … and {more:,} more metadata-only (receipts drift MANIFEST for all)")


def print_claims(result: RefreshResult) -> None:
    """The claims re-checked after the run: counts, and the claims whose status changed."""
    if result.claims_error is not None:
        logline.emit(result.claims_error, event="claims.failed", level="error")
    check = result.claims
    if check is None:
        return
    counts = ", ".join(f"{n} {status}" for status, n in check.counts.items() if n)
    click.echo(f"claims: {counts or 'none'}; changed in this run: {len(check.changed)}")
    for change in check.changed:
        click.echo(f"  {change_phrase(change_json(change))}")
    for bad in check.bad:
        click.echo(f"  BAD ROW {bad.origin}: {bad.problem}")


@click.command()
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@warehouse_option
@ingest_options
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Publish to this NDJSON file instead of Sanity (default without any SANITY_* "
    "setting: out/<corpus>.ndjson; with some set but not all, refresh refuses, exit 2).",
)
@target_option
@click.option("--prune", is_flag=True, help="Delete orphans in the namespace after publishing.")
@click.option("--allow-mass-prune", is_flag=True, help="Allow --prune to delete over half.")
@click.option(
    "--prune-versions",
    is_flag=True,
    help="With --prune, also delete orphans a Content Release would bring back, with their "
    "release versions (without it they are held and reported).",
)
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 3 when the run found upstream drift or target drift, or changed the status "
    "of a claim of [claims]. A change of a source's metadata fields only (a Forem author's "
    "profile) is listed apart and is not drift.",
)
@observe_options
@json_option
@handle_errors
def refresh(
    manifest_file: Path,
    warehouse: str,
    only: tuple[str, ...],
    allow_mass_retire: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    batch_size: int,
    out: Path | None,
    target: str | None,
    prune: bool,
    allow_mass_prune: bool,
    prune_versions: bool,
    fail_on_drift: bool,
    as_json: bool,
) -> None:
    """Ingest every entry of MANIFEST, publish the corpus, and print the drift of this run.

    The job to schedule (cron, systemd timer). Before pushing, the target is read for target
    drift — documents edited or deleted in the Studio since our last push, open drafts —
    which is reported and never overwritten by reporting.

    \b
    Exit codes:
      0  ok
      1  an entry failed (the others still committed) or the publish failed
      2  bad usage or an invalid manifest
      3  drift found (only with --fail-on-drift)
      4  the unrelated-document guard tripped during the push

    \b
    Examples:
      receipts refresh manifests/cr-v-aeb.toml --fail-on-drift
      receipts refresh manifests/cr-v-aeb.toml --json > out/refresh.json
    """
    if prune_versions and not prune:
        raise click.UsageError("--prune-versions goes with --prune")
    out = ndjson_target_path(target, out)
    loaded, http, options = prepare_ingest(
        manifest_file, only, allow_mass_retire, record_dir, replay_dir, batch_size
    )
    progress = steps_for("publish: ", quiet=as_json or quiet())
    with Warehouse.open(warehouse) as wh:
        try:
            result = refresh_manifest(
                loaded,
                wh,
                http=http,
                options=options,
                reporter=reporter_for(quiet=as_json or quiet()),
                out=out,
                prune=prune,
                allow_mass_prune=allow_mass_prune,
                prune_versions=prune_versions,
                progress=progress,
            )
        finally:
            progress.close()
            http.close()
        observed = observe_run(
            from_refresh(result, loaded.name, started_at(), finished_at(), http.retries_made),
            loaded,
            wh,
        )
    if as_json:
        emit_json(with_observed(result.as_json(), observed))
    else:
        print_refresh(result)
    sys.exit(exits.for_refresh(result, fail_on_drift))

"""Reading the ledger: ``runs``, ``history``, ``show`` and ``verify``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli import exits
from pipelines.cli.common import (
    emit_json,
    handle_errors,
    http_options,
    json_option,
    quiet,
    warehouse_option,
)
from pipelines.cli.hash_option import hash_option
from pipelines.cli.listing import emit, listing_options, on_terminal, page, page_options
from pipelines.progress import steps_for
from pipelines.visible import visible
from warehouse import history as revision_history
from warehouse import integrity, timestamps
from warehouse.store import Warehouse

if TYPE_CHECKING:
    from pipelines.checks.upstream_verify import UpstreamReport

OUTCOMES = ("new", "changed", "unchanged", "gone", "restored", "failed")


def moment(text: str | None) -> datetime | None:
    """A ledger timestamp (ISO-8601 text) as a datetime, for a listing to format."""
    return None if text is None else datetime.fromisoformat(text)


def seconds_between(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def duration(seconds: float | None) -> str | None:
    """``42s``, ``1m05s``, ``2h03m``: how long something took, to the second."""
    return timestamps.duration(seconds)


def json_lines(objects: list[dict[str, Any]]) -> None:
    """``--nl``: each object of the ``--json`` array on a line of its own."""
    for obj in objects:
        click.echo(json.dumps(obj, sort_keys=True, default=str, separators=(",", ":")))


# -- the ledger ---------------------------------------------------------------------------------
RUN_TEXT = ["run_id", "started_at", "duration", "command", "manifest", "status", *OUTCOMES]
RUN_CSV = ["run_id", "command", "manifest", "status", "resumes_run", "started_at", "finished_at"]
RUN_CSV += ["duration_seconds", *OUTCOMES, "pid", "host"]


def _run_row(run: dict[str, Any], fmt: str | None) -> dict[str, Any]:
    totals = dict.fromkeys(OUTCOMES, 0)
    for counts in run["counts"].values():
        for key in totals:
            totals[key] += int(counts.get(key, 0))
    status = run["status"]
    if fmt is None and run["resumes_run"]:
        status = f"{status} (completes run {run['resumes_run']})"
    return {
        **run,
        **totals,
        "status": status,
        "started_at": moment(run["started_at"]),
        "finished_at": moment(run["finished_at"]),
        "duration": duration(run["duration_seconds"]),
    }


@click.command()
@warehouse_option
@click.option("--limit", type=click.IntRange(1), default=None, help="Show only the newest N runs.")
@listing_options
@handle_errors
def runs(warehouse: str, limit: int | None, fmt: str | None) -> None:
    """The run ledger, newest first: when each run started and how long it took, its
    status (ok, failed, interrupted) and counts.

    \b
    Examples:
      receipts runs --limit 10
      receipts runs --csv > runs.csv
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        ledger = revision_history.runs(wh, limit)
    for run in ledger:
        run["duration_seconds"] = seconds_between(run["started_at"], run["finished_at"])
    if fmt == "json":
        emit_json(ledger)
    elif fmt == "nl":
        json_lines(ledger)
    else:
        rows = [_run_row(run, fmt) for run in ledger]
        emit(rows, RUN_CSV if fmt == "csv" else RUN_TEXT, fmt, empty="no runs yet")


HISTORY_TEXT = ["revision", "content_hash", "valid_from_run", "valid_from", "valid_until_run"]
HISTORY_TEXT += ["url", "commit"]
HISTORY_CSV = ["doc_id", "revision", "content_hash", "canonical_form", "tombstone"]
HISTORY_CSV += ["tombstone_reason", "reason"]
HISTORY_CSV += ["valid_from_run", "valid_from", "valid_until_run", "valid_until", "current"]
HISTORY_CSV += ["scope", "url", "commit", "source_format", "fetched_at", "etag", "last_modified"]
SEEN_TEXT = ["revision", "run_id", "fetched_at", "url", "commit"]


def _revision_row(doc_id: str, rev: dict[str, Any], fmt: str | None) -> dict[str, Any]:
    content = rev["content_hash"]
    if fmt is None and rev["tombstone"]:
        content = f"TOMBSTONE ({rev['tombstone_reason']})"
    elif fmt is None and rev["reason"]:  # a re-encoding: the same value in another form
        content = f"{content} ({rev['reason']})"
    return {
        **rev,
        **rev["provenance"],
        "doc_id": doc_id,
        "content_hash": content,
        "valid_from": moment(rev["valid_from"]),
        "valid_until": moment(rev["valid_until"]),
        "fetched_at": moment(rev["provenance"]["fetched_at"]),
    }


@click.command()
@click.argument("doc_id")
@warehouse_option
@page_options
@listing_options
@handle_errors
def history(doc_id: str, warehouse: str, limit: int | None, offset: int, fmt: str | None) -> None:
    """Every revision of DOC_ID: number, content hash, run and time it became valid, until
    which run, provenance (URL, commit), tombstones, and where its bytes were seen.
    --limit and --offset take a page of the revisions, oldest first.

    \b
    Examples:
      receipts history nhtsa/recall/22V999101
      receipts history nhtsa/recall/22V999101 --limit 5 --nl | jq .content_hash
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        revisions = list(page(revision_history.history(wh, doc_id), limit, offset))
    if fmt == "json":
        emit_json({"doc_id": doc_id, "revisions": revisions})
        return
    if fmt == "nl":
        json_lines([{"doc_id": doc_id, **rev} for rev in revisions])
        return
    rows = [_revision_row(doc_id, rev, fmt) for rev in revisions]
    if fmt == "csv":
        emit(rows, HISTORY_CSV, fmt)
        return
    click.echo(doc_id)
    emit(rows, HISTORY_TEXT, fmt)
    seen = [
        {**sighting, "revision": rev["revision"], "fetched_at": moment(sighting["fetched_at"])}
        for rev in revisions
        for sighting in rev["seen_at"]
    ]
    if seen:
        click.echo("\nseen")
        emit(seen, SEEN_TEXT, fmt)


@click.command()
@click.argument("doc_id")
@warehouse_option
@click.option("--revision", type=click.IntRange(1), help="Show this revision number.")
@hash_option("Show the revision whose content hash starts with H")
@handle_errors
def show(doc_id: str, warehouse: str, revision: int | None, content_hash: str | None) -> None:
    """Write the verbatim stored bytes of DOC_ID (current revision by default) to stdout.
    On a terminal a line end follows bytes that do not end with one (so the prompt starts on
    its own line); piped or redirected, the bytes are exactly those stored (their SHA-256 is
    the content hash).

    \b
    Examples:
      receipts show nhtsa/recall/22V999101
      receipts show nhtsa/recall/22V999101 --revision 1 > day-1.json
    """
    if revision is not None and content_hash is not None:
        raise click.UsageError("give --revision or --hash, not both")
    with Warehouse.open(warehouse, read_only=True) as wh:
        snap = revision_history.snapshot(wh, doc_id, revision=revision, content_hash=content_hash)
    out = sys.stdout.buffer
    out.write(snap.body)
    if on_terminal() and not snap.body.endswith(b"\n"):
        out.write(b"\n")
    out.flush()


@click.command()
@warehouse_option
@click.option(
    "--upstream",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[MANIFEST]",
    help="Also re-download each pinned GitHub file (of MANIFEST, or every one stored) and "
    "compare it with the stored digest.",
)
@http_options
@json_option
@handle_errors
def verify(
    warehouse: str,
    upstream: str | None,
    record_dir: Path | None,
    replay_dir: Path | None,
    as_json: bool,
) -> None:
    """Read every data file a lake's catalog lists and compare it with what the catalog
    recorded of it; recompute every stored snapshot's SHA-256 from its bytes, check each revision's
    snapshot, size and document against its provenance and that no revision is recorded
    twice (and, with --upstream, re-download pinned GitHub files); exit 1 naming each
    problem.

    \b
    Examples:
      receipts verify
      receipts verify --upstream manifests/hyphae-atlas.toml
    """

    if upstream is None and (record_dir or replay_dir):
        raise click.UsageError("--record and --replay go with --upstream")
    progress = steps_for("verify: ", quiet=as_json or quiet())
    try:
        with Warehouse.open(warehouse, read_only=True) as wh:
            result = integrity.verify(wh, progress)
            pinned: UpstreamReport | None = None
            if upstream is not None:
                # imported here: the GitHub source and the manifests it reads are not every
                # command's to load
                from pipelines.cli.pins import upstream_report

                pinned = upstream_report(
                    wh,
                    upstream or None,
                    record_dir=record_dir,
                    replay_dir=replay_dir,
                    progress=progress,
                )
    finally:
        progress.close()
    if as_json:
        payload = {
            "checked": result.checked,
            "data_files": result.data_files,
            "mismatches": result.mismatches,
            "problems": result.problems,
        }
        emit_json(payload if pinned is None else {**payload, "upstream": pinned.as_json()})
    else:
        if result.data_files is not None:
            click.echo(f"read {result.data_files:,} data files of the lake")
        click.echo(f"checked {result.checked:,} snapshots: {len(result.mismatches):,} mismatches")
        for m in result.mismatches:
            click.echo(f"  {m['content_hash']}: stored bytes hash to {m['actual']}")
        if result.problems:
            click.echo(f"{len(result.problems):,} problems:")
        for problem in result.problems:
            click.echo(visible(f"  {problem['message']}"))
        if pinned is not None:
            from pipelines.cli.pins import render_upstream

            click.echo(render_upstream(pinned))
    failed = not result.ok or (pinned is not None and not pinned.ok)
    sys.exit(exits.for_check(not failed))

"""Reading the ledger: ``runs``, ``history``, ``show`` and ``verify``."""

from __future__ import annotations

import sys

import click

from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.cli.pins import render_upstream, upstream_report
from warehouse import audit
from warehouse.store import Warehouse


# -- the ledger ---------------------------------------------------------------------------------
@click.command()
@warehouse_option
@click.option("--limit", type=int, default=None, help="Show only the newest N runs.")
@json_option
@handle_errors
def runs(warehouse: str, limit: int | None, as_json: bool) -> None:
    """The run ledger, newest first: status (ok, failed, unfinished) and counts."""
    with Warehouse.open(warehouse, read_only=True) as wh:
        ledger = audit.runs(wh, limit)
    if as_json:
        emit_json(ledger)
        return
    if not ledger:
        click.echo("no runs yet")
    for run in ledger:
        totals = {k: 0 for k in ("new", "changed", "unchanged", "gone", "restored", "failed")}
        for counts in run["counts"].values():
            for key in totals:
                totals[key] += int(counts.get(key, 0))
        status = run["status"]
        resumed = f" (completes run {run['resumes_run']})" if run["resumes_run"] else ""
        click.echo(
            f"run {run['run_id']:>4}  {run['started_at']}  {run['command']:<8} "
            f"{run['manifest'] or '-':<20} {status}{resumed}  "
            + " ".join(f"{k}={v}" for k, v in totals.items())
        )


@click.command()
@click.argument("doc_id")
@warehouse_option
@json_option
@handle_errors
def history(doc_id: str, warehouse: str, as_json: bool) -> None:
    """Every revision of DOC_ID: number, content hash, run and time it became valid,
    provenance, where its bytes were seen, and tombstones."""
    with Warehouse.open(warehouse, read_only=True) as wh:
        revisions = audit.history(wh, doc_id)
    if as_json:
        emit_json({"doc_id": doc_id, "revisions": revisions})
        return
    click.echo(doc_id)
    for rev in revisions:
        what = f"TOMBSTONE ({rev['tombstone_reason']})" if rev["tombstone"] else rev["content_hash"]
        until = f"until run {rev['valid_until_run']}" if rev["valid_until_run"] else "current"
        click.echo(
            f"  revision {rev['revision']}: {what}\n"
            f"    valid from run {rev['valid_from_run']} ({rev['valid_from']}), {until}"
        )
        prov = {k: v for k, v in rev["provenance"].items() if v}
        if prov:
            click.echo("    provenance: " + ", ".join(f"{k}={v}" for k, v in prov.items()))
        for seen in rev["seen_at"]:
            at = f" @ {seen['commit']}" if seen["commit"] else ""
            click.echo(f"    seen in run {seen['run_id']}: {seen['url']}{at}")


@click.command()
@click.argument("doc_id")
@warehouse_option
@click.option("--revision", type=int, help="Show this revision number.")
@click.option("--hash", "content_hash", help="Show the revision with this content hash (prefix).")
@handle_errors
def show(doc_id: str, warehouse: str, revision: int | None, content_hash: str | None) -> None:
    """Write the verbatim stored bytes of DOC_ID (current revision by default) to stdout."""
    if revision is not None and content_hash is not None:
        raise click.UsageError("give --revision or --hash, not both")
    with Warehouse.open(warehouse, read_only=True) as wh:
        snap = audit.snapshot(wh, doc_id, revision=revision, content_hash=content_hash)
    out = sys.stdout.buffer
    out.write(snap.body)
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
@json_option
@handle_errors
def verify(warehouse: str, upstream: str | None, as_json: bool) -> None:
    """Recompute every stored snapshot's SHA-256 from its bytes, check each revision's
    snapshot, size and document against its provenance and that no revision is recorded
    twice (and, with --upstream, re-download pinned GitHub files); exit 1 naming each
    problem."""

    with Warehouse.open(warehouse, read_only=True) as wh:
        result = audit.verify(wh)
        pinned = None if upstream is None else upstream_report(wh, upstream or None)
    if as_json:
        payload = {
            "checked": result.checked,
            "mismatches": result.mismatches,
            "problems": result.problems,
        }
        emit_json(payload if pinned is None else {**payload, "upstream": pinned.as_json()})
    else:
        click.echo(f"checked {result.checked} snapshots: {len(result.mismatches)} mismatches")
        for m in result.mismatches:
            click.echo(f"  {m['content_hash']}: stored bytes hash to {m['actual']}")
        if result.problems:
            click.echo(f"{len(result.problems)} revision problems:")
        for problem in result.problems:
            click.echo(f"  {problem['message']}")
        if pinned is not None:
            click.echo(render_upstream(pinned))
    failed = not result.ok or (pinned is not None and not pinned.ok)
    sys.exit(exits.for_check(not failed))


COMMANDS = [runs, history, show, verify]

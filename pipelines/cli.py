"""The ``receipts`` command line: a thin layer over the library.

Exit codes: 0 ok; 1 failure (an entry failed, a check found a mismatch); 2 bad usage or
manifest; 3 drift found (only with --fail-on-drift); 4 the unrelated-document guard tripped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipelines import __version__
from pipelines.clikit import (
    emit_json,
    handle_errors,
    ingest_options,
    json_option,
    prepare_ingest,
    print_run,
    warehouse_option,
)
from pipelines.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from pipelines.ingest import run_ingest
from pipelines.manifest import load_manifest
from pipelines.progress import reporter_for
from warehouse import audit
from warehouse.store import Warehouse


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="receipts")
def main() -> None:
    """receipts: evidence corpora with provable provenance.

    Pull public records into a DuckDB warehouse where every snapshot is hashed at import and
    every revision is kept, then publish curated documents without touching anything else.

    \b
    Exit codes:
      0  ok
      1  failure (an entry failed, a verification found a mismatch)
      2  bad usage or an invalid manifest
      3  drift found (only with --fail-on-drift)
      4  the unrelated-document guard tripped during a push
    """


# -- manifest ------------------------------------------------------------------------------
@main.group()
def manifest() -> None:
    """Work with manifests (closed-world corpus declarations)."""


@manifest.command("check")
@click.argument("file", type=click.Path(path_type=Path))
@json_option
@handle_errors
def manifest_check(file: Path, as_json: bool) -> None:
    """Validate FILE; on error print one message naming the entry and field (exit 2)."""
    loaded = load_manifest(file)
    counts = {source: len(items) for source, items in loaded.entries.items() if items}
    if as_json:
        emit_json(
            {
                "file": str(file),
                "valid": True,
                "corpus": loaded.corpus.name,
                "namespace": loaded.corpus.namespace,
                "entries": counts,
                "manifest_hash": loaded.content_hash,
            }
        )
        return
    listed = ", ".join(f"{n} {s}" for s, n in counts.items())
    click.echo(
        f"{file}: ok — corpus {loaded.corpus.name!r}, namespace {loaded.corpus.namespace!r}, "
        f"{listed}"
    )


# -- ingest --------------------------------------------------------------------------------
@main.command()
@click.argument("manifest_file", metavar="MANIFEST", type=click.Path(path_type=Path))
@warehouse_option
@ingest_options
@json_option
@handle_errors
def ingest(
    manifest_file: Path,
    warehouse: str,
    only: tuple[str, ...],
    allow_mass_retire: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    batch_size: int,
    as_json: bool,
) -> None:
    """Fetch every entry of MANIFEST into the warehouse and print the run summary.

    Exit 0 when every entry succeeded, 1 when any failed (the others still commit), 2 for a
    bad manifest or usage.
    """
    loaded, http, options = prepare_ingest(
        manifest_file, only, allow_mass_retire, record_dir, replay_dir, batch_size
    )
    with Warehouse.open(warehouse) as wh:
        try:
            result = run_ingest(
                loaded, wh, http=http, options=options, reporter=reporter_for(quiet=as_json)
            )
        finally:
            http.close()
    if as_json:
        emit_json(result.as_json())
    else:
        print_run(result)
    sys.exit(EXIT_OK if result.status == "ok" else EXIT_FAILURE)


# -- audit ---------------------------------------------------------------------------------
@main.command()
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


@main.command()
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


@main.command()
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


@main.command()
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
    """Recompute every stored snapshot's SHA-256 from its bytes (and, with --upstream,
    re-download pinned GitHub files); exit 1 on any mismatch."""
    from pipelines.cli_github import render_upstream, upstream_report

    with Warehouse.open(warehouse, read_only=True) as wh:
        result = audit.verify(wh)
        pinned = None if upstream is None else upstream_report(wh, upstream or None)
    if as_json:
        payload = {"checked": result.checked, "mismatches": result.mismatches}
        emit_json(payload if pinned is None else {**payload, "upstream": pinned.as_json()})
    else:
        click.echo(f"checked {result.checked} snapshots: {len(result.mismatches)} mismatches")
        for m in result.mismatches:
            click.echo(f"  {m['content_hash']}: stored bytes hash to {m['actual']}")
        if pinned is not None:
            click.echo(render_upstream(pinned))
    failed = bool(result.mismatches) or (pinned is not None and not pinned.ok)
    sys.exit(EXIT_FAILURE if failed else EXIT_OK)


# -- commands of other modules: one line each ---------------------------------------------
COMMAND_MODULES: list[str] = [
    "pipelines.cli_github",
    "pipelines.cli_publish",
    "pipelines.cli_audit",
    "pipelines.cli_refresh",
    "pipelines.cli_nhtsa",
]


def _register_commands() -> None:
    import importlib

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        for command in module.COMMANDS:
            main.add_command(command)


_register_commands()

__all__ = ["EXIT_USAGE", "main"]

if __name__ == "__main__":
    main()

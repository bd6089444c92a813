"""Claims commands: ``verify-claims`` and ``claims history``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipelines.checks.claims import STATUSES, check_claims
from pipelines.checks.claims_file import read_claims_file
from pipelines.checks.claims_source import manifest_claims
from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.cli.observing import finished_at, observe_options, observe_run, started_at
from pipelines.manifest import load_manifest
from pipelines.observe.report import from_claims
from pipelines.reports.formats import FORMATS, render
from warehouse import claims as ledger
from warehouse.errors import NotFound
from warehouse.store import Warehouse
from warehouse.timestamps import to_second, utc_iso


@click.command("verify-claims")
@click.argument(
    "manifest_file", metavar="[MANIFEST]", required=False, type=click.Path(path_type=Path)
)
@click.option(
    "--file",
    "claims_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Check the claims in this NDJSON or CSV file instead of a manifest's [claims].",
)
@warehouse_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Report format: text (default), json, md or html.",
)
@click.option("--fail-on-drift", is_flag=True, help="Exit 3 when any claim does not hold.")
@observe_options
@json_option
@handle_errors
def verify_claims(
    manifest_file: Path | None,
    claims_file: Path | None,
    warehouse: str,
    fmt: str | None,
    fail_on_drift: bool,
    as_json: bool,
) -> None:
    """Re-check every claim (a quote citing a revision of a document) against the warehouse,
    with the text rules of verify-quote, and record the check in the claims ledger.

    Claims come from MANIFEST's [claims] table (a file, or a GROQ query on the Sanity
    dataset) or from --file (NDJSON, or CSV with a header row; fields claim_id, doc_id,
    quote, and revision or content_hash). Each claim holds, is stale, misattributed,
    missing, gone, unseen or unknown (see the README).

    Exit 0 (3 with --fail-on-drift when any claim does not hold); 1 when some claim rows
    could not be read (the others are still checked and recorded); 2 for bad usage.

    \b
    Examples:
      receipts verify-claims --file demo/claims.ndjson
      receipts verify-claims manifests/cr-v-aeb.toml --format md --fail-on-drift
    """
    if (manifest_file is None) == (claims_file is None):
        raise click.UsageError("give a MANIFEST with a [claims] table, or --file, not both")
    if as_json and fmt not in (None, "json"):
        raise click.UsageError("--json is --format json; give one of them")
    fmt = "json" if as_json else (fmt or "text")
    corpus, loaded = None, None
    if manifest_file is not None:
        loaded = load_manifest(manifest_file)
        claims = manifest_claims(loaded)
        if claims is None:
            raise click.UsageError(f"{manifest_file} has no [claims] table; use --file")
        corpus = loaded.name
    else:
        assert claims_file is not None
        claims = read_claims_file(claims_file)
    with Warehouse.open(warehouse) as wh:
        result = check_claims(wh, claims, corpus=corpus)
        observe_run(from_claims(result, corpus, started_at(), finished_at()), loaded, wh)
    click.echo(render(result, fmt), nl=False)
    if claims.bad:
        sys.exit(exits.EXIT_FAILURE)
    sys.exit(exits.for_drift(result.drift_found, fail_on_drift))


@click.group("claims")
def claims_group() -> None:
    """The claims ledger: every check of every claim.

    \b
    Example:
      receipts claims history claim-7
    """


@claims_group.command("history")
@click.argument("claim_id")
@warehouse_option
@json_option
@handle_errors
def history(claim_id: str, warehouse: str, as_json: bool) -> None:
    """Every check of CLAIM_ID, oldest first: its status, the revision checked, and the run
    the check followed, so you can see when a citation stopped holding.

    \b
    Example:
      receipts claims history claim-7 --json
    """
    with Warehouse.open(warehouse, read_only=True) as wh:
        rows = ledger.claim_history(wh, claim_id)
    if not rows:
        raise NotFound(f"no check of claim {claim_id!r} in {warehouse}")
    if as_json:
        emit_json(
            {
                "claim_id": claim_id,
                "checks": [
                    {
                        "check_id": r.check_id,
                        "claim_set": r.claim_set,
                        "run_id": r.run_id,
                        "recorded_at": utc_iso(r.recorded_at),
                        "doc_id": r.doc_id,
                        "quote_hash": r.quote_hash,
                        "cited_revision": r.cited_revision,
                        "cited_hash": r.cited_hash,
                        "status": r.status,
                        "checked_revision": r.checked_revision,
                        "at_revision": r.at_revision,
                        "found_in": r.found_in,
                    }
                    for r in rows
                ],
            }
        )
        return
    click.echo(f"{claim_id} ({rows[-1].doc_id}): {len(rows)} checks")
    width = max(len(s) for s in STATUSES)
    previous = None
    for r in rows:
        after = f"run {r.run_id}" if r.run_id is not None else "by hand"
        at = f", at revision {r.at_revision}" if r.at_revision is not None else ""
        mark = "  ← changed" if previous is not None and previous != r.status else ""
        click.echo(
            f"  check {r.check_id:<4} {to_second(r.recorded_at)}  {r.status:<{width}}  "
            f"current revision {r.checked_revision}{at} ({after}, {r.claim_set}){mark}"
        )
        previous = r.status


COMMANDS = [verify_claims, claims_group]

"""Claims commands: ``verify-claims`` and ``claims history``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from pipelines import logline
from pipelines.checks.claims import STATUSES, ClaimsCheck, check_claims
from pipelines.checks.claims_file import read_claims_file
from pipelines.checks.claims_source import manifest_claims
from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, warehouse_option
from pipelines.cli.observing import finished_at, observe_options, observe_run, started_at
from pipelines.manifest import load_manifest
from pipelines.observe.report import from_claims
from pipelines.proofs.make import ClaimBundles, write_claim_bundles
from pipelines.reports.formats import FORMATS, render
from pipelines.visible import visible_cell
from warehouse import claims as ledger
from warehouse.errors import NotFound
from warehouse.store import Warehouse
from warehouse.timestamps import to_second, utc_iso
from warehouse.tlog.log import signed_head


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
@click.option(
    "--record",
    is_flag=True,
    help="Record the check in the claims ledger even when it found what the latest did.",
)
@click.option(
    "--bundles",
    "bundles_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write a proof bundle for every claim that holds into this directory, named after "
    "the claim (<claim_id>.receipt.json), with its status history (needs RECEIPTS_LOG_KEY).",
)
@observe_options
@json_option
@handle_errors
def verify_claims(
    manifest_file: Path | None,
    claims_file: Path | None,
    warehouse: str,
    fmt: str | None,
    fail_on_drift: bool,
    record: bool,
    bundles_dir: Path | None,
    as_json: bool,
) -> None:
    """Re-check every claim (a quote citing a revision of a document) against the warehouse,
    with the text rules of verify-quote, and record the check in the claims ledger when it
    found something the latest check of the same claims did not (or with --record).
    Printing a check again, in any format, records nothing new.

    Claims come from MANIFEST's [claims] table (a file, or a GROQ query on the Sanity
    dataset) or from --file (NDJSON, or CSV with a header row; fields claim_id, doc_id,
    quote, and revision or content_hash). Each claim holds, is stale, misattributed,
    missing, gone, unseen or unknown (see the README).

    A warehouse this process may not write (a read-only file or mount) is checked all the
    same; the check is not recorded, and stderr says so.

    Exit 0 (3 with --fail-on-drift when any claim does not hold); 1 when some claim rows
    could not be read (the others are still checked and recorded), or --record could not
    record; 2 for bad usage.

    \b
    Examples:
      receipts verify-claims --file demo/claims.ndjson
      receipts verify-claims manifests/cr-v-aeb.toml --format md --fail-on-drift
      receipts verify-claims --file demo/claims.ndjson --bundles proofs/
    """
    if manifest_file is None and claims_file is None:
        raise click.UsageError(
            "no claims to check: give a MANIFEST with a [claims] table, or --file "
            "(an NDJSON or CSV file of claims)"
        )
    if manifest_file is not None and claims_file is not None:
        raise click.UsageError("give a MANIFEST or --file, not both")
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
    with Warehouse.open(warehouse, read_only=ledger.cannot_write(warehouse)) as wh:
        if bundles_dir is not None:
            signed_head(wh)  # refuses before the check when bundles cannot be signed
        result = check_claims(wh, claims, corpus=corpus, record=True if record else None)
        # observers hear of a change once, from the check that recorded it: a check shown
        # again (found the same, not recorded) tells them of none
        heard = replace(result, changed=[]) if result.not_recorded == "unchanged" else result
        observe_run(from_claims(heard, corpus, started_at(), finished_at()), loaded, wh)
        written = None if bundles_dir is None else _write_bundles(wh, result, bundles_dir)
        ids = [v.claim.claim_id for v in result.verdicts]
        history = ledger.claim_histories(wh, ids) if fmt == "html" else None
    click.echo(render(result, fmt, history=history), nl=False)
    _say_unrecorded(result)
    if written is not None and written.refused:
        sys.exit(exits.EXIT_FAILURE)
    if claims.bad or (record and not result.recorded and result.verdicts):
        sys.exit(exits.EXIT_FAILURE)
    sys.exit(exits.for_drift(result.drift_found, fail_on_drift))


def _write_bundles(wh: Warehouse, result: ClaimsCheck, out: Path) -> ClaimBundles:
    """A bundle per claim that holds; one line on stderr for what was written and for each
    holding claim that has none."""
    written = write_claim_bundles(wh, result.verdicts, out)
    logline.emit(
        f"receipts: {len(written.files)} proof bundle(s) written to {out}",
        event="claims.bundles",
    )
    for claim_id, reason in written.refused.items():
        logline.emit(
            f"receipts: no bundle for claim {visible_cell(claim_id)}: {reason}",
            event="claims.bundle_refused",
            level="warning",
        )
    return written


def _say_unrecorded(result: ClaimsCheck) -> None:
    """One line on stderr when a check was not recorded, and why."""
    if result.not_recorded == "unchanged":
        logline.emit(
            f"receipts: not recorded: the same findings as check {result.check_id} "
            "(--record records it anyway)",
            event="claims.unrecorded",
        )
    elif result.not_recorded == "read-only":
        logline.emit(
            "receipts: not recorded: the warehouse is read-only (checked, nothing written)",
            event="claims.unrecorded",
            level="warning",
        )


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
    click.echo(f"{visible_cell(claim_id)} ({visible_cell(rows[-1].doc_id)}): {len(rows)} checks")
    width = max(len(s) for s in STATUSES)
    previous = None
    for r in rows:
        after = f"run {r.run_id}" if r.run_id is not None else "by hand"
        at = f", at revision {r.at_revision}" if r.at_revision is not None else ""
        mark = "  ← changed" if previous is not None and previous != r.status else ""
        click.echo(
            f"  check {r.check_id:<4} {to_second(r.recorded_at)}  {r.status:<{width}}  "
            f"current revision {r.checked_revision}{at} ({after}, {visible_cell(r.claim_set)})"
            f"{mark}"
        )
        previous = r.status

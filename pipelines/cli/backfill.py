"""``receipts backfill nhtsa``: one-off backfills from NHTSA's published flat files."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from pipelines import USER_AGENT, logline
from pipelines.backfill.request import (
    BACKFILL_WAREHOUSE_MEMORY_LIMIT,
    DEFAULT_BATCH_SIZE,
    BackfillRequest,
    BackfillResult,
)
from pipelines.backfill.run import run_backfill
from pipelines.cli import exits
from pipelines.cli.common import emit_json, handle_errors, json_option, quiet, warehouse_option
from pipelines.cli.observing import (
    finished_at,
    observe_options,
    observe_run,
    started_at,
    with_observed,
)
from pipelines.observe.report import from_backfill
from pipelines.progress import backfill_reporter_for
from pipelines.visible import visible
from sources.http import HttpFactory
from sources.nhtsa.flatfile.download import default_download_dir, download, static_url
from sources.nhtsa.flatfile.layouts import LAYOUTS
from sources.nhtsa.flatfile.readable import MALFORMED_SHARE_LIMIT
from sources.nhtsa.flatfile.rows import VehicleFilter
from warehouse.bulk.build_engine import BUILD_DATABASE_MEMORY_LIMIT
from warehouse.errors import RetryBudgetExhausted, TransientHttpError
from warehouse.store import Warehouse

# What to do when the file cannot be downloaded (offline, behind a proxy): a backfill has no
# recorded sessions, it reads any copy of the file.
OFFLINE_HINT = (
    "offline or behind a proxy? fetch the file another way and give its path: --file PATH"
)

DEFAULT_MAX_DOWNLOAD = 4 * 1024**3
MALFORMED_SHOWN = 20
_YEARS_RE = re.compile(r"(\d{4})(?:-(\d{4}))?", re.ASCII)


def parse_years(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    match = _YEARS_RE.fullmatch(value.strip())
    if not match:
        raise click.BadParameter(
            "expected YEAR or FIRST-LAST, e.g. 2017-2022", param_hint="--years"
        )
    first = int(match[1])
    last = int(match[2] or match[1])
    if last < first:
        raise click.BadParameter(f"{first} is after {last}", param_hint="--years")
    return first, last


def _print_result(result: BackfillResult) -> None:
    click.echo(f"run {result.run_id}: {result.status}")
    if result.resumes_run:
        click.echo(f"  completes interrupted run {result.resumes_run}")
    if result.resumed_after_line:
        click.echo(f"  resumed after line {result.resumed_after_line:,} (committed earlier)")
    if result.identical_to_run:
        click.echo(
            f"  identical to run {result.identical_to_run}'s file, with nothing revised since: "
            "not read again (--rescan reads it)"
        )
    click.echo(f"  file: {result.file} (sha256 {result.file_sha256[:16]}…)")
    click.echo(
        f"  rows: {result.rows:,} read, {result.matched:,} kept, {result.malformed:,} malformed"
    )
    if result.layouts:
        layouts = ", ".join(f"{label} ({lines:,} lines)" for label, lines in result.layouts.items())
        click.echo(f"  layout: {layouts}")
    docs = result.documents
    click.echo(
        f"  documents: {docs.new:,} new, {docs.changed:,} changed, {docs.unchanged:,} unchanged, "
        f"{docs.restored:,} restored"
    )
    for bad in result.malformed_lines[:MALFORMED_SHOWN]:
        click.echo(visible(f"  malformed line {bad['line']}: {bad['reason']}"))
    if result.malformed > MALFORMED_SHOWN:
        click.echo(
            f"  … {result.malformed - MALFORMED_SHOWN:,} more malformed rows "
            "(--json lists up to 1,000)"
        )
    if result.kept_nothing:
        logline.emit(
            f"receipts: warning: {result.kept_nothing}",
            event="backfill.kept_nothing",
            level="warning",
        )


@click.group()
def backfill() -> None:
    """One-off bulk backfills from published files (resumable, one run each).

    \b
    Example:
      receipts backfill nhtsa --kind complaints --file FLAT_CMPL.zip --make HONDA
    """


@backfill.command("nhtsa")
@click.option(
    "--file",
    "file_",
    required=True,
    metavar="PATH_OR_URL",
    help="The flat file: a local .zip (or unzipped .txt) path, or its URL on static.nhtsa.gov.",
)
@click.option(
    "--kind",
    required=True,
    type=click.Choice(list(LAYOUTS)),
    help="What the file holds: complaints (FLAT_CMPL, COMPLAINTS_RECEIVED_*), recalls "
    "(FLAT_RCL_*), investigations (FLAT_INV), communications (TSBS_RECEIVED_*).",
)
@click.option("--make", help="Keep only rows of this make (case-insensitive), e.g. HONDA.")
@click.option("--model", help="Keep only rows of this model (case-insensitive), e.g. CR-V.")
@click.option(
    "--years",
    metavar="FIRST-LAST",
    help="Keep only rows of these model years, e.g. 2017-2022 (rows without a year, such "
    "as 9999, are left out).",
)
@click.option("--member", help="The data file inside the zip, when it holds several.")
@click.option(
    "--allow-malformed",
    is_flag=True,
    help=f"Go on when more than {MALFORMED_SHARE_LIMIT:.0%} of the lines are malformed, keeping "
    "the readable rows (without it such a run fails; a file with no readable row always "
    "fails).",
)
@click.option(
    "--rescan",
    is_flag=True,
    help="Read the file even when the warehouse already holds it as it is (without it, a "
    "file backfilled completely by an earlier run of the same arguments, with no revision "
    "written under its kind since, is recognized by its SHA-256 and not read again: the "
    "run records every document unchanged).",
)
@warehouse_option
@click.option(
    "--batch-size",
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Documents per transaction (each commits a checkpoint).",
)
@click.option(
    "--memory-limit",
    default=BACKFILL_WAREHOUSE_MEMORY_LIMIT,
    show_default=True,
    help="DuckDB memory limit for the warehouse and the staging area; beyond it they spill. "
    "A larger limit evicts less and runs faster, and the process holds more memory. (Each "
    "block's documents are built in a DuckDB database of their own, limited to "
    f"{BUILD_DATABASE_MEMORY_LIMIT} or $RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT; it holds one "
    "block's lines. Until it opens, while the "
    "rows are grouped into documents and joined with what the warehouse knows, that "
    "allowance is added to this limit.)",
)
@click.option(
    "--scratch-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Stage rows in a DuckDB file in this directory while grouping them into documents, "
    "and spill the build database here (default: rows in memory, spilling beyond "
    "--memory-limit to the warehouse's temporary directory, <file>.tmp, where the build "
    "database spills too; for a lake, the build spills to the system's temporary directory).",
)
@click.option(
    "--download-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where a URL is downloaded to (default: $XDG_CACHE_HOME/receipts/nhtsa).",
)
@click.option(
    "--max-download-bytes",
    default=DEFAULT_MAX_DOWNLOAD,
    show_default=True,
    type=click.IntRange(1),
    help="Refuse a download larger than this.",
)
@click.option(
    "--progress-interval",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds between progress lines when stderr is not a terminal.",
)
@observe_options
@json_option
@handle_errors
def backfill_nhtsa(
    file_: str,
    kind: str,
    make: str | None,
    model: str | None,
    years: str | None,
    member: str | None,
    allow_malformed: bool,
    rescan: bool,
    warehouse: str,
    batch_size: int,
    memory_limit: str,
    scratch_dir: Path | None,
    download_dir: Path | None,
    max_download_bytes: int,
    progress_interval: float,
    as_json: bool,
) -> None:
    """Backfill an NHTSA flat file into the warehouse, streaming, as one resumable run.

    Rows of one record (an ODI number, a campaign, an action number, an NHTSA id) become one
    document, the same document the API ingest writes for that record. Each line's layout
    is told by its number of fields: every layout NHTSA has published for the kind is read
    (docs/sources/nhtsa.md lists them), and each document's provenance names the layout and
    version of its rows. Malformed rows are counted and listed with their line numbers; a
    file with no readable row, or with more than half of its lines malformed, fails the run
    (exit 1) naming the field counts it saw and the layouts it was compared with. A killed
    backfill, re-run with the same arguments, resumes after its last committed batch. A
    file already backfilled completely with the same arguments, nothing under its kind
    revised since, is recognized by its SHA-256 and not read again (--rescan reads it).

    \b
    Examples:
      receipts backfill nhtsa --kind complaints --file FLAT_CMPL.zip --make HONDA --years 2017-2020
      receipts backfill nhtsa --kind recalls --file FLAT_RCL.zip --json
    """
    vehicle = VehicleFilter(make, model, parse_years(years))
    url: str | None = None
    if file_.startswith(("http://", "https://")):
        url = static_url(file_)
        http = HttpFactory(user_agent=USER_AGENT)
        try:
            path = download(http, url, download_dir or default_download_dir(), max_download_bytes)
        except (TransientHttpError, RetryBudgetExhausted) as exc:
            exc.hint = OFFLINE_HINT
            raise
        finally:
            http.close()
    else:
        path = Path(file_)
    request = BackfillRequest(
        path=path,
        kind=kind,
        vehicle=vehicle,
        member=member,
        url=url,
        batch_size=batch_size,
        memory_limit=memory_limit,
        scratch_dir=scratch_dir,
        allow_malformed=allow_malformed,
        rescan=rescan,
    )
    reporter = backfill_reporter_for(as_json or quiet(), progress_interval)
    with Warehouse.open(warehouse) as wh:
        result = run_backfill(wh, request, reporter=reporter)
        observed = observe_run(from_backfill(result, started_at(), finished_at()), None, wh)
    if as_json:
        emit_json(with_observed(result.as_json(), observed))
    else:
        _print_result(result)
    sys.exit(exits.EXIT_OK)

"""The ``receipts`` command line: a thin layer over the library.

Exit codes are mapped in one place, ``pipelines/cli/exits.py``.
"""

from __future__ import annotations

import click

from pipelines import __version__
from pipelines.cli import backfill as cli_backfill
from pipelines.cli import claims as cli_claims
from pipelines.cli import explore as cli_explore
from pipelines.cli import ingest as cli_ingest
from pipelines.cli import lake as cli_lake
from pipelines.cli import ledger as cli_ledger
from pipelines.cli import log as cli_log
from pipelines.cli import manifest as cli_manifest
from pipelines.cli import pins as cli_pins
from pipelines.cli import publish as cli_publish
from pipelines.cli import refresh as cli_refresh
from pipelines.cli import revisions as cli_revisions
from pipelines.cli import studio as cli_studio
from pipelines.cli.common import configure_logging
from pipelines.cli.logformat import ReceiptsGroup, log_format_option


@click.group(
    cls=ReceiptsGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="receipts", message="%(prog)s %(version)s")
@click.option(
    "--debug",
    is_flag=True,
    envvar="RECEIPTS_DEBUG",
    help="Print the traceback of any error (for reporting a bug). Env: RECEIPTS_DEBUG=1.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Say more on stderr (-v: each HTTP request's outcome; -vv: debug detail).",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Only errors on stderr: no progress, no retry lines, no warnings.",
)
@click.option(
    "--warehouse",
    metavar="PATH|URL",
    help="The warehouse for the command, given before it (a command's own --warehouse wins).",
)
@click.option(
    "--data-path",
    metavar="DIR",
    help="A new DuckLake warehouse's data files, given before the command.",
)
@log_format_option
def main(
    debug: bool,
    verbose: int,
    quiet: bool,
    warehouse: str | None,
    data_path: str | None,
    log_format: str,
) -> None:
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

    Retries, warnings and progress go to stderr (-q silences them, -v says more; with
    --log-format json each is one JSON object); results go to stdout, as text or, with
    --json, as JSON (errors included).
    """
    configure_logging(verbose, quiet)


# Every command group, wired by plain imports: one module per group.
for _command in (
    cli_manifest.manifest,
    cli_ingest.ingest,
    *cli_ledger.COMMANDS,
    *cli_revisions.COMMANDS,
    *cli_publish.COMMANDS,
    *cli_refresh.COMMANDS,
    *cli_backfill.COMMANDS,
    *cli_pins.COMMANDS,
    *cli_claims.COMMANDS,
    *cli_studio.COMMANDS,
    *cli_lake.COMMANDS,
    *cli_explore.COMMANDS,
    *cli_log.COMMANDS,
):
    main.add_command(_command)

__all__ = ["main"]

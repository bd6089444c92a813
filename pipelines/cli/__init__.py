"""The ``receipts`` command line: a thin layer over the library.

Exit codes are mapped in one place, ``pipelines/cli/exits.py``.
"""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.lazy_group import Entry, LazyGroup
from pipelines.cli.logformat import log_format_option
from pipelines.cli.version import version_message
from warehouse import settings_files


def _use_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """``--config FILE``: the config file every setting is read from (before any is read)."""
    settings_files.use_config(value)


# Every command of ``receipts``: its name, where it is (``module:attribute`` under
# pipelines/cli/) and the line ``--help`` lists it with. A command's module is imported only
# when that command is asked for. Adding a command is adding its line here.
COMMANDS: dict[str, Entry] = {
    "as-of": Entry("revisions:as_of_command", "The corpus as it stood at a run or a date."),
    "backfill": Entry("backfill:backfill", "One-off bulk backfills from published files."),
    "claims": Entry("claims:claims_group", "The claims ledger: every check of every claim."),
    "copy": Entry("lake:copy", "Copy the warehouse into a new one (DuckDB file or DuckLake)."),
    "diff": Entry("revisions:diff", "What changed in a document between two revisions."),
    "drift": Entry("revisions:drift", "What drifted between two runs, per source and document."),
    "export": Entry("explore:export", "Write documents, revisions and their snapshot bytes."),
    "history": Entry("ledger:history", "Every revision of a document, with its provenance."),
    "index": Entry("explore:index", "Build the search index search and serve read."),
    "ingest": Entry("ingest:ingest", "Fetch every entry of a manifest into the warehouse."),
    "log": Entry("log:log", "The transparency log: checkpoints, proofs, verify, publish."),
    "ls": Entry("explore:ls", "List documents with their current revision and content hash."),
    "maintain": Entry("lake:maintain", "Compact a DuckLake warehouse."),
    "manifest": Entry("manifest:manifest", "Work with manifests (closed-world corpora)."),
    "migrate": Entry("lake:migrate", "Bring the warehouse's schema up to this receipts."),
    "pin": Entry("pins:pin", "Pin the GitHub entries of a manifest to a commit SHA."),
    "prove": Entry("proofs:prove", "Write a quote's proof bundle, checkable offline."),
    "publish": Entry("publish:publish", "Publish a corpus's curated documents (Sanity, NDJSON)."),
    "pushes": Entry("publish:pushes", "The push ledger, newest first, with each push's receipt."),
    "refresh": Entry("refresh:refresh", "Ingest a manifest, publish the corpus, print the drift."),
    "runs": Entry("ledger:runs", "The run ledger, newest first: status, duration and counts."),
    "query": Entry("query:query", "Answer one SELECT from the warehouse, read-only."),
    "schema": Entry("query:schema", "What each table and column of the warehouse holds."),
    "search": Entry("explore:search", "Find documents whose current text contains TEXT."),
    "serve": Entry("serve:serve", "A read-only web view of the warehouse, with JSON twins."),
    "show": Entry("ledger:show", "Write the verbatim stored bytes of a document."),
    "studio-schema": Entry("studio:studio_schema", "Write a Sanity Studio schema for corpora."),
    "verify": Entry("ledger:verify", "Recompute every stored hash and check every revision."),
    "verify-bundle": Entry("proofs:verify_bundle", "Check a proof bundle, every step named."),
    "verify-claims": Entry("claims:verify_claims", "Re-check every claim and record the check."),
    "verify-quote": Entry("revisions:verify_quote", "Check that a quote is in a cited revision."),
}


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the version read only when asked (see :mod:`pipelines`)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"receipts {version_message()}")
        ctx.exit()


@click.group(
    cls=LazyGroup,
    table=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_show_version,
    help="Show the version, the DuckDB it runs and the warehouse schema it writes, and exit.",
)
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    is_eager=True,
    expose_value=False,
    callback=_use_config,
    metavar="FILE",
    help="The config file (settings for the warehouse, endpoints, limits and defaults); "
    "without it, $RECEIPTS_CONFIG, else receipts.toml in the working directory if there is "
    "one. Options win over the environment, which wins over the file.",
)
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
      2  bad usage, an invalid manifest or setting, or not a warehouse
      3  drift found (only with --fail-on-drift)
      4  the unrelated-document guard tripped during a push
    130  interrupted by Ctrl-C (SIGINT): the run is recorded interrupted with what it
         committed, and the next run resumes it
    143  terminated by SIGTERM (the same)

    Retries, warnings and progress go to stderr (-q silences them, -v says more; with
    --log-format json each is one JSON object); results go to stdout, as text or, with
    --json, as JSON (errors included).
    """
    # Imported here, when a command runs: --help, --version and completion stay light.
    from pipelines.cli import exits
    from pipelines.cli.common import fail
    from warehouse import settings
    from warehouse.errors import SettingsError

    try:
        settings.check()
    except SettingsError as exc:
        fail("SettingsError", str(exc), None, exits.EXIT_USAGE, as_json=False)
    if settings.current().debug:
        click.get_current_context().params["debug"] = True
    from pipelines.cli.common import configure_logging

    configure_logging(verbose, quiet)


__all__ = ["COMMANDS", "main"]

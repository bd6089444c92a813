"""The ``receipts`` command line: a thin layer over the library.

Exit codes are mapped in one place, ``pipelines/cli/exits.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from click.core import ParameterSource

from pipelines import __version__, logline
from pipelines.cli import backfill as cli_backfill
from pipelines.cli import claims as cli_claims
from pipelines.cli import explore as cli_explore
from pipelines.cli import ingest as cli_ingest
from pipelines.cli import lake as cli_lake
from pipelines.cli import ledger as cli_ledger
from pipelines.cli import manifest as cli_manifest
from pipelines.cli import pins as cli_pins
from pipelines.cli import publish as cli_publish
from pipelines.cli import refresh as cli_refresh
from pipelines.cli import revisions as cli_revisions
from pipelines.cli import studio as cli_studio
from pipelines.cli.common import configure_logging


@contextmanager
def _usage_errors_as_log_lines() -> Iterator[None]:
    """Under ``--log-format json``, click's own errors (bad usage: exit 2) become one JSON
    line on stderr, like every other line, instead of click's usage text."""
    try:
        yield
    except click.ClickException as exc:
        if not logline.is_json():
            raise
        logline.emit(
            f"receipts: {exc.format_message()}",
            event="usage_error" if isinstance(exc, click.UsageError) else "error",
            level="error",
            error_type=type(exc).__name__,
            exit_code=exc.exit_code,
        )
        raise click.exceptions.Exit(exc.exit_code) from None
    except (click.Abort, KeyboardInterrupt, EOFError):
        # Ctrl-C: click would write "Aborted!" and exit 1.
        if not logline.is_json():
            raise
        logline.emit("Aborted!", event="aborted", level="error", exit_code=1)
        raise click.exceptions.Exit(1) from None


class _Receipts(click.Group):
    """The root group: parses and runs a command with click's errors routed as above."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # What the command line asks for, before click parses it: a usage error in parsing
        # comes before any option's callback (the option's own callback checks the value).
        logline.configure(_asked_format(args))
        with _usage_errors_as_log_lines():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _usage_errors_as_log_lines():
            return super().invoke(ctx)


def _asked_format(args: list[str]) -> str:
    """The log format ``args`` (before the command) or the environment ask for, if valid,
    else text."""
    asked = os.environ.get(logline.ENV_LOG_FORMAT, "")
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--log-format" and index + 1 < len(args):
            asked = args[index + 1]
        elif arg.startswith("--log-format="):
            asked = arg.partition("=")[2]
    asked = asked.strip().lower()
    return asked if asked in logline.FORMATS else "text"


def _log_format(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """``text`` or ``json``; set at once (the option is eager), so that even a usage error
    in another option is written in the format asked for."""
    chosen = (value or "text").strip().lower()
    if chosen not in logline.FORMATS:
        accepted = " or ".join(repr(f) for f in logline.FORMATS)
        if ctx.get_parameter_source(param.name or "") == ParameterSource.ENVIRONMENT:
            raise click.UsageError(
                f"{logline.ENV_LOG_FORMAT} must be {accepted}, not {value!r}", ctx=ctx
            )
        raise click.BadParameter(f"must be {accepted}, not {value!r}", ctx, param)
    logline.configure(chosen)
    return chosen


@click.group(
    cls=_Receipts,
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
@click.option(
    "--log-format",
    envvar=logline.ENV_LOG_FORMAT,
    metavar="text|json",
    is_eager=True,
    callback=_log_format,
    help="How lines on stderr are written: text (the default) or json (one JSON object a "
    "line: time, level, event, message, run_id, corpus, ...; for journald or Loki). "
    f"Env: {logline.ENV_LOG_FORMAT}.",
)
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
):
    main.add_command(_command)

__all__ = ["main"]

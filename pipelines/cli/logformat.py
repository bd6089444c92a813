"""``--log-format`` and ``RECEIPTS_LOG_FORMAT``: the root group's option choosing how lines
on stderr are written (:mod:`pipelines.logline`), and click's own errors written in it; the
root group that runs a command with SIGINT and SIGTERM as interrupts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from click.core import ParameterSource

from pipelines import logline
from pipelines.cli.interrupts import signals_interrupt
from warehouse import settings_files


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
    except KeyboardInterrupt as exc:
        # Ctrl-C or SIGTERM outside a command's own handling (click would write "Aborted!"
        # and exit 1): an interrupt, exit 130 or 143. (Imported here: start-up stays light.)
        from pipelines.cli import exits, interrupts
        from warehouse.interrupt import interruption

        stop = interruption(exc)
        assert stop is not None
        code = exits.for_interrupt(stop)
        line = f"receipts: {interrupts.message(stop)}"
        logline.emit(line, event="interrupted", level="error", exit_code=code)
        raise click.exceptions.Exit(code) from None
    except (click.Abort, EOFError):
        # A prompt abandoned: click would write "Aborted!" and exit 1.
        if not logline.is_json():
            raise
        logline.emit("Aborted!", event="aborted", level="error", exit_code=1)
        raise click.exceptions.Exit(1) from None


class ReceiptsGroup(click.Group):
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
        with _usage_errors_as_log_lines(), signals_interrupt():
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
    chosen = (value or _configured_format()).strip().lower()
    if chosen not in logline.FORMATS:
        accepted = " or ".join(repr(f) for f in logline.FORMATS)
        if ctx.get_parameter_source(param.name or "") == ParameterSource.ENVIRONMENT:
            raise click.UsageError(
                f"{logline.ENV_LOG_FORMAT} must be {accepted}, not {value!r}", ctx=ctx
            )
        raise click.BadParameter(f"must be {accepted}, not {value!r}", ctx, param)
    logline.configure(chosen)
    return chosen


def _configured_format() -> str:
    """The config file's ``log_format`` (a bad one is reported when the command starts)."""
    if settings_files.config_path() is None:
        return "text"
    from warehouse import settings
    from warehouse.errors import SettingsError

    try:
        return settings.current().log_format
    except SettingsError:
        return "text"


log_format_option = click.option(
    "--log-format",
    envvar=logline.ENV_LOG_FORMAT,
    metavar="text|json",
    is_eager=True,
    callback=_log_format,
    help="How lines on stderr are written: text (the default) or json (one JSON object a "
    "line: time, level, event, message, run_id, corpus, ...; for journald or Loki). "
    f"Env: {logline.ENV_LOG_FORMAT}.",
)

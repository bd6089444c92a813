"""Shared pieces of the command line: options, error handling, JSON output."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

import click
from click.core import ParameterSource

from pipelines import logline
from pipelines.cli import exits, hints, interrupts
from pipelines.visible import visible
from warehouse import kept_open, settings
from warehouse.backends import ENV_DATA_PATH, WarehouseURL
from warehouse.errors import ReceiptsError
from warehouse.ingest import DEFAULT_BATCH_SIZE
from warehouse.interrupt import Interrupted, interruption
from warehouse.store import DEFAULT_WAREHOUSE, ENV_WAREHOUSE, known_error

if TYPE_CHECKING:
    # The ingest machinery (sources, manifests, HTTP) is imported by the commands that run
    # it, not by every command.
    from pipelines.ingest import IngestOptions, RunResult
    from pipelines.manifest import Manifest
    from sources.http import HttpFactory

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


def configure_logging(verbose: int = 0, quiet: bool = False) -> None:
    """Messages of the library (retries, warnings) as plain lines on stderr: warnings by
    default, also information with -v, debug detail with -vv, errors only with -q."""
    level = (
        logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    )
    logger = logging.getLogger("receipts")
    logger.setLevel(level)
    logger.propagate = False
    # A process waiting for a warehouse lock says so even with -q (it may wait a while).
    logging.getLogger("receipts.lock").setLevel(logging.INFO)
    if not any(getattr(h, "receipts_cli", False) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    if logline.is_json():
        # Python would write a warning (a library's DeprecationWarning, say) straight on
        # stderr: under --log-format json it is a line of the log like any other.
        warnings.showwarning = _warning_line


def _warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    text = warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n")
    logline.emit(text, event="python.warning", level="warning")


class _StderrHandler(logging.Handler):
    """Writes each record to the current ``sys.stderr`` (which tests and click may swap),
    through the one emitter of stderr lines (text or JSON)."""

    receipts_cli = True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logline.emit_record(record, self.format(record))
        except Exception:
            self.handleError(record)


def print_traceback() -> None:
    """The traceback of the error being handled (``--debug``): as it is, or as one JSON
    line's ``traceback`` field."""
    if not logline.is_json():
        traceback.print_exc(file=sys.stderr)
        return
    logline.emit("traceback", event="traceback", level="debug", traceback=traceback.format_exc())


def quiet() -> bool:
    """Whether the global ``-q/--quiet`` flag is on (no progress)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("quiet"))


def debugging() -> bool:
    """Whether the global ``--debug`` flag (or ``RECEIPTS_DEBUG=1``) is on."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("debug"))


def internal_error_message(exc: BaseException) -> str:
    return (
        f"internal error: {type(exc).__name__}: {exc} (a bug in receipts, not a problem with "
        "your data or an upstream; rerun with --debug for the traceback and report it)"
    )


def _wants_json(kwargs: dict[str, Any]) -> bool:
    return bool(kwargs.get("as_json")) or kwargs.get("fmt") in ("json", "nl")


def fail(kind: str, message: str, hint: str | None, code: int, as_json: bool) -> NoReturn:
    """One line on stderr (and a hint line), or with ``--json`` the same as a JSON document
    on stdout; then exit ``code``. A hint naming a flag this command lacks is left out."""
    hint = hints.applicable(hint)
    if as_json:
        error = {"type": kind, "message": message, "hint": hint}
        click.echo(json.dumps({"error": error, "exit_code": code}, indent=2, sort_keys=True))
    line = visible(f"receipts: {message}")
    event = {"InternalError": "internal_error", "Interrupted": "interrupted"}.get(kind, "error")
    if logline.is_json():
        # One line, the hint and the exit code among its fields.
        hint = hint and visible(hint)
        logline.emit(line, event=event, level="error", hint=hint, error_type=kind, exit_code=code)
    else:
        logline.emit(line, event=event, level="error")
        if hint and not as_json:
            logline.emit(visible(f"  hint: {hint}"), event="hint", level="error")
    kept_open.exit_if_any(code)  # a connection left in a transaction ends with the process
    sys.exit(code)


def stopped(stop: Interrupted, as_json: bool) -> NoReturn:
    """An interrupted command: one line (the signal, what was committed), exit 130 or 143."""
    fail("Interrupted", interrupts.message(stop), None, exits.for_interrupt(stop), as_json)


def handle_errors(func: F) -> F:
    """Known errors become one line on stderr (with the next step to try, when there is one)
    and their exit code, with no stack trace; under ``--json`` the error is also printed as
    ``{"error": {"type", "message", "hint"}, "exit_code": N}`` on stdout.

    An interrupt (Ctrl-C, SIGTERM; DuckDB's error for a statement a signal stopped) is one
    line saying what was committed, and exit 130 or 143.

    Anything else is a bug: a short "internal error" line and exit 1; ``--debug`` adds the
    traceback.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = _wants_json(kwargs)
        try:
            return func(*args, **kwargs)
        except ReceiptsError as exc:
            if debugging():
                print_traceback()
            fail(type(exc).__name__, str(exc), exc.hint, exits.for_error(exc), as_json)
        except click.ClickException as exc:
            if not as_json:
                raise
            fail(type(exc).__name__, exc.format_message(), None, exc.exit_code, as_json)
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: not a failure
            stop = interruption(exc)
            assert stop is not None
            stopped(stop, as_json)
        except BrokenPipeError:
            # The reader went away (`receipts ls | head`): stop quietly, as a process killed
            # by SIGPIPE would (exit 141), without a second error when Python flushes stdout.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(exits.EXIT_BROKEN_PIPE)
        except Exception as exc:
            stop = interruption(exc)  # DuckDB's words for a signal that stopped a statement
            if stop is not None:
                stopped(stop, as_json)
            if debugging():
                print_traceback()
            known = known_error(exc)
            if known is not None:
                fail(type(known).__name__, str(known), known.hint, exits.for_error(known), as_json)
            fail("InternalError", internal_error_message(exc), None, exits.EXIT_FAILURE, as_json)

    return wrapper  # type: ignore[return-value]


def _given_before_the_command(ctx: click.Context, param: click.Parameter, name: str) -> Any:
    """The global option ``name`` (``receipts --warehouse W runs``) when the command's own
    option was not given on its command line: the command's own wins, then the global one,
    then the environment, then the default."""
    source = ctx.get_parameter_source(param.name or "")
    if source in (ParameterSource.COMMANDLINE, ParameterSource.PROMPT):
        return None
    return ctx.find_root().params.get(name)


def _remember_data_path(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta["receipts.data_path"] = _given_before_the_command(ctx, param, "data_path") or value


def _warehouse_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The ``--warehouse`` value (from the command, or given before it), carrying the
    ``--data-path`` given beside it."""
    value = _given_before_the_command(ctx, param, "warehouse") or value
    return WarehouseURL(value or settings.current().warehouse, ctx.meta.get("receipts.data_path"))


def warehouse_option(func: F) -> F:
    """``--warehouse`` (a DuckDB file or a DuckLake URL) and ``--data-path`` (a new lake's
    data files)."""
    func = click.option(
        "--data-path",
        envvar=ENV_DATA_PATH,
        is_eager=True,
        expose_value=False,
        callback=_remember_data_path,
        metavar="DIR",
        help="Where a new DuckLake warehouse keeps its data files: a folder, shared storage "
        f"or s3://BUCKET/PREFIX (the catalog remembers it). Env: {ENV_DATA_PATH}.",
    )(func)
    return click.option(
        "--warehouse",
        envvar=ENV_WAREHOUSE,
        show_default=f"{DEFAULT_WAREHOUSE}, or the config file's warehouse",
        callback=_warehouse_url,
        help="The warehouse: a DuckDB file, ducklake:sqlite:CATALOG.sqlite or "
        f"'ducklake:postgres:dbname=NAME host=HOST'. Env: {ENV_WAREHOUSE}.",
    )(func)


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def http_options(func: F) -> F:
    """``--record DIR`` and ``--replay DIR``, for every command that fetches over HTTP;
    sets ``record_dir`` and ``replay_dir`` (see :func:`http_factory`)."""
    func = click.option(
        "--replay",
        "replay_dir",
        type=click.Path(path_type=Path, file_okay=False),
        help="Serve HTTP from a recorded session in DIR, offline; unrecorded requests fail.",
    )(func)
    return click.option(
        "--record",
        "record_dir",
        type=click.Path(path_type=Path, file_okay=False),
        help="Save every HTTP exchange under DIR as evidence of the fetch.",
    )(func)


def http_factory(record_dir: Path | None = None, replay_dir: Path | None = None) -> HttpFactory:
    """The HTTP factory of one command, recording or replaying as its options ask."""
    from pipelines import USER_AGENT
    from sources.http import HttpFactory

    return HttpFactory(user_agent=USER_AGENT, record_dir=record_dir, replay_dir=replay_dir)


def ingest_options(func: F) -> F:
    """The options of every command that runs an ingest (``ingest``, ``refresh``)."""
    decorators = [
        click.option(
            "--only",
            multiple=True,
            metavar="SOURCE",
            help="Ingest only this source (repeatable), e.g. --only nhtsa.",
        ),
        click.option(
            "--allow-mass-retire",
            is_flag=True,
            help="Allow a run to retire more than half of a scope or of the corpus at once.",
        ),
        http_options,
        click.option(
            "--batch-size",
            type=click.IntRange(1, 1_000_000),
            default=DEFAULT_BATCH_SIZE,
            show_default=True,
            help="Records per transaction.",
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def check_only(only: tuple[str, ...], manifest: Manifest) -> None:
    unknown = [s for s in only if s not in manifest.entries]
    if unknown:
        raise click.BadParameter(
            f"unknown source(s) {', '.join(unknown)}; valid: {', '.join(manifest.entries)}",
            param_hint="--only",
        )


def print_run(result: RunResult) -> None:
    """The human summary of an ingest run."""
    click.echo(f"run {result.run_id}: {result.status}")
    if result.resumes_run:
        click.echo(f"  completes interrupted run {result.resumes_run}")
    for source, counts in result.counts.items():
        listed = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        click.echo(f"  {source}: {listed}")
    for warning in result.warnings:
        click.echo(
            visible(f"  warning: {warning['source']}: {warning['entry']}: {warning['warning']}")
        )
    for failure in result.failures:
        click.echo(
            visible(f"  FAILED {failure['source']}: {failure['entry']}: {failure['reason']}")
        )
    for hint in dict.fromkeys(f["hint"] for f in result.failures if f.get("hint")):
        click.echo(visible(f"  hint: {hint}"))


def prepare_ingest(
    manifest_file: Path,
    only: tuple[str, ...],
    allow_mass_retire: bool,
    record_dir: Path | None,
    replay_dir: Path | None,
    batch_size: int,
) -> tuple[Manifest, HttpFactory, IngestOptions]:
    """What ``ingest`` and ``refresh`` build from the options of :func:`ingest_options`."""
    from pipelines.ingest import IngestOptions
    from pipelines.manifest import load_manifest

    loaded = load_manifest(manifest_file)
    check_only(only, loaded)
    http = http_factory(record_dir, replay_dir)
    options = IngestOptions(
        only=list(only) or None, allow_mass_retire=allow_mass_retire, batch_size=batch_size
    )
    return loaded, http, options

"""The observer options of the writing commands (``--notify``, ``--notify-on``,
``--notify-timeout``, ``--metrics-file``) and the one call each makes at its end."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from pipelines.manifest import Manifest, load_manifest
from pipelines.observe.events import EVENTS
from pipelines.observe.notify import DEFAULT_TIMEOUT
from pipelines.observe.observers import ObserveSettings, observe
from pipelines.observe.report import RunReport
from pipelines.visible import visible
from warehouse import settings
from warehouse.runs import record_observed
from warehouse.store import Warehouse

F = TypeVar("F", bound=Callable[..., Any])
ENV_NOTIFY = "RECEIPTS_NOTIFY"
ENV_NOTIFY_TIMEOUT = "RECEIPTS_NOTIFY_TIMEOUT"
_KEY = "receipts.observe"
log = logging.getLogger("receipts.observe")


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    meta = ctx.meta.setdefault(_KEY, {"started": datetime.now(UTC)})
    meta[param.name or ""] = value


def observe_options(func: F) -> F:
    """The options of every writing command that reports to observers."""
    options = [
        click.option(
            "--notify",
            "notify",
            multiple=True,
            metavar="URL",
            expose_value=False,
            callback=_remember,
            help="Send one message per run to this Apprise URL (repeatable): slack://, "
            "discord://, mailto://, ntfy://, json://HOST/PATH, ... Also "
            f"{ENV_NOTIFY} (space- or comma-separated) and the manifest's [notify] urls.",
        ),
        click.option(
            "--notify-on",
            "notify_on",
            multiple=True,
            type=click.Choice(list(EVENTS)),
            expose_value=False,
            callback=_remember,
            help="Notify only on this event (repeatable; default: the manifest's [notify] "
            "events, else all).",
        ),
        click.option(
            "--notify-timeout",
            "notify_timeout",
            type=click.FloatRange(0.1),
            show_default=f"{DEFAULT_TIMEOUT}, or the config file's notify_timeout",
            envvar=ENV_NOTIFY_TIMEOUT,
            expose_value=False,
            callback=_remember,
            help="Seconds to wait for each notification endpoint (to connect, and for its answer).",
        ),
        click.option(
            "--metrics-file",
            "metrics_file",
            type=click.Path(path_type=Path, dir_okay=False),
            expose_value=False,
            callback=_remember,
            help="Rewrite this Prometheus text file (node_exporter textfile collector) at "
            "the end of the run, keeping the other corpora's series.",
        ),
    ]

    @functools.wraps(func)
    def observed(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SystemExit as exc:
            if exc.code not in (0, None) and not _meta().get("observed"):
                _observe_error(exc, kwargs.get("manifest_file"))
            raise

    for option in reversed(options):
        observed = option(observed)
    return observed  # type: ignore[return-value]


def _meta() -> dict[str, Any]:
    ctx = click.get_current_context(silent=True)
    return {} if ctx is None else ctx.meta.setdefault(_KEY, {})


def _observe_error(exc: SystemExit, manifest_file: Path | None) -> None:
    """A command that stopped on an error before its end (a manifest that does not load, a
    warehouse held by another run, a half-configured Sanity): a failed run for the
    observers (an interrupted one after Ctrl-C or SIGTERM), its message the error's. Never
    raises; the exit code stays."""
    try:
        cause = exc.__context__
        message = f"{type(cause).__name__}: {cause}" if cause is not None else f"exit {exc.code}"
        manifest = None
        if manifest_file is not None:
            try:
                manifest = load_manifest(manifest_file)
            except Exception:
                manifest = None
        ctx = click.get_current_context(silent=True)
        command = " ".join((ctx.command_path if ctx else "receipts").split()[1:]) or "receipts"
        report = RunReport(
            command=command,
            corpus=None if manifest is None else manifest.name,
            run_ids=(),
            # Stopped by Ctrl-C or SIGTERM (exit 130, 143): an interrupt, not a failure.
            status="interrupted" if exc.code in (130, 143) else "failed",
            started=started_at(),
            finished=finished_at(),
            failures=(message,),
        )
        observe_run(report, manifest)
    except Exception as error:
        log.warning(f"warning: the observers were not told of the error: {error}")


def started_at() -> datetime:
    """When the command started (its options were read)."""
    ctx = click.get_current_context(silent=True)
    meta = {} if ctx is None else ctx.meta.get(_KEY, {})
    return meta.get("started") or datetime.now(UTC)


def finished_at() -> datetime:
    return datetime.now(UTC)


def settings_for(manifest: Manifest | None) -> ObserveSettings:
    ctx = click.get_current_context(silent=True)
    meta = {} if ctx is None else ctx.meta.get(_KEY, {})
    table = None if manifest is None else manifest.notify
    urls = [*meta.get("notify", ())]
    urls += [u for u in re.split(r"[\s,]+", settings.current().notify or "") if u]
    urls += [] if table is None else table.urls
    events = meta.get("notify_on") or (None if table is None else table.events)
    return ObserveSettings(
        notify_urls=tuple(dict.fromkeys(urls)),
        notify_events=None if events is None else tuple(events),
        timeout=float(meta.get("notify_timeout") or settings.current().notify_timeout),
        metrics_file=meta.get("metrics_file"),
        lineage_url=settings.current().openlineage_url,
    )


def observe_run(
    report: RunReport, manifest: Manifest | None, warehouse: Warehouse | None = None
) -> list[dict[str, str]] | None:
    """Hand ``report`` to the configured observers (None when there are none); each failure
    is a warning on stderr and, when the run has one, in the run ledger. Never raises."""
    _meta()["observed"] = True
    settings = settings_for(manifest)
    if not settings.configured:
        return None
    warnings = observe(report, settings)
    for warning in warnings:
        log.warning(visible(f"warning: {warning['entry']}: {warning['warning']}"))
    if warnings and warehouse is not None and report.run_ids:
        try:
            record_observed(warehouse, report.run_ids[-1], warnings)
        except Exception as exc:
            log.warning(f"warning: the observers' warnings not recorded: {exc}")
    return warnings


def with_observed(doc: dict[str, Any], warnings: list[dict[str, str]] | None) -> dict[str, Any]:
    """A command's ``--json`` document, with the observers' warnings when any observer ran."""
    return doc if warnings is None else doc | {"observer_warnings": warnings}

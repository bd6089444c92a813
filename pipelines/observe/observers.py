"""Hand a run's report to every configured observer; an observer that fails is a warning
(its URL redacted), never a failed run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.observe.notify import DEFAULT_TIMEOUT, compose, deliver
from pipelines.observe.redact import redact_text, url_parts
from pipelines.observe.report import RunReport


@dataclass(frozen=True)
class ObserveSettings:
    notify_urls: tuple[str, ...] = ()
    notify_events: tuple[str, ...] | None = None  # None: every event
    timeout: float = DEFAULT_TIMEOUT
    metrics_file: Path | None = None
    lineage_url: str | None = None  # OPENLINEAGE_URL: the client reads its own configuration

    @property
    def configured(self) -> bool:
        return bool(self.notify_urls or self.metrics_file or self.lineage_url)

    @property
    def secrets(self) -> list[str]:
        return [p for url in self.notify_urls for p in url_parts(url)]


def _notify(report: RunReport, settings: ObserveSettings) -> list[str]:
    message = compose(report, settings.notify_events)
    if message is None or not settings.notify_urls:
        return []
    return deliver(list(settings.notify_urls), *message, timeout=settings.timeout)


def _metrics(report: RunReport, settings: ObserveSettings) -> list[str]:
    if settings.metrics_file is not None:
        from pipelines.observe.metrics import write_metrics

        write_metrics(settings.metrics_file, report)
    return []


def _lineage(report: RunReport, settings: ObserveSettings) -> list[str]:
    if settings.lineage_url:
        from pipelines.observe.lineage import emit_lineage

        return emit_lineage(report)
    return []


OBSERVERS: dict[str, Callable[[RunReport, ObserveSettings], list[str]]] = {
    "notify": _notify,
    "metrics": _metrics,
    "lineage": _lineage,
}


def observe(report: RunReport, settings: ObserveSettings) -> list[dict[str, str]]:
    """Run every observer; the warnings of those that failed, as ledger warnings."""
    warnings = []
    for name, observer in OBSERVERS.items():
        try:
            messages = observer(report, settings)
        except Exception as exc:
            messages = [f"failed: {type(exc).__name__}: {exc}"]
        for message in messages:
            text = redact_text(message, settings.secrets)
            warnings.append({"source": "observe", "entry": name, "warning": text})
    return warnings

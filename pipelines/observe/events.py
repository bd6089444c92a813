"""The events a run can notify about, and which of them a report shows (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the manifest reads EVENTS; the report imports the manifest's users
    from pipelines.observe.report import RunReport

# Each selectable by name (--notify-on, [notify] events); all by default.
EVENTS = {
    "failed": "the run failed",
    "drift": "drift found",
    "unseen": "documents unseen",
    "claims": "a claim changed status",
    "guard": "the unrelated-document guard tripped",
    "push-unknown": "a push's outcome is unknown",
}


def events_of(report: RunReport) -> list[str]:
    """The events ``report`` shows, worst first."""
    found = {
        "guard": report.guard_tripped,
        "push-unknown": report.push_unknown,
        "failed": report.status != "ok",
        "claims": bool(report.claims_changed),
        "drift": report.drift_total > 0,
        "unseen": bool(report.unseen),
    }
    order = ("guard", "push-unknown", "failed", "claims", "drift", "unseen")
    return [name for name in order if found[name]]

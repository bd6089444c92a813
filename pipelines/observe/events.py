"""The events a run can notify about (the manifest's ``[notify] events`` are checked
against them, so this module imports nothing)."""

from __future__ import annotations

# Each selectable by name (--notify-on, [notify] events); all by default.
EVENTS = {
    "failed": "the run failed",  # or was interrupted (Ctrl-C, SIGTERM): said so
    "drift": "drift found",
    "unseen": "documents unseen",
    "claims": "a claim changed status",
    "guard": "the unrelated-document guard tripped",
    "push-unknown": "a push's outcome is unknown",
}

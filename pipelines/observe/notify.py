"""Notifications: one message per run through Apprise URLs (Slack, Discord, Matrix, e-mail,
ntfy, a JSON webhook, ...), a summary with counts and the worst items first.

Composing the message is pure (:func:`compose`); :func:`deliver` sends it and returns the
warnings of the URLs it could not reach, each URL shown by its scheme only.
"""

from __future__ import annotations

import logging
import warnings
from urllib.parse import urlsplit

from pipelines.observe.events import EVENTS
from pipelines.observe.redact import redact_text, redact_url, url_parts
from pipelines.observe.report import COUNTS, RunReport

SHOWN = 10
# Seconds to connect and to read an answer, for each URL (Apprise's cto and rto arguments).
DEFAULT_TIMEOUT = 5.0


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


def _listed(items: list[str] | tuple[str, ...]) -> list[str]:
    lines = [f"  {item}" for item in items[:SHOWN]]
    if len(items) > SHOWN:
        lines.append(f"  … and {len(items) - SHOWN:,} more")
    return lines


def _section(report: RunReport, event: str) -> list[str]:
    push = report.push
    if event == "guard" and push is not None:
        return [
            f"GUARD TRIPPED: push {push.push_id} to {push.target}: {push.message or ''}".rstrip(),
            f"  unrelated documents before {push.unrelated_before}, after "
            f"{push.unrelated_after}, touched by us {push.touched_by_us}",
        ]
    if event == "push-unknown" and push is not None:
        return [
            f"PUSH OUTCOME UNKNOWN: push {push.push_id} to {push.target}: "
            f"{push.unknown_batches} transaction(s) may or may not have committed"
        ]
    if event == "failed":
        return [f"FAILED: {len(report.failures)} failure(s)", *_listed(report.failures)]
    if event == "claims":
        changed = [
            f"{c.claim_id} ({c.doc_id}): {c.before} -> {c.after}" for c in report.claims_changed
        ]
        return [f"claims changed status: {len(changed)}", *_listed(changed)]
    if event == "drift":
        return [f"drift found: {report.drift_total:,} document(s)", *_listed(report.drifted)]
    if event == "unseen":
        return [f"documents unseen: {len(report.unseen):,}", *_listed(report.unseen)]
    return []


def compose(report: RunReport, wanted: tuple[str, ...] | None = None) -> tuple[str, str] | None:
    """The title and body of the run's one message, or None when none of the ``wanted``
    events (all by default) happened."""
    events = [e for e in events_of(report) if wanted is None or e in wanted]
    if not events:
        return None
    what = report.command + (f" {report.corpus}" if report.corpus else "")
    said = (
        {**EVENTS, "failed": "the run was interrupted"}
        if report.status == "interrupted"
        else EVENTS
    )
    title = f"receipts {what}: " + ", ".join(said[e] for e in events)
    runs = ", ".join(str(r) for r in report.run_ids) or "-"
    lines = [f"{what}: {report.status} (run {runs}, {report.duration:.1f} s)"]
    for event in events:
        lines += _section(report, event)
    for source, counts in report.counts.items():
        listed = ", ".join(f"{k} {counts[k]:,}" for k in COUNTS if counts.get(k))
        lines.append(f"{source}: {listed or 'nothing new'}")
    if report.claims:
        listed = ", ".join(f"{n} {status}" for status, n in report.claims.items() if n)
        lines.append(f"claims: {listed}")
    if report.report_hint:
        lines.append(f"full report: {report.report_hint}")
    return title, "\n".join(lines)


def with_timeout(url: str, timeout: float) -> str:
    """``url`` with Apprise's connect and read timeouts (``cto``, ``rto``), unless it sets
    them itself."""
    query = urlsplit(url).query
    extra = [f"{key}={timeout:g}" for key in ("cto", "rto") if f"{key}=" not in query]
    if not extra:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(extra)


def deliver(urls: list[str], title: str, body: str, timeout: float) -> list[str]:
    """Send the message to every URL; the warnings of those that failed (URLs redacted)."""
    with warnings.catch_warnings():
        # Apprise's plugins import modules Python deprecates (imghdr): not the user's concern.
        warnings.simplefilter("ignore", DeprecationWarning)
        return _deliver(urls, title, body, timeout)


def _deliver(urls: list[str], title: str, body: str, timeout: float) -> list[str]:
    import apprise  # imported when used: a run without --notify never loads its plugins

    _quiet_apprise()
    failed = []
    for number, url in enumerate(urls, 1):
        shown = f"notify URL {number} ({redact_url(url)})"
        try:
            sender = apprise.Apprise()
            if not sender.add(with_timeout(url, timeout)):
                failed.append(f"{shown}: not a URL Apprise supports; nothing sent")
                continue
            if not sender.notify(body=body, title=title):
                failed.append(f"{shown}: not delivered (unreachable, too slow or refused)")
        except Exception as exc:
            reason = redact_text(f"{type(exc).__name__}: {exc}", url_parts(url))
            failed.append(f"{shown}: not delivered: {reason}")
    return failed


def _quiet_apprise() -> None:
    """Apprise logs each failure with details of its URL: kept off stderr, since a URL's
    pieces are secrets; the warning of :func:`deliver` says what failed instead."""
    logger = logging.getLogger("apprise")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())

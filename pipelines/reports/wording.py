"""The drift report's words, shared by every format: the phrases a text, Markdown or HTML
report shows of the same typed values (:mod:`pipelines.reports.drift_model`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pipelines.checks.diffing import Diff, FieldChange, render_words
from pipelines.checks.target_drift import TargetDrift
from pipelines.reports.drift_model import DriftedDocument, DriftReport, UnseenDocument
from warehouse import timestamps
from warehouse.asof import Point
from warehouse.claims import StatusChange
from warehouse.drift import DRIFT_OUTCOMES, OUTCOMES, RevisionRef, RunRef

SHORT_HASH = 12
UNSEEN_NOTE = (
    "missing from a listing that is not provably complete: not tombstoned, not seen either"
)
METADATA_NOTE = (
    "fields about the document changed (declared metadata: an author's profile, a field "
    "the API added), its content did not; not drift"
)
TARGET_DRIFT_LABELS = (
    ("edited", "edited in the target (owned fields changed)"),
    ("written", "written by someone else (fields we do not own)"),
    ("deleted", "deleted in the target"),
    ("drafts", "open draft (publishing it in the Studio replaces our update)"),
    ("versions", "release version (publishing its release replaces or unpublishes ours)"),
)


def short(content_hash: str | None) -> str:
    return "tombstone" if content_hash is None else content_hash[:SHORT_HASH]


def to_second(moment: str | datetime | None) -> str:
    """A timestamp (ISO-8601 text or a datetime) as text shows every time: UTC to the
    second, ``Z`` (``2026-11-02T06:00:00Z``); reports as JSON keep full precision."""
    return timestamps.to_second(moment)


def point_phrase(point: Point, run: RunRef | None) -> str:
    if point.run_id == 0:
        return "before the first run"
    if point.run_id is not None and run is not None:
        return f"run {run.run_id} (started {to_second(run.started_at)}, {run.status})"
    after = f", after run {run.run_id}" if run is not None else ", before the first run"
    return f"{to_second(point.at)}{after}"


def since_phrase(report: DriftReport) -> str:
    return point_phrase(report.drift.since, report.drift.since_run)


def until_phrase(report: DriftReport) -> str:
    return point_phrase(report.drift.until, report.drift.until_run)


def title(report: DriftReport) -> str:
    corpus = f"corpus {report.drift.corpus}" if report.drift.corpus else "all documents"
    return f"Drift report: {corpus}"


def verdict(report: DriftReport) -> str:
    totals = report.drift.totals
    drifted = sum(totals[k] for k in DRIFT_OUTCOMES)
    unseen = len(report.unseen)
    also = f" {unseen} unseen: not in the latest listing of their scope." if unseen else ""
    metadata = report.drift.metadata_total
    if metadata:
        noun = "document" if metadata == 1 else "documents"
        also += f" {metadata:,} {noun} changed in metadata only (listed apart)."
    if not drifted:
        return f"No drift: all {totals['unchanged']:,} documents unchanged.{also}"
    parts = ", ".join(f"{totals[k]:,} {k}" for k in DRIFT_OUTCOMES if totals[k])
    noun = "document" if drifted == 1 else "documents"
    return f"{drifted:,} {noun} drifted: {parts} ({totals['unchanged']:,} unchanged).{also}"


def counts_rows(report: DriftReport) -> list[list[str]]:
    """One row per source, then the total: the source and its count of each outcome."""
    counts, totals = report.drift.counts, report.drift.totals
    rows = [[source, *(f"{c[k]:,}" for k in OUTCOMES)] for source, c in counts.items()]
    rows.append(["total", *(f"{totals[k]:,}" for k in OUTCOMES)])
    return rows


def revision_phrase(ref: RevisionRef | None) -> str:
    if ref is None:
        return "—"
    what = f"tombstone ({ref.tombstone_reason})" if ref.tombstone else short(ref.content_hash)
    return f"revision {ref.revision} {what}"


def when(ref: RevisionRef) -> str:
    return f"run {ref.valid_from_run}, {to_second(ref.valid_from)}"


def shows_note(doc: DriftedDocument) -> bool:
    """The note says something the revisions do not: what a restored document was compared
    with, or that a document left the corpus."""
    return doc.row.outcome == "restored" or doc.row.left_corpus


def corpora_note(doc: DriftedDocument | UnseenDocument) -> str:
    """`` (corpus a, b)``: the corpora a document belongs to, in a report of every corpus
    (a report of one corpus has none)."""
    if doc.corpora is None:
        return ""
    if not doc.corpora:
        return " (no corpus)"
    return f" (corpus {', '.join(doc.corpora)})"


def unseen_phrase(doc: UnseenDocument) -> str:
    """``unseen since run 2: revision 1 abc… (scope …, missed by run 3)``."""
    row = doc.row
    return (
        f"unseen since run {row.last_seen_run}: revision {row.revision} "
        f"{short(row.content_hash)} (scope {row.scope}, missed by run {row.missed_run})"
    )


def unseen_heading(report: DriftReport) -> str:
    return f"unseen documents ({len(report.unseen)}): {UNSEEN_NOTE}"


def metadata_heading(report: DriftReport) -> str:
    total = report.drift.metadata_total
    return f"metadata-only changes ({total:,}): {METADATA_NOTE}"


def metadata_omitted_phrase(report: DriftReport) -> str | None:
    omitted = report.drift.metadata_omitted
    if not omitted:
        return None
    return f"… and {omitted:,} more metadata-only changes (raise --limit)"


def change_phrase(
    change: StatusChange | Mapping[str, Any], code: Callable[[str], str] = str
) -> str:
    """One claim whose status changed: ``id (doc): holds → stale (revision 3)``; ``change``
    may also be its JSON (:func:`pipelines.checks.claims.change_json`); ``code`` wraps the
    claim's id and document (e.g. as Markdown code)."""
    if not isinstance(change, StatusChange):
        change = StatusChange(**change)
    before = change.before or "first check"
    at = f" (revision {change.at_revision})" if change.at_revision is not None else ""
    return f"{code(change.claim_id)} ({code(change.doc_id)}): {before} → {change.after}{at}"


def claims_heading(changed: list[StatusChange]) -> str:
    return f"claims changed in this run: {len(changed) if changed else 'none'}"


def field_phrase(field: FieldChange, code: Callable[[str], str] = str) -> str:
    """``path changed: old → new`` (or ``added: new``, ``removed: old``, or the word diff),
    with ``code`` wrapping each path and value (e.g. as Markdown code)."""
    path, change = code(field.path), field.change
    if field.words is not None:
        return f"{path} {change}: {code(render_words(field.words))}"
    if change == "added":
        return f"{path} added: {code(str(field.new))}"
    if change == "removed":
        return f"{path} removed: {code(str(field.old))}"
    return f"{path} {change}: {code(str(field.old))} → {code(str(field.new))}"


def size_phrase(diff: Diff) -> str:
    """The one line shown for content that is compared by size only."""
    what = "content too large to diff here" if diff.kind == "large" else "binary content"
    return f"{what}: {diff.old_size:,} → {diff.new_size:,} bytes"


def diff_omitted_phrase(diff: Diff) -> str | None:
    if not diff.omitted:
        return None
    unit = "fields" if diff.kind == "json" else "diff lines"
    return f"… {diff.omitted} more {unit} not shown"


def documents_omitted_phrase(report: DriftReport) -> str:
    """The line under the listed documents when ``--limit`` left some out."""
    omitted = report.drift.omitted
    if not report.documents:
        noun = "document" if omitted == 1 else "documents"
        return f"{omitted:,} drifted {noun}, none listed (raise --limit to list them)"
    return f"… and {omitted:,} more drifted documents (raise --limit)"


def target_drift_groups(target: TargetDrift | None) -> list[tuple[str, list[str]]]:
    """(label, _ids) of each non-empty kind of target drift."""
    if target is None:
        return []
    groups = ((label, list(getattr(target, key))) for key, label in TARGET_DRIFT_LABELS)
    return [(label, ids) for label, ids in groups if ids]


def target_heading(target: TargetDrift) -> str:
    found = "none" if not target_drift_groups(target) else "reported, nothing overwritten"
    return f"target drift in {target.target} (namespace {target.namespace}): {found}"

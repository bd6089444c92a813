"""The drift report as typed values: what :func:`build_report` assembles once from a
:class:`warehouse.drift.Drift`, and every format renders.

Building is the only step that reads the warehouse (the stored bytes to diff, the corpora
of each document, the claims that changed); :func:`drifted_document` and the models are
pure, and :meth:`DriftReport.as_json` is the report as JSON says it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pipelines.checks.claims import change_json
from pipelines.checks.diffing import Diff, diff_snapshots
from pipelines.checks.target_drift import TargetDrift
from pipelines.reports.reader_pages import ReaderView, reader_view
from warehouse.asof import Point, utc_iso
from warehouse.claims import StatusChange, changes_after_run
from warehouse.drift import Drift, DriftRow, RevisionRef, RunRef, corpora_of, snapshot_bodies
from warehouse.store import Warehouse
from warehouse.unseen import UnseenRow

REPORT_VERSION = 1
BODY_CHUNK = 100


@dataclass(frozen=True)
class DriftedDocument:
    """One drifted document: its drift row, what its diff compared (``note``), the diff
    (None when there is nothing to compare), in a report of every corpus its corpora, and
    what a person reads of it (``view``: its upstream page, title and summary, from its
    newest live revision; None when not read)."""

    row: DriftRow
    note: str
    diff: Diff | None
    corpora: list[str] | None = None
    view: ReaderView | None = None

    def as_json(self) -> dict[str, Any]:
        row = self.row
        out = {
            "doc_id": row.doc_id,
            "source": row.source,
            "kind": row.kind,
            "outcome": row.outcome,
            "old": None if row.old is None else row.old.as_json(),
            "new": row.new.as_json(),
            "compared_with": None if row.baseline is None else row.baseline.revision,
            "left_corpus": row.left_corpus,
            "note": self.note,
            "diff": None if self.diff is None else self.diff.as_json(),
            "timeline": [ref.as_json() for ref in row.timeline],
        }
        if row.change is not None:
            out["change"] = row.change.as_json()
        return out if self.corpora is None else out | {"corpora": self.corpora}


@dataclass(frozen=True)
class UnseenDocument:
    """A live document the newer run's listing missed; in a report of every corpus, with
    its corpora."""

    row: UnseenRow
    corpora: list[str] | None = None

    def as_json(self) -> dict[str, Any]:
        out = self.row.as_json()
        return out if self.corpora is None else out | {"corpora": self.corpora}


@dataclass(frozen=True)
class DriftReport:
    """The drift between two points, each drifted document with its diff, the unseen
    documents, the claims whose status changed in the check that followed the newer run
    (None when no check followed it) and, when read, the drift in the publishing target.
    ``metadata``: the documents changed in metadata fields only, shown apart (not drift)."""

    drift: Drift
    generated_at: datetime
    documents: list[DriftedDocument]
    unseen: list[UnseenDocument] = field(default_factory=list)
    claims_changed: list[StatusChange] | None = None
    target_drift: TargetDrift | None = None
    metadata: list[DriftedDocument] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Something drifted in the warehouse, or in the target."""
        return self.drift.found or bool(self.target_drift and self.target_drift.found)

    def as_json(self) -> dict[str, Any]:
        drift = self.drift
        out: dict[str, Any] = {
            "report": "drift",
            "version": REPORT_VERSION,
            "generated_at": utc_iso(self.generated_at),
            "corpus": drift.corpus,
            "since": _point_json(drift.since, drift.since_run),
            "until": _point_json(drift.until, drift.until_run),
            "drift_found": drift.found,
            "counts": drift.counts,
            "totals": drift.totals,
            "documents": [doc.as_json() for doc in self.documents],
            "omitted": drift.omitted,
        }
        if self.unseen:
            out["unseen"] = [doc.as_json() for doc in self.unseen]
        if drift.metadata_total:
            out["metadata_changes"] = {
                "counts": drift.metadata_counts,
                "documents": [doc.as_json() for doc in self.metadata],
                "omitted": drift.metadata_omitted,
            }
        if self.claims_changed is not None:
            out["claims"] = {"changed": [change_json(c) for c in self.claims_changed]}
        if self.target_drift is not None:
            out["target_drift"] = self.target_drift.as_json()
        return out


def _point_json(point: Point, run: RunRef | None) -> dict[str, Any]:
    return point.as_json() | {"run": None if run is None else run.as_json()}


# -- building ------------------------------------------------------------------------------
def live_source(row: DriftRow) -> RevisionRef | None:
    """The newest live revision that says where its bytes came from (for a pinned file, the
    URL names its commit)."""
    live = [r for r in row.timeline if not r.tombstone and r.source_url]
    return live[-1] if live else None


def document_view(row: DriftRow, bodies: dict[str, tuple[str, bytes]]) -> ReaderView | None:
    """What a person reads of a drifted document, from its newest live revision's
    provenance and, when in ``bodies``, its bytes; None without a live revision. When the
    newest bytes name no page (a deleted comment has no author, so no permalink), the
    newest earlier revision in ``bodies`` that does gives it."""
    live = [r for r in row.timeline if not r.tombstone and r.source_url]
    if not live:
        return None
    views = []
    for ref in reversed(live):
        media, body = bodies.get(ref.content_hash or "", ("", None))
        if body is not None or ref is live[-1]:
            views.append(reader_view(row.doc_id, ref.source_url, ref.source_commit, body, media))
    page = next((view.page for view in views if view.page), None)
    return replace(views[0], page=page)


def drifted_document(
    row: DriftRow, bodies: dict[str, tuple[str, bytes]], corpora: list[str] | None = None
) -> DriftedDocument:
    """A drifted document with its diff, from the stored bytes of its two revisions
    (``bodies``: media type and bytes by content hash), and what a person reads of it."""
    base, new = row.baseline, row.new
    diff: Diff | None = None
    if row.outcome == "new":
        note = "new document"
    elif row.outcome == "gone" and row.left_corpus:
        note = "left the corpus: no entry of the manifest yields it any more"
    elif row.outcome == "gone":
        note = f"tombstone: {row.new.tombstone_reason or 'gone'}"
    elif base is None or base.content_hash is None or new.content_hash is None:
        note = "no earlier content to compare with"
    elif base.content_hash == new.content_hash:
        note = f"content identical to revision {base.revision}"
    else:
        old_media, old_body = bodies[base.content_hash]
        new_media, new_body = bodies[new.content_hash]
        diff = diff_snapshots(
            old_body,
            old_media,
            new_body,
            new_media,
            old_label=f"revision {base.revision}",
            new_label=f"revision {new.revision}",
        )
        note = f"revision {base.revision} → revision {new.revision}"
    return DriftedDocument(row, note, diff, corpora, document_view(row, bodies))


def _bodies_needed(rows: list[DriftRow]) -> list[str]:
    """The bytes a chunk's documents need: both sides of each diff, and the newest live
    revision of each (its title, summary and page)."""
    diffed = [
        ref.content_hash
        for row in rows
        if row.outcome in ("changed", "restored")
        for ref in (row.baseline, row.new)
        if ref is not None and ref.content_hash is not None
    ]
    live = [ref.content_hash for row in rows if (ref := live_source(row)) and ref.content_hash]
    return list(dict.fromkeys(diffed + live))


def build_report(warehouse: Warehouse, drift: Drift, generated_at: datetime) -> DriftReport:
    """The drift report of ``drift``: each drifted document diffed against its stored bytes.

    Stored bytes are read :data:`BODY_CHUNK` documents at a time, so a long report never
    holds more than one chunk of snapshots in memory. In a report of every corpus each
    listed document carries the corpora it was a member of at the newer point (or, if none,
    the ones it had left by then)."""
    memberships: dict[str, list[str]] | None = None
    if drift.corpus is None:
        doc_ids = [row.doc_id for row in [*drift.rows, *drift.metadata_rows]]
        doc_ids += [row.doc_id for row in drift.unseen]
        memberships = corpora_of(warehouse, doc_ids, drift.until)

    def corpora(doc_id: str) -> list[str] | None:
        return None if memberships is None else memberships.get(doc_id, [])

    def diffed(rows: list[DriftRow]) -> list[DriftedDocument]:
        documents = []
        for start in range(0, len(rows), BODY_CHUNK):
            chunk = rows[start : start + BODY_CHUNK]
            bodies = snapshot_bodies(warehouse, _bodies_needed(chunk))
            documents += [drifted_document(row, bodies, corpora(row.doc_id)) for row in chunk]
        return documents

    unseen = [UnseenDocument(row, corpora(row.doc_id)) for row in drift.unseen]
    claims = None
    if drift.corpus is not None and drift.until_run is not None:
        claims = changes_after_run(warehouse, drift.corpus, drift.until_run.run_id)
    return DriftReport(
        drift,
        generated_at,
        diffed(drift.rows),
        unseen,
        claims,
        metadata=diffed(drift.metadata_rows),
    )

"""The drift report as plain text: a terminal's report (``receipts drift``). Every value
from outside (ids, changed values, diff lines) keeps to its line: control, invisible and
direction characters, tabs and line feeds written out (:func:`~pipelines.visible.visible_cell`)."""

from __future__ import annotations

from pipelines.reports import wording as w
from pipelines.reports.drift_model import DriftedDocument, DriftReport
from pipelines.visible import visible_cell
from warehouse.drift import OUTCOMES

INDENT = " " * 10
DIFF_INDENT = " " * 12


def render_text(report: DriftReport) -> str:
    out = [
        w.title(report),
        f"  from {w.since_phrase(report)}",
        f"    to {w.until_phrase(report)}",
        f"  generated {w.to_second(report.generated_at)}",
        "",
        w.verdict(report),
        "",
    ]
    header = ["source", *OUTCOMES]
    table = [header, *w.counts_rows(report)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(width) for c, width in zip(row[1:], widths[1:], strict=True)
        ]
        out.append("  ".join(cells).rstrip())
    target = report.target_drift
    if target is not None:
        out += ["", w.target_heading(target)]
        out += [
            f"  {label}: {', '.join(map(visible_cell, ids))}"
            for label, ids in w.target_drift_groups(target)
        ]
        if target.unrecorded:
            ours = ", ".join(map(visible_cell, target.unrecorded))
            out.append(f"  unrecorded (ours; the next push records the transaction): {ours}")
    if report.claims_changed is not None:
        out += ["", w.claims_heading(report.claims_changed)]
        out += [f"  {w.change_phrase(c, visible_cell)}" for c in report.claims_changed]
    if report.unseen:
        out += ["", w.unseen_heading(report)]
        for unseen in report.unseen:
            out += [
                f"{'UNSEEN':<9} {visible_cell(unseen.row.doc_id)}{w.corpora_note(unseen)}",
                f"{INDENT}{visible_cell(w.unseen_phrase(unseen))}",
            ]
    documents = report.documents
    if documents:
        out += ["", f"drifted documents ({len(documents) + report.drift.omitted:,})"]
    for doc in documents:
        out += _document(doc)
    if report.drift.omitted:
        out += [] if documents else [""]
        out.append(w.documents_omitted_phrase(report))
    if report.drift.metadata_total:
        out += ["", w.metadata_heading(report)]
        for doc in report.metadata:
            out += _document(doc, "METADATA")
        more = w.metadata_omitted_phrase(report)
        if more:
            out.append(more)
    return "\n".join(line.rstrip() for line in out) + "\n"


def _document(doc: DriftedDocument, label: str | None = None) -> list[str]:
    row = doc.row
    out = [f"{label or row.outcome.upper():<9} {visible_cell(row.doc_id)}{w.corpora_note(doc)}"]
    if row.left_corpus:
        out.append(f"{INDENT}{w.revision_phrase(row.new)}")
    elif row.old is not None:
        out.append(f"{INDENT}{w.revision_phrase(row.old)} → {w.revision_phrase(row.new)}")
    else:
        out.append(f"{INDENT}{w.revision_phrase(row.new)} ({w.when(row.new)})")
    if len(row.timeline) > 2 or row.outcome == "restored":
        steps = " → ".join(
            f"{r.revision} ({'tombstone' if r.tombstone else w.short(r.content_hash)}, "
            f"run {r.valid_from_run})"
            for r in row.timeline
        )
        out.append(f"{INDENT}timeline: {steps}")
    if w.shows_note(doc):
        out.append(f"{INDENT}{visible_cell(doc.note)}")
    diff = doc.diff
    if diff is not None:
        if diff.kind == "json":
            out += [f"{DIFF_INDENT}{w.field_phrase(f, visible_cell)}" for f in diff.fields]
        elif diff.kind == "text":
            out += [f"{DIFF_INDENT}{visible_cell(line)}" for line in diff.lines]
        else:
            out.append(f"{DIFF_INDENT}{w.size_phrase(diff)}")
        more = w.diff_omitted_phrase(diff)
        if more:
            out.append(f"{DIFF_INDENT}{more}")
    return out

"""The drift report as Markdown: for a pull request, an issue or a wiki page."""

from __future__ import annotations

import re

from pipelines.reports import wording as w
from pipelines.reports.drift_model import DriftedDocument, DriftReport
from pipelines.reports.markdown_text import md_code, md_text
from warehouse.drift import OUTCOMES


def _table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def render_md(report: DriftReport) -> str:
    out = [
        f"# {md_text(w.title(report))}",
        "",
        f"From {w.since_phrase(report)} to {w.until_phrase(report)}. "
        f"Generated {w.to_second(report.generated_at)}.",
        "",
        "## Summary",
        "",
        f"**{w.verdict(report)}**",
        "",
    ]
    rows = [[md_text(cell) for cell in row] for row in w.counts_rows(report)]
    rows[-1] = [f"**{cell}**" for cell in rows[-1]]
    out += _table(["source", *OUTCOMES], rows, ["---"] + ["---:"] * len(OUTCOMES))
    target = report.target_drift
    if target is not None:
        out += ["", "## Target drift", "", md_text(w.target_heading(target))]
        for label, ids in w.target_drift_groups(target):
            out.append(f"- {label}: " + ", ".join(md_code(i) for i in ids))
    if report.claims_changed is not None:
        out += ["", "## Claims", "", w.claims_heading(report.claims_changed)]
        out += [f"- {w.change_phrase(c, md_code)}" for c in report.claims_changed]
    if report.unseen:
        out += ["", f"## Unseen documents ({len(report.unseen)})", "", f"_{w.UNSEEN_NOTE}._", ""]
        out += [
            f"- {md_code(u.row.doc_id)}{md_text(w.corpora_note(u))}: {md_text(w.unseen_phrase(u))}"
            for u in report.unseen
        ]
    documents = report.documents
    if documents:
        out += ["", f"## Drifted documents ({len(documents) + report.drift.omitted:,})"]
    for doc in documents:
        out += _document(doc)
    if report.drift.omitted:
        out += ["", f"_{w.documents_omitted_phrase(report)}._"]
    if report.drift.metadata_total:
        total = report.drift.metadata_total
        out += ["", f"## Metadata-only changes ({total:,})", "", f"_{w.METADATA_NOTE}._"]
        for doc in report.metadata:
            out += _document(doc, "metadata")
        more = w.metadata_omitted_phrase(report)
        if more:
            out += ["", f"_{more}._"]
    return "\n".join(out) + "\n"


def _document(doc: DriftedDocument, label: str | None = None) -> list[str]:
    row = doc.row
    heading = f"### {label or row.outcome}: {md_code(row.doc_id)}{md_text(w.corpora_note(doc))}"
    out = ["", heading, ""]
    timeline = [
        [
            str(r.revision),
            md_text(f"tombstone: {r.tombstone_reason}")
            if r.tombstone
            else md_code(w.short(r.content_hash), cell=True),
            w.when(r),
        ]
        for r in row.timeline
    ]
    out += _table(["revision", "content", "valid from"], timeline, ["---:", "---", "---"])
    if w.shows_note(doc):
        out += ["", f"_{md_text(doc.note)}_"]
    diff = doc.diff
    if diff is not None:
        out.append("")
        if diff.kind == "json":
            out += [f"- {w.field_phrase(f, md_code)}" for f in diff.fields]
        elif diff.kind == "text":
            fence = code_fence(diff.lines)
            out += [f"{fence}diff", *diff.lines, fence]
        else:
            out.append(w.size_phrase(diff))
        more = w.diff_omitted_phrase(diff)
        if more:
            out += ["", f"_{more}_"]
    return out


def code_fence(lines: list[str]) -> str:
    """A fence for a code block of ``lines`` that none of them can close: more backticks
    than the longest run of them in any line (at least three)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)

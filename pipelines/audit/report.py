"""The drift report: assembled once from a :class:`warehouse.drift.Drift`, rendered as text,
JSON, Markdown or one self-contained HTML file.

:func:`build_report` reads the stored bytes it needs and computes each drifted document's
diff; everything after that is pure rendering of one plain, JSON-ready dict, so every format
says the same thing: the summary first, then one entry per drifted document with its
timeline of revisions and what changed.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pipelines.audit.diffing import Diff, diff_snapshots, render_words
from pipelines.audit.visible import json_visible, visible
from warehouse.asof import utc_iso
from warehouse.claims import changes_after_run
from warehouse.drift import (
    DRIFT_OUTCOMES,
    OUTCOMES,
    Drift,
    DriftRow,
    corpora_of,
    snapshot_bodies,
)
from warehouse.store import Warehouse

FORMATS = ("text", "json", "md", "html")
REPORT_VERSION = 1
SHORT_HASH = 12
BODY_CHUNK = 100


# -- assembling ----------------------------------------------------------------------------
def _point(drift: Drift, which: str) -> dict[str, Any]:
    point = drift.since if which == "since" else drift.until
    run = drift.since_run if which == "since" else drift.until_run
    out = point.as_json()
    out["run"] = None if run is None else run.as_json()
    return out


def _diff_for(row: DriftRow, bodies: dict[str, tuple[str, bytes]]) -> tuple[Diff | None, str]:
    """The diff of a drifted document and a one-line note on what was compared."""
    base, new = row.baseline, row.new
    if row.outcome == "new":
        return None, "new document"
    if row.outcome == "gone" and row.left_corpus:
        return None, "left the corpus: no entry of the manifest yields it any more"
    if row.outcome == "gone":
        return None, f"tombstone: {row.new.tombstone_reason or 'gone'}"
    if base is None or base.content_hash is None or new.content_hash is None:
        return None, "no earlier content to compare with"
    if base.content_hash == new.content_hash:
        return None, f"content identical to revision {base.revision}"
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
    return diff, f"revision {base.revision} → revision {new.revision}"


def _bodies_needed(rows: list[DriftRow]) -> list[str]:
    return [
        ref.content_hash
        for row in rows
        if row.outcome in ("changed", "restored")
        for ref in (row.baseline, row.new)
        if ref is not None and ref.content_hash is not None
    ]


def build_report(warehouse: Warehouse, drift: Drift, generated_at: datetime) -> dict[str, Any]:
    """The drift report as one JSON-ready dict (see :func:`render`).

    Stored bytes are read :data:`BODY_CHUNK` documents at a time, so a long report never
    holds more than one chunk of snapshots in memory."""
    documents = []
    for start in range(0, len(drift.rows), BODY_CHUNK):
        chunk = drift.rows[start : start + BODY_CHUNK]
        bodies = snapshot_bodies(warehouse, _bodies_needed(chunk))
        for row in chunk:
            diff, note = _diff_for(row, bodies)
            documents.append(
                {
                    "doc_id": row.doc_id,
                    "source": row.source,
                    "kind": row.kind,
                    "outcome": row.outcome,
                    "old": None if row.old is None else row.old.as_json(),
                    "new": row.new.as_json(),
                    "compared_with": None if row.baseline is None else row.baseline.revision,
                    "left_corpus": row.left_corpus,
                    "note": note,
                    "diff": None if diff is None else diff.as_json(),
                    "timeline": [ref.as_json() for ref in row.timeline],
                }
            )
    corpora = _corpora(warehouse, drift, documents)
    return (
        {
            "report": "drift",
            "version": REPORT_VERSION,
            "generated_at": utc_iso(generated_at),
            "corpus": drift.corpus,
            "since": _point(drift, "since"),
            "until": _point(drift, "until"),
            "drift_found": drift.found,
            "counts": drift.counts,
            "totals": drift.totals,
            "documents": documents,
            "omitted": drift.omitted,
        }
        | _unseen_section(drift, corpora)
        | _claims_section(warehouse, drift)
    )


def _corpora(
    warehouse: Warehouse, drift: Drift, documents: list[dict[str, Any]]
) -> dict[str, list[str]] | None:
    """In a report of every corpus, each listed document's ``corpora``: the corpora it was
    a member of at the newer point (or, if none, the ones it had left by then). A report
    of one corpus has none."""
    if drift.corpus is not None:
        return None
    doc_ids = [doc["doc_id"] for doc in documents] + [row.doc_id for row in drift.unseen]
    memberships = corpora_of(warehouse, doc_ids, drift.until)
    for doc in documents:
        doc["corpora"] = memberships.get(doc["doc_id"], [])
    return memberships


def _unseen_section(drift: Drift, corpora: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """``unseen``: live documents the newer run listed the scope of without finding them
    (not provably gone), with the last run that saw each; no key at all when there are
    none, so a report without any reads as before. ``corpora`` (a report of every corpus)
    adds each one's corpora."""
    if not drift.unseen:
        return {}
    rows = [row.as_json() for row in drift.unseen]
    if corpora is not None:
        for row in rows:
            row["corpora"] = corpora.get(row["doc_id"], [])
    return {"unseen": rows}


UNSEEN_NOTE = (
    "missing from a listing that is not provably complete: not tombstoned, not seen either"
)


def unseen_phrase(doc: dict[str, Any]) -> str:
    """``unseen since run 2: revision 1 abc… (scope …, missed by run 3)``."""
    return (
        f"unseen since run {doc['last_seen_run']}: revision {doc['revision']} "
        f"{short(doc['content_hash'])} (scope {doc['scope']}, missed by run {doc['missed_run']})"
    )


def _unseen_heading(report: dict[str, Any]) -> str:
    return f"unseen documents ({len(report['unseen'])}): {UNSEEN_NOTE}"


def _claims_section(warehouse: Warehouse, drift: Drift) -> dict[str, Any]:
    """``claims``: the corpus's claims whose status changed in the check that followed the
    ``until`` run; no key at all when no check followed it."""
    if drift.corpus is None or drift.until_run is None:
        return {}
    changed = changes_after_run(warehouse, drift.corpus, drift.until_run.run_id)
    if changed is None:
        return {}
    return {
        "claims": {
            "changed": [
                {
                    "claim_id": c.claim_id,
                    "doc_id": c.doc_id,
                    "before": c.before,
                    "after": c.after,
                    "at_revision": c.at_revision,
                    "checked_revision": c.checked_revision,
                }
                for c in changed
            ]
        }
    }


def claim_change_lines(report: dict[str, Any]) -> list[str]:
    """One line per claim whose status changed: ``id (doc): holds → stale (revision 3)``."""
    lines = []
    for c in report["claims"]["changed"]:
        before = c["before"] or "first check"
        at = f" (revision {c['at_revision']})" if c["at_revision"] is not None else ""
        lines.append(f"{c['claim_id']} ({c['doc_id']}): {before} → {c['after']}{at}")
    return lines


def _claims_heading(report: dict[str, Any]) -> str:
    n = len(report["claims"]["changed"])
    return f"claims changed in this run: {n if n else 'none'}"


# -- shared wording ------------------------------------------------------------------------
def short(content_hash: str | None) -> str:
    return "tombstone" if content_hash is None else content_hash[:SHORT_HASH]


def to_second(text: str | None) -> str:
    """An ISO-8601 timestamp as text shows every time: UTC to the second, ``Z``
    (``2026-11-02T06:00:00Z``); reports as JSON keep full precision."""
    if text is None:
        return "-"
    moment = datetime.fromisoformat(text)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _point_phrase(point: dict[str, Any]) -> str:
    run = point["run"]
    if point["run_id"] == 0:
        return "before the first run"
    if point["run_id"] is not None and run is not None:
        return f"run {run['run_id']} (started {to_second(run['started_at'])}, {run['status']})"
    after = f", after run {run['run_id']}" if run is not None else ", before the first run"
    return f"{to_second(point['at'])}{after}"


def _title(report: dict[str, Any]) -> str:
    corpus = f"corpus {report['corpus']}" if report["corpus"] else "all documents"
    return f"Drift report: {corpus}"


def _verdict(report: dict[str, Any]) -> str:
    totals = report["totals"]
    drifted = sum(totals[k] for k in DRIFT_OUTCOMES)
    unseen = len(report.get("unseen", []))
    also = f" {unseen} unseen: not in the latest listing of their scope." if unseen else ""
    if not drifted:
        return f"No drift: all {totals['unchanged']:,} documents unchanged.{also}"
    parts = ", ".join(f"{totals[k]:,} {k}" for k in DRIFT_OUTCOMES if totals[k])
    noun = "document" if drifted == 1 else "documents"
    return f"{drifted:,} {noun} drifted: {parts} ({totals['unchanged']:,} unchanged).{also}"


def _revision_phrase(ref: dict[str, Any] | None) -> str:
    if ref is None:
        return "—"
    what = (
        f"tombstone ({ref['tombstone_reason']})" if ref["tombstone"] else short(ref["content_hash"])
    )
    return f"revision {ref['revision']} {what}"


def _shows_note(doc: dict[str, Any]) -> bool:
    """The note says something the revisions do not: what a restored document was compared
    with, or that a document left the corpus."""
    return bool(doc["outcome"] == "restored" or doc["left_corpus"])


def _when(ref: dict[str, Any]) -> str:
    return f"run {ref['valid_from_run']}, {to_second(ref['valid_from'])}"


def field_phrase(field: dict[str, Any], code: Callable[[str], str] = str) -> str:
    """``path changed: old → new`` (or ``added: new``, ``removed: old``, or the word diff),
    with ``code`` wrapping each path and value (e.g. as Markdown code)."""
    path, change = code(field["path"]), field["change"]
    if field.get("words") is not None:
        return f"{path} {change}: {code(render_words([tuple(w) for w in field['words']]))}"
    if change == "added":
        return f"{path} added: {code(field['new'])}"
    if change == "removed":
        return f"{path} removed: {code(field['old'])}"
    return f"{path} {change}: {code(field['old'])} → {code(field['new'])}"


def size_phrase(diff: dict[str, Any]) -> str:
    """The one line shown for content that is compared by size only."""
    what = "content too large to diff here" if diff["kind"] == "large" else "binary content"
    return f"{what}: {diff['old_size']:,} → {diff['new_size']:,} bytes"


def _omitted_documents(report: dict[str, Any]) -> str:
    """The line under the listed documents when ``--limit`` left some out."""
    omitted = report["omitted"]
    if not report["documents"]:
        noun = "document" if omitted == 1 else "documents"
        return f"{omitted:,} drifted {noun}, none listed (raise --limit to list them)"
    return f"… and {omitted:,} more drifted documents (raise --limit)"


def _corpora_note(doc: dict[str, Any]) -> str:
    """`` (corpus a, b)``: the corpora a document belongs to, in a report of every corpus
    (a report of one corpus has no ``corpora``)."""
    corpora = doc.get("corpora")
    if corpora is None:
        return ""
    if not corpora:
        return " (no corpus)"
    return f" (corpus {', '.join(corpora)})"


def _omitted_phrase(diff: dict[str, Any]) -> str | None:
    if not diff["omitted"]:
        return None
    unit = "fields" if diff["kind"] == "json" else "diff lines"
    return f"… {diff['omitted']} more {unit} not shown"


def _counts_rows(report: dict[str, Any]) -> list[list[str]]:
    rows = [[source, *(f"{c[k]:,}" for k in OUTCOMES)] for source, c in report["counts"].items()]
    rows.append(["total", *(f"{report['totals'][k]:,}" for k in OUTCOMES)])
    return rows


# -- text ----------------------------------------------------------------------------------
TARGET_DRIFT_LABELS = (
    ("edited", "edited in the target (owned fields changed)"),
    ("written", "written by someone else (fields we do not own)"),
    ("deleted", "deleted in the target"),
    ("drafts", "open draft (publishing it in the Studio replaces our update)"),
)


def target_drift_groups(report: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(label, _ids) of each non-empty kind of target drift, when the report has it."""
    drift = report.get("target_drift")
    if not drift:
        return []
    return [(label, list(drift[key])) for key, label in TARGET_DRIFT_LABELS if drift[key]]


def _target_heading(report: dict[str, Any]) -> str:
    drift = report["target_drift"]
    found = "none" if not target_drift_groups(report) else "reported, nothing overwritten"
    return f"target drift in {drift['target']} (namespace {drift['namespace']}): {found}"


def render_text(report: dict[str, Any]) -> str:
    out = [
        _title(report),
        f"  from {_point_phrase(report['since'])}",
        f"    to {_point_phrase(report['until'])}",
        f"  generated {to_second(report['generated_at'])}",
        "",
        _verdict(report),
        "",
    ]
    header = ["source", *OUTCOMES]
    table = [header, *_counts_rows(report)]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        out.append("  ".join(cells).rstrip())
    if report.get("target_drift"):
        out += ["", _target_heading(report)]
        for label, ids in target_drift_groups(report):
            out.append(f"  {label}: {', '.join(ids)}")
        if report["target_drift"].get("unrecorded"):
            ours = ", ".join(report["target_drift"]["unrecorded"])
            out.append(f"  unrecorded (ours; the next push records the transaction): {ours}")
    if report.get("claims"):
        out += ["", _claims_heading(report)]
        out += [f"  {line}" for line in claim_change_lines(report)]
    if report.get("unseen"):
        out += ["", _unseen_heading(report)]
        for doc in report["unseen"]:
            out += [
                f"{'UNSEEN':<9} {doc['doc_id']}{_corpora_note(doc)}",
                f"          {unseen_phrase(doc)}",
            ]
    documents = report["documents"]
    if documents:
        out += ["", f"drifted documents ({len(documents) + report['omitted']:,})"]
    for doc in documents:
        out.append(f"{doc['outcome'].upper():<9} {doc['doc_id']}{_corpora_note(doc)}")
        if doc["left_corpus"]:
            out.append(f"          {_revision_phrase(doc['new'])}")
        elif doc["old"] is not None:
            out.append(f"          {_revision_phrase(doc['old'])} → {_revision_phrase(doc['new'])}")
        else:
            out.append(f"          {_revision_phrase(doc['new'])} ({_when(doc['new'])})")
        if len(doc["timeline"]) > 2 or doc["outcome"] == "restored":
            steps = " → ".join(
                f"{r['revision']} ({'tombstone' if r['tombstone'] else short(r['content_hash'])}, "
                f"run {r['valid_from_run']})"
                for r in doc["timeline"]
            )
            out.append(f"          timeline: {steps}")
        if _shows_note(doc):
            out.append(f"          {doc['note']}")
        diff = doc["diff"]
        if diff is not None:
            if diff["kind"] == "json":
                out += [f"            {field_phrase(f)}" for f in diff["fields"]]
            elif diff["kind"] == "text":
                out += [f"            {line}" for line in diff["lines"]]
            else:
                out.append(f"            {size_phrase(diff)}")
            more = _omitted_phrase(diff)
            if more:
                out.append(f"            {more}")
    if report["omitted"]:
        out += [] if documents else [""]
        out.append(_omitted_documents(report))
    return "\n".join(line.rstrip() for line in out) + "\n"


# -- json ----------------------------------------------------------------------------------
def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- markdown ------------------------------------------------------------------------------
def _md_code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    body = text.replace("|", "\\|").replace("\n", " ")
    return f"{fence}{pad}{body}{pad}{fence}"


def _md_table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def render_md(report: dict[str, Any]) -> str:
    out = [
        f"# {_title(report)}",
        "",
        f"From {_point_phrase(report['since'])} to {_point_phrase(report['until'])}. "
        f"Generated {to_second(report['generated_at'])}.",
        "",
        "## Summary",
        "",
        f"**{_verdict(report)}**",
        "",
    ]
    rows = _counts_rows(report)
    rows[-1] = [f"**{cell}**" for cell in rows[-1]]
    out += _md_table(["source", *OUTCOMES], rows, ["---"] + ["---:"] * len(OUTCOMES))
    if report.get("target_drift"):
        out += ["", "## Target drift", "", _target_heading(report)]
        for label, ids in target_drift_groups(report):
            out.append(f"- {label}: " + ", ".join(_md_code(i) for i in ids))
    if report.get("claims"):
        out += ["", "## Claims", "", _claims_heading(report)]
        out += [f"- {line}" for line in claim_change_lines(report)]
    if report.get("unseen"):
        out += ["", f"## Unseen documents ({len(report['unseen'])})", "", f"_{UNSEEN_NOTE}._", ""]
        out += [
            f"- {_md_code(doc['doc_id'])}{_corpora_note(doc)}: {unseen_phrase(doc)}"
            for doc in report["unseen"]
        ]
    documents = report["documents"]
    if documents:
        out += ["", f"## Drifted documents ({len(documents) + report['omitted']:,})"]
    for doc in documents:
        out += ["", f"### {doc['outcome']}: {_md_code(doc['doc_id'])}{_corpora_note(doc)}", ""]
        timeline = [
            [
                str(r["revision"]),
                "tombstone: " + str(r["tombstone_reason"])
                if r["tombstone"]
                else _md_code(short(r["content_hash"])),
                _when(r),
            ]
            for r in doc["timeline"]
        ]
        out += _md_table(["revision", "content", "valid from"], timeline, ["---:", "---", "---"])
        if _shows_note(doc):
            out += ["", f"_{doc['note']}_"]
        diff = doc["diff"]
        if diff is not None:
            out.append("")
            if diff["kind"] == "json":
                out += [f"- {field_phrase(f, _md_code)}" for f in diff["fields"]]
            elif diff["kind"] == "text":
                fence = "````" if any("```" in line for line in diff["lines"]) else "```"
                out += [f"{fence}diff", *diff["lines"], fence]
            else:
                out.append(size_phrase(diff))
            more = _omitted_phrase(diff)
            if more:
                out += ["", f"_{more}_"]
    if report["omitted"]:
        out += ["", f"_{_omitted_documents(report)}._"]
    return "\n".join(out) + "\n"


# -- html ----------------------------------------------------------------------------------
_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e;
  --line: #d1d9e0; --panel: #f6f8fa; --add: #dafbe1; --del: #ffebe9; --hunk: #ddf4ff;
  --new: #1a7f37; --changed: #9a6700; --gone: #cf222e; --restored: #0969da;
  --badge-fg: #ffffff; --link: #0550ae; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --panel: #151b23;
    --add: #12361f; --del: #3c1618; --hunk: #0c2d6b; --new: #3fb950; --changed: #d29922;
    --gone: #f85149; --restored: #4493f8; --badge-fg: #0d1117; --link: #6cb6ff; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1.5rem; color: var(--fg);
  background: var(--bg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { margin: 0 0 .25rem; font-size: 1.6rem; }
h2 { margin-top: 2rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
h3 { margin: 0; font-size: 1rem; font-weight: 600; word-break: break-all; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.meta, .note, footer { color: var(--muted); }
.verdict { font-size: 1.1rem; font-weight: 600; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .6rem; text-align: left;
  vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: 600; }
td.zero { color: var(--muted); }
.badge { display: inline-block; min-width: 5.5rem; padding: 0 .4rem; border-radius: 1rem;
  color: var(--badge-fg); font-size: .8rem; text-align: center; text-transform: uppercase; }
a { color: var(--link); }
p.source { margin: .3rem 0; overflow-wrap: anywhere; }
code.show { color: var(--muted); }
.badge.new { background: var(--new); } .badge.changed { background: var(--changed); }
.badge.gone { background: var(--gone); } .badge.restored { background: var(--restored); }
ul.index { columns: 2 24rem; padding-left: 1.2rem; }
article { border: 1px solid var(--line); border-radius: 6px; margin: 1rem 0; padding: .8rem 1rem;
  background: var(--panel); }
ol.timeline { list-style: none; margin: .6rem 0; padding: 0 0 0 1rem;
  border-left: 2px solid var(--line); }
ol.timeline li { position: relative; margin: .2rem 0; padding-left: .6rem; }
ol.timeline li::before { content: ""; position: absolute; left: -1.4rem; top: .45rem;
  width: .7rem; height: .7rem; border-radius: 50%; background: var(--muted); }
ol.timeline li.tombstone::before { background: var(--gone); }
ol.timeline li.endpoint { font-weight: 600; }
table.fields td:first-child { white-space: nowrap; }
td.old { background: var(--del); } td.new { background: var(--add); }
td.words del { background: var(--del); text-decoration: line-through; }
td.words ins { background: var(--add); text-decoration: none; }
pre.diff { margin: .5rem 0; padding: .5rem 0; overflow-x: auto; background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; }
pre.diff span { display: block; padding: 0 .8rem; white-space: pre; }
pre.diff .add { background: var(--add); } pre.diff .del { background: var(--del); }
pre.diff .hunk { background: var(--hunk); color: var(--muted); }
pre.diff .file { color: var(--muted); font-weight: 600; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _hash_html(content_hash: str | None) -> str:
    if content_hash is None:
        return "tombstone"
    return f'<code title="{_e(content_hash)}">{_e(short(content_hash))}</code>'


def _diff_line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def _html_words(words: list[list[str]]) -> str:
    tags = {"=": ("", ""), "-": ("<del>", "</del>"), "+": ("<ins>", "</ins>")}
    return "".join(tags[op][0] + _e(text) + tags[op][1] for op, text in words)


def _html_diff(diff: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if diff["kind"] == "json":
        out.append(
            '<table class="fields"><tr><th>field</th><th>change</th><th>old</th><th>new</th></tr>'
        )
        for f in diff["fields"]:
            head = f"<tr><td><code>{_e(f['path'])}</code></td><td>{_e(f['change'])}</td>"
            if f.get("words") is not None:
                out.append(
                    f'{head}<td colspan="2" class="words">{_html_words(f["words"])}</td></tr>'
                )
                continue
            old = "" if f["old"] is None else f"<code>{_e(f['old'])}</code>"
            new = "" if f["new"] is None else f"<code>{_e(f['new'])}</code>"
            out.append(f'{head}<td class="old">{old}</td><td class="new">{new}</td></tr>')
        out.append("</table>")
    elif diff["kind"] == "text":
        spans = "".join(
            f'<span class="{_diff_line_class(line)}">{_e(line)}</span>' for line in diff["lines"]
        )
        out.append(f'<pre class="diff">{spans}</pre>')
    else:
        out.append(f'<p class="note">{_e(size_phrase(diff))}</p>')
    more = _omitted_phrase(diff)
    if more:
        out.append(f'<p class="note">{_e(more)}</p>')
    return out


def _html_timeline(doc: dict[str, Any]) -> list[str]:
    ends = {doc["new"]["revision"]}
    if doc["old"] is not None:
        ends.add(doc["old"]["revision"])
    out = ['<ol class="timeline">']
    for r in doc["timeline"]:
        classes = ["tombstone"] if r["tombstone"] else []
        if r["revision"] in ends:
            classes.append("endpoint")
        what = (
            f"tombstone ({_e(r['tombstone_reason'])})"
            if r["tombstone"]
            else _hash_html(r["content_hash"])
        )
        attr = f' class="{" ".join(classes)}"' if classes else ""
        show = f"receipts show {doc['doc_id']} --revision {r['revision']}"
        bytes_ = "" if r["tombstone"] else f' · <code class="show">{_e(show)}</code>'
        out.append(
            f"<li{attr}>revision {r['revision']} · {what} · valid from {_e(_when(r))}{bytes_}</li>"
        )
    out.append("</ol>")
    return out


def _html_source(doc: dict[str, Any]) -> list[str]:
    """A link to where the newest live revision's bytes came from (for a pinned file, the
    URL names its commit)."""
    live = [r for r in doc["timeline"] if not r["tombstone"] and r.get("source_url")]
    if not live:
        return []
    url = live[-1]["source_url"]
    commit = live[-1].get("source_commit")
    at = f" at commit <code>{_e(commit[:12])}</code>" if commit else ""
    return [f'<p class="source">source: <a class="source" href="{_e(url)}">{_e(url)}</a>{at}</p>']


def render_html(report: dict[str, Any]) -> str:
    title = _title(report)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<header><h1>{_e(title)}</h1>",
        f'<p class="meta">from {_e(_point_phrase(report["since"]))}<br>'
        f"to {_e(_point_phrase(report['until']))}<br>"
        f"generated {_e(to_second(report['generated_at']))}</p></header>",
        '<section id="summary"><h2>Summary</h2>',
        f'<p class="verdict">{_e(_verdict(report))}</p>',
        '<table class="counts"><tr><th>source</th>'
        + "".join(f'<th class="n">{k}</th>' for k in OUTCOMES)
        + "</tr>",
    ]
    for row in _counts_rows(report):
        total = ' class="total"' if row[0] == "total" else ""
        cells = "".join(
            f'<td class="n{" zero" if cell == "0" else ""}">{_e(cell)}</td>' for cell in row[1:]
        )
        out.append(f"<tr{total}><td>{_e(row[0])}</td>{cells}</tr>")
    out.append("</table>")
    documents = report["documents"]
    if documents:
        out.append('<ul class="index">')
        for n, doc in enumerate(documents, 1):
            out.append(
                f'<li><span class="badge {_e(doc["outcome"])}">{_e(doc["outcome"])}</span> '
                f'<a href="#doc-{n}"><code>{_e(doc["doc_id"])}</code></a></li>'
            )
        out.append("</ul>")
    out.append("</section>")
    if report.get("target_drift"):
        out.append(f'<section id="target-drift"><h2>{_e(_target_heading(report))}</h2><ul>')
        for label, ids in target_drift_groups(report):
            codes = ", ".join(f"<code>{_e(i)}</code>" for i in ids)
            out.append(f"<li>{_e(label)}: {codes}</li>")
        out.append("</ul></section>")
    if report.get("claims"):
        out.append(f'<section id="claims"><h2>{_e(_claims_heading(report))}</h2><ul>')
        out += [f"<li>{_e(line)}</li>" for line in claim_change_lines(report)]
        out.append("</ul></section>")
    if report.get("unseen"):
        out.append(
            f'<section id="unseen"><h2>Unseen documents ({len(report["unseen"])})</h2>'
            f'<p class="note">{_e(UNSEEN_NOTE)}</p><ul>'
        )
        out += [
            '<li><span class="badge unseen" style="background: var(--muted)">unseen</span> '
            f"<code>{_e(doc['doc_id'])}</code>{_e(_corpora_note(doc))}: "
            f"{_e(unseen_phrase(doc))}</li>"
            for doc in report["unseen"]
        ]
        out.append("</ul></section>")
    if documents:
        total = len(documents) + report["omitted"]
        out.append(f'<section id="documents"><h2>Drifted documents ({total})</h2>')
        for n, doc in enumerate(documents, 1):
            out.append(f'<article id="doc-{n}" class="{_e(doc["outcome"])}">')
            out.append(
                f'<h3><span class="badge {_e(doc["outcome"])}">{_e(doc["outcome"])}</span> '
                f"<code>{_e(doc['doc_id'])}</code>{_e(_corpora_note(doc))}</h3>"
            )
            out += _html_source(doc)
            out += _html_timeline(doc)
            if _shows_note(doc):
                out.append(f'<p class="note">{_e(doc["note"])}</p>')
            if doc["diff"] is not None:
                out += _html_diff(doc["diff"])
            out.append("</article>")
        if report["omitted"]:
            out.append(f'<p class="note">{_e(_omitted_documents(report))}</p>')
        out.append("</section>")
    elif report["omitted"]:
        out.append(
            '<section id="documents"><h2>Drifted documents</h2>'
            f'<p class="note">{_e(_omitted_documents(report))}</p></section>'
        )
    out += ["<footer>receipts drift report</footer>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


_RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "text": render_text,
    "json": render_json,
    "md": render_md,
    "html": render_html,
}


def render(report: dict[str, Any], fmt: str) -> str:
    """The report in one of :data:`FORMATS`. Control characters from upstream text are
    written out visibly (:mod:`pipelines.audit.visible`): ``\\xNN`` in text, Markdown and
    HTML, JSON escapes in JSON."""
    try:
        renderer = _RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}") from None
    text = renderer(report)
    return json_visible(text) if fmt == "json" else visible(text)


__all__ = ["FORMATS", "build_report", "render"]

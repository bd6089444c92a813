"""The report of a claims check, in the drift report's formats: text, json, md, html."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

from pipelines.audit.claims import STATUSES

FORMATS = ("text", "json", "md", "html")


def _verdict(report: dict[str, Any]) -> str:
    counts = report["counts"]
    total = sum(counts.values())
    noun = "claim" if total == 1 else "claims"
    listed = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    head = f"{total} {noun} checked" + (f": {listed}" if listed else "")
    bad = len(report["bad_rows"])
    return head + (f"; {bad} row{'s' if bad != 1 else ''} could not be read" if bad else "")


def change_phrase(change: dict[str, Any]) -> str:
    before = change["before"] or "first check"
    at = f" (revision {change['at_revision']})" if change["at_revision"] is not None else ""
    return f"{change['claim_id']} ({change['doc_id']}): {before} → {change['after']}{at}"


def render_text(report: dict[str, Any]) -> str:
    out = [f"claims of {report['claim_set']}: {_verdict(report)}"]
    for claim in report["claims"]:
        if claim["status"] != "holds":
            out.append(f"{claim['status'].upper():<14} {claim['claim_id']}: {claim['message']}")
    if report["changed"]:
        out.append(f"changed since the previous check ({len(report['changed'])}):")
        out += [f"  {change_phrase(c)}" for c in report["changed"]]
    for bad in report["bad_rows"]:
        out.append(f"BAD ROW        {bad['origin']}: {bad['problem']}")
    return "\n".join(out) + "\n"


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_md(report: dict[str, Any]) -> str:
    out = [f"# Claims of {_md(report['claim_set'])}", "", _verdict(report) + ".", ""]
    drifted = [c for c in report["claims"] if c["status"] != "holds"]
    if drifted:
        out += ["| status | claim | document | why |", "|---|---|---|---|"]
        out += [
            f"| {c['status']} | `{_md(c['claim_id'])}` | `{_md(c['doc_id'])}` | "
            f"{_md(c['message'])} |"
            for c in drifted
        ]
        out.append("")
    if report["changed"]:
        out += ["## Changed since the previous check", ""]
        out += [f"- {_md(change_phrase(c))}" for c in report["changed"]]
        out.append("")
    if report["bad_rows"]:
        out += ["## Rows that could not be read", ""]
        out += [f"- {_md(b['origin'])}: {_md(b['problem'])}" for b in report["bad_rows"]]
        out.append("")
    return "\n".join(out)


def render_html(report: dict[str, Any]) -> str:
    e = html.escape
    title = f"Claims of {report['claim_set']}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        f"<title>{e(title)}</title></head>",
        "<body>",
        f"<h1>{e(title)}</h1>",
        f"<p>{e(_verdict(report))}</p>",
    ]
    drifted = [c for c in report["claims"] if c["status"] != "holds"]
    if drifted:
        out.append("<table><tr><th>status</th><th>claim</th><th>document</th><th>why</th></tr>")
        out += [
            f'<tr class="{e(c["status"])}"><td>{e(c["status"])}</td>'
            f"<td><code>{e(c['claim_id'])}</code></td><td><code>{e(c['doc_id'])}</code></td>"
            f"<td>{e(c['message'])}</td></tr>"
            for c in drifted
        ]
        out.append("</table>")
    if report["changed"]:
        out.append("<h2>Changed since the previous check</h2><ul>")
        out += [f"<li>{e(change_phrase(c))}</li>" for c in report["changed"]]
        out.append("</ul>")
    if report["bad_rows"]:
        out.append("<h2>Rows that could not be read</h2><ul>")
        out += [f"<li>{e(b['origin'])}: {e(b['problem'])}</li>" for b in report["bad_rows"]]
        out.append("</ul>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


_RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "text": render_text,
    "json": render_json,
    "md": render_md,
    "html": render_html,
}


def render(report: dict[str, Any], fmt: str) -> str:
    """A claims check's ``as_json()`` in one of :data:`FORMATS`."""
    try:
        return _RENDERERS[fmt](report)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}") from None

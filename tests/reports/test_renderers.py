"""The report renderers on reports built in memory: hostile upstream text is escaped in
HTML, the drift and claims reports share one dispatch, one base page and one stylesheet,
and the templates ship with the package."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources

import pytest

from pipelines.checks.claims import ClaimsCheck, ClaimVerdict
from pipelines.checks.claims_file import BadClaim, Claim
from pipelines.checks.diffing import diff_snapshots
from pipelines.checks.target_drift import TargetDrift
from pipelines.reports.drift_model import DriftedDocument, DriftReport, drifted_document
from pipelines.reports.formats import FORMATS, render
from warehouse.asof import Point
from warehouse.claims import StatusChange
from warehouse.drift import Drift, DriftRow, RevisionRef

HOSTILE = "<script>alert('x')</script>&\""
HOSTILE_HTML = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;&quot;"
WHEN = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)


def _ref(revision: int, content_hash: str, **extra: str) -> RevisionRef:
    return RevisionRef(revision, content_hash, "text/markdown", revision, WHEN, **extra)


def _report(**extra: object) -> DriftReport:
    old = _ref(1, "a" * 64)
    new = _ref(2, "b" * 64, source_url=f'https://example.org/"><img src=x>{HOSTILE}')
    row = DriftRow(f"github/{HOSTILE}", "github", "file", "changed", old, new, old, [old, new])
    bodies = {
        old.content_hash or "": ("text/markdown", f"# {HOSTILE}\nold line\n".encode()),
        new.content_hash or "": ("text/markdown", f"# {HOSTILE}\nnew line\n".encode()),
    }
    counts = {"github": {"new": 0, "changed": 1, "unchanged": 0, "gone": 0, "restored": 0}}
    drift = Drift("c", Point(run_id=1), Point(run_id=2), None, None, counts, [row])
    return DriftReport(drift, WHEN, [drifted_document(row, bodies)], **extra)  # type: ignore[arg-type]


def test_a_hostile_document_id_and_url_are_escaped_in_html() -> None:
    page = render(_report(), "html")
    assert "<script>" not in page and "<img" not in page
    assert f"<code>github/{HOSTILE_HTML}</code>" in page
    assert f"receipts show github/{HOSTILE_HTML} --revision 2" in page
    assert 'href="https://example.org/&quot;&gt;&lt;img src=x&gt;' in page
    assert f'<span class="ctx"> # {HOSTILE_HTML}</span>' in page


def test_hostile_claims_are_escaped_in_html() -> None:
    claim = Claim(HOSTILE, f"doc/{HOSTILE}", "a quote", revision=1)
    verdict = ClaimVerdict(claim, "missing", "absent", 1, 1)
    bad = BadClaim(f"line {HOSTILE}", HOSTILE)
    page = render(ClaimsCheck(f"set {HOSTILE}", [verdict], [bad], []), "html")
    assert "<script>" not in page
    assert f"<title>Claims of set {HOSTILE_HTML}</title>" in page
    assert f'<span class="badge missing">missing</span> <code>{HOSTILE_HTML}</code></h3>' in page
    assert f"<dd><code>doc/{HOSTILE_HTML}</code></dd>" in page
    assert f"<li>line {HOSTILE_HTML}: {HOSTILE_HTML}</li>" in page
    quoted = verdict._replace(claim=replace(claim, quote=HOSTILE + "\u202e"))
    page = render(ClaimsCheck("set", [quoted], [], []), "html")
    assert f'<blockquote class="quote">{HOSTILE_HTML}\\u202e</blockquote>' in page


def test_drift_and_claims_pages_share_the_base_page_and_stylesheet() -> None:
    check = ClaimsCheck("claims.ndjson", [], [], [])
    drift_page, claims_page = render(_report(), "html"), render(check, "html")
    css = resources.files("pipelines.reports").joinpath("templates/report.css").read_text()
    for page, footer in ((drift_page, "drift"), (claims_page, "claims")):
        assert page.startswith('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">')
        assert f"<style>\n{css}</style>" in page
        assert page.endswith(f"<footer>receipts {footer} report</footer>\n</body>\n</html>\n")


def test_sections_of_target_drift_and_claims_in_every_format() -> None:
    target = TargetDrift("sanity", "ns", 3, edited=["doc-a"], drafts=["drafts.doc-b"])
    change = StatusChange("claim-1", "doc-a", "holds", "stale", 2, 2)
    report = _report(target_drift=target, claims_changed=[change])
    assert report.found
    text = render(report, "text")
    assert "target drift in sanity (namespace ns): reported, nothing overwritten" in text
    assert "  edited in the target (owned fields changed): doc-a" in text
    assert "  claim-1 (doc-a): holds → stale (revision 2)" in text
    assert "- edited in the target (owned fields changed): `doc-a`" in render(report, "md")
    page = render(report, "html")
    assert "<li>open draft (publishing it in the Studio replaces our update): " in page
    assert "<code>drafts.doc-b</code></li>" in page
    assert "<li>claim-1 (doc-a): holds → stale (revision 2)</li>" in page
    data = json.loads(render(report, "json"))
    assert data["target_drift"]["edited"] == ["doc-a"]
    assert data["claims"]["changed"][0]["after"] == "stale"


def test_a_word_diff_in_html_marks_only_the_changed_words() -> None:
    tail = " of a summary long enough to be diffed word by word, not as two values"
    old = f'{{"summary": "the <b>old</b> text{tail}"}}'.encode()
    new = f'{{"summary": "the new text{tail}"}}'.encode()
    report = _report()
    diff = diff_snapshots(old, "application/json", new, "application/json")
    doc = DriftedDocument(report.documents[0].row, "revision 1 → revision 2", diff)
    page = render(DriftReport(report.drift, WHEN, [doc]), "html")
    assert "<del>&lt;b&gt;old&lt;/b&gt;</del><ins>new</ins>" in page
    assert '<td colspan="2" class="words">' in page and "<b>" not in page


@pytest.mark.parametrize("report", [_report(), ClaimsCheck("set", [], [], [])])
def test_one_dispatch_refuses_an_unknown_format(report: DriftReport | ClaimsCheck) -> None:
    assert FORMATS == ("text", "json", "md", "html")
    assert all(render(report, fmt).endswith("\n") or fmt == "md" for fmt in FORMATS)
    with pytest.raises(ValueError, match="unknown format 'pdf'; valid: text, json, md, html"):
        render(report, "pdf")


def test_control_characters_are_shown_in_a_drift_report() -> None:
    old = _ref(1, "a" * 64)
    row = DriftRow("doc/\x1b]0;title\x07", "github", "file", "new", None, old, None, [old])
    counts = {"github": {"new": 1, "changed": 0, "unchanged": 0, "gone": 0, "restored": 0}}
    drift = Drift(None, Point(run_id=0), Point(run_id=1), None, None, counts, [row])
    report = DriftReport(drift, WHEN, [drifted_document(row, {}, ["c"])])
    for fmt in FORMATS:
        shown = render(report, fmt)
        assert "\x1b" not in shown and "\x07" not in shown, fmt
    assert "doc/\\x1b]0;title\\x07 (corpus c)" in render(report, "text")

"""What a person reads of a document in the HTML reports: the upstream's own page (not the
API JSON), a new document's title and summary, links to the web app's pages when asked, and
a claims page with the quotes, the cited revisions, the claims that hold and their status
history."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipelines.checks.claims import ClaimsCheck, ClaimVerdict
from pipelines.checks.claims_file import Claim
from pipelines.reports.drift_model import drifted_document
from pipelines.reports.html import render_claims_html, render_drift_html
from pipelines.reports.reader_pages import ReaderView, reader_view
from tests import corpus_fixture as fixture
from tests.conftest import cli
from tests.reports.test_renderers import HOSTILE, HOSTILE_HTML, WHEN, _report
from warehouse.claims import ClaimHistoryRow
from warehouse.drift import DriftRow, RevisionRef

COMMIT = "8d2e4f6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e"


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("doc_id", "url", "commit", "body", "expected"),
    [
        (
            "github/acme/handbook/docs/a b.md",
            f"https://raw.githubusercontent.com/acme/handbook/{COMMIT}/docs/a%20b.md",
            COMMIT,
            b"# Returns policy\n\nCustomers may return\na vehicle.\n\n## More\n",
            ReaderView(
                f"https://github.com/acme/handbook/blob/{COMMIT}/docs/a%20b.md",
                "Returns policy",
                "Customers may return a vehicle.",
            ),
        ),
        (
            "forem/article/1234",
            "https://dev.to/api/articles/1234",
            None,
            _json(
                {
                    "title": "Timeouts",
                    "description": "We <b>retried</b>\n &amp; waited",
                    "url": "https://dev.to/sam/timeouts-1a2b",
                }
            ),
            ReaderView(  # plain text: kept as written, on one line
                "https://dev.to/sam/timeouts-1a2b", "Timeouts", "We <b>retried</b> &amp; waited"
            ),
        ),
        (
            "forem/comment/3ee9l",
            "https://forem.example/api/comments?a_id=1234",
            None,
            _json(
                {
                    "id_code": "3ee9l",
                    "user": {"username": "sam_qa"},
                    "body_html": "<p>Hi &amp; bye</p>",
                }
            ),
            ReaderView(  # HTML: the text a reader sees
                "https://forem.example/sam_qa/comment/3ee9l", "comment by sam_qa", "Hi & bye"
            ),
        ),
        (  # a deleted comment has no user: no page to read
            "forem/comment/2a4bc",
            "https://dev.to/api/comments?a_id=1234",
            None,
            _json({"id_code": "2a4bc", "user": {}, "body_html": "<p>[deleted]</p>"}),
            ReaderView(None, None, "[deleted]"),
        ),
        (
            "nhtsa/recall/22V999101",
            "https://api.nhtsa.gov/recalls/campaignNumber?campaignNumber=22V999101",
            None,
            _json({"record": {"Component": "BRAKES", "Summary": "The CMBS may brake."}}),
            ReaderView(
                "https://www.nhtsa.gov/recalls?nhtsaId=22V999101", "BRAKES", "The CMBS may brake."
            ),
        ),
        (
            "nhtsa/investigation/PE24001",
            "https://api.nhtsa.gov/safetyIssues/byNhtsaId?nhtsaId=PE24001",
            None,
            _json(
                {
                    "record": {"subject": "Air bags", "summary": "Opened."},
                    "associatedDocuments": [
                        {"url": "javascript:alert(1)"},
                        {"url": "https://static.nhtsa.gov/odi/inv/2024/INOA-PE24001.pdf"},
                    ],
                }
            ),
            ReaderView(
                "https://static.nhtsa.gov/odi/inv/2024/INOA-PE24001.pdf", "Air bags", "Opened."
            ),
        ),
        (  # a complaint has no page of its own: the report keeps the API URL
            "nhtsa/complaint/11561423",
            "https://api.nhtsa.gov/complaints/odinumber?odinumber=11561423",
            None,
            _json({"components": "ENGINE", "summary": "Stalled."}),
            ReaderView(None, "ENGINE", "Stalled."),
        ),
        (  # a record's url field is upstream text: only http(s) is a page
            "forem/article/9",
            "https://dev.to/api/articles/9",
            None,
            _json({"title": "x", "url": "javascript:alert(1)"}),
            ReaderView(None, "x", None),
        ),
        (
            "forem/article/9",
            "https://dev.to/api/articles/9",
            None,
            b"not json",
            ReaderView(None, None, None),
        ),
    ],
)
def test_the_page_a_person_reads(
    doc_id: str, url: str, commit: str | None, body: bytes, expected: ReaderView
) -> None:
    media = "text/markdown" if doc_id.startswith("github/") else "application/json"
    assert reader_view(doc_id, url, commit, body, media) == expected


def test_a_long_summary_is_cut_on_one_line() -> None:
    body = _json({"title": "t", "description": "word\n" * 200})
    summary = reader_view("forem/article/1", "https://dev.to/api/articles/1", None, body).summary
    assert summary is not None and len(summary) <= 280 and summary.endswith("…")
    assert "\n" not in summary


def test_a_new_documents_title_and_summary_are_escaped() -> None:
    ref = RevisionRef(
        1, "c" * 64, "application/json", 4, WHEN, source_url="https://dev.to/api/articles/7"
    )
    row = DriftRow("forem/article/7", "forem", "article", "new", None, ref, None, [ref])
    body = _json({"title": HOSTILE, "description": f"{HOSTILE}\u202e", "url": "https://dev.to/a/b"})
    doc = drifted_document(row, {"c" * 64: ("application/json", body)})
    report = _report()
    page = render_drift_html(type(report)(report.drift, WHEN, [doc]))
    assert "<script>" not in page and "\u202e" not in page
    assert f'<p class="doc-title">{HOSTILE_HTML}</p>' in page
    assert f'<p class="summary">{HOSTILE_HTML}\\u202e</p>' in page
    assert '<a class="source" href="https://dev.to/a/b">' in page
    assert "fetched from <code>https://dev.to/api/articles/7</code>" in page


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("class") == "doc":
            self.links.append(("a", values.get("href") or ""))


def _doc_links(page: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    return [href for _, href in parser.links]


def test_document_links_go_where_the_caller_says() -> None:
    def url(doc_id: str) -> str:
        return f"/documents/{doc_id}?x=<b>"

    report = _report()
    assert _doc_links(render_drift_html(report)) == []
    doc_id = report.documents[0].row.doc_id
    assert _doc_links(render_drift_html(report, document_url=url)) == [url(doc_id)]
    assert "?x=&lt;b&gt;" in render_drift_html(report, document_url=url)
    claim = Claim("c1", "nhtsa/recall/1", "a quote", revision=1)
    check = ClaimsCheck("set", [ClaimVerdict(claim, "holds", None, 1, 1, None, (1,))], [], [])
    assert _doc_links(render_claims_html(check)) == []
    assert _doc_links(render_claims_html(check, document_url=url)) == [url("nhtsa/recall/1")]


def _history(claim_id: str, *statuses: str, claim_set: str = "set") -> list[ClaimHistoryRow]:
    return [
        ClaimHistoryRow(
            n, claim_set, None, datetime(2026, 11, n, tzinfo=UTC), "d", "q", 1, None, s, 1, None, []
        )
        for n, s in enumerate(statuses, start=1)
    ]


def test_the_claims_page_shows_quotes_citations_holding_claims_and_history() -> None:
    holds = ClaimVerdict(
        Claim("kept", "doc/a", "still here", revision=2), "holds", None, 2, 2, None, (1, 2)
    )
    stale = ClaimVerdict(
        Claim("moved", "doc/b", "was here", revision=1), "stale", None, 1, 3, 3, (1,)
    )
    check = ClaimsCheck("set", [holds, stale], [], [])
    history = {
        "moved": _history("moved", "holds", "stale")
        + _history("moved", "missing", claim_set="other"),
    }
    page = render_claims_html(check, history=history)
    assert page.index('id="claim-1" class="claim stale"') < page.index('class="claim holds"')
    assert '<blockquote class="quote">still here</blockquote>' in page
    assert '<blockquote class="quote">was here</blockquote>' in page
    assert "receipts show doc/a --revision 2" in page and "<dd>revision 3</dd>" in page
    assert "<dt>found in</dt><dd>revision 1, revision 2</dd>" in page
    listed = page.split('<ol class="history"')
    assert len(listed) == 2  # only the claim with stored checks; only this set's checks
    assert "check 1, 2026-11-01T00:00:00Z →" in listed[1] and "missing" not in listed[1]


def test_the_claims_report_through_the_cli_has_its_history(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    warehouse = tmp_path / "w.duckdb"
    warehouse.write_bytes(Path(fixture.shared(tmp_path_factory)).read_bytes())
    claims = tmp_path / "c.ndjson"
    row = {"claim_id": "holds", "doc_id": "nhtsa/complaint/11561420", "revision": 1}
    claims.write_text(json.dumps(row | {"quote": "The infotainment screen goes blank"}) + "\n")
    args = ("verify-claims", "--file", claims, "--warehouse", warehouse, "--format", "html")
    assert cli(*args).exit_code == 0
    page = cli(*args, "--record").stdout
    assert '<article id="claim-1" class="claim holds">' in page
    assert page.count('<span class="badge holds">holds</span> check ') == 2

"""Every report format, rendered as its reader renders it, holds no element that comes from
upstream text: the drift report and the claims report through the CLI in Markdown (rendered
by markdown-it-py, CommonMark with GFM tables and raw HTML allowed, as GitHub and most
wikis render it), in HTML (read by Python's HTML parser), as text and as JSON.

Each report is made twice from warehouses that differ only in the text that came from
outside: once with hostile text (backtick runs that close a two-backtick code span, raw
HTML, emphasis, links, table pipes, block markers, a line that closes a code fence), once
with plain words. The elements of the two renderings must be the same, in the same order,
and the hostile text must be there as text."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pipelines.reports.formats import render
from tests import corpus_fixture as fixture
from tests.conftest import cli
from tests.reports.test_renderers import _report as _in_memory_report
from warehouse.records import Listing, Record
from warehouse.store import Warehouse

# What a dev.to comment, a file, a JSON key and an id may hold; the calm text is the same
# with every other character a letter (same lengths, same words, same lines).
HOSTILE = (
    "``x`` <script>alert(1)</script> <marquee>m</marquee> *em* _u_ [l](http://e.example) "
    "![i](http://e.example/i.png) <!-- | ~~s~~ &amp; <http://e.example>"
)
HOSTILE_ID = "e5c`<b>x</b>|*y*"
HOSTILE_KEY = "<i>k</i>`"
HOSTILE_LINES = ["# heading", "- item", "````", "<div>block</div>", "| a | b |"]


def _calm(text: str, letter: str = "q") -> str:
    return "".join(c if c.isspace() else letter for c in text)


# (the calm key sorts before body_html, as the hostile one does)
CALM, CALM_ID, CALM_KEY = _calm(HOSTILE), "e5c" + _calm(HOSTILE_ID[3:]), _calm(HOSTILE_KEY, "a")
CALM_LINES = [_calm(line) for line in HOSTILE_LINES]

MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")


def _comment_of(id_code: str, body_html: str, extra: dict[str, str]) -> Record:
    return fixture.comment(id_code, body_html, "eve", extra)


def _build(path: Path, monkeypatch: pytest.MonkeyPatch, hostile: bool) -> str:
    text, id_code, key = (
        (HOSTILE, HOSTILE_ID, HOSTILE_KEY) if hostile else (CALM, CALM_ID, CALM_KEY)
    )
    lines = HOSTILE_LINES if hostile else CALM_LINES
    file_1 = "intro\n" + "\n".join(lines) + "\nold ending\n"
    file_2 = "intro\n" + "\n".join(lines) + "\n" + text + "\n"
    # a thread whose listing is not provably complete: the comment it misses is unseen
    scope = f"forem:comments:a_id={id_code}"
    missed, kept = (
        _comment_of(f"m{id_code}", "<p>a</p>", {}),
        _comment_of(f"k{id_code}", "<p>b</p>", {}),
    )
    first = [
        Listing(fixture.THREAD, [_comment_of(id_code, "<p>Looks fine</p>", {})], True),
        Listing(fixture.HANDBOOK, [fixture.handbook_file("docs/notes.md", file_1, "1" * 40)]),
        Listing(scope, [missed, kept], False),
    ]
    second = [
        Listing(
            fixture.THREAD,
            [_comment_of(id_code, f"<p>Looks {text} fine</p>", {key: text})],
            True,
        ),
        Listing(fixture.HANDBOOK, [fixture.handbook_file("docs/notes.md", file_2, "2" * 40)]),
        Listing(scope, [kept], False),
    ]
    with Warehouse.open(str(path)) as wh:
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[1], fixture.CORPUS, first)
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[2], fixture.CORPUS, second)
    return f"forem/comment/{id_code}"


@pytest.fixture
def warehouses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[bool, tuple[Path, Path]]:
    """For hostile and for calm text: a warehouse, and a claims file citing its comment."""
    built = {}
    for hostile in (True, False):
        folder = tmp_path / ("hostile" if hostile else "calm")
        folder.mkdir()
        doc_id = _build(folder / "w.duckdb", monkeypatch, hostile)
        claim_id = HOSTILE_ID if hostile else CALM_ID
        rows = [
            {"claim_id": claim_id, "doc_id": doc_id, "quote": "Looks fine", "revision": 1},
            {"claim_id": claim_id, "doc_id": doc_id, "quote": "again", "revision": 1},
        ]
        claims = folder / "claims.ndjson"
        claims.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        built[hostile] = (folder / "w.duckdb", claims)
    monkeypatch.setenv("RECEIPTS_NOW", fixture.REPORT_TIME)
    return built


def _report(kind: str, fmt: str, warehouse: Path, claims: Path) -> str:
    if kind == "drift":
        result = cli("drift", "--warehouse", warehouse, "--format", fmt)
        assert result.exit_code == 0, result.output
    else:
        result = cli("verify-claims", "--file", claims, "--warehouse", warehouse, "--format", fmt)
        assert result.exit_code == 1, result.output  # the repeated claim is a bad row
    return result.stdout


class _Elements(HTMLParser):
    """The start tags of a page in order (with their attribute names), and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(name for name, _ in attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_comment_of(self, data: str) -> None:
        self.tags.append(("<!-- comment -->", ()))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _elements(html: str) -> _Elements:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser


def _as_html(fmt: str, output: str) -> str:
    return MARKDOWN.render(output) if fmt == "md" else output


@pytest.mark.parametrize("kind", ["drift", "claims"])
@pytest.mark.parametrize("fmt", ["md", "html"])
def test_no_element_comes_from_upstream_text(
    warehouses: dict[bool, tuple[Path, Path]], kind: str, fmt: str
) -> None:
    hostile = _elements(_as_html(fmt, _report(kind, fmt, *warehouses[True])))
    calm = _elements(_as_html(fmt, _report(kind, fmt, *warehouses[False])))
    assert hostile.tags == calm.tags
    # none of the tags in the hostile text (the reports themselves use none of them)
    assert not {"script", "marquee", "img", "div", "b", "i"} & {tag for tag, _ in hostile.tags}
    shown = "".join(hostile.text)
    assert HOSTILE_ID in shown  # the id, shown as the characters it is
    if kind == "drift":
        assert "<script>alert(1)</script>" in shown and "<div>block</div>" in shown
        assert f"a_id={HOSTILE_ID}" in shown  # the unseen comment's scope


@pytest.mark.parametrize("kind", ["drift", "claims"])
def test_the_text_report_keeps_each_value_on_its_line(
    warehouses: dict[bool, tuple[Path, Path]], kind: str
) -> None:
    hostile = _report(kind, "text", *warehouses[True])
    calm = _report(kind, "text", *warehouses[False])
    assert len(hostile.splitlines()) == len(calm.splitlines())
    assert HOSTILE_ID in hostile


@pytest.mark.parametrize("kind", ["drift", "claims"])
def test_json_keeps_upstream_text_as_it_is(
    warehouses: dict[bool, tuple[Path, Path]], kind: str
) -> None:
    report: Any = json.loads(_report(kind, "json", *warehouses[True]))
    flat = json.dumps(report, ensure_ascii=False)
    assert HOSTILE_ID in flat
    if kind == "drift":
        assert HOSTILE_KEY.replace("`", "") in flat and "<marquee>m</marquee>" in flat


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,<b>x</b>", "JAVASCRIPT:x"])
def test_a_source_url_that_is_not_http_is_shown_not_linked(url: str) -> None:
    report = _in_memory_report()
    doc = report.documents[0]
    new = replace(doc.row.new, source_url=url)
    row = replace(doc.row, new=new, timeline=[doc.row.timeline[0], new])
    page = render(replace(report, documents=[replace(doc, row=row)]), "html")
    assert '<a class="source"' not in page
    assert "source: <code>" in page

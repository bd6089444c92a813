"""The proof page's HTML as written, before any browser: one self-contained file, the bundle
embedded as inert JSON that no upstream text can break out of, and a Content-Security-Policy
that lets only the page's own script and style run and no connection be made."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from pipelines.proofs_html import render_bundle_html
from pipelines.proofs_html.page import script_json
from tests.proofs_html import bundles as b


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each script element, as an
    HTML parser (the browser's tokenizer rules for script data) reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parsed(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


def _csp(page: str) -> str:
    ((_, attrs),) = [(t, a) for t, a in _parsed(page).tags if t == "meta" and a.get("http-equiv")]
    return attrs["content"] or ""


@pytest.mark.parametrize("make", [b.good_bundle, b.hostile_bundle], ids=["good", "hostile"])
def test_the_bundle_is_embedded_whole_and_inert(make: Any) -> None:
    bundle = make()
    page = render_bundle_html(bundle)
    parsed = _parsed(page)
    scripts = [a for t, a in parsed.tags if t == "script"]
    assert scripts == [{"type": "application/json", "id": "bundle"}, {}]
    assert json.loads(parsed.scripts[0]) == bundle  # the data element holds the bundle
    # Nothing of the bundle became markup: the only elements are the template's own.
    assert {t for t, _ in parsed.tags} <= {
        "html", "head", "meta", "title", "style", "body", "main", "header", "p", "h1",
        "h2", "code", "section", "ol", "blockquote", "q", "dl", "dt", "dd", "a", "pre",
        "input", "button", "label", "script", "div", "ul",
    }  # fmt: skip
    assert not [a for _, a in parsed.tags if {"src", "onerror", "onload"} & set(a)]


def test_no_bundle_text_can_end_the_data_element() -> None:
    value = {"quote": b.HOSTILE + "</SCRIPT >\u2029<!-- -->"}
    text = script_json(value)
    assert not set(text) & set("<>&") and text.isascii()
    assert json.loads(text) == value


def test_only_the_pages_own_script_and_style_may_run() -> None:
    page = render_bundle_html(b.hostile_bundle())
    policy = dict(part.strip().split(" ", 1) for part in _csp(page).split(";"))
    assert policy["default-src"] == "'none'"  # so no connection, frame, font or object
    code = _parsed(page).scripts[1]
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    assert policy["script-src"] == f"'sha256-{digest}'"
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert policy["style-src"] == f"'sha256-{digest}'"


def test_the_static_heading_is_escaped_text() -> None:
    page = render_bundle_html(b.hostile_bundle())
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None
    assert title.group(1).startswith("Proof: nhtsa/complaint/&lt;/script&gt;&lt;script&gt;")
    assert "\u202e" not in page.split("<script", 1)[0]  # written out as \u202e


@pytest.mark.parametrize("bundle", [{}, {"document": "not an object"}, {"document": {"title": 7}}])
def test_any_json_object_renders(bundle: dict[str, Any]) -> None:
    # The page itself says what is wrong (its format step); rendering never refuses.
    page = render_bundle_html(bundle)
    assert json.loads(_parsed(page).scripts[0]) == bundle

"""The demo's HTML drift report as a reader sees it, in headless Chromium: the summary on the
first screen, nothing wider than the window, every drifted document linked to its source
(at its commit for pinned files), and dark mode with readable contrast. Screenshots are
saved under ``out/report-browser/``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from demo.run import DRIFT_SINCE, Layout, run_demo
from tests.browser import CONTRAST_JS, chromium
from tests.conftest import REPO

SCREENSHOTS = REPO / "out" / "report-browser"
WIDTH, HEIGHT = 1280, 800


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("demo")
    layout = Layout(warehouse=root / "receipts.duckdb", out=root / "out")
    run_demo(layout, echo=lambda _line: None)
    return layout


@pytest.fixture(scope="module")
def page(demo: Layout) -> Iterator[Any]:
    driver = chromium(WIDTH, HEIGHT)
    try:
        driver.get((demo.out / "drift.html").as_uri())
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def report(demo: Layout) -> dict[str, Any]:
    from tests.conftest import cli

    result = cli("drift", "--warehouse", demo.warehouse, "--since", DRIFT_SINCE, "--format", "json")
    value: dict[str, Any] = json.loads(result.stdout)
    return value


def _screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.save_screenshot(str(SCREENSHOTS / name))


def test_the_summary_is_on_the_first_screen(page: Any) -> None:
    viewport = page.execute_script("return window.innerHeight")
    top, bottom = page.execute_script(
        "const r = document.getElementById('summary').getBoundingClientRect();"
        "return [r.top, r.bottom];"
    )
    _screenshot(page, "drift-light.png")
    assert top >= 0 and bottom <= viewport, (top, bottom, viewport)


def test_nothing_overflows_horizontally(page: Any) -> None:
    scroll, client = page.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= client
    wide = page.execute_script(
        "return [...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
        ".map(e => e.tagName + ' ' + e.textContent.slice(0, 40))"
    )
    assert wide == []


def test_every_drifted_document_links_to_its_source(page: Any, report: dict[str, Any]) -> None:
    links = page.execute_script(
        "return [...document.querySelectorAll('#documents article')].map(a => ["
        "a.querySelector('h3 code').textContent,"
        "[...a.querySelectorAll('a.source')].map(l => l.href)])"
    )
    shown = {doc_id: hrefs for doc_id, hrefs in links}
    assert set(shown) == {doc["doc_id"] for doc in report["documents"]}
    for doc in report["documents"]:
        hrefs = shown[doc["doc_id"]]
        live = [r for r in doc["timeline"] if not r["tombstone"]]
        assert live[-1]["source_url"] in hrefs, (doc["doc_id"], hrefs)
        if doc["source"] == "github":  # pinned files: the link names the commit
            commit = live[-1]["source_commit"]
            assert commit and all(commit in href for href in hrefs)
    instructions = page.execute_script(
        "return [...document.querySelectorAll('#documents .timeline code.show')]"
        ".map(c => c.textContent)"
    )
    assert instructions and all(i.startswith("receipts show ") for i in instructions)


READABLE = "h1, h2, h3, p, li, td, th, code, a, .badge, .meta"


def test_light_mode_is_readable(page: Any) -> None:
    checked = page.execute_script(CONTRAST_JS, READABLE)
    assert checked
    poor = [c for c in checked if c["ratio"] < 4.5]
    assert poor == [], poor[:5]


def test_dark_mode_is_readable(page: Any) -> None:
    page.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    try:
        dark = page.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches")
        assert dark
        _screenshot(page, "drift-dark.png")
        checked = page.execute_script(CONTRAST_JS, READABLE)
        assert checked
        poor = [c for c in checked if c["ratio"] < 4.5]
        assert poor == [], poor[:5]
    finally:
        page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})

"""The demo's HTML drift and claims reports as a reader sees them, in headless Chromium: the
summary on the first screen, nothing wider than the window (on a 400 px phone too), every
drifted document linked to the page a person reads (a pinned file at its commit), a new
document's title and summary, the claims that hold beside those that do not, and light
and dark mode with readable contrast. Screenshots are saved under ``out/report-browser/``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo.run import DRIFT_SINCE, Layout, run_demo
from tests.browser import CONTRAST_JS, chromium
from tests.conftest import REPO

SCREENSHOTS = REPO / "out" / "report-browser"
WIDTH, HEIGHT = 1280, 800
PHONE_WIDTH, PHONE_HEIGHT = 400, 800
DEMO_CLAIMS = REPO / "demo" / "claims.ndjson"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    root = tmp_path_factory.mktemp("demo")
    layout = Layout(warehouse=root / "receipts.duckdb", out=root / "out")
    run_demo(layout, echo=lambda _line: None)
    return layout


@pytest.fixture(scope="module")
def claims_html(demo: Layout) -> Path:
    """The demo's claims checked twice (the second recorded too): a claims report with a
    status history."""
    from tests.conftest import cli

    args = ("verify-claims", "--file", DEMO_CLAIMS, "--warehouse", demo.warehouse)
    cli(*args)
    result = cli(*args, "--record", "--format", "html")
    path = demo.out / "claims.html"
    path.write_text(result.stdout, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def phone() -> Iterator[Any]:
    """A phone's viewport (a desktop window cannot be made that narrow)."""
    driver = chromium(PHONE_WIDTH, PHONE_HEIGHT)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": PHONE_WIDTH, "height": PHONE_HEIGHT, "deviceScaleFactor": 1, "mobile": True},
        )
        yield driver
    finally:
        driver.quit()


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


def _overflowing(page: Any) -> list[str]:
    """What sticks out of the window to the right (the page scrolls sideways)."""
    scroll, client = page.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    wide: list[str] = page.execute_script(
        "return [...document.querySelectorAll('body *')]"
        ".filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
        ".map(e => e.tagName + ' ' + e.textContent.slice(0, 40))"
    )
    return wide + ([f"page {scroll} > {client}"] if scroll > client else [])


def test_nothing_overflows_horizontally(page: Any) -> None:
    assert _overflowing(page) == []


def test_a_phone_screen_needs_no_sideways_scrolling(
    phone: Any, demo: Layout, claims_html: Path
) -> None:
    for name, path in (("drift", demo.out / "drift.html"), ("claims", claims_html)):
        phone.get(path.as_uri())
        assert phone.execute_script("return document.documentElement.clientWidth") <= PHONE_WIDTH
        _screenshot(phone, f"{name}-phone.png")
        assert _overflowing(phone) == [], name
        size = phone.execute_script("return parseFloat(getComputedStyle(document.body).fontSize)")
        assert size >= 14, name  # still readable, not shrunk to fit


def test_every_drifted_document_links_to_the_page_a_person_reads(
    page: Any, report: dict[str, Any]
) -> None:
    links = page.execute_script(
        "return [...document.querySelectorAll('#documents article')].map(a => ["
        "a.querySelector('h3 code').textContent,"
        "[...a.querySelectorAll('a.source')].map(l => l.href),"
        "[...a.querySelectorAll('.fetched code')].map(c => c.textContent)])"
    )
    shown = {doc_id: (hrefs, fetched) for doc_id, hrefs, fetched in links}
    assert set(shown) == {doc["doc_id"] for doc in report["documents"]}
    for doc in report["documents"]:
        hrefs, fetched = shown[doc["doc_id"]]
        live = [r for r in doc["timeline"] if not r["tombstone"]]
        assert len(hrefs) == 1, (doc["doc_id"], hrefs)
        if doc["kind"] == "complaint":  # no page of its own on nhtsa.gov: the API URL
            assert hrefs == [live[-1]["source_url"]] and fetched == []
            continue
        # the upstream's page, never its API; where the bytes came from is still shown
        assert "/api/" not in hrefs[0] and "api.nhtsa.gov" not in hrefs[0], (doc, hrefs)
        assert fetched == [live[-1]["source_url"]]
        if doc["source"] == "github":  # pinned files: the page is the file at its commit
            commit = live[-1]["source_commit"]
            assert commit and hrefs[0].startswith("https://github.com/")
            assert f"/blob/{commit}/" in hrefs[0]
    new = page.execute_script(
        "return [...document.querySelectorAll('#documents article.new')].map(a => ["
        "(a.querySelector('p.doc-title') || {}).textContent,"
        "(a.querySelector('p.summary') || {}).textContent])"
    )
    assert new and all(title and summary for title, summary in new), new
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


def _readable_in_dark(page: Any, screenshot: str) -> str:
    """Check contrast with the page in dark mode; its background there."""
    page.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    try:
        dark = page.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches")
        assert dark
        _screenshot(page, screenshot)
        checked = page.execute_script(CONTRAST_JS, READABLE)
        assert checked
        poor = [c for c in checked if c["ratio"] < 4.5]
        assert poor == [], poor[:5]
        background: str = page.execute_script(BACKGROUND_JS)
        return background
    finally:
        page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


BACKGROUND_JS = "return getComputedStyle(document.body).backgroundColor"


def test_dark_mode_is_readable(page: Any) -> None:
    _readable_in_dark(page, "drift-dark.png")


@pytest.fixture(scope="module")
def claims_page(claims_html: Path) -> Iterator[Any]:
    driver = chromium(WIDTH, HEIGHT)
    try:
        driver.get(claims_html.as_uri())
        yield driver
    finally:
        driver.quit()


def test_the_claims_report_shows_every_claim_with_its_quote_and_history(
    claims_page: Any,
) -> None:
    rows = [json.loads(line) for line in DEMO_CLAIMS.read_text().splitlines()]
    shown = claims_page.execute_script(
        "return [...document.querySelectorAll('#claims article')].map(a => ["
        "a.querySelector('h3 code').textContent, a.querySelector('h3 .badge').textContent,"
        "a.querySelector('blockquote.quote').textContent,"
        "a.querySelectorAll('ol.history li').length])"
    )
    assert sorted(claim_id for claim_id, *_ in shown) == sorted(r["claim_id"] for r in rows)
    quotes = {r["claim_id"]: r["quote"] for r in rows}
    assert all(quote == quotes[claim_id] for claim_id, _, quote, _ in shown)
    statuses = [status for _, status, _, _ in shown]
    assert "holds" in statuses and statuses[-1] == "holds"  # those that hold come last
    assert any(status != "holds" for status in statuses)
    assert all(history == 2 for *_, history in shown)  # two checks recorded


def test_the_claims_report_is_styled_and_readable_in_light_and_dark(claims_page: Any) -> None:
    font = claims_page.execute_script("return getComputedStyle(document.body).fontFamily")
    assert "system-ui" in font  # the shared stylesheet, not the browser's Times
    light = claims_page.execute_script(BACKGROUND_JS)
    _screenshot(claims_page, "claims-light.png")
    assert [c for c in claims_page.execute_script(CONTRAST_JS, READABLE) if c["ratio"] < 4.5] == []
    assert _readable_in_dark(claims_page, "claims-dark.png") != light

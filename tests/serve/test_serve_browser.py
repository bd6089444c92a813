"""``receipts serve`` as a reader sees it, in headless Chromium, against the command running
as a process: every main page loads without a console error (a Content-Security-Policy
violation included), a document's timeline and its diff show the right revisions, a hostile
document's script never runs, and the pages fit a 400 px phone. Screenshots of each page go
into the test's tmp directory (named in the output)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import CONTRAST_JS, chromium
from tests.serve import served
from tests.serve.process import Served, serving

EDITED = "nhtsa/complaint/11561421"
POLICY = "github/acme/handbook/docs/policy.md"
MAIN_PAGES = [
    "/",
    "/search?q=stalled",
    f"/documents/{EDITED}",
    f"/documents/{EDITED}/diff?from=1&to=2",
    f"/documents/{POLICY}/diff?from=1&to=2",
    "/as-of?point=2",
    "/drift?from=2&to=4&corpus=fixture-corpus",
    "/claims",
    "/pushes",
    f"/documents/{served.HOSTILE_MD}",
    f"/documents/{served.HOSTILE_JSON}",
    "/documents/no/such/document",
]
PHONE_WIDTH = 400
READABLE = "h1, h2, p, th, td, dt, dd, code, a, label, .badge, .status, mark, del, ins, pre span"
READ_PAGES = [
    "/",
    f"/documents/{EDITED}",
    f"/documents/{POLICY}/diff?from=1&to=2",
    "/drift?from=2&to=4&corpus=fixture-corpus",
    "/claims",
    f"/documents/{served.HOSTILE_MD}",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(served.shared(tmp_path_factory)) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium(1280, 900, console=True)
    try:
        yield driver
    finally:
        driver.quit()


def _name(path: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in path).strip("_") or "index"


def test_the_main_pages_load_without_a_console_error(
    browser: Any, server: Served, tmp_path: Path
) -> None:
    browser.get_log("browser")
    for path in MAIN_PAGES:
        browser.get(server.url + path)
        assert browser.find_element("css selector", "main h1").text, path
        errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        if path.startswith("/documents/no/"):  # its 404 is the one error the console names
            errors = [e for e in errors if "404" not in e["message"]]
        assert errors == [], (path, errors)
        browser.save_screenshot(str(tmp_path / f"{_name(path)}.png"))
    print(f"screenshots in {tmp_path}")
    assert len(list(tmp_path.glob("*.png"))) == len(MAIN_PAGES)


def test_the_timeline_and_the_diff_show_the_right_revisions(browser: Any, server: Served) -> None:
    browser.get(f"{server.url}/documents/{EDITED}")
    items = browser.find_elements("css selector", "ol.timeline li")
    assert [i.find_element("css selector", "a").text for i in items] == [
        "revision 1",
        "revision 2",
    ]
    assert "run 4" in items[1].text and "current" in items[1].text
    items[1].find_element("link text", "diff 1 → 2").click()
    assert browser.current_url.endswith(f"/documents/{EDITED}/diff?from=1&to=2")
    assert browser.find_element("css selector", "main h1").text == "Revision 1 → revision 2"
    assert browser.find_element("css selector", "table.fields del").text == "highway"
    assert browser.find_element("css selector", "table.fields ins").text == "interstate"
    browser.get(f"{server.url}/documents/{POLICY}/diff?from=1&to=2")
    changed = browser.find_element("css selector", "table.side-by-side tr.changed")
    cells = changed.find_elements("css selector", "td")
    assert "30 days" in cells[1].text and "14 days" in cells[3].text


def test_a_hostile_document_cannot_run_script(browser: Any, server: Served) -> None:
    for path in (f"/documents/{served.HOSTILE_MD}", f"/documents/{served.HOSTILE_JSON}"):
        browser.get(server.url + path)
        ran = browser.execute_script(
            "return [document.title, document.scripts.length, document.images.length,"
            " document.querySelector('main').textContent]"
        )
        assert "pwned" not in ran[0]
        assert ran[1] == 0 and ran[2] == 0
        assert "<script>document.title='pwned'</script>" in ran[3]
        assert "\u202e" not in ran[3] and "\\u202e" in ran[3]


def test_pages_fit_a_phone(browser: Any, server: Served, tmp_path: Path) -> None:
    browser.set_window_size(PHONE_WIDTH, 850)
    try:
        for path in ("/", f"/documents/{EDITED}", "/drift?from=2&to=4&corpus=fixture-corpus"):
            browser.get(server.url + path)
            width = browser.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert width[0] <= width[1], (path, width)
            browser.save_screenshot(str(tmp_path / f"phone-{_name(path)}.png"))
    finally:
        browser.set_window_size(1280, 900)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_is_readable_in_light_and_dark_mode(
    browser: Any, server: Served, tmp_path: Path, scheme: str
) -> None:
    """WCAG AA contrast (4.5:1) for every piece of text, in the system's light and dark
    mode."""
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )
    try:
        for path in READ_PAGES:
            browser.get(server.url + path)
            background = browser.execute_script(
                "return getComputedStyle(document.body).backgroundColor"
            )
            assert (background == "rgb(21, 23, 26)") == (scheme == "dark"), background
            checked = browser.execute_script(CONTRAST_JS, READABLE)
            assert checked
            poor = [c for c in checked if c["ratio"] < 4.5]
            assert poor == [], (path, poor[:5])
            browser.save_screenshot(str(tmp_path / f"{scheme}-{_name(path)}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_the_plots_page_draws_its_charts_without_a_console_error(
    browser: Any, server: Served, tmp_path: Path
) -> None:
    pytest.importorskip("warehouse.series")
    pytest.importorskip("pipelines.serve.plots")
    browser.get_log("browser")
    browser.get(f"{server.url}/plots")
    charts = browser.find_elements("css selector", "figure.chart svg")
    assert len(charts) == 3 and all(c.size["width"] > 0 for c in charts)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    browser.save_screenshot(str(tmp_path / "plots.png"))

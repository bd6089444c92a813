"""`receipts prove --html` as a reader meets it: the bundle the CLI writes, its proof page
opened in headless Chromium from a file, every step green; the same page of a bundle whose
snapshot bytes were altered shows the snapshot step red. The proof page's own tests
(tests/proofs_html) use bundles made from primitives; this one closes the path through the
warehouse."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.proofs.verify_receipt import STEPS
from pipelines.proofs_html import render_bundle_html
from tests.browser import chromium
from tests.proofs.bad_bundles import BAD
from tests.proofs.conftest import COMPLAINT, Signed, load, prove

QUOTE = "the vehicle\u2019s automatic emergency braking engaged"
STEPS_JS = (
    "return [...document.querySelectorAll('#steps li.step')]"
    ".map(li => [li.dataset.step, li.dataset.status]);"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium(1024, 768, console=True)
    try:
        yield driver
    finally:
        driver.quit()


def _steps(browser: Any, page: Path) -> dict[str, str]:
    browser.get(page.as_uri())
    deadline = time.monotonic() + 20
    while browser.execute_script("return document.body.dataset.verdict") in ("running", None):
        assert time.monotonic() < deadline, "the page did not finish its checks"
        time.sleep(0.05)
    return dict(browser.execute_script(STEPS_JS))


def test_the_page_prove_writes_holds_in_the_browser(
    signed: Signed, tmp_path: Path, browser: Any
) -> None:
    out, page = tmp_path / "c.receipt.json", tmp_path / "c.html"
    code, stdout, stderr = prove(signed, out, COMPLAINT, QUOTE, "--html", page)
    assert code == 0, stderr
    assert f"the proof page: {page}" in stdout
    browser.get_log("browser")
    assert _steps(browser, page) == dict.fromkeys(STEPS, "ok")
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    marked = browser.execute_script("return document.querySelector('mark').textContent")
    assert marked == load(out)["quote"]["exact"]  # type: ignore[index]


def test_the_page_of_altered_bytes_fails_at_the_snapshot(
    signed: Signed, tmp_path: Path, browser: Any
) -> None:
    out = tmp_path / "c.receipt.json"
    code, _, stderr = prove(signed, out, COMPLAINT, QUOTE)
    assert code == 0, stderr
    bundle = load(out)
    breaks, step = BAD["tampered-bytes"]
    breaks(bundle, json.loads(out.read_bytes()))
    page = tmp_path / "tampered.html"
    page.write_text(render_bundle_html(bundle), encoding="utf-8")
    steps = _steps(browser, page)
    assert steps[step] == "failed"
    assert steps["format"] == "ok"

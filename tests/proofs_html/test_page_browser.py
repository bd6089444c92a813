"""The proof page as a reader sees it, in headless Chromium, opened from a file:// address:
the six steps run in the browser (Web Crypto), green when they hold, red with the reason
when one fails; the quote highlighted in its document; hostile upstream text shown as text,
never run; phone width and dark mode. Screenshots of a passing and a tampered bundle are
saved under ``out/proof-page/`` and their pixels checked at the steps."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.proofs_html import render_bundle_html
from tests.browser import CONTRAST_JS, chromium
from tests.conftest import REPO
from tests.proofs_html import bundles as b

READABLE = "h1, h2, p, li .badge, li strong, li .label, .reason, dd, code, mark"
SCREENSHOTS = REPO / "out" / "proof-page"
WIDTH, HEIGHT = 1280, 900
PHONE_WIDTH = 375
# The step colours of page.css (light mode): the left border of a step that holds / failed.
OK_RGB, FAILED_RGB = (0x11, 0x69, 0x2E), (0xA1, 0x14, 0x1C)

# Each step's status, reason and the colour of its left border.
STEPS_JS = """
return [...document.querySelectorAll('#steps li.step')].map(li => ({
  step: li.dataset.step, status: li.dataset.status,
  reason: (li.querySelector('.reason') || {}).textContent || '',
  border: getComputedStyle(li).borderLeftColor}));
"""
# The screenshot (a data: URL) decoded by the browser: the colour at the middle of each
# step's left border, and how many distinct colours the image has.
PIXELS_JS = """
const [png, done] = arguments;
const image = new Image();
image.onload = () => {
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const all = context.getImageData(0, 0, image.width, image.height).data;
  const colours = new Set();
  for (let i = 0; i < all.length; i += 4 * 97) {
    colours.add(all[i] << 16 | all[i + 1] << 8 | all[i + 2]);
  }
  const scale = image.width / window.innerWidth;
  const steps = [...document.querySelectorAll('#steps li.step')].map(li => {
    const r = li.getBoundingClientRect();
    const x = Math.round((r.left + 3) * scale), y = Math.round((r.top + r.height / 2) * scale);
    return [li.dataset.step, [...context.getImageData(x, y, 1, 1).data.slice(0, 3)]];
  });
  done({steps, colours: colours.size, width: image.width});
};
image.onerror = () => done({error: 'the screenshot does not decode'});
image.src = 'data:image/png;base64,' + png;
"""


# A record of about 1 MB whose quoted string is in its middle (canonical JSON sorts keys).
LARGE = {
    "a_before": [{"n": n, "text": "x" * 80 + "\u00e9"} for n in range(5000)],
    **b.RECORD,
    "z_after": [{"n": n, "text": "\U0001d518" * 40} for n in range(3000)],
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every page of the tests, written as a user writes them: render_bundle_html to a file."""
    root = tmp_path_factory.mktemp("proof-pages")
    bundles = {
        "good": b.good_bundle(),
        "markdown": b.markdown_bundle(),
        "hostile": b.hostile_bundle(),
        "forged": b.good_bundle(signer=b.OTHER),
        "large": b.good_bundle(LARGE),
        **{name: b.bad_bundle(name) for name in b.BAD},
    }
    for name, bundle in bundles.items():
        (root / f"{name}.html").write_text(render_bundle_html(bundle), encoding="utf-8")
    (root / "truncated.receipt.json").write_text(b.truncated_text(), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium(WIDTH, HEIGHT, console=True)
    try:
        yield driver
    finally:
        driver.quit()


def _checked(browser: Any) -> list[dict[str, str]]:
    """The steps once the page has run them (the verdict leaves "running")."""
    deadline = time.monotonic() + 20
    while browser.execute_script("return document.body.dataset.verdict") in ("running", None):
        assert time.monotonic() < deadline, "the page did not finish its checks"
        time.sleep(0.05)
    steps: list[dict[str, str]] = browser.execute_script(STEPS_JS)
    return steps


def _open(browser: Any, page: Path) -> list[dict[str, str]]:
    browser.get(page.as_uri())
    return _checked(browser)


def _statuses(steps: list[dict[str, str]]) -> tuple[str, ...]:
    return tuple(step["status"] for step in steps)


def _screenshot_pixels(browser: Any, name: str) -> dict[str, Any]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.execute_script("window.scrollTo(0, 0)")
    png = browser.get_screenshot_as_base64()
    (SCREENSHOTS / name).write_bytes(base64.b64decode(png))
    pixels: dict[str, Any] = browser.execute_async_script(PIXELS_JS, png)
    return pixels


def _near(rgb: list[int], expected: tuple[int, int, int]) -> bool:
    return all(abs(a - e) <= 8 for a, e in zip(rgb, expected, strict=True))


def test_a_good_bundle_holds_at_every_step(browser: Any, pages: Path) -> None:
    browser.get_log("browser")  # drop what earlier pages said
    steps = _open(browser, pages / "good.html")
    assert [s["step"] for s in steps] == list(b.STEPS)
    assert _statuses(steps) == (b.OK,) * 6, steps
    assert (
        browser.execute_script("return document.getElementById('verdict').dataset.status") == "ok"
    )
    # The quote highlighted in the pretty-printed record, inside the string at /summary.
    bundle = b.good_bundle()
    mark, record = browser.execute_script(
        "const m = document.querySelector('#document mark');"
        "return [m.textContent, document.getElementById('document').textContent]"
    )
    assert mark == bundle["quote"]["exact"]
    assert json.loads(record) == b.RECORD
    assert f'"summary": "{b.SUMMARY}"' in record
    claim, archived = browser.execute_script(
        "return [[...document.querySelectorAll('#claim-history li')].map(li => li.textContent),"
        " document.getElementById('archived-url').href]"
    )
    assert claim == [
        f"check {n}: holds at 2026-01-0{n}T00:00:00.000000Z, revision 2" for n in (1, 2, 3)
    ]
    assert archived == bundle["citation"]["robust_links"]["data-versionurl"]
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    pixels = _screenshot_pixels(browser, "good.png")
    assert pixels.get("colours", 0) > 8, pixels  # not blank
    assert all(_near(rgb, OK_RGB) for _, rgb in pixels["steps"]), pixels["steps"]


def test_a_tampered_bundle_is_red_at_the_snapshot(browser: Any, pages: Path) -> None:
    steps = _open(browser, pages / "tampered-bytes.html")
    assert _statuses(steps) == b.BAD["tampered-bytes"][1]
    pixels = _screenshot_pixels(browser, "tampered.png")
    assert pixels.get("colours", 0) > 8, pixels
    colour = dict(pixels["steps"])
    assert _near(colour["snapshot"], FAILED_RGB), colour
    assert _near(colour["format"], OK_RGB) and _near(colour["entry"], OK_RGB), colour
    assert not _near(colour["quote"], OK_RGB) and not _near(colour["quote"], FAILED_RGB)
    verdict = browser.execute_script("return document.getElementById('verdict').textContent")
    assert "snapshot" in verdict and "does not hold" in verdict


@pytest.mark.parametrize("name", list(b.BAD))
def test_each_bad_bundle_fails_at_its_step(browser: Any, pages: Path, name: str) -> None:
    steps = _open(browser, pages / f"{name}.html")
    assert _statuses(steps) == b.BAD[name][1], steps
    reasons = " | ".join(s["reason"] for s in steps if s["status"] == b.FAILED)
    assert b.REASONS[name] in reasons
    for step in steps:  # the colour follows the status
        red = step["border"] == "rgb({}, {}, {})".format(*FAILED_RGB)
        assert red == (step["status"] == b.FAILED)


def test_a_bundle_file_the_reader_opens_is_checked(browser: Any, pages: Path) -> None:
    _open(browser, pages / "good.html")
    browser.execute_script("document.body.dataset.verdict = 'running'")
    field = browser.find_element("id", "bundle-file")
    field.send_keys(str(pages / "truncated.receipt.json"))
    steps = _checked(browser)
    assert _statuses(steps) == b.TRUNCATED_STATUSES
    assert b.REASONS["truncated"] in steps[0]["reason"]
    assert browser.execute_script("return document.querySelector('#document mark')") is None


def test_a_trusted_key_pasted_in_the_page(browser: Any, pages: Path) -> None:
    assert _statuses(_open(browser, pages / "forged.html")) == (b.OK,) * 6
    browser.find_element("id", "trusted-key").send_keys(str(b.SIGNER.verifier))
    browser.execute_script("document.body.dataset.verdict = 'running'")
    browser.find_element("id", "recheck").click()
    steps = _checked(browser)
    assert _statuses(steps) == (b.OK,) * 5 + (b.FAILED,)
    assert str(b.SIGNER.verifier) in steps[-1]["reason"]


def test_a_markdown_quote_is_marked_in_its_text(browser: Any, pages: Path) -> None:
    assert _statuses(_open(browser, pages / "markdown.html")) == (b.OK,) * 6
    text, mark = browser.execute_script(
        "return [document.getElementById('document').textContent,"
        " document.querySelector('#document mark').textContent]"
    )
    bundle = b.markdown_bundle()
    assert mark == "the brakes failed"
    assert text == base64.b64decode(bundle["snapshot"]["bytes_base64"]).decode()


def test_hostile_text_is_shown_never_run(browser: Any, pages: Path) -> None:
    browser.get_log("browser")
    steps = _open(browser, pages / "hostile.html")
    assert _statuses(steps) == (b.OK,) * 6, steps
    ran = browser.execute_script(
        "return [window.__pwned, document.scripts.length, document.images.length,"
        " document.querySelector('#document mark').textContent, document.title,"
        " document.getElementById('doc-title').textContent]"
    )
    pwned, scripts, images, mark, title, heading = ran
    assert (pwned, scripts, images) == (None, 2, 0)
    links = browser.execute_script(
        "return [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))"
    )
    assert links == [None, None]  # neither javascript: nor markup becomes a link
    assert "<script>window.__pwned = 1</script>" in mark and "<img src=x" in mark
    assert "\u202e" not in mark and "<U+202E>" in mark  # the override is shown, not obeyed
    assert "<U+2028>" in mark
    assert "</script>" in title and "\\u202e" in title  # the static title, escaped by Jinja
    assert heading.startswith("</script><script>")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def test_phone_width_and_dark_mode(browser: Any, pages: Path) -> None:
    browser.set_window_size(PHONE_WIDTH, 800)
    try:
        for name in ("good", "hostile", "tampered-bytes"):
            _open(browser, pages / f"{name}.html")
            scroll, client = browser.execute_script(
                "return [document.documentElement.scrollWidth,"
                " document.documentElement.clientWidth]"
            )
            assert scroll <= client, (name, scroll, client)
        browser.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
        )
        for name in ("good", "tampered-bytes"):
            _open(browser, pages / f"{name}.html")
            _screenshot_pixels(browser, f"{name}-phone-dark.png")
            checked = browser.execute_script(CONTRAST_JS, READABLE)
            assert checked
            poor = [c for c in checked if c["ratio"] < 4.5]
            assert poor == [], poor[:5]
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        browser.set_window_size(WIDTH, HEIGHT)


def test_light_mode_is_readable(browser: Any, pages: Path) -> None:
    _open(browser, pages / "tampered-bytes.html")
    checked = browser.execute_script(CONTRAST_JS, READABLE)
    assert checked
    poor = [c for c in checked if c["ratio"] < 4.5]
    assert poor == [], poor[:5]


# A browser whose Web Crypto has no Ed25519 (as before Chrome 137, Firefox 129, Safari 17):
# importKey refuses the algorithm with a NotSupportedError, as the Web Crypto spec says.
NO_ED25519 = """
const importKey = crypto.subtle.importKey.bind(crypto.subtle);
crypto.subtle.importKey = (format, data, algorithm, ...rest) =>
  (algorithm === 'Ed25519' || (algorithm && algorithm.name === 'Ed25519'))
    ? Promise.reject(new DOMException('Unrecognized name.', 'NotSupportedError'))
    : importKey(format, data, algorithm, ...rest);
"""


def test_a_browser_without_ed25519_says_so(browser: Any, pages: Path) -> None:
    added = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NO_ED25519})
    try:
        steps = _open(browser, pages / "good.html")
    finally:
        browser.execute_cdp_cmd(
            "Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]}
        )
    assert _statuses(steps) == (b.OK,) * 5 + (b.FAILED,)
    assert "has no Ed25519 (NotSupportedError)" in steps[-1]["reason"]
    assert _statuses(_open(browser, pages / "good.html")) == (b.OK,) * 6


def test_a_large_document_shows_the_quote_in_context_then_whole(browser: Any, pages: Path) -> None:
    started = time.monotonic()
    steps = _open(browser, pages / "large.html")
    seconds = time.monotonic() - started
    assert _statuses(steps) == (b.OK,) * 6
    assert seconds < 10, seconds  # under half a second unloaded: see docs/proof-page.md
    shown = browser.execute_script(
        "return [document.querySelectorAll('#document .elided').length,"
        " document.querySelector('#document mark').textContent,"
        " document.getElementById('document').textContent.length]"
    )
    assert shown[:2] == [2, b.QUOTE] and shown[2] < 60_000
    browser.find_element("id", "document-whole").click()
    whole, elided, hidden = browser.execute_script(
        "return [document.getElementById('document').textContent,"
        " document.querySelectorAll('#document .elided').length,"
        " document.getElementById('document-whole').hidden]"
    )
    assert json.loads(whole) == LARGE and elided == 0 and hidden is True

"""Headless Chromium for the tests that look at a page as a reader does: Debian's chromium
and chromedriver, driven by Selenium. Without them a test skips (fails on CI), naming the
packages to install."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
INSTALL = "apt-get install chromium chromium-driver"

# WCAG 2 contrast of a color against what is painted behind it, computed in the page.
CONTRAST_JS = """
function rgb(text) {
  const m = text.match(/rgba?\\(([^)]+)\\)/);
  if (!m) return null;
  const [r, g, b, a] = m[1].split(',').map(Number);
  return {r, g, b, a: a === undefined ? 1 : a};
}
function background(el) {
  for (let node = el; node; node = node.parentElement) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c && c.a > 0.5) return c;
  }
  return {r: 255, g: 255, b: 255, a: 1};
}
function luminance(c) {
  const f = (v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
}
const worst = [];
for (const el of document.querySelectorAll(arguments[0])) {
  if (!el.textContent.trim() || el.getClientRects().length === 0) continue;
  const fg = rgb(getComputedStyle(el).color), bg = background(el);
  const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
  worst.push({tag: el.tagName, text: el.textContent.trim().slice(0, 40),
               ratio: (hi + 0.05) / (lo + 0.05)});
}
return worst;
"""


def chromium(width: int, height: int, *, console: bool = False) -> Any:
    """A headless Chromium of ``width`` x ``height``; with ``console``, its console messages
    are kept for ``driver.get_log("browser")``."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail(f"chromium and chromedriver are missing: {INSTALL}")
        pytest.skip(f"needs chromium and chromedriver: {INSTALL}")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    if console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)

"""What ships: the wheel holds the three packages and nothing of tests, bench or the demo."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_the_wheel_contains_no_test_bench_or_demo_code(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("receipts-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith("receipts-")}
    assert packages == {"pipelines", "sources", "warehouse"}
    assert "warehouse/migrations/0001_initial.sql" in names
    assert "pipelines/reports/templates/drift.html.j2" in names
    for asset in ("page.html.j2", "page.css", "page.js", "verify.js"):  # the proof page
        assert f"pipelines/proofs_html/assets/{asset}" in names
    assert "pipelines/cli/__main__.py" in names
    assert "pipelines/proofs/verify_receipt.py" in names  # verify-bundle --print-verifier
    leaked = [n for n in names if "synthetic" in n or "fake" in n or "demo" in n]
    assert leaked == []

"""The last line of `make test` and `make test-lake`: counts over every session, and each
skip reason once with the command that enables its tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.run_summary import summary


def test_nothing_skipped_is_said() -> None:
    entries = [
        {"session": "", "passed": 3, "failed": 0, "skipped": []},
        {"session": "lake", "passed": 2, "failed": 1, "skipped": []},
    ]
    assert summary(entries) == "make test: 5 passed, 1 failed, 0 skipped: nothing skipped"


def test_each_skip_reason_names_what_enables_it() -> None:
    reason = "needs Node packages (tests/node)"
    entries = [{"session": "", "passed": 1, "failed": 0, "skipped": [reason, reason]}]
    line = summary(entries, "make test-lake")
    assert line == (f"make test-lake: 1 passed, 0 failed, 2 skipped: 2 × {reason} → make node-deps")


def test_the_command_reads_the_sessions_file_and_names_the_target(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"session": "", "passed": 4, "failed": 0, "skipped": []}))
    done = subprocess.run(
        [sys.executable, "-m", "tests.run_summary", str(results), "make test-lake"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "make test-lake: 4 passed, 0 failed, 0 skipped: nothing skipped\n"

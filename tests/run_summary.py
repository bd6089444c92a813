"""One line for the end of `make test`: what its pytest sessions passed, failed and skipped,
and for each reason of a skip the command that lets those tests run.

Each session (the whole suite, then the lake subset on each catalog) appends its counts to
the file named by ``$RECEIPTS_TEST_RESULTS`` (see ``tests/conftest.py``); the Makefile then
runs ``python -m tests.run_summary FILE``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# What enables the tests a skip reason names, when the reason does not say it itself.
ENABLE = (
    ("Node packages", "make node-deps"),
    ("node and the schema", "make node-deps"),
    ("chromium", "make browser-deps (as root)"),
    ("receipts[lake]", "make install"),
    ("PostgreSQL", "a PostgreSQL at 127.0.0.1:5432 (make test starts the machine's own as root)"),
)
# A skip reason in the closing line: its first line, at most this long.
REASON_WIDTH = 160


def skip_reason(report: Any) -> str:
    """The reason a skipped test report gives (pytest keeps it as "Skipped: ...")."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def record(path: Path, session: str, stats: dict[str, list[Any]]) -> None:
    """Append one session's counts (from pytest's terminal reporter) to ``path``."""
    skipped = [skip_reason(r) for r in stats.get("skipped", []) if r.when in ("setup", "call")]
    entry = {
        "session": session,
        "passed": len([r for r in stats.get("passed", []) if r.when == "call"]),
        "failed": len(stats.get("failed", [])) + len(stats.get("error", [])),
        "skipped": skipped,
    }
    with path.open("a") as out:
        out.write(json.dumps(entry) + "\n")


def enabling(reason: str) -> str:
    """The reason, short, and the command that enables its tests."""
    reason = " ".join(reason.splitlines()[0].split()) if reason.strip() else "no reason given"
    if len(reason) > REASON_WIDTH:
        reason = reason[: REASON_WIDTH - 1] + "…"
    for needle, command in ENABLE:
        if needle in reason and command.split(" (")[0] not in reason:
            return f"{reason} → {command}"
    return reason


def summary(entries: list[dict[str, Any]], target: str = "make test") -> str:
    passed = sum(e["passed"] for e in entries)
    failed = sum(e["failed"] for e in entries)
    reasons = Counter(reason for e in entries for reason in e["skipped"])
    line = f"{passed} passed, {failed} failed, {sum(reasons.values())} skipped"
    if not reasons:
        return f"{target}: {line}: nothing skipped"
    named = "; ".join(f"{n} × {enabling(reason)}" for reason, n in reasons.most_common())
    return f"{target}: {line}: {named}"


def main(argv: list[str]) -> int:
    path = Path(argv[1])
    entries = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    print(summary(entries, *argv[2:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

"""Upstream text carrying terminal escape sequences is printed visibly, never obeyed, by
drift reports, ``diff`` and ``verify-quote``; ``show`` still writes the stored bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.visible import visible
from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse.records import Listing
from warehouse.store import Warehouse

HOSTILE = "\x1b]0;pwned\x07Looks \x1b[8mhidden\x1b[0m \x9b2J fine\u202e"
SHOWN = "\\x1b]0;pwned\\x07Looks \\x1b[8mhidden\\x1b[0m \\x9b2J fine\\u202e"
COMMENT = "forem/comment/e5c"
FILE = "github/acme/handbook/docs/notes.md"


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "w.duckdb"
    calm = [
        Listing(fixture.THREAD, [fixture.comment("e5c", "<p>Looks fine</p>", "eve")], True),
        Listing(fixture.HANDBOOK, [fixture.handbook_file("docs/notes.md", "a\n", "1" * 40)]),
    ]
    hostile = [
        Listing(fixture.THREAD, [fixture.comment("e5c", f"<p>{HOSTILE}</p>", "eve")], True),
        Listing(
            fixture.HANDBOOK,
            [fixture.handbook_file("docs/notes.md", f"a\n{HOSTILE}\n", "2" * 40)],
        ),
    ]
    with Warehouse.open(str(path)) as wh:
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[1], fixture.CORPUS, calm)
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[2], fixture.CORPUS, hostile)
    return path


def _obeys_nothing(output: str) -> None:
    assert not any(c in output for c in "\x1b\x07\x9b\u202e"), repr(output)


@pytest.mark.parametrize("fmt", ["text", "md", "html", "json"])
def test_drift_reports_show_escapes_visibly(warehouse: Path, fmt: str) -> None:
    result = cli("drift", "--warehouse", warehouse, "--format", fmt)
    assert result.exit_code == 0, result.output
    _obeys_nothing(result.stdout)
    if fmt == "json":
        report = json.loads(result.stdout)  # still JSON: the text is escaped, not dropped
        assert "pwned" in json.dumps(report)
    else:
        assert "\\x1b]0;pwned\\x07" in result.stdout


def test_diff_shows_escapes_visibly(warehouse: Path) -> None:
    for doc in (COMMENT, FILE):
        result = cli("diff", doc, "--warehouse", warehouse)
        assert result.exit_code == 0, result.output
        _obeys_nothing(result.stdout)
        assert "\\x1b]0;pwned\\x07" in result.stdout


def test_verify_quote_shows_escapes_visibly(warehouse: Path) -> None:
    # "Looks", a whole word ("hidden" follows "[8m": quotes match whole words only)
    result = cli("verify-quote", FILE, "Looks", "--warehouse", warehouse)
    assert result.exit_code == 0, result.output
    _obeys_nothing(result.stdout)
    assert "\\x1b[8mhidden" in result.stdout


def test_show_still_writes_the_stored_bytes(warehouse: Path) -> None:
    result = cli("show", FILE, "--warehouse", warehouse)
    assert result.stdout_bytes == f"a\n{HOSTILE}\n".encode()


def test_visible_keeps_line_breaks_and_tabs() -> None:
    assert visible(HOSTILE) == SHOWN
    assert visible("a\tb\nc") == "a\tb\nc"

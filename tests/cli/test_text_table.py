"""Text tables print every value as it is (nothing read as markup, control characters
written out), align by what the terminal shows, and hold a bounded number of rows however
many are listed."""

from __future__ import annotations

import contextlib
import json
import os
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import pytest

from pipelines.cli import text_table
from pipelines.cli.listing import emit
from pipelines.cli.listing import text_table as listing_table
from pipelines.cli.pins import render_table
from pipelines.cli.text_table import TextTable


def _lines(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    return list(listing_table(rows, columns).lines())


def test_values_are_printed_as_they_are_not_read_as_markup() -> None:
    rows = [
        {"doc_id": "forem/comment/[bold]x", "title": "[PATCH] fix [/] :smile: [link=x]y"},
        {"doc_id": "a", "title": "b"},
    ]
    assert _lines(rows, ["doc_id", "title"]) == [
        "doc_id                 title",
        "forem/comment/[bold]x  [PATCH] fix [/] :smile: [link=x]y",
        "a                      b",
    ]


def test_control_characters_are_written_out_on_one_line() -> None:
    rows = [{"a": "x\x1b[2J\x07y", "b": "one\ntwo\tthree\r"}, {"a": "\u202eevil\x85", "b": "-"}]
    assert _lines(rows, ["a", "b"]) == [
        "a               b",
        "x\\x1b[2J\\x07y   one\\ntwo\\tthree\\x0d",
        "\\u202eevil\\x85  -",
    ]


def test_columns_align_by_the_width_the_terminal_shows() -> None:
    """A wide character takes two cells; numbers (header and all) align right, with
    thousands separators; None reads ``-``; timestamps are UTC to the second."""
    at = datetime(2026, 12, 1, 6, 30, 15, 123456, tzinfo=UTC)
    rows = [
        {"name": "日本", "n": 1234567, "at": at, "ok": True},
        {"name": "abcdef", "n": 5, "at": None, "ok": False},
    ]
    assert _lines(rows, ["name", "n", "at", "ok"]) == [
        "name            n  at                     ok",
        "日本    1,234,567  2026-12-01T06:30:15Z  yes",
        "abcdef          5  -                      no",
    ]


def test_rows_past_those_held_go_through_a_temporary_file_and_read_back_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = [{"id": f"doc/{i}\t[x]", "n": i * 1000, "s": "é" * (i % 7)} for i in range(50)]
    held = _lines(rows, ["id", "n", "s"])
    monkeypatch.setattr(text_table, "HELD_ROWS", 3)
    table = listing_table(rows, ["id", "n", "s"])
    assert table._spool is not None and not table._held
    assert list(table.lines()) == held
    assert table._spool is None  # closed once read
    assert len(held) == 51 and held[1].startswith("doc/0\\t[x]")


def test_an_empty_listing_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    emit(iter([]), ["a"], None, empty="no documents match")
    assert capsys.readouterr().out == "no documents match\n"


def test_a_table_of_many_rows_holds_a_bounded_number_of_them() -> None:
    """100,000 rows: those past the first 10,000 are not held in memory. (Rendered whole,
    as tables were, these rows peaked at 241 MB of Python memory; now about 3.5 MB.)"""
    count = 100_000

    def rows() -> Any:
        for i in range(count):
            yield {"doc_id": f"nhtsa/complaint/{10_000_000 + i}", "revision": 1,
                   "content_hash": f"{i:012x}", "size": 1000 + i % 5000}  # fmt: skip

    columns = ["doc_id", "revision", "content_hash", "size"]
    tracemalloc.start()
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            emit(rows(), columns, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MB"


def test_a_text_table_reads_values_with_the_function_given() -> None:
    table = TextTable(["v"], text=lambda v: f"<{v}>")
    table.add(["a\nb"])
    assert list(table.lines()) == ["v", "<a\\nb>"]


def test_pin_tables_write_out_control_characters_in_paths() -> None:
    """Git allows any byte but NUL and ``/`` in a file name."""
    table = render_table(["status", "path"], [["moved", "docs/a\x1b]0;pwned\x07.md"], ["ok", None]])
    assert table.splitlines() == [
        "status  path",
        "moved   docs/a\\x1b]0;pwned\\x07.md",
        "ok",
    ]


@pytest.mark.parametrize("fmt", ["json", "nl"])
def test_json_listings_escape_what_a_terminal_would_obey(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """C1 controls (U+009B is a CSI to some terminals) and bidi overrides are written as
    ``\\uNNNN``: the same JSON values, nothing a terminal acts on; other text stays UTF-8."""
    rows = [{"doc_id": "github/o/r/a\x9b2Jb\u202ec", "title": "é\x1b"}]
    emit(iter(rows), ["doc_id", "title"], fmt)
    out = capsys.readouterr().out
    assert "\x9b" not in out and "\u202e" not in out and "\x1b" not in out
    assert "\\u009b" in out and "\\u202e" in out and "é" in out
    parsed = json.loads(out) if fmt == "json" else [json.loads(line) for line in out.splitlines()]
    assert parsed == rows

"""Listings as tables, JSON, NDJSON or CSV: one way for every command that lists rows.

Text tables show timestamps as ISO-8601 UTC to the second with ``Z`` and numbers with
thousands separators, and every value as it is, control characters written out
(:mod:`pipelines.cli.text_table`); ``--json`` / ``--nl`` keep full precision and plain
numbers, and write C1 controls and bidi overrides as ``\\uNNNN`` escapes (the same JSON
values: :func:`pipelines.visible.json_visible`).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import click

from pipelines.cli.text_table import TextTable
from pipelines.visible import json_visible, visible_cell
from warehouse.timestamps import to_second, utc_iso

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = ("table", "json", "nl", "csv")
TABLE_FORMATS = ("tsv", "md")  # besides FORMATS, for ``receipts query``
FLUSH_BYTES = 1 << 16  # CSV and text tables are written out in pieces of about this size
# A text table is aligned a page at a time: its first page is printed once this many rows
# are read (or the rows end), and every later page keeps the widths of the pages before it,
# widening a column only where a longer value comes.
PAGE_ROWS = 1_000


def listing_options(func: F) -> F:
    """``--json``, ``--nl`` and ``--csv`` (default: an aligned table); sets ``fmt``."""
    options = [
        click.option("--csv", "fmt", flag_value="csv", help="Print CSV with a header row."),
        click.option("--nl", "fmt", flag_value="nl", help="Print one JSON object per line."),
        click.option("--json", "fmt", flag_value="json", help="Print one JSON array."),
    ]
    for option in options:
        func = option(func)
    return func


def page_options(func: F) -> F:
    """``--limit N`` and ``--offset N``: a page of a listing (sets ``limit`` and ``offset``)."""
    func = click.option(
        "--offset",
        type=click.IntRange(0),
        default=0,
        show_default=True,
        metavar="N",
        help="Skip the first N rows (with --limit: a page of the listing).",
    )(func)
    return click.option(
        "--limit",
        type=click.IntRange(1),
        default=None,
        metavar="N",
        help="Show at most N rows.",
    )(func)


def table_format_options(func: F) -> F:
    """:func:`listing_options` plus ``--tsv`` and ``--markdown`` tables; sets ``fmt``."""
    options = [
        click.option("--markdown", "fmt", flag_value="md", help="Print a Markdown (GFM) table."),
        click.option(
            "--tsv",
            "fmt",
            flag_value="tsv",
            help="Print tab-separated values with a header (values as in --csv).",
        ),
    ]
    for option in options:
        func = option(func)
    return listing_options(func)


def page(rows: Iterable[Any], limit: int | None, offset: int) -> Iterator[Any]:
    """Rows ``offset`` to ``offset + limit`` of ``rows``, read lazily."""
    return itertools.islice(rows, offset, None if limit is None else offset + limit)


def text_value(value: Any) -> str:
    """How a value reads in a text table."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return to_second(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return utc_iso(value)
    return value


def _json_array(items: Iterable[Any], **dumps: Any) -> Iterator[str]:
    """``json.dumps(list(items), indent=2, **dumps)``, a piece at a time."""
    first = True
    for item in items:
        # Indented a level (json.dumps never writes an empty line).
        text = json.dumps(item, indent=2, **dumps).replace("\n", "\n  ")
        yield ("[\n  " if first else ",\n  ") + text
        first = False
    yield "[]" if first else "\n]"


def emit_json_listing(value: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """What ``emit_json({**value, key: list(items)})`` prints, written as ``items`` come."""
    placeholder = "\x00items\x00"
    text = json.dumps({**value, key: placeholder}, indent=2, sort_keys=True, default=str)
    before, after = text.split(json.dumps(placeholder))
    click.echo(before, nl=False)
    for piece in _json_array(items, sort_keys=True, default=str):
        click.echo(piece.replace("\n", "\n  "), nl=False)
    click.echo(after)


def emit(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[str],
    fmt: str | None,
    *,
    empty: str = "nothing to list",
) -> None:
    """``rows`` as a table, or as JSON, NDJSON or CSV written as they come (a listing of
    millions of rows is never held whole); a table once every row is read (its widths), from
    a temporary file past the first few thousand (:mod:`pipelines.cli.text_table`)."""
    fmt = fmt or "table"
    if fmt == "json":
        payload = ({c: json_value(r.get(c)) for c in columns} for r in rows)
        for piece in _json_array(payload, ensure_ascii=False):
            click.echo(json_visible(piece), nl=False)
        click.echo()
        return
    if fmt == "nl":
        for row in rows:
            line = {c: json_value(row.get(c)) for c in columns}
            click.echo(json_visible(json.dumps(line, ensure_ascii=False, separators=(",", ":"))))
        return
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else json_value(row.get(c)) for c in columns])
            if buffer.tell() > FLUSH_BYTES:
                click.echo(buffer.getvalue(), nl=False)
                buffer.seek(0)
                buffer.truncate()
        click.echo(buffer.getvalue(), nl=False)
        return
    if fmt == "tsv":
        click.echo("\t".join(tsv_cell(c) for c in columns))
        for row in rows:  # values as in CSV: plain numbers, moments at full precision
            values = ("" if row.get(c) is None else str(json_value(row.get(c))) for c in columns)
            click.echo("\t".join(tsv_cell(value) for value in values))
        return
    if fmt == "md":
        markdown_table(rows, columns)
        return
    if not echo_paged_table(rows, columns):
        click.echo(empty)


def tsv_cell(text: str) -> str:
    """A TSV field: the text on one line, tab, line end and control characters written out
    (``\\t``, ``\\n``, ``\\x1b``) as in a text table, so a value never splits a row."""
    return visible_cell(text)


def markdown_cell(text: str) -> str:
    """A GFM table cell holding ``text`` as text: every ASCII punctuation character that
    Markdown or HTML could read inline is backslash-escaped (CommonMark: any ASCII
    punctuation may be), the pipe included, and control characters are shown visibly."""
    out = "".join("\\" + ch if ch in _MARKDOWN_PUNCTUATION else ch for ch in text)
    return visible_cell(out) or " "


# A table cell is inline content (no block construct starts in one): these are the
# characters an inline construct (code, emphasis, links, images, autolinks, raw HTML,
# entities, strikethrough) or the cell's end can start with.
_MARKDOWN_PUNCTUATION = frozenset("\\`*_[]<>|!&~")


def markdown_table(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> None:
    """A GitHub-flavoured Markdown table, written as the rows come."""
    click.echo("| " + " | ".join(markdown_cell(c) for c in columns) + " |")
    click.echo("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        cells = [markdown_cell(text_value(row.get(c))) for c in columns]
        click.echo("| " + " | ".join(cells) + " |")


def echo_paged_table(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> int:
    """``rows`` as an aligned text table printed a page (:data:`PAGE_ROWS`) at a time, the
    first page as soon as it is read; later pages keep the columns at least as wide as
    before. On a terminal it goes through the pager (:func:`echo_lines`). The number of rows
    printed (nothing is printed for none)."""
    iterator = iter(rows)
    first = list(itertools.islice(iterator, PAGE_ROWS))
    if not first:
        return 0
    printed = len(first)

    def lines() -> Iterator[str]:
        nonlocal printed
        batch, widths = first, None
        while batch:
            table = text_table(batch, columns)
            table.at_least(widths)
            page_lines = table.lines()
            if widths is not None:
                next(page_lines)  # the header is printed once
            widths = table.widths
            yield from page_lines
            batch = list(itertools.islice(iterator, PAGE_ROWS))
            printed += len(batch)

    echo_lines(lines(), header=True)
    return printed


def text_table(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> TextTable:
    """``rows`` read into a text table of ``columns`` (see :mod:`pipelines.cli.text_table`)."""
    table = TextTable(columns, text_value)
    for row in rows:
        table.add([row.get(c) for c in columns])
    return table


def echo_table(table: TextTable) -> None:
    """Print a text table (through the pager on a terminal: :func:`echo_lines`)."""
    echo_lines(table.lines(), header=True)


def on_terminal() -> bool:
    """Whether a person reads stdout: stdin and stdout are terminals (never when piped)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


# The pager's options when LESS is not set: quit at once if the text fits on one screen
# (F), pass colours through (R), and leave the text on the screen when it quits (X).
LESS_DEFAULT = "FRX"


def echo_lines(
    lines: Iterable[str], *, header: bool = False, style: Callable[[str], str] | None = None
) -> None:
    """Print lines as they come, a piece of about :data:`FLUSH_BYTES` at a time. On a
    terminal they go through the pager ($PAGER, else ``less -FRX``), a table's header in
    bold and each line styled by ``style``; piped, they are written plain, never paged."""
    if on_terminal():
        os.environ.setdefault("LESS", LESS_DEFAULT)
        # Colour whatever the pager (as git does): LESS's R lets less show it.
        click.echo_via_pager(_styled(lines, header, style), color=True)
        return
    piece: list[str] = []
    held = 0
    for line in lines:
        piece.append(line)
        held += len(line) + 1
        if held > FLUSH_BYTES:
            click.echo("\n".join(piece))
            piece, held = [], 0
    if piece:
        click.echo("\n".join(piece))


def diff_style(line: str) -> str:
    """A line of a diff in colour: added green, removed red, a hunk header cyan."""
    text = line.lstrip()
    if text.startswith("@@"):
        return click.style(line, fg="cyan")
    if text.startswith("+"):
        return click.style(line, fg="green")
    if text.startswith("-"):
        return click.style(line, fg="red")
    return line


def _styled(
    lines: Iterable[str], header: bool, style: Callable[[str], str] | None
) -> Iterator[str]:
    """The lines styled, in pieces of about :data:`FLUSH_BYTES` (the pager adds the last
    line's end)."""
    piece: list[str] = []
    held = 0
    for number, line in enumerate(lines):
        if header and number == 0:
            line = click.style(line, bold=True)
        elif style is not None:
            line = style(line)
        piece.append(("\n" if number else "") + line)
        held += len(line) + 1
        if held > FLUSH_BYTES:
            yield "".join(piece)
            piece, held = [], 0
    if piece:
        yield "".join(piece)

"""``--limit`` and ``--offset`` on ``ls``, ``as-of`` and ``history``, and listings that print
rows as they are fetched: the first line of ``ls`` (a table or NDJSON) is written before the
last batch of rows is fetched from DuckDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import click
import pytest

from pipelines.cli import listing
from tests.conftest import cli, write_manifest
from warehouse import staged

MANIFEST = """
[corpus]
name = "pages"
namespace = "pages"

[[synthetic]]
name = "p"
count = 1200
size = 64
complete = true
"""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("pages")
    manifest = write_manifest(folder, MANIFEST)
    location = str(folder / "w.duckdb")
    assert cli("ingest", manifest, "--warehouse", location).exit_code == 0
    return location


def _nl(*args: str) -> list[dict[str, Any]]:
    result = cli(*args, "--nl")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    "command", [("ls",), ("as-of", "now"), ("as-of", "1", "--corpus", "pages")]
)
def test_limit_and_offset_take_a_page_of_the_listing(warehouse: str, command: tuple[str]) -> None:
    everything = _nl(*command, "--warehouse", warehouse)
    assert len(everything) == 1200
    page = _nl(*command, "--warehouse", warehouse, "--limit", "7", "--offset", "600")
    assert page == everything[600:607]
    assert _nl(*command, "--warehouse", warehouse, "--offset", "1195") == everything[1195:]
    table = cli(*command, "--warehouse", warehouse, "--limit", "3").stdout
    assert everything[2]["doc_id"] in table and everything[3]["doc_id"] not in table


def test_history_takes_a_page_of_revisions(warehouse: str, tmp_path: Any) -> None:
    doc_id = _nl("ls", "--warehouse", warehouse, "--limit", "1")[0]["doc_id"]
    revisions = _nl("history", doc_id, "--warehouse", warehouse)
    assert len(revisions) == 1
    assert _nl("history", doc_id, "--warehouse", warehouse, "--offset", "1") == []
    assert _nl("history", doc_id, "--warehouse", warehouse, "--limit", "1") == revisions


@pytest.mark.parametrize("bad", ["0", "-1", "x"])
def test_a_limit_that_is_not_a_positive_count_is_a_usage_error(warehouse: str, bad: str) -> None:
    result = cli("ls", "--warehouse", warehouse, "--limit", bad)
    assert result.exit_code == 2


@pytest.mark.parametrize("fmt", [[], ["--nl"], ["--csv"]])
def test_ls_prints_its_first_rows_before_the_last_batch_is_fetched(
    warehouse: str, fmt: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,200 documents fetched 100 at a time: the first line must be out after the first
    fetch, long before the twelfth. (Before, a table read every row before its first line.)"""
    events: list[str] = []
    fetched = staged.fetched

    def counting(result: Any) -> Iterator[list[tuple[Any, ...]]]:
        for rows in fetched(result):
            events.append("fetch")
            yield rows

    echo = click.echo

    def recording(message: Any = None, *args: Any, **kwargs: Any) -> None:
        events.append("output")
        echo(message, *args, **kwargs)

    monkeypatch.setattr(staged, "STREAM_ROWS", 100)
    monkeypatch.setattr(staged, "fetched", counting)
    monkeypatch.setattr(listing, "PAGE_ROWS", 50)
    monkeypatch.setattr(listing, "FLUSH_BYTES", 1024)
    monkeypatch.setattr(click, "echo", recording)
    result = cli("ls", "--warehouse", warehouse, *fmt)
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1200 + (fmt != ["--nl"])  # a header row
    assert events.count("fetch") == 12
    first_output = events.index("output")
    assert events[:first_output].count("fetch") <= 1, events[:20]


def test_a_paged_table_keeps_its_columns_aligned(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "PAGE_ROWS", 50)
    lines = cli("ls", "--warehouse", warehouse).stdout.splitlines()
    assert lines[0].split()[0] == "doc_id" and len(lines) == 1201
    starts = {line.index(line.split()[1], len(line.split()[0])) for line in lines[1:]}
    assert len(starts) == 1  # every row's second column starts at the same place

"""``receipts query`` (one SELECT on a read-only connection, on a DuckDB file and on a
DuckLake lake, in every listing format plus TSV and Markdown) and ``receipts schema`` (each
table and column with what it holds)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse.backends import LAKE_ALIAS
from warehouse.store import Warehouse
from warehouse.table_notes import TABLE_NOTES

SQL = "SELECT doc_id, revision FROM revisions WHERE doc_id LIKE 'nhtsa/%' ORDER BY ALL"


@pytest.fixture(scope="module", params=["duckdb", "ducklake:sqlite"])
def warehouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The fixture corpus in a DuckDB file, and in a DuckLake on a SQLite catalog."""
    folder = tmp_path_factory.mktemp("query")
    if request.param == "duckdb":
        return fixture.shared(tmp_path_factory)
    location = f"ducklake:sqlite:{folder / 'w.sqlite'}"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("RECEIPTS_DATA_PATH", str(folder / "data"))
        fixture.build(location, monkeypatch)
    return location


def _revisions(warehouse: str) -> int:
    with Warehouse.open(warehouse, read_only=True) as wh:
        return int(wh._scalar("SELECT count(*) FROM revisions"))


def test_query_answers_a_select_in_every_format(warehouse: str) -> None:
    as_json = cli("query", SQL, "--warehouse", warehouse, "--json")
    assert as_json.exit_code == 0, as_json.output
    rows = json.loads(as_json.stdout)
    assert {"doc_id": "nhtsa/complaint/11561421", "revision": 2} in rows
    assert len(rows) == 7  # 11561420 (1), 11561421 (1, 2), 11561422 (1, 2, 3), 11561423 (1)

    table = cli("query", SQL, "--warehouse", warehouse).stdout.splitlines()
    assert table[0].split() == ["doc_id", "revision"]
    assert len(table) == 1 + len(rows)

    lines = cli("query", SQL, "--warehouse", warehouse, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == rows
    listed = list(
        csv.DictReader(io.StringIO(cli("query", SQL, "--warehouse", warehouse, "--csv").stdout))
    )
    assert [r["doc_id"] for r in listed] == [r["doc_id"] for r in rows]
    tsv = cli("query", SQL, "--warehouse", warehouse, "--tsv").stdout.splitlines()
    assert tsv[0] == "doc_id\trevision"
    assert tsv[1] == f"{rows[0]['doc_id']}\t{rows[0]['revision']}"


def test_query_pages_with_limit_and_offset(warehouse: str) -> None:
    everything = json.loads(cli("query", SQL, "--warehouse", warehouse, "--json").stdout)
    page = cli("query", SQL, "--warehouse", warehouse, "--json", "--limit", "2", "--offset", "3")
    assert json.loads(page.stdout) == everything[3:5]


def test_a_markdown_table_renders_every_value_as_text(warehouse: str) -> None:
    sql = "SELECT '<script>x</script> | *b* `c`' AS text, 1 AS n"
    result = cli("query", sql, "--warehouse", warehouse, "--markdown")
    assert result.exit_code == 0, result.output
    html = MarkdownIt("commonmark").enable("table").render(result.stdout)
    assert "<script>" not in html and "<em>" not in html and "<code>" not in html
    assert "<td>&lt;script&gt;x&lt;/script&gt; | *b* `c`</td>" in html
    assert html.count("<td>") == 2  # the pipe stayed inside its cell


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM revisions",
        "INSERT INTO documents SELECT * FROM documents",
        "CREATE TABLE t AS SELECT 1",
        "COPY documents TO 'documents.csv'",
        "ATTACH 'other.duckdb' AS other",
        "SET enable_external_access = true",
        "SELECT 1; DELETE FROM revisions",
        "EXPLAIN ANALYZE DELETE FROM revisions",
        "",
    ],
)
def test_a_writing_statement_is_refused_with_exit_2(
    warehouse: str, sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = _revisions(warehouse)
    result = cli("query", sql, "--warehouse", warehouse)
    assert result.exit_code == 2, result.output
    assert "SELECT" in result.stderr
    assert _revisions(warehouse) == before
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "sql",
    [
        # SELECTs that would reach the disk: a file reader, a table function writing a copy.
        "SELECT * FROM read_csv('{tmp}/secret.csv')",
        "SELECT * FROM read_text('{tmp}/secret.csv')",
    ],
)
def test_the_connection_cannot_reach_the_file_system(
    warehouse: str, sql: str, tmp_path: Path
) -> None:
    (tmp_path / "secret.csv").write_text("a\n1\n")
    result = cli("query", sql.format(tmp=tmp_path), "--warehouse", warehouse)
    assert result.exit_code == 2, result.output
    assert "disabled" in result.stderr


def test_the_connection_itself_refuses_writes(warehouse: str, tmp_path: Path) -> None:
    """Past the statement check, the connection a query runs on writes nothing."""
    from warehouse.query import lock_down

    with Warehouse.open(warehouse, read_only=True) as wh:
        lock_down(wh)
        for statement in (
            "INSERT INTO documents SELECT * FROM documents",
            f"COPY documents TO '{tmp_path}/d.csv'",
            f"ATTACH '{tmp_path}/other.duckdb' AS other",
            "SET enable_external_access = true",
        ):
            with pytest.raises(Exception):  # noqa: B017 - DuckDB's refusal, whichever class
                wh._con.execute(statement)
    assert list(tmp_path.iterdir()) == []


def test_a_failing_query_says_why_with_exit_2(warehouse: str) -> None:
    result = cli("query", "SELECT * FROM no_such_table", "--warehouse", warehouse)
    assert result.exit_code == 2
    assert "no_such_table" in result.stderr and "receipts schema" in result.stderr


def test_every_table_and_view_has_a_description(warehouse: str) -> None:
    with Warehouse.open(warehouse, read_only=True) as wh:
        names = {t.name for t in wh.tables()}
    assert names == set(TABLE_NOTES)


def test_schema_describes_each_table_and_column(warehouse: str) -> None:
    described = json.loads(cli("schema", "--warehouse", warehouse, "--json").stdout)
    by_name = {t["name"]: t for t in described}
    assert by_name["snapshots"]["description"] == TABLE_NOTES["snapshots"]
    columns = {c["name"]: c for c in by_name["claim_checks"]["columns"]}
    assert columns["quote_hash"]["description"] == "sha256 of the quote as cited"
    assert columns["quote_hash"]["nullable"] is False
    text = cli("schema", "--warehouse", warehouse).stdout
    assert f"table revisions\n  {TABLE_NOTES['revisions']}\n    doc_id VARCHAR NOT NULL" in text


def test_a_query_reads_a_lakes_data_files_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With file-system access off, a lake's own data files stay readable (its rows live
    there, beyond what the catalog inlines); any other file stays refused."""
    data = tmp_path / "data"
    location = f"ducklake:sqlite:{tmp_path / 'w.sqlite'}"
    monkeypatch.setenv("RECEIPTS_DATA_PATH", str(data))
    fixture.build(location, monkeypatch)
    with Warehouse.open(location) as wh:  # DuckLake keeps small inserts in its catalog
        wh._con.execute(f"CALL ducklake_flush_inlined_data('{LAKE_ALIAS}')")
    assert list(data.rglob("*.parquet")), "the fixture lake has data files"
    with Warehouse.open(location, read_only=True) as wh:
        expected = int(wh._scalar("SELECT sum(octet_length(body)) FROM snapshots"))
    sql = "SELECT sum(octet_length(body)) AS n FROM snapshots"
    read = cli("query", sql, "--warehouse", location, "--json")
    assert read.exit_code == 0, read.output
    assert json.loads(read.stdout) == [{"n": expected}]
    outside = cli("query", "SELECT * FROM read_csv('/etc/passwd')", "--warehouse", location)
    assert outside.exit_code != 0
    assert "disabled by configuration" in outside.output

"""Reading a large warehouse: ``ls``, ``as-of``, ``search`` and ``drift`` finish under a
memory limit their one-statement joins did not fit in, and listings write their rows as they
read them; running out of DuckDB's memory is reported as such, with the setting to change."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipelines.cli.common import emit_json
from pipelines.cli.listing import _json_array, emit, emit_json_listing
from tests.conftest import cli, write_manifest
from warehouse import streamed_export
from warehouse.store import Warehouse

MANIFEST = """
[corpus]
name = "many"
namespace = "many"

[[synthetic]]
name = "m"
count = 150000
size = 64
seed = 5
complete = true
"""


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse of 150,000 small documents."""
    directory = tmp_path_factory.mktemp("many")
    manifest = write_manifest(directory, MANIFEST)
    warehouse = directory / "w.duckdb"
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    return warehouse


def test_ls_as_of_search_and_drift_under_a_small_memory_limit(many: Path) -> None:
    """Under 64 MB, each of these ran out of memory when its joins and sort were one
    statement; under 80 MB, `drift` still did (and `ls` on DuckDB 2, `search` on 1.5).
    Staged, they need about 48 MB on DuckDB 2 and 60 MB on 1.5 (DuckDB's peak varies from
    run to run: 80 MB leaves them room)."""
    small = {"RECEIPTS_DUCKDB_MEMORY_LIMIT": "80MB"}
    listed = cli("ls", "--warehouse", many, "--csv", env=small)
    assert listed.exit_code == 0, listed.stderr
    rows = list(csv.DictReader(io.StringIO(listed.stdout)))
    assert len(rows) == 150_000
    ids = [r["doc_id"] for r in rows]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {r["size"] for r in rows[:3]} != {""}
    at = cli("as-of", "1", "--warehouse", many, "--nl", env=small)
    assert at.exit_code == 0, at.stderr
    documents = [json.loads(line) for line in at.stdout.splitlines()]
    assert [d["doc_id"] for d in documents] == ids
    assert {d["revision"] for d in documents} == {1}
    found = cli("search", "bucket", "--limit", 3, "--warehouse", many, "--csv", env=small)
    assert found.exit_code == 0, found.stderr
    assert [r["doc_id"] for r in csv.DictReader(io.StringIO(found.stdout))] == ids[:3]
    drift = cli("drift", "--since", "1", "--warehouse", many, "--json", env=small)
    assert drift.exit_code == 0, drift.stderr
    assert json.loads(drift.stdout)["counts"]["synthetic"]["unchanged"] == 150_000


def test_ls_and_as_of_print_a_text_table_of_every_document(many: Path) -> None:
    """The default output: rows past the first few thousand go through a temporary file
    (pipelines.cli.text_table), every one printed, aligned, in order."""
    small = {"RECEIPTS_DUCKDB_MEMORY_LIMIT": "80MB"}
    listed = cli("ls", "--warehouse", many, env=small)
    assert listed.exit_code == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    assert header.split() == ["doc_id", "revision", "content_hash", "size", "valid_from_run",
                              "valid_from"]  # fmt: skip
    assert len(lines) == 150_000
    ids = [line.split()[0] for line in lines]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert len({line.index(" 1  ") for line in lines}) == 1  # the revision column lines up
    at = cli("as-of", "1", "--warehouse", many, env=small)
    assert at.exit_code == 0, at.stderr
    title, header, *lines = at.stdout.splitlines()
    assert title == "corpus as of run 1: 150,000 documents"
    assert [line.split()[0] for line in lines] == ids


@pytest.fixture(scope="module")
def bodies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse of 12,000 bodies of 10 kB."""
    directory = tmp_path_factory.mktemp("bodies")
    body = MANIFEST.replace("count = 150000", "count = 12000").replace("size = 64", "size = 10000")
    warehouse = directory / "w.duckdb"
    assert cli("ingest", write_manifest(directory, body), "--warehouse", warehouse).exit_code == 0
    return warehouse


@pytest.mark.parametrize("fmt", ["parquet", "csv", "ndjson"])
def test_export_writes_more_bodies_than_the_memory_limit(
    bodies: Path, tmp_path: Path, fmt: str
) -> None:
    """120 MB of bodies under an 80 MB limit: DuckDB's COPY, sorting the bodies and
    buffering what it wrote, ran out of memory (NDJSON under 256 MB, for 40 MB of them)."""
    warehouse = bodies
    out = tmp_path / "out"
    small = {"RECEIPTS_DUCKDB_MEMORY_LIMIT": "80MB"}
    done = cli(
        "export", "--warehouse", warehouse, "--out", out, "--format", fmt, "--json", env=small
    )
    assert done.exit_code == 0, done.stderr
    files = {f["table"]: f for f in json.loads(done.stdout)["files"]}
    assert files["snapshots"]["rows"] == 12_000
    path = out / f"snapshots.{fmt}"
    if fmt == "parquet":
        rows = pq.read_table(path).to_pylist()
        data = [r["body"] for r in rows]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
        data = [base64.b64decode(r["body_base64"]) for r in rows]
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        data = [base64.b64decode(r["body_base64"]) for r in rows]
    assert len(rows) == 12_000 and len({r["content_hash"] for r in rows}) == 12_000
    for row, body in zip(rows, data, strict=True):
        assert hashlib.sha256(body).hexdigest() == row["content_hash"]
        assert int(row["size"]) == len(body)
    assert not list(out.glob("*.partial"))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60,000 documents (four row groups of snapshots), each changed by a second run."""
    directory = tmp_path_factory.mktemp("two_runs")
    warehouse = directory / "w.duckdb"
    for seed in (5, 6):
        text = MANIFEST.replace("count = 150000", "count = 60000").replace(
            "seed = 5", f"seed = {seed}"
        )
        manifest = write_manifest(directory, text)
        assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    return warehouse


def _stored_order(warehouse: Path) -> list[str]:
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        rows = wh._connection_for_tests().execute(  # test-only: the table as stored
            "SELECT content_hash FROM snapshots ORDER BY rowid"
        )
        return [str(r[0]) for r in rows.fetchall()]


@pytest.mark.parametrize(("fmt", "as_of"), [("parquet", None), ("parquet", "1"), ("csv", None)])
def test_an_export_lists_snapshots_in_stored_order_the_same_every_time(
    two_runs: Path, tmp_path: Path, fmt: str, as_of: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every snapshot as Parquet (a plain scan, on every thread), or those run 1 cited, or
    CSV (a join, on one thread): in the order they were stored, byte for byte the same from
    one export to the next. Joined in parallel, the rows came in an order that changed from
    run to run."""
    monkeypatch.delenv("RECEIPTS_DUCKDB_THREADS", raising=False)  # DuckDB's parallel plans
    point = [] if as_of is None else ["--as-of", as_of]
    files = []
    for attempt in ("a", "b"):
        out = tmp_path / attempt
        done = cli("export", "--warehouse", two_runs, "--out", out, "--format", fmt, *point)
        assert done.exit_code == 0, done.stderr
        files.append(out / f"snapshots.{fmt}")
    assert files[0].read_bytes() == files[1].read_bytes()
    if fmt == "parquet":
        hashes = pq.read_table(files[0], columns=["content_hash"])["content_hash"].to_pylist()
    else:
        hashes = [r["content_hash"] for r in csv.DictReader(io.StringIO(files[0].read_text()))]
    stored = _stored_order(two_runs)
    assert hashes == (stored if as_of is None else stored[:60_000])


def test_snapshot_csv_quotes_only_what_needs_quotes_batch_by_batch(tmp_path: Path) -> None:
    """Batches needing no quotes go through Arrow's writer unquoted, one with a comma in a
    media type through Python's csv: the same text as Python's csv for every row."""
    schema = pa.schema([("content_hash", pa.string()), ("size", pa.int64()),
                        ("media_type", pa.string()), ("body_base64", pa.string())])  # fmt: skip
    plain = [["ab", "cd"], [1, 22], ["application/json", None], ["eA==", ""]]
    quoted = [["ef"], [3], ['text/plain; x="a,b"'], ["eQ=="]]
    batches = [pa.record_batch(plain, schema=schema), pa.record_batch(quoted, schema=schema)]
    path = tmp_path / "s.csv"
    assert streamed_export._csv(pa.RecordBatchReader.from_batches(schema, batches), path) == 3
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(schema.names)
    for batch in batches:
        writer.writerows(zip(*(c.to_pylist() for c in batch.columns), strict=True))
    assert path.read_text() == expected.getvalue()


def test_running_out_of_memory_says_so_and_what_to_change(many: Path) -> None:
    tiny = {"RECEIPTS_DUCKDB_MEMORY_LIMIT": "16MB"}
    result = cli("ls", "--warehouse", many, env=tiny)
    assert result.exit_code == 1
    assert "ran out of memory under its limit" in result.stderr
    assert "RECEIPTS_DUCKDB_MEMORY_LIMIT=" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    error = json.loads(cli("ls", "--warehouse", many, "--json", env=tiny).stdout)["error"]
    assert error["type"] == "OutOfMemory" and "256MB" in error["hint"]
    assert "RECEIPTS_DUCKDB_THREADS=1" in error["hint"]


@pytest.mark.parametrize(
    "items", [[], [{}], [{"a": 1}], [{"a": [1, {"b": None}], "é": "ü"}, {"c": []}, 3]]
)
def test_a_json_array_written_piece_by_piece_is_the_same_text(items: list[object]) -> None:
    assert "".join(_json_array(iter(items))) == json.dumps(items, indent=2)
    assert "".join(_json_array(iter(items), ensure_ascii=False)) == json.dumps(
        items, indent=2, ensure_ascii=False
    )

    @click.command()
    @click.argument("streamed", type=bool)
    def listing(streamed: bool) -> None:
        head = {"z": 1, "a": {"b": [1, 2]}, "m": None}
        if streamed:
            emit_json_listing(head, "items", iter(items))
        else:
            emit_json({**head, "items": items})

    runner = CliRunner()
    whole = runner.invoke(listing, ["false"]).output
    assert runner.invoke(listing, ["true"]).output == whole


def test_csv_written_in_pieces_is_the_same_text() -> None:
    rows = [{"a": i, "b": "x," * (i % 50), "c": None} for i in range(5_000)]
    runner = CliRunner()

    @click.command()
    def listing() -> None:
        emit(iter(rows), ["a", "b", "c"], "csv")

    written = runner.invoke(listing).output
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(["a", "b", "c"])
    writer.writerows([[r["a"], r["b"], ""] for r in rows])
    assert len(written) > 200_000 and written == expected.getvalue()

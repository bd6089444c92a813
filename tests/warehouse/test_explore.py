"""Finding things through the CLI: ``ls``, ``search``, ``export`` and ``schema``, in every
listing format, and a reader that goes away early."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO, cli, write_manifest
from warehouse.store import Warehouse

MANIFEST = """
[corpus]
name = "explore"
namespace = "explore"

[[synthetic]]
name = "a"
count = 30
size = 200
complete = true
"""

CHANGED = MANIFEST.replace("complete = true", "complete = true\nchanged_percent = 50.0")


@pytest.fixture
def corpus(tmp_path: Path, warehouse_path: Path) -> Path:
    manifest = write_manifest(tmp_path, MANIFEST)
    assert cli("ingest", manifest, "--warehouse", warehouse_path).exit_code == 0
    return manifest


def test_ls_lists_every_document_in_each_format(corpus: Path, warehouse_path: Path) -> None:
    table = cli("ls", "--warehouse", warehouse_path)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    header = ["doc_id", "revision", "content_hash", "size", "valid_from_run", "valid_from"]
    assert lines[0].split() == header
    assert len(lines) == 31 and all(line == line.rstrip() for line in lines)
    assert lines[1].endswith("Z") and lines[1].split()[1] == "1"

    rows = json.loads(cli("ls", "--warehouse", warehouse_path, "--json").stdout)
    assert len(rows) == 30 and rows[0]["source"] == "synthetic"
    assert len(rows[0]["content_hash"]) == 64 and rows[0]["valid_from"].endswith("Z")
    nl = [
        json.loads(line)
        for line in cli("ls", "--warehouse", warehouse_path, "--nl").stdout.splitlines()
    ]
    assert nl == rows
    parsed = list(
        csv.DictReader(io.StringIO(cli("ls", "--warehouse", warehouse_path, "--csv").stdout))
    )
    assert [r["doc_id"] for r in parsed] == [r["doc_id"] for r in rows]


def test_ls_filters_by_source_kind_corpus_and_change(
    corpus: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    def ids(*args: str) -> list[str]:
        result = cli("ls", "--warehouse", warehouse_path, "--json", *args)
        assert result.exit_code == 0, result.output
        return [r["doc_id"] for r in json.loads(result.stdout)]

    everything = ids()
    assert ids("--source", "synthetic") == everything
    assert ids("--source", "nhtsa") == []
    assert ids("--corpus", "explore") == everything
    assert ids("--corpus", "other") == []
    assert ids("--changed-since", "1") == []
    changed = write_manifest(tmp_path, CHANGED, "changed.toml")
    assert cli("ingest", changed, "--warehouse", warehouse_path).exit_code == 0
    newer = ids("--changed-since", "1")
    assert 0 < len(newer) < len(everything)
    assert "no documents match" in cli("ls", "--warehouse", warehouse_path, "--kind", "x").stdout
    bad = cli("ls", "--warehouse", warehouse_path, "--changed-since", "99")
    assert bad.exit_code == 2 and "no run 99" in bad.stderr


def test_search_finds_text_case_insensitively_with_a_snippet(
    corpus: Path, warehouse_path: Path
) -> None:
    first = json.loads(cli("ls", "--warehouse", warehouse_path, "--json").stdout)[0]
    shown = cli("show", first["doc_id"], "--warehouse", warehouse_path).stdout
    needle = json.loads(shown)["id"] if "id" in json.loads(shown) else first["doc_id"]
    hits = json.loads(
        cli("search", str(needle).upper(), "--warehouse", warehouse_path, "--json").stdout
    )
    assert first["doc_id"] in [h["doc_id"] for h in hits]
    assert all(str(needle).lower() in h["snippet"].lower() for h in hits)
    none = cli("search", "no such words anywhere", "--warehouse", warehouse_path)
    assert none.exit_code == 0 and "no document contains" in none.stdout


def _tamper(warehouse_path: Path) -> str:
    with Warehouse.open(str(warehouse_path)) as wh:
        con = wh._connection_for_tests()
        (content_hash,) = con.execute("SELECT content_hash FROM snapshots LIMIT 1").fetchone()
        con.execute(
            "UPDATE snapshots SET body = CAST('forged' AS BLOB) WHERE content_hash = $h",
            {"h": content_hash},
        )
    return str(content_hash)


def test_export_parquet_reads_back_with_every_hash(
    corpus: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    result = cli("export", "--warehouse", warehouse_path, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    snapshots = pq.read_table(out / "snapshots.parquet").to_pylist()
    revisions = pq.read_table(out / "revisions.parquet").to_pylist()
    documents = pq.read_table(out / "documents.parquet").to_pylist()
    listed = json.loads(cli("ls", "--warehouse", warehouse_path, "--json").stdout)
    assert len(documents) == len(listed) == 30
    assert {r["content_hash"] for r in revisions} == {s["content_hash"] for s in snapshots}
    assert all(hashlib.sha256(s["body"]).hexdigest() == s["content_hash"] for s in snapshots)
    assert all(r["is_current"] and r["valid_until_run"] is None for r in revisions)


def test_export_as_of_keeps_validity_as_it_stood(
    corpus: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    changed = write_manifest(tmp_path, CHANGED, "changed.toml")
    assert cli("ingest", changed, "--warehouse", warehouse_path).exit_code == 0
    now, then = tmp_path / "now", tmp_path / "then"
    assert (
        cli("export", "--warehouse", warehouse_path, "--out", now, "--format", "ndjson").exit_code
        == 0
    )
    assert (
        cli(
            "export",
            corpus,
            "--warehouse",
            warehouse_path,
            "--out",
            then,
            "--format",
            "ndjson",
            "--as-of",
            "1",
        ).exit_code
        == 0
    )
    all_revisions = [json.loads(x) for x in (now / "revisions.ndjson").read_text().splitlines()]
    old_revisions = [json.loads(x) for x in (then / "revisions.ndjson").read_text().splitlines()]
    assert len(old_revisions) == 30 < len(all_revisions)
    assert all(r["is_current"] for r in old_revisions)
    assert any(r["valid_until_run"] == 2 for r in all_revisions)
    for line in (then / "snapshots.ndjson").read_text().splitlines():
        snapshot = json.loads(line)
        body = base64.b64decode(snapshot["body_base64"])
        assert hashlib.sha256(body).hexdigest() == snapshot["content_hash"]


def test_search_and_export_refuse_altered_bytes(
    corpus: Path, warehouse_path: Path, tmp_path: Path
) -> None:
    forged = _tamper(warehouse_path)
    exported = cli("export", "--warehouse", warehouse_path, "--out", tmp_path / "x")
    assert exported.exit_code == 1 and forged[:12] in exported.stderr
    assert not (tmp_path / "x" / "snapshots.parquet").exists()
    searched = cli("search", "forged", "--warehouse", warehouse_path)
    assert searched.exit_code == 1 and forged in searched.stderr


def test_schema_prints_each_table_with_its_columns(corpus: Path, warehouse_path: Path) -> None:
    text = cli("schema", "--warehouse", warehouse_path).stdout
    assert "    doc_id VARCHAR NOT NULL\n    revision INTEGER NOT NULL" in text
    assert "table revisions\n" in text
    assert "view current_revisions" in text
    tables = json.loads(cli("schema", "--warehouse", warehouse_path, "--json").stdout)
    assert {"documents", "snapshots", "revisions"} <= {t["name"] for t in tables}


@pytest.mark.slow
def test_a_reader_that_goes_away_ends_the_listing_quietly(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    manifest = write_manifest(tmp_path, MANIFEST.replace("count = 30", "count = 4000"))
    command = [sys.executable, "-m", "bench.synthetic_source"]
    subprocess.run(
        [*command, "ingest", str(manifest), "--warehouse", str(warehouse)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    process = subprocess.Popen(
        [*command, "ls", "--nl", "--warehouse", str(warehouse)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()
    process.wait(timeout=60)
    assert process.stderr.read() == b""
    process.stderr.close()
    assert process.returncode == 141

"""Listings as aligned tables, and ``--json`` / ``--nl`` / ``--csv`` on every one of them:
``runs``, ``pushes``, ``history`` and ``as-of``; the closest doc ids for an unknown one; a
drift report of every corpus naming each document's corpus."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from pipelines.cli.ledger import duration
from tests import corpus_fixture as fixture
from tests.conftest import cli, write_manifest

MANIFEST = """
[corpus]
name = "tables"
namespace = "tables"

[[synthetic]]
name = "t"
count = 1200
size = 64
complete = true
"""
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
FULL = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two runs and a push of 1,200 documents."""
    folder = tmp_path_factory.mktemp("tables")
    manifest = write_manifest(folder, MANIFEST)
    warehouse = str(folder / "w.duckdb")
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    out = folder / "out.ndjson"
    assert cli("publish", manifest, "--warehouse", warehouse, "--out", out).exit_code == 0
    return warehouse


@pytest.fixture
def fixture_warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fixture.shared(tmp_path_factory)


def table(text: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = [line.split() for line in text.splitlines() if line.strip()]
    return header, rows


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (42, "42s"), (65, "1m05s"), (7380, "2h03m")]
)
def test_durations_read_like_a_person_would_write_them(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_runs_is_a_table_with_durations_and_thousands(ledger: str) -> None:
    result = cli("runs", "--warehouse", ledger)
    assert result.exit_code == 0, result.stderr
    header, rows = table(result.stdout)
    assert header == [
        "run_id",
        "started_at",
        "duration",
        "command",
        "manifest",
        "status",
        "new",
        "changed",
        "unchanged",
        "gone",
        "restored",
        "failed",
    ]
    assert [r[0] for r in rows] == ["2", "1"]
    newest, oldest = (dict(zip(header, row, strict=True)) for row in rows)
    assert STAMP.match(newest["started_at"])
    assert re.match(r"^(\d+s|\d+m\d\ds)$", newest["duration"])
    assert (oldest["new"], newest["unchanged"]) == ("1,200", "1,200")


def test_runs_as_json_nl_and_csv(ledger: str) -> None:
    as_json = json.loads(cli("runs", "--warehouse", ledger, "--json").stdout)
    assert [r["run_id"] for r in as_json] == [2, 1]
    assert as_json[1]["counts"]["synthetic"]["new"] == 1200  # the nested shape stays
    assert FULL.match(as_json[0]["started_at"]) and as_json[0]["duration_seconds"] >= 0
    lines = cli("runs", "--warehouse", ledger, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_json
    rows = list(csv.DictReader(io.StringIO(cli("runs", "--warehouse", ledger, "--csv").stdout)))
    assert [r["run_id"] for r in rows] == ["2", "1"]
    assert rows[1]["new"] == "1200" and FULL.match(rows[1]["finished_at"])
    assert float(rows[1]["duration_seconds"]) >= 0


def test_pushes_in_every_format(ledger: str) -> None:
    text = cli("pushes", "--warehouse", ledger).stdout
    header, rows = table(text)
    assert header[:4] == ["push_id", "started_at", "duration", "status"]
    push = dict(zip(header, rows[0], strict=False))
    assert (push["status"], push["create"], push["applied"]) == ("ok", "1,200", "1,200")
    as_json = json.loads(cli("pushes", "--warehouse", ledger, "--json").stdout)
    assert as_json[0]["batches"] and as_json[0]["plan"]["create"] == 1200
    nl = [
        json.loads(line)
        for line in cli("pushes", "--warehouse", ledger, "--nl").stdout.splitlines()
    ]
    assert nl == as_json
    (row,) = csv.DictReader(io.StringIO(cli("pushes", "--warehouse", ledger, "--csv").stdout))
    assert (row["create"], row["applied"], row["status"]) == ("1200", "1200", "ok")
    assert row["transaction_ids"] == " ".join(as_json[0]["transaction_ids"])


def test_history_is_a_table_of_revisions_and_sightings(fixture_warehouse: str) -> None:
    doc = "forem/comment/2a4bc"
    text = cli("history", doc, "--warehouse", fixture_warehouse).stdout
    lines = text.splitlines()
    assert lines[0] == doc
    assert lines[1].split() == [
        "revision",
        "content_hash",
        "valid_from_run",
        "valid_from",
        "valid_until_run",
        "url",
        "commit",
    ]
    assert "TOMBSTONE (gone upstream)" in lines[3]
    assert STAMP.match(lines[2].split()[3])
    assert "seen" in lines and "https://dev.to/api/comments?a_id=1234" in lines[-1]
    as_json = json.loads(cli("history", doc, "--warehouse", fixture_warehouse, "--json").stdout)
    nl = cli("history", doc, "--warehouse", fixture_warehouse, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in nl] == [
        {"doc_id": doc, **rev} for rev in as_json["revisions"]
    ]
    rows = list(
        csv.DictReader(
            io.StringIO(cli("history", doc, "--warehouse", fixture_warehouse, "--csv").stdout)
        )
    )
    assert [(r["revision"], r["tombstone"], r["tombstone_reason"]) for r in rows] == [
        ("1", "False", ""),
        ("2", "True", "gone upstream"),
    ]


def test_as_of_in_every_format_and_now(fixture_warehouse: str) -> None:
    text = cli("as-of", "now", "--warehouse", fixture_warehouse).stdout
    first, *rest = text.splitlines()
    assert re.match(r"^corpus as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: 10 documents$", first)
    header, rows = table("\n".join(rest))
    assert header == ["doc_id", "revision", "content_hash"] and len(rows) == 10
    now = json.loads(cli("as-of", "now", "--warehouse", fixture_warehouse, "--json").stdout)
    latest = json.loads(cli("as-of", "4", "--warehouse", fixture_warehouse, "--json").stdout)
    assert now["documents"] == latest["documents"]  # now is the state after the last run
    nl = cli("as-of", "now", "--warehouse", fixture_warehouse, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in nl] == now["documents"]
    rows_csv = list(
        csv.DictReader(
            io.StringIO(cli("as-of", "4", "--warehouse", fixture_warehouse, "--csv").stdout)
        )
    )
    assert [r["doc_id"] for r in rows_csv] == [d["doc_id"] for d in latest["documents"]]


@pytest.mark.parametrize(
    "args",
    [
        ["history", "NHTSA/Complaint_11561421"],
        ["show", "nhtsa.complaint.11561421"],
        ["diff", "nhtsa-complaint-11561421"],
        ["verify-quote", "nhtsa/complaint11561421", "stalled"],
    ],
)
def test_an_unknown_doc_id_names_the_closest(fixture_warehouse: str, args: list[str]) -> None:
    result = cli(*args, "--warehouse", fixture_warehouse)
    assert result.exit_code == 1
    assert f"no document {args[1]!r}" in result.stderr
    assert "did you mean nhtsa/complaint/11561421" in result.stderr
    assert "hint: `receipts ls` lists the documents" in result.stderr


def test_an_unknown_doc_id_under_json(fixture_warehouse: str) -> None:
    result = cli("history", "forem/comment/2a4bx", "--warehouse", fixture_warehouse, "--json")
    error = json.loads(result.stdout)["error"]
    assert "did you mean forem/comment/2a4b" in error["message"]


def test_drift_of_every_corpus_names_each_documents_corpus(fixture_warehouse: str) -> None:
    text = cli("drift", "--warehouse", fixture_warehouse, "--since", "1").stdout
    assert "NEW       synthetic/record/other-1 (corpus other-corpus)" in text
    assert "CHANGED   nhtsa/complaint/11561421 (corpus fixture-corpus)" in text
    assert "UNSEEN    github/acme/handbook/docs/old-faq.md (corpus fixture-corpus)" in text
    report = json.loads(
        cli("drift", "--warehouse", fixture_warehouse, "--since", "1", "--json").stdout
    )
    assert {d["doc_id"]: d["corpora"] for d in report["documents"]}["nhtsa/complaint/11561423"] == [
        "fixture-corpus"
    ]
    md = cli("drift", "--warehouse", fixture_warehouse, "--since", "1", "--format", "md").stdout
    assert "### new: `nhtsa/complaint/11561423` (corpus fixture-corpus)" in md
    html = cli("drift", "--warehouse", fixture_warehouse, "--since", "1", "--format", "html").stdout
    assert "<code>nhtsa/complaint/11561423</code> (corpus fixture-corpus)</h3>" in html


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_a_drift_report_never_ends_on_an_empty_header(
    fixture_warehouse: str, tmp_path: Path, fmt: str
) -> None:
    manifest = write_manifest(tmp_path, fixture.MANIFEST)
    result = cli(
        "drift", manifest, "--warehouse", fixture_warehouse, "--limit", "0", "--format", fmt
    )
    out = result.stdout
    assert "6 drifted documents, none listed (raise --limit to list them)" in out
    assert "drifted documents (6)" not in out.lower()
    if fmt == "text":
        assert out.rstrip().splitlines()[-1].startswith("6 drifted documents, none listed")

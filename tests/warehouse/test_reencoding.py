"""A warehouse of canonical form v1 moved to v2 (RFC 8785), through the CLI.

The old warehouse is ``tests/fixtures/v1_warehouse``: made by receipts at schema 9, which
wrote canonical form v1, from the ``notes`` test source (see its ``make.py``), exported with
DuckDB's ``EXPORT DATABASE`` and imported here into a fresh file. Migrating it records each
snapshot's form; ingesting the same upstream again writes one re-encoding revision for each
document whose v1 bytes are not RFC 8785 bytes, and nothing else changes: no drift, the
claims hold as they did, the log verifies, publishing writes the same documents.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import rfc8785

from sources import registry
from sources.base import Source
from sources.http import Endpoint
from tests.conftest import TEST_WAREHOUSE, cli, write_manifest
from tests.fixtures.v1_warehouse.notes import BOARDS, MANIFEST
from tests.sources.fourth_source.source import ENDPOINT, SOURCE
from tests.sources.fourth_source.upstream import NotesUpstream
from warehouse.canonical import FORM_JCS, FORM_V1, REENCODED

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_warehouse"
# The documents whose v1 bytes differ from their RFC 8785 bytes (500.0, -0.0, 1e+20); note 7's
# are the same (2.2), note 8 holds 2**60, which RFC 8785 cannot: it stays in v1.
REENCODED_DOCS = ["notes/note/kitchen/1", "notes/note/kitchen/2", "notes/note/kitchen/3"]
SAME_BYTES = "notes/note/garage/7"
WIDE = "notes/note/garage/8"


def old_warehouse(directory: Path) -> Path:
    """The fixture's warehouse, imported into a DuckDB file of its own."""
    export = directory / "export"
    shutil.copytree(FIXTURE / "export", export)
    load = export / "load.sql"
    load.write_text(load.read_text("utf-8").replace("EXPORT_DIR", str(export)), "utf-8")
    path = directory / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"IMPORT DATABASE '{export}'")
    con.close()
    return path


def rows(warehouse: Path, sql: str) -> list[tuple[Any, ...]]:
    """``receipts query SQL``'s rows (a DuckDB file or a lake alike)."""
    return [
        tuple(row.values()) for row in ok_json("query", sql, "--warehouse", warehouse, "--json")
    ]


def migrated_old_warehouse(directory: Path, warehouse_path: Path) -> Path:
    """The fixture's warehouse migrated, where the tests run: the file itself, or its copy
    into the DuckLake they run on (``copy`` needs a source at this schema version)."""
    old = old_warehouse(directory)
    ok_json("migrate", "--warehouse", old, "--json")
    if TEST_WAREHOUSE == "duckdb":
        return old
    ok_json("copy", "--warehouse", old, "--to", warehouse_path, "--json")
    return warehouse_path


def ok_json(*args: Any) -> Any:
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def notes(stand_in: Callable[[Endpoint, str], str]) -> Iterator[Source[Any]]:
    registry.register(SOURCE)
    with NotesUpstream(boards=BOARDS).serving() as url:
        stand_in(ENDPOINT, url)
        yield SOURCE
    registry.unregister(SOURCE.name)


def test_a_new_warehouse_stores_rfc8785(
    notes: Source[Any], tmp_path: Path, warehouse_path: Path
) -> None:
    manifest = write_manifest(tmp_path, MANIFEST)
    warehouse = warehouse_path
    report = ok_json("ingest", manifest, "--warehouse", warehouse, "--json")
    assert report["counts"]["notes"]["new"] == 5
    stored = rows(
        warehouse,
        "SELECT d.doc_id, f.canonical_form, decode(s.body) FROM revisions r "
        "JOIN documents d USING (doc_id) JOIN snapshots s USING (content_hash) "
        "JOIN snapshot_forms f USING (content_hash) ORDER BY d.doc_id",
    )
    forms = {doc: form for doc, form, _ in stored}
    assert forms == {**dict.fromkeys([*REENCODED_DOCS, SAME_BYTES], FORM_JCS), WIDE: FORM_V1}
    for doc, form, body in stored:
        if form == FORM_JCS:  # the bytes a standard RFC 8785 library writes for the value
            # (read as I-JSON, numbers as doubles: RFC 8785 writes 1e20 with 21 digits)
            value = json.loads(body, parse_int=float)
            assert body.encode() == rfc8785.dumps(value), doc
    history = ok_json("history", "notes/note/kitchen/1", "--warehouse", warehouse, "--json")
    assert [r["canonical_form"] for r in history["revisions"]] == [FORM_JCS]


def test_migrating_records_each_snapshots_form(tmp_path: Path) -> None:
    warehouse = old_warehouse(tmp_path)
    report = ok_json("migrate", "--warehouse", warehouse, "--json")
    assert report["applied"][0] == "0010_snapshot_forms" and report["schema_version"] >= 10
    forms = dict(
        rows(
            warehouse,
            "SELECT r.doc_id, f.canonical_form FROM revisions r "
            "JOIN snapshot_forms f USING (content_hash)",
        )
    )
    assert forms == {**dict.fromkeys(REENCODED_DOCS, FORM_V1), SAME_BYTES: FORM_JCS, WIDE: FORM_V1}
    meta = dict(
        rows(
            warehouse,
            "SELECT key, arg_max(value, recorded_at) FROM warehouse_meta GROUP BY key",
        )
    )
    assert meta["canonical_form_version"] == "2"


def test_reingesting_a_v1_warehouse_re_encodes_and_changes_nothing_else(
    notes: Source[Any], tmp_path: Path, warehouse_path: Path
) -> None:
    warehouse = migrated_old_warehouse(tmp_path, warehouse_path)
    manifest = write_manifest(tmp_path, MANIFEST)
    claims = FIXTURE / "claims.ndjson"
    before_claims = ok_json("verify-claims", "--file", claims, "--warehouse", warehouse, "--json")
    published_before = tmp_path / "before.ndjson"
    ok_json("publish", manifest, "--warehouse", warehouse, "--out", published_before, "--json")

    report = ok_json("ingest", manifest, "--warehouse", warehouse, "--json")
    # A re-encoding is not a change of the document's value: the run counts it unchanged.
    counts = report["counts"]["notes"]
    assert (counts["unchanged"], sum(counts.values())) == (5, 5)

    # One re-encoding revision per document whose bytes needed it, in the log too.
    for doc in REENCODED_DOCS:
        history = ok_json("history", doc, "--warehouse", warehouse, "--json")["revisions"]
        assert [(r["revision"], r["reason"], r["canonical_form"]) for r in history] == [
            (1, None, FORM_V1),
            (2, REENCODED, FORM_JCS),
        ]
        text = cli("history", doc, "--warehouse", warehouse).stdout
        assert f"({REENCODED})" in text
    for doc in (SAME_BYTES, WIDE):
        history = ok_json("history", doc, "--warehouse", warehouse, "--json")["revisions"]
        assert len(history) == 1
    entries = [
        e for (e,) in rows(warehouse, "SELECT decode(entry) FROM tlog_entries WHERE revision = 2")
    ]
    assert len(entries) == 3
    assert all(f"\nreason {REENCODED}\n" in e for e in entries)
    assert ok_json("log", "verify", "--warehouse", warehouse, "--json")["ok"] is True
    verified = cli("verify", "--warehouse", warehouse)
    assert verified.exit_code == 0, verified.output

    # No drift between the run that wrote v1 and the one that re-encoded.
    drift = ok_json("drift", manifest, "--warehouse", warehouse, "--format", "json")
    assert drift["counts"]["notes"]["changed"] == 0
    assert drift["counts"]["notes"]["unchanged"] == 5
    assert drift["documents"] == []

    # The claims hold as they did; the published documents are byte for byte the same.
    after_claims = ok_json("verify-claims", "--file", claims, "--warehouse", warehouse, "--json")
    assert (
        statuses(after_claims)
        == statuses(before_claims)
        == dict.fromkeys(["oats", "kettle", "tyres", "serial"], "holds")
    )
    published_after = tmp_path / "after.ndjson"
    ok_json("publish", manifest, "--warehouse", warehouse, "--out", published_after, "--json")
    assert published_after.read_bytes() == published_before.read_bytes()

    # Ingesting again writes nothing: the re-encoded bytes are the current ones now.
    again = ok_json("ingest", manifest, "--warehouse", warehouse, "--json")
    assert again["counts"]["notes"]["unchanged"] == 5
    assert rows(warehouse, "SELECT count(*) FROM revisions") == [(8,)]  # 5 + 3 re-encodings


def statuses(report: Any) -> dict[str, str]:
    return {c["claim_id"]: c["status"] for c in report["claims"]}

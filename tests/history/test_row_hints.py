"""Row hints (``receipts index`` records where each document's rows are): a document read
through them is the document read without them, for documents indexed, changed after the
build and added after it; a hint that does not hold is not used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse import history, row_hints, serving
from warehouse.store import Warehouse

EDITED = "nhtsa/complaint/11561421"  # revised in run 4, after the build
ADDED = "nhtsa/complaint/11561423"  # new in run 4


@pytest.fixture
def hinted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fixture corpus indexed after its first three runs, then run 4."""
    location = str(tmp_path / "w.duckdb")
    with Warehouse.open(location) as wh:
        for run in (1, 2):
            fixture.run_at(
                wh, monkeypatch, fixture.RUN_TIMES[run], fixture.CORPUS, fixture.UPSTREAM[run]
            )
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[3], fixture.OTHER_CORPUS, fixture.OTHER)
    result = cli("index", "--warehouse", location)
    assert result.exit_code == 0, result.output
    with Warehouse.open(location) as wh:
        fixture.run_at(wh, monkeypatch, fixture.RUN_TIMES[4], fixture.CORPUS, fixture.UPSTREAM[4])
    return location


def _read(wh: Warehouse, doc_id: str) -> dict[str, Any]:
    """What a document's page reads of it."""
    revisions = history.history(wh, doc_id)
    bodies = []
    for rev in revisions:
        if rev["tombstone"]:
            continue
        snap = history.snapshot(wh, doc_id, revision=int(rev["revision"]), revisions=revisions)
        bodies.append((snap.revision, snap.content_hash, snap.media_type, snap.body))
    return {
        "info": serving.document_info(wh, doc_id),
        "history": revisions,
        "positions": serving.log_positions(wh, doc_id),
        "bodies": bodies,
    }


def _doc_ids(wh: Warehouse) -> list[str]:
    return [
        str(d) for (d,) in wh._con.execute("SELECT doc_id FROM documents ORDER BY 1").fetchall()
    ]


def _unhinted(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(row_hints, "hints", lambda warehouse, keys: {})


def test_a_document_read_through_its_hints_is_the_document(
    hinted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Warehouse.open(hinted, read_only=True) as wh:
        docs = _doc_ids(wh)
        assert EDITED in docs and ADDED in docs
        through = {doc: _read(wh, doc) for doc in docs}
        # each read went through its rows: hinted, or (added after the build) the new ones
        assert row_hints.source(wh, "revisions", EDITED).startswith(
            "(SELECT * FROM revisions WHERE rowid = "
        )
        assert row_hints.source(wh, "revisions", ADDED).startswith(
            "(SELECT * FROM revisions WHERE rowid >= "
        )
        assert [r["revision"] for r in through[EDITED]["history"]] == [1, 2]
        assert through[ADDED]["history"] and through[ADDED]["bodies"]
    with Warehouse.open(hinted, read_only=True) as wh:
        _unhinted(wh, monkeypatch)
        assert row_hints.source(wh, "revisions", EDITED) == "revisions"
        assert {doc: _read(wh, doc) for doc in docs} == through


def test_a_hint_that_does_not_hold_is_not_used(hinted: str) -> None:
    with Warehouse.open(hinted) as wh:
        expected = _read(wh, EDITED)
        # a row of another document recorded under this one's key (a copy whose rows came
        # in another order looks like this)
        wh._con.execute(
            "INSERT INTO search_rows SELECT md5_number_upper($d), 'revisions', min(rowid) "
            "FROM revisions WHERE doc_id <> $d",
            {"d": EDITED},
        )
    with Warehouse.open(hinted, read_only=True) as wh:
        assert row_hints.hints(wh, [EDITED]) == {EDITED: None}
        assert row_hints.source(wh, "revisions", EDITED) == "revisions"
        assert row_hints.source(wh, "revisions", [ADDED, EDITED]) == "revisions"
        assert _read(wh, EDITED) == expected


def test_without_an_index_the_tables_are_read(tmp_path_factory: pytest.TempPathFactory) -> None:
    with Warehouse.open(fixture.shared(tmp_path_factory), read_only=True) as wh:
        assert row_hints.hints(wh, [EDITED]) == {}
        assert row_hints.source(wh, "snapshots", "anything") == "snapshots"


def test_the_log_check_of_one_document_reads_through_its_hints(hinted: str) -> None:
    with Warehouse.open(hinted) as wh:
        # the current revision row of the edited document pointed at revision 1's bytes:
        # the page refuses it, hints or not
        wh._con.execute(
            "INSERT INTO revisions SELECT * REPLACE (3 AS revision) FROM revisions "
            "WHERE doc_id = $d AND revision = 1",
            {"d": EDITED},
        )
    result = cli("show", EDITED, "--warehouse", hinted)
    assert result.exit_code == 1
    assert EDITED in result.output and "revision 3" in result.output


def test_a_document_with_many_rows_reads_the_table(
    hinted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_hints, "MOST_ROWS", 1)
    with Warehouse.open(hinted, read_only=True) as wh:
        # revisions 1 (hinted) and 2 (after the build, read as the table's newer rows)
        assert row_hints.source(wh, "revisions", EDITED).startswith("(SELECT")
        two = [
            str(d)
            for (d,) in wh._con.execute(
                "SELECT doc_id FROM revisions WHERE rowid < (SELECT rows FROM search_row_ends "
                "WHERE tbl = 'revisions') GROUP BY doc_id HAVING count(*) = 2 LIMIT 1"
            ).fetchall()
        ]
        assert two, "the fixture has a document revised before the build"
        assert row_hints.source(wh, "revisions", two[0]) == "revisions"


def test_a_revision_hidden_from_its_hints_is_refused(hinted: str) -> None:
    """Hints are checked to hold their key, not to be complete: the log check of a document
    served reads the log's entries whole, so a current revision whose row the hints leave
    out (with its log entry's) is refused, not served as the one before it."""
    with Warehouse.open(hinted) as wh:
        # EDITED's current revision (recorded after the build) and its log entry: the
        # recorded ends moved past them, so neither hints nor newer rows hold them (the
        # tables stay as they are)
        [(row,)] = wh._con.execute(
            "SELECT max(rowid) FROM revisions WHERE doc_id = $d", {"d": EDITED}
        ).fetchall()
        [(entry,)] = wh._con.execute(
            "SELECT max(rowid) FROM tlog_entries WHERE doc_id = $d", {"d": EDITED}
        ).fetchall()
        ends = wh._con.execute("SELECT tbl, rows FROM search_row_ends").fetchall()
        moved = {"revisions": row + 1, "tlog_entries": entry + 1}
        wh._con.execute("DELETE FROM search_row_ends")
        wh._con.executemany(
            "INSERT INTO search_row_ends VALUES (?, ?)",
            [(table, moved.get(table, end)) for table, end in ends],
        )
    with Warehouse.open(hinted, read_only=True) as wh:
        assert [r["revision"] for r in history.history(wh, EDITED)] == [1]  # hidden
    result = cli("show", EDITED, "--warehouse", hinted)
    assert result.exit_code == 1, result.output
    assert EDITED in result.output and "revision 2" in result.output

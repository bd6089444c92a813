"""The log check of the documents a command serves, many at once: a chunk's entries are
proved together (one root worked out from all their leaves), and when that root is not the
checkpoint's, each entry is proved alone so that the wrong one is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli, write_manifest
from warehouse.errors import LogMismatch
from warehouse.store import Warehouse
from warehouse.tlog import check, merkle
from warehouse.tlog.entries_sql import ROW_COLUMNS, revision_entry, rows_with_context

MANIFEST = """
[corpus]
name = "synth"
namespace = "synth"

[[synthetic]]
name = "a"
count = 40
size = 200
complete = true
"""


@pytest.fixture
def ingested(tmp_path: Path) -> Path:
    warehouse = tmp_path / "w.duckdb"
    manifest = write_manifest(tmp_path, MANIFEST)
    for size in ("200", "201"):  # two revisions of each document
        write_manifest(tmp_path, MANIFEST.replace("size = 200", f"size = {size}"))
        assert cli("ingest", manifest, "--warehouse", warehouse).exit_code == 0
    return warehouse


def _revisions(wh: Warehouse) -> list[tuple[str, int]]:
    rows = wh._connection_for_tests().execute("SELECT doc_id, revision FROM revisions")
    return [(str(d), int(r)) for d, r in rows.fetchall()]


def test_every_revision_checked_at_once_and_one_at_a_time_agree(
    ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proved: list[int] = []
    one_by_one = check._inclusion_problems

    def counted(*args: object) -> object:
        proved.append(1)
        return one_by_one(*args)  # type: ignore[arg-type]

    with Warehouse.open(str(ingested), read_only=True) as wh:
        wanted = _revisions(wh)
        assert len(wanted) == 80
        check.check_revisions(wh, wanted)  # the rows and the log agree
        monkeypatch.setattr(check, "_all_included", lambda *a: False)
        monkeypatch.setattr(check, "_inclusion_problems", counted)
        check.check_revisions(wh, wanted)  # so do the proofs one by one
    assert proved


def test_a_leaf_the_entry_does_not_hash_to_is_named_among_many(ingested: Path) -> None:
    """An entry rewritten with its row (so the two agree) but not its leaf: the chunk's root
    is not the checkpoint's, and the one entry is named."""
    with Warehouse.open(str(ingested)) as wh:
        con = wh._connection_for_tests()
        doc, index = con.execute(
            "SELECT doc_id, idx FROM tlog_entries WHERE revision = 2 ORDER BY idx LIMIT 1 OFFSET 7"
        ).fetchone() or ("", 0)
        con.execute(
            "UPDATE revisions SET source_url = 'https://forged.example/' "
            "WHERE doc_id = $d AND revision = 2",
            {"d": doc},
        )
        rebuilt = revision_entry(ROW_COLUMNS) + rows_with_context(
            where="r.doc_id = $d AND r.revision = 2", docs="doc_id = $d"
        )
        con.execute(f"UPDATE tlog_entries SET entry = (SELECT {rebuilt}) WHERE idx = $i",
                    {"d": doc, "i": index})  # fmt: skip
        forged = con.execute(
            "SELECT count(*) FROM tlog_entries WHERE contains(entry::VARCHAR, 'forged')"
        ).fetchone()
        assert forged == (1,)
    with Warehouse.open(str(ingested), read_only=True) as wh, pytest.raises(LogMismatch) as raised:
        check.check_revisions(wh, _revisions(wh))
    message = str(raised.value)
    assert f"{doc} revision 2" in message
    assert f"log entry {index} does not hash to its leaf" in message
    exported = cli("export", "--warehouse", ingested, "--out", ingested.parent / "out")
    assert exported.exit_code == 1 and doc in exported.stderr


def test_two_revisions_at_one_entry_are_left_to_the_proofs_one_by_one() -> None:
    """Each entry number is proved once: a second leaf at a number already taken is not
    folded into the root (it would replace the first); the proofs one by one check both."""
    leaves = [("a", 1, 0, b"one", False), ("b", 1, 0, b"two", False)]
    assert check._all_included(None, leaves, 1, None) is False  # type: ignore[arg-type]
    assert merkle.root_from_leaves(1, {0: merkle.leaf_hash(b"one")}, lambda i: []) == (
        merkle.leaf_hash(b"one")
    )

"""``diff`` of a revision whose snapshot row is missing says what ``show`` says of it (the
snapshot of that document is missing), never an internal error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import corpus_fixture as fixture
from tests.conftest import cli
from warehouse.store import Warehouse

DOC = "nhtsa/complaint/11561421"  # two revisions with content, in runs 1 and 4


def without_snapshot(source: str, directory: Path, doc: str, revision: int) -> tuple[str, str]:
    """A copy of the warehouse ``source`` in which revision ``revision`` of ``doc`` has no
    snapshot row; returns the copy and the missing content hash."""
    copy = directory / "w.duckdb"
    shutil.copyfile(source, copy)
    with Warehouse.open(str(copy)) as wh:
        con = wh._connection_for_tests()
        [(content_hash,)] = con.execute(
            "SELECT content_hash FROM revisions WHERE doc_id = $d AND revision = $r",
            {"d": doc, "r": revision},
        ).fetchall()
        con.execute("DELETE FROM snapshots WHERE content_hash = $h", {"h": content_hash})
    return str(copy), str(content_hash)


@pytest.mark.parametrize("revision", [1, 2])
def test_diff_of_a_revision_without_its_snapshot_says_what_show_says(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, revision: int
) -> None:
    warehouse, missing = without_snapshot(fixture.shared(tmp_path_factory), tmp_path, DOC, revision)
    shown = cli("show", DOC, "--revision", revision, "--warehouse", warehouse)
    assert shown.stderr == f"receipts: snapshot {missing} of {DOC} is missing\n"

    diffed = cli("diff", DOC, "1", "2", "--warehouse", warehouse)
    assert (diffed.exit_code, diffed.stderr) == (shown.exit_code, shown.stderr)
    assert diffed.stdout == ""

    as_json = cli("diff", DOC, "--warehouse", warehouse, "--json")
    assert as_json.exit_code == shown.exit_code
    assert f"snapshot {missing} of {DOC} is missing" in as_json.stdout

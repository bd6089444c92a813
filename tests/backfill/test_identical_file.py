"""A backfill of a file the warehouse already holds as it is is recognized by its digest and
not read again (pipelines.backfill.identical); anything that could make a reading differ
reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.nhtsa import cmpl_row, write_zip
from pipelines.backfill import passes as passes_module
from tests.backfill.test_nhtsa_backfill import backfill, complaints_file
from tests.conftest import cli
from warehouse.digests import table_digests
from warehouse.store import Warehouse

# What a run reports of the file, which a run that recognizes it must report as a reading does.
READ = ("rows", "matched", "malformed", "malformed_lines", "layouts", "field_counts", "scope")


def _digests(warehouse: Path) -> dict[str, str]:
    """The digests of the tables a backfill writes documents to."""
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        every = table_digests(wh)
    return {t: every[t] for t in ("revisions", "snapshots", "sightings", "input_fingerprints")}


def _never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the file was read")

    monkeypatch.setattr(passes_module, "scan", refused)


def test_the_same_file_again_is_not_read_and_reports_what_a_reading_reports(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = complaints_file(tmp_path)  # with malformed lines and two layouts
    args = ("--file", path, "--kind", "complaints", "--make", "honda")
    code, first, _ = backfill(warehouse_path, *args)
    assert code == 0 and first["identical_to_run"] is None and first["documents"]["new"] == 4
    code, reread, _ = backfill(warehouse_path, *args, "--rescan")
    assert code == 0 and reread["identical_to_run"] is None
    before = _digests(warehouse_path)

    _never_read(monkeypatch)
    code, again, _ = backfill(warehouse_path, *args)
    assert code == 0, again
    assert again["identical_to_run"] == reread["run_id"]
    assert {k: again[k] for k in READ} == {k: reread[k] for k in READ}
    assert again["malformed"] == 3 and len(again["malformed_lines"]) == 3
    assert again["documents"] == reread["documents"] == {
        "records": 4, "new": 0, "changed": 0, "unchanged": 4, "gone": 0, "restored": 0,
    }  # fmt: skip
    assert again["built"] == 0 and again["status"] == "ok"
    assert _digests(warehouse_path) == before  # nothing written but the run's rows

    # The ledger has its counts; the next run is recognized by this one (a chain).
    runs = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    ledger = next(r for r in runs if r["run_id"] == again["run_id"])
    assert ledger["status"] == "ok" and ledger["counts"]["nhtsa"]["unchanged"] == 4
    code, third, _ = backfill(warehouse_path, *args)
    assert code == 0 and third["identical_to_run"] == again["run_id"]

    text = cli("backfill", "nhtsa", "--warehouse", warehouse_path, *args)
    assert text.exit_code == 0, text.stderr
    assert f"identical to run {third['run_id']}'s file" in text.stdout
    assert "--rescan reads it" in text.stdout


def test_a_revision_written_under_the_kind_since_makes_the_file_read_again(
    tmp_path: Path, warehouse_path: Path
) -> None:
    """Another file changing one document, then the first file again: it is read, and puts
    that document back."""
    a = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999900 + i, i) for i in (1, 2)])
    b = write_zip(tmp_path / "B.zip", "FLAT_CMPL.txt", [cmpl_row(11999901, 9)])
    assert backfill(warehouse_path, "--file", a, "--kind", "complaints")[0] == 0
    code, other, _ = backfill(warehouse_path, "--file", b, "--kind", "complaints")
    assert code == 0 and other["documents"]["changed"] == 1
    code, back, _ = backfill(warehouse_path, "--file", a, "--kind", "complaints")
    assert code == 0 and back["identical_to_run"] is None
    assert back["documents"]["changed"] == 1 and back["documents"]["unchanged"] == 1
    code, again, _ = backfill(warehouse_path, "--file", a, "--kind", "complaints")
    assert code == 0 and again["identical_to_run"] == back["run_id"]


def test_another_name_or_filter_reads_the_file(tmp_path: Path, warehouse_path: Path) -> None:
    """The same bytes under another name are sighted there; another filter or another reader
    version is another reading."""
    a = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999910, 1)])
    assert backfill(warehouse_path, "--file", a, "--kind", "complaints")[0] == 0
    b = tmp_path / "B.zip"
    b.write_bytes(a.read_bytes())
    code, elsewhere, _ = backfill(warehouse_path, "--file", b, "--kind", "complaints")
    assert code == 0 and elsewhere["identical_to_run"] is None
    code, filtered, _ = backfill(warehouse_path, "--file", a, "--kind", "complaints", "--make", "x")
    assert code == 0 and filtered["identical_to_run"] is None
    code, same, _ = backfill(warehouse_path, "--file", a, "--kind", "complaints")
    assert code == 0 and same["identical_to_run"] == 1  # the latest run under this name
    code, there, _ = backfill(warehouse_path, "--file", b, "--kind", "complaints")
    assert code == 0 and there["identical_to_run"] == elsewhere["run_id"]


def test_a_new_version_of_the_reader_reads_the_file(
    tmp_path: Path, warehouse_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.backfill import identical

    a = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999920, 1)])
    assert backfill(warehouse_path, "--file", a, "--kind", "complaints")[0] == 0
    monkeypatch.setattr(identical, "__version__", "99.0.0")
    code, again, _ = backfill(warehouse_path, "--file", a, "--kind", "complaints")
    assert code == 0 and again["identical_to_run"] is None and again["documents"]["unchanged"] == 1


def test_a_file_refused_without_allow_malformed_is_read_and_refused_again(
    tmp_path: Path, warehouse_path: Path
) -> None:
    rows: list[list[str] | str] = [cmpl_row(11999930, 1), "junk", "more junk", "still junk"]
    path = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    args = ("--file", path, "--kind", "complaints")
    assert backfill(warehouse_path, *args, "--allow-malformed")[0] == 0
    code, _, stderr = backfill(warehouse_path, *args)
    assert code == 1 and "--allow-malformed keeps the readable rows" in stderr
    code, kept, _ = backfill(warehouse_path, *args, "--allow-malformed")
    assert code == 0 and kept["identical_to_run"] == 1  # the refused run wrote nothing


def test_an_interrupted_run_of_the_same_file_is_resumed_then_the_complete_one_is_recognized(
    tmp_path: Path, warehouse_path: Path
) -> None:
    from pipelines.backfill.request import BackfillRequest
    from pipelines.backfill.run import run_backfill
    from tests.backfill.test_nhtsa_backfill import DiesAfter, Interrupted

    a = write_zip(
        tmp_path / "A.zip", "FLAT_CMPL.txt", [cmpl_row(11999940 + i, i) for i in range(6)]
    )
    with Warehouse.open(str(warehouse_path)) as wh:
        run_backfill(wh, BackfillRequest(path=a, kind="complaints"))
        rescan = BackfillRequest(path=a, kind="complaints", batch_size=2, rescan=True)
        with pytest.raises(Interrupted):
            run_backfill(wh, rescan, reporter=DiesAfter(1))
        resumed = run_backfill(wh, BackfillRequest(path=a, kind="complaints", batch_size=2))
        assert resumed.identical_to_run is None and resumed.resumes_run is not None
        again = run_backfill(wh, BackfillRequest(path=a, kind="complaints"))
    # The resumed run read part of the file only: the first run is the one recognized.
    assert again.identical_to_run == 1 and again.documents.unchanged == 6

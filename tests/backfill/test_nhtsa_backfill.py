"""``receipts backfill nhtsa``: streaming, grouping rows into documents, malformed rows,
idempotency, the same doc_id as the API, downloads, and resuming an interrupted run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
import rfc8785

from bench.nhtsa_backfill import generate
from fakes.nhtsa import AEB_COMPLAINT, STATIC, FakeNhtsa, cmpl_row, write_zip
from pipelines.backfill import passes as passes_module
from pipelines.backfill.memory import arrow_memory_returned
from pipelines.backfill.request import BackfillRequest
from pipelines.backfill.run import run_backfill
from pipelines.progress import (
    BackfillReporter,
    Display,
    LineDisplay,
    LiveDisplay,
    backfill_reporter_for,
)
from sources.base import CurationInput
from sources.nhtsa.flatfile.layouts import INV_FIELDS, LAYOUTS, RCL_FIELDS, TSBS_FIELDS_14
from sources.nhtsa.flatfile.rows import RowChecker, VehicleFilter
from sources.nhtsa.source import curate
from tests.backfill.reference import flat_body, reference_documents
from tests.conftest import REPO, cli
from warehouse import history
from warehouse.bulk.engine import FlatBulk
from warehouse.bulk.plan_sql import SCRATCH
from warehouse.canonical import FORM_JCS, content_hash
from warehouse.explore import iter_current_bodies
from warehouse.store import Warehouse


def complaints_file(directory: Path) -> Path:
    """Five complaints in eleven lines: adjacent and scattered rows of one ODI number, a
    51-field row, another make, and three malformed lines."""
    rows: list[list[str] | str] = [
        cmpl_row(11999001, 1, YEARTXT="2019"),
        cmpl_row(11999001, 2, YEARTXT="2020", COMPDESC="SERVICE BRAKES"),
        cmpl_row(11999002, 3, YEARTXT="2018"),
        "a line that is not a complaint",
        cmpl_row(11999003, 4, YEARTXT="9999"),
        cmpl_row(11999002, 5, YEARTXT="2021", COMPDESC="ELECTRICAL SYSTEM"),  # scattered
        cmpl_row(11999004, 6, FAILDATE="05/12/2021"),
        [*cmpl_row(11999005, 7, YEARTXT="2022"), "", ""],
        cmpl_row(11999006, 8, MAKETXT="ACURA", MODELTXT="RDX"),
        cmpl_row(11999007, 9, ODINO=""),
        cmpl_row(11999002, 10, YEARTXT="2018", COMPDESC="AIR BAGS"),
    ]
    return write_zip(directory / "FLAT_CMPL.zip", "FLAT_CMPL.txt", rows)


def backfill(warehouse_path: Path, *args: Any) -> tuple[int, dict[str, Any], str]:
    result = cli("backfill", "nhtsa", "--warehouse", warehouse_path, "--json", *args)
    return result.exit_code, json.loads(result.stdout or "{}"), result.stderr


def snapshot_body(warehouse_path: Path, doc: str) -> dict[str, Any]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return dict(orjson.loads(history.snapshot(wh, doc).body))


def revisions(warehouse_path: Path) -> list[tuple[Any, ...]]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return [
            (r.doc_id, r.revision, r.content_hash, r.tombstone, r.source_format)
            for r in history.revisions(wh)
        ]


def test_a_flat_file_becomes_one_document_per_record(tmp_path: Path) -> None:
    path = complaints_file(tmp_path)
    code, report, _ = backfill(tmp_path / "w.duckdb", "--file", path, "--kind", "complaints")
    assert code == 0, report
    assert (report["rows"], report["matched"], report["malformed"]) == (11, 8, 3)
    assert report["documents"]["new"] == 5
    assert report["malformed_lines"] == [
        {"line": 4, "reason": "expected 20, 46, 47, 48, 49 or 51 tab-separated fields, found 1"},
        {"line": 7, "reason": "'05/12/2021' is not a YYYYMMDD date"},
        {
            "line": 10,
            "reason": "complaint without an identity (looked for odiNumber, nhtsaIdNumber, ODINO)",
        },
    ]
    scattered = snapshot_body(tmp_path / "w.duckdb", "nhtsa/complaint/11999002")
    assert [r["CMPLID"] for r in scattered["rows"]] == ["3", "5", "10"]  # file order
    assert scattered["modelYears"] == [2018, 2021]
    assert snapshot_body(tmp_path / "w.duckdb", "nhtsa/complaint/11999003")["modelYears"] == []
    wide = snapshot_body(tmp_path / "w.duckdb", "nhtsa/complaint/11999005")
    assert (wide["rows"][0]["STATE_OF_INCIDENT"], wide["rows"][0]["VEHICLE_OPERATOR"]) == ("", "")
    assert not any(key.startswith("FIELD_") for key in wide["rows"][0])


def test_each_document_names_the_layout_and_version_it_was_read_with(tmp_path: Path) -> None:
    """Field names are part of the stored bytes: a renamed field must show as a layout
    change in provenance, not as silent churn."""
    path = complaints_file(tmp_path)
    code, _, _ = backfill(tmp_path / "w.duckdb", "--file", path, "--kind", "complaints")
    assert code == 0
    formats = {doc: fmt for doc, _, _, _, fmt in revisions(tmp_path / "w.duckdb")}
    assert formats["nhtsa/complaint/11999005"] == "flat:FLAT_CMPL/CMPL_51.v2"
    assert formats["nhtsa/complaint/11999002"] == "flat:FLAT_CMPL/CMPL_49.v1"


def test_malformed_rows_are_reported_in_text_and_in_the_ledger(tmp_path: Path) -> None:
    path = complaints_file(tmp_path)
    warehouse = tmp_path / "w.duckdb"
    result = cli(
        "backfill", "nhtsa", "--file", path, "--kind", "complaints", "--warehouse", warehouse
    )
    assert result.exit_code == 0
    assert "rows: 11 read, 8 kept, 3 malformed" in result.stdout
    assert "malformed line 7: '05/12/2021' is not a YYYYMMDD date" in result.stdout
    assert "backfill nhtsa: read 11 rows" in result.stderr  # quiet progress off a terminal
    (run,) = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert run["command"] == "backfill" and run["status"] == "ok"
    assert run["counts"]["nhtsa"]["malformed"] == 3
    assert [w["warning"][:8] for w in run["warnings"]] == ["line 4: ", "line 7: ", "line 10:"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_progress_is_a_bar_with_rows_per_second_and_eta(tmp_path: Path) -> None:
    stream = Terminal()
    reporter = backfill_reporter_for(False, 10.0, stream)
    assert isinstance(reporter.display, LiveDisplay)
    request = BackfillRequest(complaints_file(tmp_path), "complaints")
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        run_backfill(wh, request, reporter=reporter)
    shown = stream.getvalue()
    for part in ("reading", "writing", "100%", "rows/s", "ETA"):
        assert part in shown
    assert isinstance(backfill_reporter_for(False, 10.0, io.StringIO()).display, LineDisplay)
    assert type(backfill_reporter_for(True, 10.0, stream).display) is Display  # --json: silent


def test_make_model_and_years_select_rows(tmp_path: Path) -> None:
    path = complaints_file(tmp_path)
    code, report, _ = backfill(
        tmp_path / "w.duckdb",
        "--file",
        path,
        "--kind",
        "complaints",
        "--make",
        "honda",
        "--model",
        "CR-V",
        "--years",
        "2019-2021",
    )
    assert code == 0
    assert report["matched"] == 3  # 11999001 (2019, 2020) and 11999002's 2021 row
    assert report["scope"] == "nhtsa:flat:FLAT_CMPL:complaints:HONDA/CR-V/2019-2021"
    assert report["documents"]["new"] == 2
    bad = cli("backfill", "nhtsa", "--file", path, "--kind", "complaints", "--years", "2021-2019")
    assert bad.exit_code == 2 and "2021 is after 2019" in bad.stderr


def test_a_second_backfill_of_the_same_file_changes_nothing(tmp_path: Path) -> None:
    path = complaints_file(tmp_path)
    warehouse = tmp_path / "w.duckdb"
    assert backfill(warehouse, "--file", path, "--kind", "complaints")[0] == 0
    before = revisions(warehouse)
    code, report, _ = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 0
    assert report["documents"]["unchanged"] == 5 and report["documents"]["new"] == 0
    assert report["resumes_run"] is None and report["resumed_after_line"] is None
    assert revisions(warehouse) == before


def test_a_flat_row_and_the_api_record_are_the_same_document(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    warehouse = tmp_path / "w.duckdb"
    manifest = REPO / "manifests" / "cr-v-aeb.toml"
    assert cli("ingest", manifest, "--warehouse", warehouse, "--json").exit_code == 0
    path = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", [cmpl_row(AEB_COMPLAINT, 1)])
    code, report, _ = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 0 and report["documents"]["changed"] == 1
    doc = f"nhtsa/complaint/{AEB_COMPLAINT}"
    revs = json.loads(cli("history", doc, "--warehouse", warehouse, "--json").stdout)
    formats = [r["provenance"]["source_format"] for r in revs["revisions"]]
    assert formats == ["api:complaintsByVehicle", "flat:FLAT_CMPL/CMPL_49.v1"]
    assert revs["revisions"][1]["provenance"]["url"] == "file:FLAT_CMPL.zip"


def test_a_flat_file_is_downloaded_from_the_static_host(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    zipped = complaints_file(tmp_path)
    fake_nhtsa.files["/odi/ffdd/cmpl/FLAT_CMPL.zip"] = zipped.read_bytes()
    fake_nhtsa.fail("/odi/ffdd/cmpl/FLAT_CMPL.zip", 503, retry_after="0")
    official = "https://static.nhtsa.gov/odi/ffdd/cmpl/FLAT_CMPL.zip"
    code, report, _ = backfill(
        tmp_path / "w.duckdb",
        "--file",
        official,
        "--kind",
        "complaints",
        "--download-dir",
        tmp_path / "downloads",
    )
    assert code == 0, report
    assert report["file"] == f"{STATIC}/odi/ffdd/cmpl/FLAT_CMPL.zip"  # the configured mirror
    assert report["documents"]["new"] == 5
    assert (tmp_path / "downloads" / "FLAT_CMPL.zip").read_bytes() == zipped.read_bytes()

    missing = cli(
        "backfill",
        "nhtsa",
        "--file",
        f"{STATIC}/odi/ffdd/cmpl/NOPE.zip",
        "--kind",
        "complaints",
        "--warehouse",
        tmp_path / "w.duckdb",
        "--download-dir",
        tmp_path / "downloads",
    )
    assert missing.exit_code == 1 and "HTTP 404" in missing.stderr
    elsewhere = cli(
        "backfill",
        "nhtsa",
        "--file",
        "https://example.com/FLAT_CMPL.zip",
        "--kind",
        "complaints",
        "--warehouse",
        tmp_path / "w.duckdb",
    )
    assert elsewhere.exit_code == 1 and "host 'example.com' is not allowed" in elsewhere.stderr


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    missing = cli(
        "backfill",
        "nhtsa",
        "--file",
        tmp_path / "nope.zip",
        "--kind",
        "complaints",
        "--warehouse",
        tmp_path / "w.duckdb",
    )
    assert missing.exit_code == 1 and "no such file" in missing.stderr
    assert "Traceback" not in missing.output
    limit = cli(
        "backfill",
        "nhtsa",
        "--file",
        complaints_file(tmp_path),
        "--kind",
        "complaints",
        "--warehouse",
        tmp_path / "w.duckdb",
        "--memory-limit",
        "lots",
    )
    assert limit.exit_code == 2 and "memory limit 'lots'" in limit.stderr


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--memory-limit", "\u0661\u0669\u0662MB", "is not like '256MB' or '2GB'"),
        ("--memory-limit", "192\tMB", "is not like '256MB' or '2GB'"),
        ("--years", "\u0662\u0660\u0661\u0669", "expected YEAR or FIRST-LAST"),
    ],
)
def test_digits_outside_ascii_are_usage_errors(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    result = cli(
        "backfill", "nhtsa", "--file", complaints_file(tmp_path), "--kind", "complaints",
        "--warehouse", tmp_path / "w.duckdb", option, value,
    )  # fmt: skip
    assert result.exit_code == 2 and message in result.stderr


def test_a_damaged_zip_fails_the_backfill_with_nothing_written(tmp_path: Path) -> None:
    path = complaints_file(tmp_path)
    data = bytearray(path.read_bytes())
    entry = data.rindex(b"PK\x01\x02")  # the member's entry in the central directory
    data[entry + 16] ^= 0xFF  # the first byte of its CRC-32
    path.write_bytes(bytes(data))
    warehouse = tmp_path / "w.duckdb"
    code, _, stderr = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 1
    assert "FLAT_CMPL.txt in FLAT_CMPL.zip is damaged: its CRC-32 does not match" in stderr
    assert "Traceback" not in stderr
    assert revisions(warehouse) == []  # found at the end of the first pass: before any commit
    (run,) = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert run["status"] == "failed" and "damaged" in run["failures"][0]["reason"]


def test_rows_are_staged_in_a_thread_of_their_own_whose_failure_fails_the_backfill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked rows are added to the scratch database in a thread beside the checking, in
    file order; when adding one block's rows fails, the backfill fails with nothing
    committed, and the blocks after it are not staged."""
    monkeypatch.setattr(passes_module, "BLOCK_BYTES", 16 << 10)
    staged: list[tuple[str, int]] = []
    add = FlatBulk.add_checked

    def failing(bulk: FlatBulk, rows: pa.Table) -> None:
        staged.append((threading.current_thread().name, rows["number"][0].as_py()))
        if len(staged) == 3:
            raise OSError("no space left on device")
        add(bulk, rows)

    monkeypatch.setattr(FlatBulk, "add_checked", failing)
    path = generate(tmp_path / "GEN.zip", 3_000)
    warehouse = tmp_path / "w.duckdb"
    code, _, stderr = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 1 and "no space left on device" in stderr and "Traceback" not in stderr
    assert {name for name, _ in staged} == {"backfill-staging"}
    firsts = [first for _, first in staged]
    assert len(firsts) == 3 and firsts == sorted(firsts)
    assert revisions(warehouse) == []
    (run,) = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert run["status"] == "failed" and "no space left" in run["failures"][0]["reason"]


def test_an_unexpected_exception_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a backfill is reported as one, as an ingest reports it: ``internal error``
    on stderr (exit 1, no traceback without --debug) and in the ledger, not as a failure of
    the file."""

    def broken(bulk: FlatBulk, *args: Any) -> Any:
        raise RuntimeError("the plan is broken")

    monkeypatch.setattr(FlatBulk, "plan", broken)
    warehouse = tmp_path / "w.duckdb"
    result = cli("backfill", "nhtsa", "--file", complaints_file(tmp_path), "--kind",
                 "complaints", "--warehouse", warehouse)  # fmt: skip
    assert result.exit_code == 1
    assert "receipts: internal error: RuntimeError: the plan is broken" in result.stderr
    assert "a bug in receipts" in result.stderr and "Traceback" not in result.stderr
    assert revisions(warehouse) == []
    (run,) = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)
    assert run["status"] == "internal error"
    assert run["failures"] == [
        {
            "source": "nhtsa",
            "entry": "FLAT_CMPL complaints (FLAT_CMPL.zip)",
            "reason": "internal error: RuntimeError: the plan is broken",
            "internal": True,
        }
    ]
    assert run["counts"]["nhtsa"]["malformed"] == 3  # what pass 1 found is kept


def _curated(warehouse_path: Path, doc: str) -> dict[str, Any]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        revision = history.history(wh, doc)[-1]
        body = history.snapshot(wh, doc).body
    item = CurationInput(
        doc,
        doc.split("/")[1],
        revision["revision"],
        revision["content_hash"],
        "application/json",
        body,
        revision["scope"],
        revision["provenance"],
        revision["attributes"],
        lambda d: d,
    )
    return curate(item, []).fields


def test_recalls_investigations_and_communications_files(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    recalls = []
    for year in ("2019", "2020"):
        row = dict.fromkeys(RCL_FIELDS, "")
        row.update(
            CAMPNO="20V999001",
            MAKETXT="HONDA",
            MODELTXT="CR-V",
            YEARTXT=year,
            COMPNAME="FORWARD COLLISION AVOIDANCE",
            MFGNAME="Honda",
            RCDATE="20211205",
            DESC_DEFECT="AEB may activate.",
            CONEQUENCE_DEFECT="Crash risk.",
            CORRECTIVE_ACTION="Software update.",
            POTAFF="1200",
        )
        recalls.append(list(row.values()))
    inv = dict.fromkeys(INV_FIELDS, "")
    inv.update(
        {
            "NHTSA ACTION NUMBER": "PE22003",
            "MAKE": "HONDA",
            "MODEL": "CR-V",
            "YEAR": "2018",
            "COMPNAME": "FORWARD COLLISION AVOIDANCE",
            "ODATE": "20220201",
            "CDATE": "20240312",
            "CAMPNO": "",
            "SUBJECT": "Unexpected braking",
        }
    )
    tsb = dict.fromkeys(TSBS_FIELDS_14, "")
    tsb.update(
        nhtsaID="11035885",
        tsbID="A26-091",
        nhtsaDate="20210305",
        manufacturerDate="20210302",
        make="HONDA",
        model="CR-V",
        year="2019",
        component="SERVICE BRAKES",
        summary="CMBS activates unexpectedly.",
    )
    files = {
        "recalls": write_zip(tmp_path / "FLAT_RCL_POST_2010.zip", "FLAT_RCL.txt", recalls),
        "investigations": write_zip(
            tmp_path / "FLAT_INV.zip", "FLAT_INV.txt", [list(inv.values())]
        ),
        "communications": write_zip(
            tmp_path / "TSBS_RECEIVED_2020-2024.zip",
            "TSBS_RECEIVED_2020-2024.txt",
            [list(tsb.values())],
        ),
    }
    for kind, path in files.items():
        code, report, _ = backfill(warehouse, "--file", path, "--kind", kind)
        assert code == 0 and report["documents"]["new"] == 1, (kind, report)

    recall = _curated(warehouse, "nhtsa/recall/20V999001")
    assert recall["reportReceivedDate"] == "2021-12-05" and recall["modelYears"] == [2019, 2020]
    assert recall["remedy"] == "Software update." and recall["potentialUnitsAffected"] == 1200
    assert recall["sourceFormat"] == "flat:FLAT_RCL/RCL_29.v1"
    investigation = _curated(warehouse, "nhtsa/investigation/PE22003")
    assert investigation["actionNumber"] == "PE22-003" and investigation["status"] == "closed"
    assert investigation["dateClosed"] == "2024-03-12"
    bulletin = _curated(warehouse, "nhtsa/communication/11035885")
    assert bulletin["communicationDate"] == "2021-03-02"
    assert bulletin["components"] == ["SERVICE BRAKES"]


# -- resuming ------------------------------------------------------------------------------
class Interrupted(BaseException):
    """Stands for the process dying: nothing after it runs, not even a 'failed' ledger row."""


class DiesAfter(BackfillReporter):
    def __init__(self, batches: int) -> None:
        super().__init__()
        self.batches = batches

    def writing(self, rows_done: int, rows_total: int, documents: int) -> None:
        self.batches -= 1
        if self.batches == 0:
            raise Interrupted


def test_an_interrupted_backfill_resumes_where_it_stopped(tmp_path: Path) -> None:
    path = generate(tmp_path / "FLAT_CMPL.zip", 3_000)
    request = BackfillRequest(path=path, kind="complaints", batch_size=200)
    with Warehouse.open(str(tmp_path / "whole.duckdb")) as wh:
        whole = run_backfill(wh, request)
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh, pytest.raises(Interrupted):
        run_backfill(wh, request, reporter=DiesAfter(batches=3))
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        resumed = run_backfill(wh, request)
    assert resumed.resumes_run == 1 and resumed.resumed_after_line
    assert resumed.documents.new == whole.documents.new - 3 * 200  # nothing counted twice
    assert resumed.documents.unchanged == 0
    assert revisions(tmp_path / "w.duckdb") == revisions(tmp_path / "whole.duckdb")


class PoolWatcher(BackfillReporter):
    def __init__(self) -> None:
        super().__init__()
        self.pools: set[str] = set()

    def writing(self, rows_done: int, rows_total: int, documents: int) -> None:
        self.pools.add(pa.default_memory_pool().backend_name)


def test_arrow_memory_goes_back_to_the_system_during_a_backfill_only(tmp_path: Path) -> None:
    """While it runs, a backfill's Arrow buffers come from a pool that returns freed pages at
    once; afterwards (and after a failure) the process has its own pool back."""
    before = pa.default_memory_pool().backend_name
    watcher = PoolWatcher()
    path = generate(tmp_path / "FLAT_CMPL.zip", 500)
    with Warehouse.open(str(tmp_path / "w.duckdb")) as wh:
        run_backfill(
            wh, BackfillRequest(path=path, kind="complaints", batch_size=100), reporter=watcher
        )
        assert pa.default_memory_pool().backend_name == before
        with pytest.raises(Interrupted):
            again = BackfillRequest(path=path, kind="complaints", rescan=True)
            run_backfill(wh, again, reporter=DiesAfter(1))
    assert pa.default_memory_pool().backend_name == before
    with arrow_memory_returned():
        assert watcher.pools == {pa.default_memory_pool().backend_name}


def _ledger(warehouse: Path) -> list[dict[str, Any]]:
    return list(json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout))


@pytest.mark.slow
def test_a_killed_backfill_rerun_yields_exactly_an_uninterrupted_run(tmp_path: Path) -> None:
    path = generate(tmp_path / "FLAT_CMPL.zip", 6_000)
    args = ["--file", path, "--kind", "complaints", "--batch-size", "150"]
    assert backfill(tmp_path / "whole.duckdb", *args)[0] == 0

    warehouse = tmp_path / "w.duckdb"
    command = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "backfill",
        "nhtsa",
        *map(str, args),
        "--warehouse",
        str(warehouse),
        "--progress-interval",
        "0",
    ]
    process = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert process.stderr is not None
    committed = 0
    for progress in process.stderr:
        committed += progress.startswith("backfill nhtsa: committed")
        if committed == 4:
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    (killed,) = _ledger(warehouse)
    assert killed["status"] == "interrupted"

    code, report, _ = backfill(warehouse, *args)
    assert code == 0
    assert report["resumes_run"] == killed["run_id"] and report["resumed_after_line"]
    whole = _ledger(tmp_path / "whole.duckdb")[0]["counts"]["nhtsa"]
    assert 0 < report["documents"]["new"] < whole["new"]
    assert report["documents"]["unchanged"] == 0  # committed documents were not read again
    assert revisions(warehouse) == revisions(tmp_path / "whole.duckdb")
    ledger = _ledger(warehouse)
    assert [r["status"] for r in ledger] == ["ok", "interrupted"]
    assert cli("verify", "--warehouse", warehouse).exit_code == 0


# -- the fast path stores the bytes of the reference path ----------------------------------
def _reference_documents(path: Path, kind: str) -> dict[str, tuple[str, str]]:
    """doc_id → (content hash, source format), by the line-at-a-time reference path (the
    path the backfill took before it read files in bulk)."""
    return reference_documents(path, LAYOUTS[kind])


def test_every_document_has_the_bytes_of_the_reference_path(tmp_path: Path) -> None:
    odd = [
        cmpl_row(11999100, 1, CDESCR='ÉTÉ "QUOTED" \\ BACKSLASH\x01 CONTROL', YEARTXT="2019"),
        [*cmpl_row(11999101, 2, CITY="SÃO PAULO"), "GA", "DRIVER"],
        cmpl_row(11999100, 3, YEARTXT="9999", COMPDESC="ÄÖÜ ß"),
        cmpl_row(11999102, 4, YEARTXT=""),
    ]
    small = write_zip(tmp_path / "ODD.zip", "FLAT_CMPL.txt", odd, eol="\r\n")
    generated = generate(tmp_path / "GEN.zip", 3_000)
    for path in (complaints_file(tmp_path), small, generated):
        warehouse = tmp_path / f"{path.stem}.duckdb"
        code, report, _ = backfill(warehouse, "--file", path, "--kind", "complaints")
        assert code == 0, report
        stored = {doc: (h, fmt) for doc, _, h, _, fmt in revisions(warehouse)}
        assert stored == _reference_documents(path, "complaints")
        with Warehouse.open(str(warehouse), read_only=True) as wh:
            bodies = {row.doc_id: row.body for row in iter_current_bodies(wh)}
            assert bodies.keys() == stored.keys()
            for doc, (digest, _) in stored.items():
                body = bodies[doc]
                assert content_hash(body) == digest
                # canonical form v2: the bytes the rfc8785 package writes for the value
                assert rfc8785.dumps(orjson.loads(body)) == body, doc
            for doc in sorted(stored)[:: max(1, len(stored) // 20)]:  # as `receipts show` reads
                assert history.snapshot(wh, doc).body == bodies[doc]
            forms = wh._con.execute(
                "SELECT canonical_form, count(*) FROM snapshot_forms GROUP BY ALL"
            ).fetchall()
            assert forms == [(FORM_JCS, len(set(stored.values())))]


def test_documents_built_across_many_blocks_commit_once_with_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small blocks and small batches: commits fall inside blocks and blocks inside commits,
    and documents of several rows span blocks; each document is committed once, whole."""
    monkeypatch.setattr(passes_module, "BLOCK_BYTES", 16 << 10)
    path = generate(tmp_path / "GEN.zip", 3_000)
    warehouse = tmp_path / "w.duckdb"
    with Warehouse.open(str(warehouse)) as wh:
        result = run_backfill(wh, BackfillRequest(path=path, kind="complaints", batch_size=37))
    stored = revisions(warehouse)
    assert len(stored) == result.documents.new  # one revision each: none twice, none lost
    assert {doc: (h, fmt) for doc, _, h, _, fmt in stored} == _reference_documents(
        path, "complaints"
    )


def test_a_layout_first_seen_late_in_the_file_is_still_checked_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks are checked with the statements of the layouts seen so far; a block holding
    another (51 fields after many blocks of 49) is checked again for every layout, so its rows
    are accepted in bulk, not left one by one to the line-at-a-time checker; the documents are
    those of the reference path."""
    monkeypatch.setattr(passes_module, "BLOCK_BYTES", 8 << 10)
    rows: list[list[str]] = [cmpl_row(11999000 + i, i + 1) for i in range(300)]
    rows += [[*cmpl_row(11999500 + i, 400 + i), "GA", "DRIVER"] for i in range(40)]
    rows += [cmpl_row(11999600 + i, 500 + i) for i in range(20)]
    rows.append(cmpl_row(11999700, 600)[:30])  # no layout has 30 fields: malformed
    path = write_zip(tmp_path / "MIXED.zip", "FLAT_CMPL.txt", rows)
    judged: list[int] = []
    check = RowChecker.check

    def spying(self: RowChecker, parts: list[str]) -> str | tuple[str, bool]:
        judged.append(len(parts))
        return check(self, parts)

    monkeypatch.setattr(RowChecker, "check", spying)
    warehouse = tmp_path / "w.duckdb"
    with Warehouse.open(str(warehouse)) as wh:
        result = run_backfill(wh, BackfillRequest(path=path, kind="complaints"))
    assert result.documents.new == 360 and result.malformed == 1
    assert judged == [30]  # only the malformed line was left to the line-at-a-time checker
    assert {doc: (h, fmt) for doc, _, h, _, fmt in revisions(warehouse)} == _reference_documents(
        path, "complaints"
    )


def test_rows_are_staged_in_memory_unless_a_scratch_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scratch database is in memory by default; ``--scratch-dir`` puts it in a file in
    a directory of its own there, which goes when the backfill ends, as do the directories
    left there by killed backfills (not those of live ones)."""
    staged: list[str | None] = []
    plan = FlatBulk.plan

    def spying(bulk: FlatBulk, *args: Any, **kwargs: Any) -> Any:
        row = bulk._con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = $name",
            {"name": SCRATCH},
        ).fetchone()
        staged.append(row[0] if row else "not attached")
        return plan(bulk, *args, **kwargs)

    monkeypatch.setattr(FlatBulk, "plan", spying)
    scratch = tmp_path / "scratch"
    killed = scratch / "receipts-backfill-999999999"  # no such process
    live = scratch / f"receipts-backfill-{os.getppid()}"
    for directory in (killed, live):
        directory.mkdir(parents=True)
    path = complaints_file(tmp_path)
    code, in_memory, _ = backfill(tmp_path / "a.duckdb", "--file", path, "--kind", "complaints")
    assert code == 0, in_memory
    code, in_file, _ = backfill(
        tmp_path / "b.duckdb", "--file", path, "--kind", "complaints", "--scratch-dir", scratch
    )
    assert code == 0, in_file
    assert staged == [None, str(scratch / f"receipts-backfill-{os.getpid()}" / "backfill.duckdb")]
    assert sorted(scratch.iterdir()) == [live]
    assert revisions(tmp_path / "a.duckdb") == revisions(tmp_path / "b.duckdb")
    assert in_memory["documents"] == in_file["documents"]


@pytest.mark.slow
def test_a_rerun_plans_within_a_small_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planning a re-run joins every document with what the warehouse knows of it; under a
    small limit (here 40,000 rows in 40 MB, and a build allowance of 4 MB, which the plan
    may use too) it must spill, not run out of memory."""
    path = generate(tmp_path / "GEN.zip", 40_000)
    warehouse = tmp_path / "w.duckdb"
    code, first, _ = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 0, first
    monkeypatch.setenv("RECEIPTS_BACKFILL_BUILD_MEMORY_LIMIT", "4MB")
    code, again, _ = backfill(
        warehouse, "--file", path, "--kind", "complaints", "--memory-limit", "40MB"
    )
    assert code == 0, again
    assert again["documents"]["unchanged"] == first["documents"]["new"] and again["built"] == 0


def test_a_rerun_builds_only_the_documents_whose_lines_changed(tmp_path: Path) -> None:
    rows = [cmpl_row(11999200 + i, i + 1) for i in range(6)]
    warehouse = tmp_path / "w.duckdb"
    first = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    assert backfill(warehouse, "--file", first, "--kind", "complaints")[1]["documents"]["new"] == 6
    rows[2] = cmpl_row(11999202, 3, CDESCR="A CORRECTED NARRATIVE")
    second = write_zip(tmp_path / "B.zip", "FLAT_CMPL.txt", rows)
    code, report, _ = backfill(warehouse, "--file", second, "--kind", "complaints")
    assert code == 0
    assert (report["documents"]["changed"], report["documents"]["unchanged"]) == (1, 5)
    current: dict[str, tuple[str, str]] = {}
    for doc, _, digest, _, fmt in revisions(warehouse):  # in revision order: the last wins
        current[doc] = (digest, fmt)
    assert current == _reference_documents(second, "complaints")


def test_a_block_of_blank_lines_is_checked_as_no_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block that holds nothing but line ends (here, the whole file's second block) adds
    no row and no malformed line."""
    monkeypatch.setattr(passes_module, "BLOCK_BYTES", 1024)
    rows: list[list[str] | str] = [cmpl_row(11999350, 1), *[""] * 3000]
    path = write_zip(tmp_path / "B.zip", "FLAT_CMPL.txt", rows)
    code, report, _ = backfill(tmp_path / "w.duckdb", "--file", path, "--kind", "complaints")
    assert code == 0, report
    assert (report["rows"], report["malformed"], report["documents"]["new"]) == (1, 0, 1)


def _sightings_and_progress(warehouse_path: Path, run_id: int) -> tuple[dict[str, int], list]:
    """Sightings per file address, and the run's ``run_progress`` rows."""
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        con = wh._connection_for_tests()
        sightings = dict(
            con.execute("SELECT source_url, count(*) FROM sightings GROUP BY ALL").fetchall()
        )
        progress = con.execute(
            "SELECT records, new, changed, unchanged, restored, checkpoint FROM run_progress "
            "WHERE run_id = ? ORDER BY batch_no",
            [run_id],
        ).fetchall()
    return {str(k): int(v) for k, v in sightings.items()}, progress


def test_rerun_batches_record_each_checkpoint_and_sight_each_document_once_per_file(
    tmp_path: Path,
) -> None:
    """Batches of documents that are unchanged and already seen at this file write only
    their checkpoint; the same lines under another file name are sighted there; a batch
    with a changed document is classified as any other."""
    rows = [cmpl_row(11999300 + i, i + 1) for i in range(7)]
    rows.insert(2, cmpl_row(11999301, 8, YEARTXT="2020"))  # a document of two lines
    warehouse = tmp_path / "w.duckdb"
    a = write_zip(tmp_path / "A.zip", "FLAT_CMPL.txt", rows)
    batches = ("--batch-size", "3")
    assert backfill(warehouse, "--file", a, "--kind", "complaints", *batches)[0] == 0
    rescan = ("--rescan",)  # read again: the same file is otherwise recognized
    code, again, _ = backfill(warehouse, "--file", a, "--kind", "complaints", *batches, *rescan)
    assert code == 0 and again["documents"]["unchanged"] == 7 and again["built"] == 0
    sightings, progress = _sightings_and_progress(warehouse, again["run_id"])
    assert sightings == {"file:A.zip": 7}
    digest = again["file_sha256"][:16]
    assert progress == [
        (3, 0, 0, 3, 0, f"{digest}:4"),
        (3, 0, 0, 3, 0, f"{digest}:7"),
        (1, 0, 0, 1, 0, f"{digest}:8"),
    ]
    b = tmp_path / "B.zip"
    b.write_bytes(a.read_bytes())  # the same lines at another address
    code, elsewhere, _ = backfill(warehouse, "--file", b, "--kind", "complaints", *batches)
    assert code == 0 and elsewhere["documents"]["unchanged"] == 7
    assert _sightings_and_progress(warehouse, elsewhere["run_id"])[0] == {
        "file:A.zip": 7,
        "file:B.zip": 7,
    }
    rows[4] = cmpl_row(11999303, 4, CDESCR="A CORRECTED NARRATIVE")
    c = write_zip(tmp_path / "B.zip", "FLAT_CMPL.txt", rows)
    code, changed, _ = backfill(warehouse, "--file", c, "--kind", "complaints", *batches)
    assert code == 0 and changed["documents"]["changed"] == 1
    sightings, progress = _sightings_and_progress(warehouse, changed["run_id"])
    assert sightings == {"file:A.zip": 7, "file:B.zip": 8}
    digest = changed["file_sha256"][:16]
    assert progress == [
        (3, 0, 0, 3, 0, f"{digest}:4"),
        (3, 0, 1, 2, 0, f"{digest}:7"),
        (1, 0, 0, 1, 0, f"{digest}:8"),
    ]


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_the_body_builder_matches_flat_body_for_every_layout(kind: str) -> None:
    layout = LAYOUTS[kind]
    checker = RowChecker(layout, VehicleFilter())
    for names in layout.layouts:
        lines = [
            "\t".join(f'{n[:3]}É{i}"\\' if n not in layout.year_fields else y for n in names.fields)
            for i, y in enumerate(("2019", "9999", "", "2001"))
        ]
        rows = [dict(zip(names.fields, line.split("\t"), strict=True)) for line in lines]
        body, fmt = checker.body(lines)
        assert body == flat_body(layout, rows)
        assert fmt == layout.record_format(rows)


def test_a_filter_that_matches_no_row_says_nothing_was_imported(tmp_path: Path) -> None:
    """A readable file whose rows the filter all leaves out imports nothing: the run is not
    a failure (the file is fine), but it never reports plain success either."""
    path = complaints_file(tmp_path)
    warehouse = tmp_path / "w.duckdb"
    code, report, _ = backfill(warehouse, "--file", path, "--kind", "complaints", "--make", "nope")
    assert code == 0
    assert report["matched"] == 0 and report["documents"]["new"] == 0
    [warning] = report["warnings"]
    assert "matched the filter" in warning and "nothing was imported" in warning
    text = cli(
        "backfill",
        "nhtsa",
        "--file",
        path,
        "--kind",
        "complaints",
        "--make",
        "nope",
        "--warehouse",
        warehouse,
    )
    assert "receipts: warning: none of the" in text.stderr
    run = json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout)[0]
    assert any("nothing was imported" in w["warning"] for w in run["warnings"])

"""Every layout NHTSA has published for its flat files is read, and a file that is not one
of its kind's files fails the backfill (issue 47, points 3 and 4).

The archived files are built as NHTSA ships them: zipped, tab-separated with no quoting
(narratives hold ``"``), ISO-8859-1, dates ``YYYYMMDD``, no header (reference section 2.6;
the layout files' "File characteristics": "All the records are TAB delimited", "All dates
are in YYYYMMDD format"). The field lists are those of NHTSA's layout files, as
:mod:`sources.nhtsa.flatfile.layouts` cites them (RCL.txt of March 23, 2020 in the public
repository megan-d-perry/vehicle-recall; INV.txt of March 14, 2008 in
dannguyen/nhtsa-complaint-data; CMPL.txt's change log).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sources.nhtsa.flatfile.layouts import LAYOUTS, FieldNames, Layout
from tests.conftest import cli
from warehouse import history
from warehouse.store import Warehouse

OFFICIAL = [
    (kind, names) for kind, layout in LAYOUTS.items() for names in layout.layouts if names.official
]


def archived_row(layout: Layout, names: FieldNames, number: int) -> list[str]:
    """One row of ``names``'s layout as NHTSA's file holds it: the identity, YYYYMMDD dates,
    a model year, a make and model, and a narrative with a quote and a Latin-1 letter."""
    identity = {
        "complaints": str(958000 + number),
        "recalls": f"08V{number:03d}000",
        "investigations": f"PE08{number:03d}",
    }[layout.kind]
    values = []
    for field in names.fields:
        if field in ("ODINO", "CAMPNO", "NHTSA ACTION NUMBER"):
            values.append(identity)
        elif field in ("CMPLID", "RECORD_ID"):
            values.append(str(100 + number))
        elif field in layout.date_fields:
            values.append("20080314")
        elif field in layout.year_fields:
            values.append("2007")
        elif field in layout.make_fields:
            values.append("HONDA")
        elif field in layout.model_fields:
            values.append("CR-V")
        else:
            values.append(f'the "{field}" of número {number}')
    return values


def zipped(path: Path, member: str, lines: list[str], eol: str = "\r\n") -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, "".join(line + eol for line in lines).encode("iso-8859-1"))
    path.write_bytes(buffer.getvalue())
    return path


def backfill(warehouse: Path, *args: Any) -> tuple[int, dict[str, Any], str]:
    result = cli("backfill", "nhtsa", "--warehouse", warehouse, "--json", *args)
    return result.exit_code, json.loads(result.stdout or "{}"), result.stderr


def formats(warehouse: Path) -> dict[str, str]:
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        return {r.doc_id: r.source_format for r in history.revisions(wh)}


def ledger(warehouse: Path) -> list[dict[str, Any]]:
    return list(json.loads(cli("runs", "--warehouse", warehouse, "--json").stdout))


@pytest.mark.parametrize(("kind", "names"), OFFICIAL, ids=[names.label for _, names in OFFICIAL])
def test_an_archived_file_of_every_published_layout_is_read(
    tmp_path: Path, kind: str, names: FieldNames
) -> None:
    """A file of each layout NHTSA has published is read whole, and each document's
    provenance names the layout and version it was read with."""
    layout = LAYOUTS[kind]
    rows = ["\t".join(archived_row(layout, names, n)) for n in (1, 2, 3)]
    path = zipped(tmp_path / f"FLAT_{names.name}.zip", f"FLAT_{names.name}.txt", rows)
    warehouse = tmp_path / "w.duckdb"
    code, report, err = backfill(warehouse, "--file", path, "--kind", kind)
    assert code == 0, err
    assert (report["rows"], report["malformed"], report["documents"]["new"]) == (3, 0, 3)
    assert report["layouts"] == {names.label: 3}
    assert set(formats(warehouse).values()) == {f"flat:{layout.name}/{names.label}"}


def test_an_archive_joining_two_layouts_names_both(tmp_path: Path) -> None:
    """Recalls files of before and after March 23, 2020 (24 and 27 fields) read together:
    each document names the layout of its own rows, the report names both."""
    layout = LAYOUTS["recalls"]
    old, new = (layout.by_count()[count] for count in (24, 27))
    rows = ["\t".join(archived_row(layout, old, 1)), "\t".join(archived_row(layout, new, 2))]
    path = zipped(tmp_path / "FLAT_RCL.zip", "FLAT_RCL.txt", rows, eol="\n")
    warehouse = tmp_path / "w.duckdb"
    code, report, err = backfill(warehouse, "--file", path, "--kind", "recalls")
    assert code == 0, err
    assert report["layouts"] == {"RCL_24.v1": 1, "RCL_27.v1": 1}
    assert sorted(formats(warehouse).values()) == [
        "flat:FLAT_RCL/RCL_24.v1",
        "flat:FLAT_RCL/RCL_27.v1",
    ]
    text = cli("backfill", "nhtsa", "--file", path, "--kind", "recalls", "--warehouse", warehouse)
    assert "layout: RCL_24.v1 (1 lines), RCL_27.v1 (1 lines)" in text.stdout


def _assert_failed_run(warehouse: Path, *needles: str) -> None:
    (run,) = ledger(warehouse)
    assert run["command"] == "backfill" and run["status"] == "failed"
    (failure,) = run["failures"]
    for needle in needles:
        assert needle in failure["reason"]
    assert formats(warehouse) == {}  # nothing committed


def test_a_csv_index_fails_naming_its_field_counts_and_the_layouts(tmp_path: Path) -> None:
    """A CSV (the slimmer ``MFR_COMMS_RECEIVED_*`` files are CSV since May 2024, reference
    section 2.5) given as a recalls file: no line is a row, so the run fails."""
    lines = [
        "NHTSA ID,Make,Model,Model Year,Component,Summary",
        '10236341,HONDA,CR-V,2021,"AIR BAGS","A summary, with a comma"',
        '10121695,TOYOTA,RAV4,2020,"ENGINE","Another"',
    ]
    path = zipped(tmp_path / "index.zip", "index.csv", lines)
    warehouse = tmp_path / "w.duckdb"
    result = cli("backfill", "nhtsa", "--file", path, "--kind", "recalls", "--warehouse", warehouse)
    assert result.exit_code == 1
    message = result.stderr
    assert "holds no readable recalls row: all 3 lines are malformed" in message
    assert "field counts seen: 1 field (3 lines)" in message
    assert "RCL_24.v1 (24 fields)" in message and "RCL_29.v1 (29 fields)" in message
    assert "a CSV file" in message
    _assert_failed_run(warehouse, "field counts seen: 1 field (3 lines)", "RCL_22.v1 (22 fields)")


def test_a_file_of_another_kind_fails_naming_what_it_looks_like(tmp_path: Path) -> None:
    """A complaints file (49 fields) backfilled as investigations: every line is malformed."""
    complaints = LAYOUTS["complaints"]
    names = complaints.by_count()[49]
    rows = ["\t".join(archived_row(complaints, names, n)) for n in (1, 2)]
    path = zipped(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", rows)
    warehouse = tmp_path / "w.duckdb"
    code, report, _ = backfill(warehouse, "--file", path, "--kind", "investigations")
    assert code == 1
    message = report["error"]["message"]
    assert "field counts seen: 49 fields (2 lines)" in message
    assert "INV_10.v1 (10 fields), INV_11.v1 (11 fields)" in message
    _assert_failed_run(warehouse, "49 fields (2 lines)", "INV_11.v1 (11 fields)")


def test_a_file_of_blank_lines_keeps_nothing_and_fails(tmp_path: Path) -> None:
    path = zipped(tmp_path / "FLAT_INV.zip", "FLAT_INV.txt", ["", ""])
    warehouse = tmp_path / "w.duckdb"
    code, _, err = backfill(warehouse, "--file", path, "--kind", "investigations")
    assert code == 1
    assert "holds no investigations row" in err
    _assert_failed_run(warehouse, "no investigations row")


def test_a_mostly_malformed_file_fails_unless_allowed(tmp_path: Path) -> None:
    """One readable complaint among three lines of another layout: more than half of the
    lines are malformed, so the run fails; ``--allow-malformed`` keeps the readable row."""
    complaints = LAYOUTS["complaints"]
    good = "\t".join(archived_row(complaints, complaints.by_count()[49], 1))
    bad = "\t".join(["x"] * 30)
    path = zipped(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", [good, bad, bad, bad])
    warehouse = tmp_path / "w.duckdb"
    code, _, err = backfill(warehouse, "--file", path, "--kind", "complaints")
    assert code == 1
    assert "3 of 4 lines (75%) are malformed, more than 50%" in err
    assert "field counts seen: 30 fields (3 lines), 49 fields (1 line)" in err
    assert "--allow-malformed" in err
    _assert_failed_run(warehouse, "3 of 4 lines (75%) are malformed")

    code, report, err = backfill(
        warehouse, "--file", path, "--kind", "complaints", "--allow-malformed"
    )
    assert code == 0, err
    assert (report["status"], report["malformed"], report["documents"]["new"]) == ("ok", 3, 1)


def test_half_malformed_is_not_most(tmp_path: Path) -> None:
    complaints = LAYOUTS["complaints"]
    good = "\t".join(archived_row(complaints, complaints.by_count()[51], 1))
    path = zipped(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", [good, "not a row"])
    code, report, err = backfill(tmp_path / "w.duckdb", "--file", path, "--kind", "complaints")
    assert code == 0, err
    assert report["malformed"] == 1 and report["layouts"] == {"CMPL_51.v2": 1}


def test_the_help_states_the_malformed_threshold() -> None:
    result = cli("backfill", "nhtsa", "--help")
    assert result.exit_code == 0
    assert "--allow-malformed" in result.stdout
    assert "more than 50% of the lines are malformed" in " ".join(result.stdout.split())

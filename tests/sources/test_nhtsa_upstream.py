"""NHTSA's API as it really answers (issue 47): a complaint listed once per component, keys
spelled another way, a make or model NHTSA does not know, a count that disagrees with its
results. Each test goes through the CLI and fails on the code before the issue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.nhtsa import (
    AEB_RECALL,
    API,
    CMBS_TEXT_COMPLAINT,
    FakeNhtsa,
    Vehicle,
    cmpl_row,
    complaint,
    recall,
    write_zip,
)
from pipelines.manifest import load_manifest
from sources.nhtsa.source import curate
from tests.conftest import cli, write_manifest
from tests.sources.test_nhtsa_source import (
    COMPLAINTS,
    body,
    curation_input,
    current_docs,
    ingest_cli,
)
from warehouse.ids import doc_id
from warehouse.store import Warehouse

# A complaint filed in 2001 about a 2001 CR-V, listed by complaintsByVehicle once per
# component: the same odiNumber, each record its own ``components`` and ``summary``
# (reference §6, NHTSA: complaints filed before about December 2002). The number and the
# texts are invented; the shape is complaintsByVehicle's (reference §2.2).
OLD_ODI = 8001234
PARTS = (
    ("AIR BAGS:FRONTAL", "THE AIR BAG LIGHT STAYS ON."),
    ("SERVICE BRAKES, HYDRAULIC:FOUNDATION COMPONENTS", "THE BRAKES GRIND AT LOW SPEED."),
    ("ENGINE AND ENGINE COOLING:ENGINE", "THE ENGINE STALLS WHEN IDLING."),
)


def old_complaint(component: str, summary: str) -> dict[str, Any]:
    record = complaint(OLD_ODI, component, summary, "06/15/2001", "07/02/2001", 2001)
    record["vin"] = "JHLRD18401C"
    return record


def corpus(body_: str, name: str = "old") -> str:
    return f'[corpus]\nname = "{name}"\nnamespace = "{name}"\n[[nhtsa]]\n' + body_


OLD_ENTRY = 'make = "HONDA"\nmodel = "CR-V"\nyears = [2000, 2002]\nkinds = ["complaints"]\n'


@pytest.fixture
def old_cr_v(fake_nhtsa: FakeNhtsa) -> FakeNhtsa:
    for year in (2000, 2001, 2002):
        fake_nhtsa.vehicles[("HONDA", "CR-V", year)] = Vehicle()
    fake_nhtsa.vehicles[("HONDA", "CR-V", 2001)].complaints = [old_complaint(*p) for p in PARTS]
    # The same complaint listed under 2002 too (its products name both years).
    fake_nhtsa.vehicles[("HONDA", "CR-V", 2002)].complaints = [old_complaint(*PARTS[0])]
    return fake_nhtsa


def curated_fields(warehouse: Path, manifest: Path, doc: str) -> dict[str, Any]:
    entries = load_manifest(manifest).entries["nhtsa"]
    with Warehouse.open(str(warehouse), read_only=True) as wh:
        return dict(curate(curation_input(wh, doc), entries).fields)


# -- 1. several records under one ODI number -----------------------------------------------
def test_a_complaint_listed_once_per_component_keeps_every_record(
    old_cr_v: FakeNhtsa, tmp_path: Path
) -> None:
    """Filtering on the last record's component finds the complaint; the document holds
    all three records, whatever order the answer lists them in."""
    manifest = write_manifest(tmp_path, corpus(OLD_ENTRY + 'components = ["ENGINE"]\n'))
    warehouse = tmp_path / "w.duckdb"
    code, summary = ingest_cli(warehouse, manifest)
    assert code == 0, summary["failures"]
    doc = doc_id("nhtsa", "complaint", str(OLD_ODI))
    assert current_docs(warehouse) == {doc}
    stored = body(warehouse, doc)
    assert "record" not in stored
    assert sorted((r["components"], r["summary"]) for r in stored["records"]) == sorted(PARTS)
    assert stored["modelYears"] == [2001, 2002]
    fields = curated_fields(warehouse, manifest, doc)
    assert fields["components"] == sorted(component for component, _ in PARTS)
    assert fields["odiNumber"] == str(OLD_ODI) and fields["dateFiled"] == "2001-07-02"

    old_cr_v.vehicles[("HONDA", "CR-V", 2001)].complaints.reverse()
    code, summary = ingest_cli(warehouse, manifest)
    assert code == 0
    assert summary["counts"]["nhtsa"]["unchanged"] == 1
    assert summary["counts"]["nhtsa"]["changed"] == 0


def test_the_api_and_the_flat_file_store_the_same_components_for_one_complaint(
    old_cr_v: FakeNhtsa, tmp_path: Path
) -> None:
    """FLAT_CMPL holds one row per component of such a complaint (one CMPLID each, one
    ODINO); both paths make one document whose curated components are the same set."""
    manifest = write_manifest(tmp_path, corpus(OLD_ENTRY))
    from_api = tmp_path / "api.duckdb"
    assert ingest_cli(from_api, manifest)[0] == 0

    rows = [
        cmpl_row(
            OLD_ODI,
            500 + n,
            COMPDESC=component,
            CDESCR=summary,
            YEARTXT="2001",
            FAILDATE="20010615",
            LDATE="20010702",
            DATEA="20010702",
        )
        for n, (component, summary) in enumerate(reversed(PARTS))
    ]
    path = write_zip(tmp_path / "FLAT_CMPL.zip", "FLAT_CMPL.txt", rows)
    from_file = tmp_path / "file.duckdb"
    result = cli("backfill", "nhtsa", "--warehouse", from_file, "--json", "--file", path,
                 "--kind", "complaints")  # fmt: skip
    assert result.exit_code == 0, result.output

    doc = doc_id("nhtsa", "complaint", str(OLD_ODI))
    api_fields = curated_fields(from_api, manifest, doc)
    file_fields = curated_fields(from_file, manifest, doc)
    assert api_fields["components"] == file_fields["components"]
    assert len(api_fields["components"]) == len(PARTS)


# -- 2. misspelled keys --------------------------------------------------------------------
# Campaign 19V182000 as recallsByVehicle answered it for a 2012 ACURA RDX, recorded in a
# public React app's ``recall-yr-mk-model.json`` (found with find_string "Conequence"):
# the consequence under ``Conequence``, its text copied here as the answer gave it.
MISSPELLED = "19V182000"
FRAGMENTS = (
    "An explosion of an inflator within the driver frontal air bag module may result in "
    "sharp metal fragments striking the driver, front seat passenger or other occupants "
    "resulting in serious injury or death."
)


def misspelled_recall(key: str = "Conequence") -> dict[str, Any]:
    record = recall(
        MISSPELLED,
        "AIR BAGS:FRONTAL:DRIVER SIDE:INFLATOR MODULE",
        "Replacement driver air bag inflators may explode.",
        "06/03/2019",
        2019,
    )
    del record["Consequence"]
    record[key] = FRAGMENTS
    return record


def test_a_consequence_spelled_conequence_is_read_by_filters_and_curation(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    fake_nhtsa.vehicles[("HONDA", "CR-V", 2019)].recalls.append(misspelled_recall())
    manifest = write_manifest(
        tmp_path,
        corpus(
            'make = "HONDA"\nmodel = "CR-V"\nyears = [2017, 2022]\nkinds = ["recalls"]\n'
            'text = "sharp metal fragments"\n',
            "rdx",
        ),
    )
    warehouse = tmp_path / "w.duckdb"
    code, summary = ingest_cli(warehouse, manifest)
    assert code == 0 and summary["warnings"] == []
    doc = doc_id("nhtsa", "recall", MISSPELLED)
    assert current_docs(warehouse) == {doc}
    assert body(warehouse, doc)["record"]["Conequence"] == FRAGMENTS  # stored verbatim
    assert curated_fields(warehouse, manifest, doc)["consequence"] == FRAGMENTS


def test_an_unknown_key_like_a_known_field_is_a_warning(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    fake_nhtsa.vehicles[("HONDA", "CR-V", 2019)].recalls.append(misspelled_recall("Consequnce"))
    manifest = write_manifest(
        tmp_path,
        corpus('make = "HONDA"\nmodel = "CR-V"\nyears = [2017, 2022]\nkinds = ["recalls"]\n'),
    )
    code, summary = ingest_cli(tmp_path / "w.duckdb", manifest)
    assert code == 0
    assert [w["warning"] for w in summary["warnings"]] == [
        f"recall {MISSPELLED}: unknown key 'Consequnce' looks like 'Consequence', which it "
        "is not read as; kept verbatim"
    ]


# -- 5. a make or model NHTSA does not know ------------------------------------------------
@pytest.mark.parametrize(
    ("make", "model", "named", "suggested"),
    [
        ("HONDA", "CRV", "the model 'CRV'", "closest names NHTSA lists: CR-V"),
        ("HODNA", "CR-V", "the make 'HODNA'", "closest names NHTSA lists: HONDA"),
    ],
)
def test_a_first_run_of_a_vehicle_nhtsa_does_not_know_fails_with_the_closest_names(
    fake_nhtsa: FakeNhtsa, tmp_path: Path, make: str, model: str, named: str, suggested: str
) -> None:
    manifest = write_manifest(
        tmp_path, corpus(f'make = "{make}"\nmodel = "{model}"\nyears = [2017, 2022]\n', "typo")
    )
    code, summary = ingest_cli(tmp_path / "w.duckdb", manifest)
    assert code == 1
    (failure,) = summary["failures"]
    assert "every model year of" in failure["reason"]
    assert "answered with a zero count" in failure["reason"]
    assert named in failure["reason"] and suggested in failure["reason"]
    assert "/products/vehicle/" in failure["reason"]
    (run, *_) = json.loads(cli("runs", "--warehouse", tmp_path / "w.duckdb", "--json").stdout)
    assert run["status"] == "failed"


def test_a_vehicle_nhtsa_lists_without_records_is_still_an_empty_run(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    """HONDA CR-Z is in NHTSA's products lists; model years without any record of it are
    no typo."""
    manifest = write_manifest(
        tmp_path, corpus('make = "HONDA"\nmodel = "CR-Z"\nyears = [2011, 2012]\n', "crz")
    )
    code, summary = ingest_cli(tmp_path / "w.duckdb", manifest)
    assert code == 0 and summary["failures"] == []
    assert any("/products/vehicle/models" in p for p in fake_nhtsa.paths())


# -- 6. counts -----------------------------------------------------------------------------
def test_a_count_that_disagrees_with_the_results_retires_nothing_and_says_so(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    fake_nhtsa.remove("complaints", CMBS_TEXT_COMPLAINT)  # 2021 now holds one complaint
    fake_nhtsa.miscount(COMPLAINTS, 2021, 2)  # but its answer still says two
    code, summary = ingest_cli(warehouse_path)
    assert code == 0, summary["failures"]
    assert summary["counts"]["nhtsa"]["gone"] == 0
    assert doc_id("nhtsa", "complaint", str(CMBS_TEXT_COMPLAINT)) in current_docs(warehouse_path)
    (warning,) = [w["warning"] for w in summary["warnings"]]
    assert warning == (
        f"nhtsa:HONDA/CR-V/2017-2022:complaints: {API}{COMPLAINTS}?make=HONDA&model=CR-V"
        "&modelYear=2021 says 2 record(s) but holds 1; the listing is not taken as complete "
        "and nothing in the scope is retired"
    )
    assert doc_id("nhtsa", "recall", AEB_RECALL) in current_docs(warehouse_path)


def test_an_unreadable_products_list_still_fails_a_first_run_without_records(
    fake_nhtsa: FakeNhtsa, tmp_path: Path
) -> None:
    fake_nhtsa.fail("/products/vehicle/makes", 403, body=b'{"message":"Forbidden"}')
    manifest = write_manifest(
        tmp_path, corpus('make = "HONDA"\nmodel = "CRV"\nyears = [2017, 2018]\n', "typo")
    )
    code, summary = ingest_cli(tmp_path / "w.duckdb", manifest)
    assert code == 1
    (failure,) = summary["failures"]
    assert "lists of makes and models could not be read" in failure["reason"]
    assert "/products/vehicle/makes" in failure["reason"]

"""The per-vehicle NHTSA source against a fake_nhtsa NHTSA: endpoints and quirks, de-duplication
across years and variants, filters, tombstones and restores, retries, error pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from fakes.nhtsa import (
    AEB_COMPLAINT,
    AEB_RECALL,
    API,
    BULLETIN,
    CMBS_TEXT_COMPLAINT,
    CMBS_TEXT_RECALL,
    HTML_ERROR,
    INVESTIGATION,
    RADIO_BULLETIN,
    FakeNhtsa,
    complaint,
    pdf,
)
from pipelines import USER_AGENT
from pipelines.ingest import RunResult, run_ingest
from pipelines.manifest import load_manifest, parse_manifest
from sources.base import CurationInput
from sources.http import HttpFactory
from sources.nhtsa.curate import _api_facts
from sources.nhtsa.source import NhtsaEntry, curate
from tests.conftest import REPO, cli, write_manifest
from warehouse import history
from warehouse.digests import row_counts
from warehouse.errors import ManifestError
from warehouse.ids import doc_id
from warehouse.store import Warehouse

MANIFEST = REPO / "manifests" / "cr-v-aeb.toml"
AEB_DOCS = {
    doc_id("nhtsa", "recall", AEB_RECALL),
    doc_id("nhtsa", "recall", CMBS_TEXT_RECALL),
    doc_id("nhtsa", "complaint", str(AEB_COMPLAINT)),
    doc_id("nhtsa", "complaint", str(CMBS_TEXT_COMPLAINT)),
    doc_id("nhtsa", "investigation", INVESTIGATION),
    doc_id("nhtsa", "communication", str(BULLETIN)),
}
COMPLAINTS = "/complaints/complaintsByVehicle"


def ingest_cli(warehouse_path: Path, manifest: Path = MANIFEST) -> tuple[int, dict[str, Any]]:
    result = cli("ingest", manifest, "--warehouse", warehouse_path, "--json")
    return result.exit_code, json.loads(result.stdout)


def ingest_lib(
    warehouse_path: Path, sleeps: list[float] | None = None, manifest: Path = MANIFEST
) -> RunResult:
    """The library entry point the CLI calls, with a sleep that only records its waits."""
    http = HttpFactory(user_agent=USER_AGENT, sleep=(sleeps if sleeps is not None else []).append)
    with Warehouse.open(str(warehouse_path)) as wh:
        try:
            return run_ingest(load_manifest(manifest), wh, http=http)
        finally:
            http.close()


def current_docs(warehouse_path: Path) -> set[str]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return {r.doc_id for r in history.revisions(wh, current=True) if not r.tombstone}


def body(warehouse_path: Path, doc: str) -> dict[str, Any]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return dict(orjson.loads(history.snapshot(wh, doc).body))


def table_counts(warehouse_path: Path) -> dict[str, int]:
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        return row_counts(wh, ("documents", "snapshots", "revisions"))


# -- the manifest --------------------------------------------------------------------------
CORPUS = '[corpus]\nname = "t"\nnamespace = "t"\n[[nhtsa]]\n'
ENTRY = 'make = "HONDA"\nmodel = "CR-V"\nyears = [2017, 2022]\n'

VALID_ENTRIES = {
    "minimal": ENTRY,
    "filters": ENTRY + 'components = ["FORWARD COLLISION"]\ntext = "CMBS"\n',
    "some kinds": ENTRY + 'kinds = ["complaints", "recalls"]\n',
    "metadata": ENTRY + 'authority_domains = ["safety"]\nauthority_rank = 80\nlicense = "PD"\n',
    "one year": 'make = "HONDA"\nmodel = "CR-V"\nyears = [2019, 2019]\n',
}

INVALID_ENTRIES = {
    "unknown kind": (
        ENTRY + 'kinds = ["recall"]\n',
        "field 'kinds.0': Input should be 'recalls', 'complaints', 'investigations' or "
        "'communications'",
    ),
    "kind twice": (ENTRY + 'kinds = ["recalls", "recalls"]\n', "lists a kind twice"),
    "no kinds": (ENTRY + "kinds = []\n", "name at least one of: recalls, complaints"),
    "years backwards": (
        'make = "HONDA"\nmodel = "CR-V"\nyears = [2022, 2017]\n',
        "field 'years': Value error, must be [first, last] model years",
    ),
    "one number": ('make = "HONDA"\nmodel = "CR-V"\nyears = 2019\n', "field 'years'"),
    "bad regex": (ENTRY + 'text = "(CMBS"\n', "field 'text': Value error, not a valid regular"),
    "empty component": (ENTRY + 'components = [" "]\n', "would match every record"),
    "slash in model": (
        'make = "HONDA"\nmodel = "CR/V"\nyears = [2017, 2022]\n',
        "field 'model': String should match pattern",
    ),
    "typo": (
        ENTRY + "year = 2019\n",
        "field 'year': unknown field; valid fields: authority_domains, authority_rank, base_url,",
    ),
    "missing make": ('model = "CR-V"\nyears = [2017, 2022]\n', "field 'make': required field"),
    "too eager": (ENTRY + "concurrency = 50\n", "field 'concurrency'"),
    "years as text": (
        'make = "HONDA"\nmodel = "CR-V"\nyears = ["2017", "2022"]\n',
        "field 'years.0': Input should be a valid integer",
    ),
    "rank as text": (ENTRY + 'authority_rank = "50"\n', "field 'authority_rank': Input should"),
    "rank as a boolean": (ENTRY + "authority_rank = true\n", "field 'authority_rank': Input"),
    "newline in make": (
        'make = "HON\\nDA"\nmodel = "CR-V"\nyears = [2017, 2022]\n',
        "field 'make': Value error, contains a control character (U+000A)",
    ),
    "base_url a file": (
        ENTRY + 'base_url = "file:///etc"\n',
        "field 'base_url': Value error, 'file:///etc' is not an http(s) URL",
    ),
}


@pytest.mark.parametrize("text", VALID_ENTRIES.values(), ids=VALID_ENTRIES.keys())
def test_valid_nhtsa_entries(text: str) -> None:
    manifest = parse_manifest(CORPUS + text, Path("m.toml"))
    entry = manifest.entries["nhtsa"][0]
    assert isinstance(entry, NhtsaEntry)
    assert entry.scope("complaints").startswith("nhtsa:HONDA/CR-V/")


@pytest.mark.parametrize(("text", "message"), INVALID_ENTRIES.values(), ids=INVALID_ENTRIES.keys())
def test_invalid_nhtsa_entries_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(CORPUS + text, Path("m.toml"))
    assert "[[nhtsa]] entry 1" in str(caught.value)
    assert message in str(caught.value)


def test_the_cr_v_aeb_manifest_declares_the_corpus() -> None:
    manifest = load_manifest(MANIFEST)
    (entry,) = manifest.entries["nhtsa"]
    assert (entry.make, entry.model, entry.years) == ("HONDA", "CR-V", (2017, 2022))
    assert set(entry.kinds) == {"recalls", "complaints", "investigations", "communications"}
    wanted = entry.record_filter()
    assert wanted.matches(["FORWARD COLLISION AVOIDANCE: AUTOMATIC EMERGENCY BRAKING"], [])
    assert wanted.matches(["SERVICE BRAKES"], ["Honda's CMBS braked for a shadow"])
    assert wanted.matches(["SERVICE BRAKES"], ["the Collision Mitigation Braking System"])
    assert not wanted.matches(["SERVICE BRAKES"], ["the brakes squeal"])


# -- ingest --------------------------------------------------------------------------------
def test_the_corpus_is_ingested_through_the_cli(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    code, summary = ingest_cli(warehouse_path)
    assert code == 0, summary
    assert summary["counts"]["nhtsa"]["new"] == len(AEB_DOCS)
    assert current_docs(warehouse_path) == AEB_DOCS
    # Polite and exact: the documented routes, parameter names as NHTSA spells them.
    assert set(fake_nhtsa.paths()) == {
        "/recalls/recallsByVehicle",
        COMPLAINTS,
        "/vehicles/byYmmt",
        "/safetyIssues/byNhtsaId",
    }
    by_vehicle = [r for r in fake_nhtsa.requests if r.url.path == COMPLAINTS]
    assert sorted(int(r.url.params["modelYear"]) for r in by_vehicle) == list(range(2017, 2023))
    assert all(set(r.url.params) == {"make", "model", "modelYear"} for r in by_vehicle)
    # Filtered-out records cost no further request.
    asked = [r.url.params["nhtsaId"] for r in fake_nhtsa.requests if "byNhtsaId" in r.url.path]
    assert str(RADIO_BULLETIN) not in asked and sorted(asked) == sorted(
        [INVESTIGATION, str(BULLETIN)]
    )


def test_a_record_seen_under_several_years_and_variants_is_one_document(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    complaint = body(warehouse_path, doc_id("nhtsa", "complaint", str(AEB_COMPLAINT)))
    assert complaint["modelYears"] == [2019, 2020]
    assert complaint["record"] == fake_nhtsa.vehicles[("HONDA", "CR-V", 2019)].complaints[0]
    recall = body(warehouse_path, doc_id("nhtsa", "recall", AEB_RECALL))
    assert recall["modelYears"] == [2019, 2020]
    assert recall["record"]["ReportReceivedDate"] == "05/12/2021"  # verbatim, not reformatted

    investigation = body(warehouse_path, doc_id("nhtsa", "investigation", INVESTIGATION))
    assert investigation["modelYears"] == [2018, 2019, 2020, 2021, 2022]
    assert len(investigation["variants"]) == 10  # FWD and AWD for each of five years
    assert {v["series"] for v in investigation["variants"]} == {"FWD", "AWD"}
    assert [d["url"] for d in investigation["associatedDocuments"]] == [
        "https://static.nhtsa.gov/odi/inv/2024/INOA-EA24002-11766P1.pdf",
        "https://static.nhtsa.gov/odi/inv/2024/INIM-EA24002-22222P1.pdf",
    ]
    bulletin = body(warehouse_path, doc_id("nhtsa", "communication", str(BULLETIN)))
    assert bulletin["modelYears"] == [2017, 2018]
    assert bulletin["associatedDocuments"][0]["fileName"] == "MC-11035781-0001.pdf"


def test_provenance_names_the_request_and_the_source_format(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        complaint = history.history(wh, doc_id("nhtsa", "complaint", str(AEB_COMPLAINT)))[-1]
        bulletin = history.history(wh, doc_id("nhtsa", "communication", str(BULLETIN)))[-1]
    assert complaint["provenance"]["source_format"] == "api:complaintsByVehicle"
    assert complaint["provenance"]["url"].startswith(f"{API}{COMPLAINTS}?")
    assert "modelYear=2019" in complaint["provenance"]["url"]
    assert complaint["scope"] == "nhtsa:HONDA/CR-V/2017-2022:complaints"
    assert bulletin["provenance"]["source_format"] == "api:byYmmt"


def test_a_refresh_of_an_unchanged_corpus_stores_nothing_new(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    before = table_counts(warehouse_path)
    code, summary = ingest_cli(warehouse_path)
    assert code == 0
    assert summary["counts"]["nhtsa"]["unchanged"] == len(AEB_DOCS)
    assert summary["counts"]["nhtsa"]["new"] == summary["counts"]["nhtsa"]["changed"] == 0
    assert table_counts(warehouse_path) == before


def test_without_filters_every_record_is_a_document(fake_nhtsa: FakeNhtsa, tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path, '[corpus]\nname = "all"\nnamespace = "all"\n[[nhtsa]]\n' + ENTRY
    )
    assert ingest_cli(tmp_path / "w.duckdb", manifest)[0] == 0
    assert len(current_docs(tmp_path / "w.duckdb")) == len(AEB_DOCS) + 3


def test_a_record_that_disappears_is_tombstoned_and_restored_when_it_returns(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    gone_doc = doc_id("nhtsa", "complaint", str(CMBS_TEXT_COMPLAINT))
    removed = fake_nhtsa.remove("complaints", CMBS_TEXT_COMPLAINT)
    code, summary = ingest_cli(warehouse_path)
    assert code == 0 and summary["counts"]["nhtsa"]["gone"] == 1
    assert gone_doc not in current_docs(warehouse_path)

    fake_nhtsa.restore("complaints", removed)
    code, summary = ingest_cli(warehouse_path)
    assert code == 0 and summary["counts"]["nhtsa"]["restored"] == 1
    revs = json.loads(cli("history", gone_doc, "--warehouse", warehouse_path, "--json").stdout)
    revisions = revs["revisions"]
    assert [r["tombstone"] for r in revisions] == [False, True, False]
    assert revisions[2]["content_hash"] == revisions[0]["content_hash"]


def test_the_circuit_breaker_refuses_to_retire_a_whole_scope(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    # Unrelated complaints keep 2019 and 2020 answering 200 once AEB_COMPLAINT is gone (a
    # year that had records and answers 400 retires nothing at all).
    for year in (2019, 2020):
        fake_nhtsa.vehicles[("HONDA", "CR-V", year)].complaints.append(
            complaint(11999100 + year, "ELECTRICAL SYSTEM", "The radio resets.", "", "", year)
        )
    fake_nhtsa.remove("complaints", CMBS_TEXT_COMPLAINT)
    fake_nhtsa.remove("complaints", AEB_COMPLAINT)
    code, summary = ingest_cli(warehouse_path)
    assert code == 1
    assert "refusing to retire 2 of 2 documents" in summary["failures"][0]["reason"]
    assert current_docs(warehouse_path) == AEB_DOCS


def test_429_503_and_500_are_retried_politely(fake_nhtsa: FakeNhtsa, warehouse_path: Path) -> None:
    fake_nhtsa.fail(COMPLAINTS, 429, retry_after="7", modelYear="2019")
    fake_nhtsa.fail("/vehicles/byYmmt", 503, times=2, modelYear="2018")
    fake_nhtsa.fail("/recalls/recallsByVehicle", 500, modelYear="2020")
    fake_nhtsa.fail("/safetyIssues/byNhtsaId", 503, body=HTML_ERROR, content_type="text/html")
    sleeps: list[float] = []
    result = ingest_lib(warehouse_path, sleeps)
    assert result.status == "ok", result.failures
    assert current_docs(warehouse_path) == AEB_DOCS
    assert 7.0 in sleeps  # Retry-After honoured
    assert len([s for s in sleeps if s != 7.0]) == 4  # backoff for 503, 503, 500, 503
    assert all(f.times == 0 for f in fake_nhtsa.faults)


def test_a_failed_year_fails_the_entry_and_retires_nothing(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_lib(warehouse_path).status == "ok"
    fake_nhtsa.remove("complaints", CMBS_TEXT_COMPLAINT)  # would be a tombstone if the listing ran
    fake_nhtsa.fail(COMPLAINTS, 503, times=10, modelYear="2022")
    result = ingest_lib(warehouse_path)
    assert result.status == "failed"
    (failure,) = result.failures
    assert "HTTP 503" in failure["reason"] and "gave up after 5 attempts" in failure["reason"]
    assert result.counts["nhtsa"]["gone"] == 0
    assert current_docs(warehouse_path) == AEB_DOCS  # recalls committed, complaints untouched


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (HTML_ERROR, "text/html", 200, "HTML page where JSON was expected (HTTP 200)"),
        (b"", "application/json", 200, "empty body where JSON was expected"),
        (b'{"Count": 0, "Message": "Results returned', "application/json", 200, "malformed JSON"),
        (b'{"message": "Invalid modelYear"}', "application/json", 400, "HTTP 400 for"),
        (b'{"Count": 1, "Message": "ok"}', "application/json", 200, "no 'results'"),
        (b"<html>Forbidden</html>", "text/html", 403, "HTTP 403 for"),
    ],
    ids=["html page", "empty body", "truncated json", "400 error", "no results", "403 page"],
)
def test_a_body_that_is_not_a_listing_fails_the_entry(
    fake_nhtsa: FakeNhtsa,
    warehouse_path: Path,
    body: bytes,
    content_type: str,
    status: int,
    message: str,
) -> None:
    fake_nhtsa.fail(
        "/recalls/recallsByVehicle", status, body=body, content_type=content_type, modelYear="2018"
    )
    code, summary = ingest_cli(warehouse_path)
    assert code == 1
    (failure,) = summary["failures"]
    assert message in failure["reason"]
    assert not any(d.startswith("nhtsa/recall/") for d in current_docs(warehouse_path))


def test_an_empty_year_answered_with_400_is_no_records(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    empty = [
        r
        for r in fake_nhtsa.requests
        if r.url.path == COMPLAINTS and r.url.params["modelYear"] == "2017"
    ]
    assert len(empty) == 1  # answered 400 with a zero count, read as an empty year


def test_a_400_for_a_year_that_had_records_retires_nothing_and_warns(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    # A zero-count 400 is also NHTSA's answer for a make or model it does not recognise:
    # when a model year that had records comes back that way, the listing is not the whole
    # truth for its scope.
    assert ingest_cli(warehouse_path)[0] == 0
    vehicle = fake_nhtsa.forget("HONDA", "CR-V", 2021)  # held CMBS_TEXT_RECALL, CMBS_TEXT_COMPLAINT
    code, summary = ingest_cli(warehouse_path)
    assert code == 0, summary["failures"]
    assert summary["counts"]["nhtsa"]["gone"] == 0
    assert current_docs(warehouse_path) == AEB_DOCS
    warnings = [w["warning"] for w in summary["warnings"]]
    assert len(warnings) == 2
    for kind, path in (("recalls", "/recalls/recallsByVehicle"), ("complaints", COMPLAINTS)):
        (warning,) = [w for w in warnings if f"nhtsa:HONDA/CR-V/2017-2022:{kind}" in w]
        assert f"{API}{path}?make=HONDA&model=CR-V&modelYear=2021" in warning
        assert "HTTP 400 with a zero count for model year 2021" in warning
        assert "nothing in the scope is retired" in warning
    (run, *_) = json.loads(cli("runs", "--warehouse", warehouse_path, "--json").stdout)
    assert [w["warning"] for w in run["warnings"]] == warnings

    # 2017, which never had records, answers 400 every run: the listing stays complete, and
    # a record gone from a year that still answers 200 is retired as before.
    fake_nhtsa.vehicles[("HONDA", "CR-V", 2021)] = vehicle
    fake_nhtsa.remove("complaints", CMBS_TEXT_COMPLAINT)
    code, summary = ingest_cli(warehouse_path)
    assert code == 0 and summary["warnings"] == []
    assert summary["counts"]["nhtsa"]["gone"] == 1


def test_a_date_in_the_wrong_format_is_a_warning_and_kept_verbatim(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    for year in (2019, 2020):
        fake_nhtsa.vehicles[("HONDA", "CR-V", year)].complaints[0]["dateComplaintFiled"] = (
            "31/12/2021"
        )
    code, summary = ingest_cli(warehouse_path)
    assert code == 0
    assert summary["warnings"] == [
        {
            "source": "nhtsa",
            "entry": "HONDA CR-V 2017–2022",
            "warning": f"complaint {AEB_COMPLAINT}: dateComplaintFiled: '31/12/2021' is not a "
            "valid MM/DD/YYYY date",
        }
    ]
    stored = body(warehouse_path, doc_id("nhtsa", "complaint", str(AEB_COMPLAINT)))
    assert stored["record"]["dateComplaintFiled"] == "31/12/2021"


# -- curation ------------------------------------------------------------------------------
def curation_input(wh: Warehouse, doc: str) -> CurationInput:
    revision = history.history(wh, doc)[-1]
    return CurationInput(
        doc_id=doc,
        kind=doc.split("/")[1],
        revision=revision["revision"],
        content_hash=revision["content_hash"],
        media_type="application/json",
        body=history.snapshot(wh, doc).body,
        scope=revision["scope"],
        provenance=revision["provenance"],
        attributes=revision["attributes"],
        sanity_id_of=lambda d: d,
    )


def curated(warehouse_path: Path, doc: str) -> dict[str, Any]:
    entries = load_manifest(MANIFEST).entries["nhtsa"]
    with Warehouse.open(str(warehouse_path), read_only=True) as wh:
        result = curate(curation_input(wh, doc), entries)
    assert result.type == "safetyRecord"
    return result.fields


def test_curated_records_carry_the_key_facts(fake_nhtsa: FakeNhtsa, warehouse_path: Path) -> None:
    assert ingest_cli(warehouse_path)[0] == 0
    recall = curated(warehouse_path, doc_id("nhtsa", "recall", AEB_RECALL))
    assert recall["recordType"] == "recall" and recall["campaignNumber"] == AEB_RECALL
    assert recall["reportReceivedDate"] == "2021-12-05"  # DD/MM/YYYY
    assert recall["remedy"].startswith("Dealers will update")
    assert recall["components"] == ["FORWARD COLLISION AVOIDANCE: AUTOMATIC EMERGENCY BRAKING"]
    assert recall["modelYears"] == [2019, 2020]
    assert recall["authorityRank"] == 90 and recall["license"].startswith("public-domain")
    assert recall["sourceFormat"] == "api:recallsByVehicle"

    complaint = curated(warehouse_path, doc_id("nhtsa", "complaint", str(AEB_COMPLAINT)))
    assert complaint["dateOfIncident"] == "2021-05-12"  # MM/DD/YYYY
    assert complaint["dateFiled"] == "2021-06-02"
    assert complaint["components"] == ["FORWARD COLLISION AVOIDANCE", "SERVICE BRAKES"]
    assert "vin" not in complaint
    blank = curated(warehouse_path, doc_id("nhtsa", "complaint", str(CMBS_TEXT_COMPLAINT)))
    assert "dateOfIncident" not in blank

    investigation = curated(warehouse_path, doc_id("nhtsa", "investigation", INVESTIGATION))
    assert investigation["actionNumber"] == "EA24-002"
    assert investigation["investigationType"] == "EA"
    assert investigation["status"] == "open" and investigation["dateOpened"] == "2024-03-13"
    assert len(investigation["pdfUrls"]) == 2

    bulletin = curated(warehouse_path, doc_id("nhtsa", "communication", str(BULLETIN)))
    assert bulletin["nhtsaId"] == str(BULLETIN)
    assert bulletin["manufacturerCommunicationNumber"] == "A26-091"
    assert bulletin["communicationDate"] == "2021-03-02"
    assert bulletin["pdfUrls"] == ["https://static.nhtsa.gov/odi/tsbs/2021/MC-11035781-0001.pdf"]
    assert bulletin["make"] == "HONDA" and bulletin["model"] == "CR-V"


def test_counts_written_in_other_digits_are_not_counts() -> None:
    """A superscript two passes ``str.isdigit`` (``int`` then raises) and ``int`` reads
    Arabic-Indic digits: neither is a count NHTSA writes, so neither becomes a fact."""
    facts = _api_facts(
        "complaint", "1", {"numberOfInjuries": "\u00b2", "numberOfDeaths": "\u0661", "crash": "N"}
    )
    assert facts["injuries"] is None and facts["deaths"] is None
    assert _api_facts("complaint", "1", {"numberOfInjuries": " 2 "})["injuries"] == 2


def test_curation_is_deterministic(fake_nhtsa: FakeNhtsa, tmp_path: Path) -> None:
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    assert ingest_cli(first)[0] == 0
    assert ingest_cli(second)[0] == 0
    for doc in sorted(AEB_DOCS):
        assert body(first, doc) == body(second, doc)
        assert curated(first, doc) == curated(second, doc)


def test_the_corpus_is_published_as_safety_records(fake_nhtsa: FakeNhtsa, tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    assert ingest_cli(warehouse)[0] == 0
    out = tmp_path / "crv.ndjson"
    result = cli("publish", MANIFEST, "--warehouse", warehouse, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    documents = [json.loads(line) for line in out.read_text().splitlines()]
    assert {d["_type"] for d in documents} == {"safetyRecord"}
    assert {d["provenance"]["docId"] for d in documents} == AEB_DOCS
    by_id = {d["_id"]: d for d in documents}
    investigation = by_id[f"crvAeb.investigation.{INVESTIGATION}"]
    assert investigation["actionNumber"] == "EA24-002"
    assert investigation["modelYears"] == [2018, 2019, 2020, 2021, 2022]
    assert all(d["_id"].startswith("crvAeb.") for d in documents)


def test_safety_issues_by_nhtsa_id_takes_the_record_asked_for_not_the_first(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    """byNhtsaId can answer several records (a bulletin re-sent or revised under another
    id): the documents stored are those of the record whose nhtsaIdNumber was asked for."""
    fake_nhtsa.alongside[(str(BULLETIN), "manufacturerCommunications")] = [
        {
            "nhtsaIdNumber": 11035885,
            "associatedDocuments": [pdf("MC-11035885-0001.pdf", 2021, "first issue")],
        }
    ]
    assert ingest_cli(warehouse_path)[0] == 0
    bulletin = body(warehouse_path, doc_id("nhtsa", "communication", str(BULLETIN)))
    assert [d["fileName"] for d in bulletin["associatedDocuments"]] == ["MC-11035781-0001.pdf"]


def test_a_by_nhtsa_id_answer_without_the_record_asked_for_fails_the_entry(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path
) -> None:
    other = {"nhtsaIdNumber": 11035885, "associatedDocuments": []}
    fake_nhtsa.fail(
        "/safetyIssues/byNhtsaId",
        200,
        body=orjson.dumps({"results": [{"manufacturerCommunications": [other]}]}),
        nhtsaId=str(BULLETIN),
    )
    code, summary = ingest_cli(warehouse_path)
    assert code == 1
    (failure,) = summary["failures"]
    assert f"none with nhtsaIdNumber {BULLETIN}" in failure["reason"]
    assert "/safetyIssues/byNhtsaId?" in failure["reason"]
    assert not any(d.startswith("nhtsa/communication/") for d in current_docs(warehouse_path))


@pytest.mark.parametrize(
    ("vehicle", "wrong"),
    [
        ({"vehicleId": 1, "safetyIssues": "N/A"}, "results[0].safetyIssues is a str"),
        (
            {"safetyIssues": {"investigations": "N/A", "manufacturerCommunications": "N/A"}},
            "results[0].safetyIssues.investigations is a str, not a list",
        ),
        (
            {"safetyIssues": {"investigations": ["EA24002"], "manufacturerCommunications": []}},
            "results[0].safetyIssues.investigations[0] is a str",
        ),
    ],
    ids=["issues a string", "issue list a string", "issue a string"],
)
def test_a_malformed_by_ymmt_answer_says_what_was_wrong_and_where(
    fake_nhtsa: FakeNhtsa, warehouse_path: Path, vehicle: dict[str, Any], wrong: str
) -> None:
    body_bytes = orjson.dumps({"meta": {"pagination": {"total": 1}}, "results": [vehicle]})
    fake_nhtsa.fail("/vehicles/byYmmt", 200, body=body_bytes, modelYear="2019")
    code, summary = ingest_cli(warehouse_path)
    assert code == 1
    (failure,) = summary["failures"]
    assert wrong in failure["reason"]
    assert f"{API}/vehicles/byYmmt?" in failure["reason"] and "modelYear=2019" in failure["reason"]
    assert "internal error" not in failure["reason"] and "AttributeError" not in failure["reason"]

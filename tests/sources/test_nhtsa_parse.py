"""NHTSA's quirks on plain values: envelopes, per-field dates, 9999, identities, filters."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sources.nhtsa.parse import (
    RecordFilter,
    action_number,
    api_date,
    complaint_date,
    components_of,
    date_problems,
    display_action_number,
    envelope,
    flat_date,
    investigation_type,
    is_empty_result,
    iso_date,
    known_date,
    model_year,
    recall_date,
    record_key,
    texts_of,
)
from warehouse.errors import NhtsaParseError

ENVELOPES = {
    "recalls: PascalCase count, lowercase results": (
        {"Count": 1, "Message": "Results returned successfully", "results": [{"a": 1}]},
        1,
    ),
    "complaints: all lowercase": ({"count": 2, "message": "ok", "results": [{}, {}]}, 2),
    "vPIC: PascalCase results": ({"Count": 1, "Message": "ok", "Results": [{"b": 2}]}, 1),
    "vehicle family: meta.pagination": (
        {"meta": {"pagination": {"count": 1, "max": 10, "offset": 0, "total": 7}}, "results": [{}]},
        7,
    ),
    "no count": ({"results": []}, None),
}


@pytest.mark.parametrize(("data", "count"), ENVELOPES.values(), ids=ENVELOPES.keys())
def test_every_envelope_casing_is_read(data: dict[str, Any], count: int | None) -> None:
    env = envelope(data)
    assert env.count == count
    assert env.results == data.get("results", data.get("Results"))


BAD_ENVELOPES = {
    "html decoded as a string": ("<html>", "expected a JSON object"),
    "no results": ({"Count": 0, "Message": "x"}, "no 'results' in the envelope (keys: Count"),
    "results not objects": ({"results": [1, 2]}, "not a list of objects"),
    "count not a number": ({"count": "3", "results": []}, "is not an integer"),
}


@pytest.mark.parametrize(("data", "message"), BAD_ENVELOPES.values(), ids=BAD_ENVELOPES.keys())
def test_a_body_that_is_not_an_envelope_is_refused(data: Any, message: str) -> None:
    with pytest.raises(NhtsaParseError, match=re.escape(message)):
        envelope(data)


def test_the_400_zero_count_body_is_an_empty_result_and_nothing_else_is() -> None:
    assert is_empty_result({"Count": 0, "Message": "Results returned successfully", "results": []})
    assert is_empty_result({"count": 0, "message": "No results", "results": []})
    assert not is_empty_result({"Count": 1, "results": [{}]})
    assert not is_empty_result({"message": "Invalid parameter modelyear"})
    assert not is_empty_result({"Count": 0, "results": [{"x": 1}]})


def test_the_same_slashed_date_means_different_days_in_recalls_and_complaints() -> None:
    assert recall_date("05/12/2021") == "2021-12-05"  # DD/MM/YYYY
    assert complaint_date("05/12/2021") == "2021-05-12"  # MM/DD/YYYY
    assert recall_date("18/11/2021") == "2021-11-18"
    with pytest.raises(NhtsaParseError, match="not a valid MM/DD/YYYY date"):
        complaint_date("18/11/2021")
    with pytest.raises(NhtsaParseError, match="not a DD/MM/YYYY date"):
        recall_date("2021.11.18")


def test_iso_and_flat_dates() -> None:
    assert iso_date("2024-03-13T00:00:00Z") == "2024-03-13"
    assert iso_date("2024-03-13") == "2024-03-13"
    assert iso_date(None) is None
    assert recall_date("2021-11-18T00:00:00Z") == "2021-11-18"  # ISO is never ambiguous
    assert flat_date("20210518") == "2021-05-18"
    assert flat_date("") is None and flat_date("00000000") is None
    for bad in ("2021-05-18", "20211318", "2021051", "\u0662\u0660210518", "2021051\u00b2"):
        with pytest.raises(NhtsaParseError):
            flat_date(bad)
    for bad in ("\u0661\u0661/18/2021", "2021-\u0661\u0661-18"):  # Arabic-Indic digits
        with pytest.raises(NhtsaParseError):
            recall_date(bad)
        with pytest.raises(NhtsaParseError):
            complaint_date(bad)
    with pytest.raises(NhtsaParseError):
        iso_date("2024-03-13Tnoon")


def test_placeholder_incident_dates_are_unknown() -> None:
    assert known_date(complaint_date("12/31/1969")) is None
    assert known_date(flat_date("19010101")) is None
    assert known_date(complaint_date("01/01/1970")) == "1970-01-01"
    assert known_date(None) is None


def test_each_api_date_field_uses_its_own_format() -> None:
    record = {"ReportReceivedDate": "05/12/2021", "dateOfIncident": "05/12/2021"}
    assert api_date(record, "ReportReceivedDate") == "2021-12-05"
    assert api_date(record, "dateOfIncident") == "2021-05-12"
    assert api_date({"dateFiled": "2021-06-02T00:00:00Z"}, "dateComplaintFiled", "dateFiled") == (
        "2021-06-02"
    )
    assert date_problems(record) == []
    assert date_problems({"dateComplaintFiled": "31/12/2021"}) == [
        "dateComplaintFiled: '31/12/2021' is not a valid MM/DD/YYYY date"
    ]


def test_9999_and_blank_are_not_model_years() -> None:
    assert model_year("2019") == 2019
    assert model_year(2019) == 2019
    assert model_year("9999") is None
    assert model_year(9999) is None
    assert model_year("") is None and model_year(None) is None
    for bad in ("19", "\u0662\u0660\u0662\u0660", "202\u00b2"):
        with pytest.raises(NhtsaParseError):
            model_year(bad)


def test_one_odi_number_is_one_identity_in_every_shape() -> None:
    from_api = record_key("complaints", {"odiNumber": 11741504})
    from_vehicle_family = record_key("complaints", {"nhtsaIdNumber": 11741504})
    from_flat_file = record_key("complaints", {"ODINO": "11741504"})
    assert from_api == from_vehicle_family == from_flat_file == "11741504"
    assert record_key("communications", {"nhtsaIdNumber": "11035781"}) == "11035781"
    assert record_key("communications", {"nhtsaID": "11035781"}) == "11035781"
    assert record_key("recalls", {"NHTSACampaignNumber": "21V900000"}) == "21V900000"
    assert record_key("recalls", {"nhtsaCampaignNumber": "24v064000"}) == "24V064000"
    assert record_key("recalls", {"CAMPNO": "24V064000"}) == "24V064000"
    assert record_key("investigations", {"nhtsaActionNumber": "EA24002"}) == "EA24002"
    assert record_key("investigations", {"NHTSA ACTION NUMBER": "EA24-002"}) == "EA24002"


@pytest.mark.parametrize(
    ("kind", "record", "message"),
    [
        ("complaints", {}, "complaint without an identity"),
        ("complaints", {"odiNumber": "11-74"}, "is not a number"),
        ("complaints", {"odiNumber": 1.5}, "is not a number"),
        ("communications", {"nhtsaIdNumber": True}, "without an identity"),
        ("recalls", {"NHTSACampaignNumber": "21V 900/000"}, "unexpected shape"),
        ("investigations", {"nhtsaActionNumber": "EA 24/002"}, "not an investigation action"),
        # Digits Python reads as numbers but NHTSA never writes: Arabic-Indic 123 would be
        # complaint 123's identity; a superscript two would make int() raise.
        ("complaints", {"odiNumber": "\u0661\u0662\u0663"}, "is not a number"),
        ("complaints", {"ODINO": "1\u00b2"}, "is not a number"),
        ("communications", {"nhtsaIdNumber": "\uff11\uff12"}, "is not a number"),
        # Letters that upper-case into ASCII would be another campaign's or action's identity.
        ("recalls", {"NHTSACampaignNumber": "21v900\u00df"}, "unexpected shape"),
        ("investigations", {"nhtsaActionNumber": "\u00dfA24002"}, "not an investigation action"),
    ],
)
def test_a_record_without_a_usable_identity_is_refused(
    kind: str, record: dict[str, Any], message: str
) -> None:
    with pytest.raises(NhtsaParseError, match=message):
        record_key(kind, record)


def test_action_numbers() -> None:
    assert action_number("ea24-002") == "EA24002"
    assert display_action_number("EA24002") == "EA24-002"
    assert display_action_number("ODD") == "ODD"
    assert investigation_type("PE22003") == "PE"
    assert investigation_type("X") is None


@given(st.sampled_from(["PE", "EA", "DP", "RQ", "AQ"]), st.integers(0, 99), st.integers(0, 999))
def test_action_numbers_round_trip(prefix: str, year: int, serial: int) -> None:
    written = f"{prefix}{year:02d}-{serial:03d}"
    assert display_action_number(action_number(written)) == written


def test_components_in_every_shape() -> None:
    assert components_of({"components": "ELECTRICAL SYSTEM,ENGINE"}) == [
        "ELECTRICAL SYSTEM",
        "ENGINE",
    ]
    assert components_of({"Component": "SEAT BELTS:REAR/OTHER:RETRACTOR"}) == [
        "SEAT BELTS:REAR/OTHER:RETRACTOR"
    ]
    assert components_of({"components": [{"id": 1, "name": "FORWARD COLLISION AVOIDANCE"}]}) == [
        "FORWARD COLLISION AVOIDANCE"
    ]
    assert components_of({"COMPDESC": "SERVICE BRAKES"}) == ["SERVICE BRAKES"]
    assert components_of({"summary": "x"}) == []


def test_filters_decide_membership_by_component_or_text() -> None:
    aeb = RecordFilter(("forward collision",), re.compile(r"\bCMBS\b", re.IGNORECASE))
    assert aeb.matches(["FORWARD COLLISION AVOIDANCE: AEB"], [])
    assert aeb.matches(["SERVICE BRAKES"], ["The cmbs light came on"])
    assert not aeb.matches(["SERVICE BRAKES"], ["The CMBSX is not a word match"])
    assert not aeb.matches(["ELECTRICAL SYSTEM"], ["The radio resets."])
    assert RecordFilter().matches([], [])  # no filter: everything belongs
    assert texts_of({"Summary": "a", "Remedy": "b", "vin": "c", "summary": " "}) == ["a", "b"]


def test_component_names_holding_a_comma_and_a_space_stay_whole() -> None:
    """complaintsByVehicle joins names with a bare comma; NHTSA's own names may hold ", "."""
    record = {"components": "SERVICE BRAKES, HYDRAULIC,FUEL SYSTEM, GASOLINE,ENGINE"}
    assert components_of(record) == ["SERVICE BRAKES, HYDRAULIC", "FUEL SYSTEM, GASOLINE", "ENGINE"]


def test_every_spelling_of_a_field_is_read_and_lookalikes_are_found() -> None:
    from sources.nhtsa.aliases import FIELD_ALIASES, lookalike_keys, value_of

    assert value_of({"Conequence": "x"}, "consequence") == "x"
    assert value_of({"Consequence": "", "Conequence": "y"}, "consequence") == "y"
    assert "Conequence" in FIELD_ALIASES["consequence"]
    assert texts_of({"Conequence": "fragments"}) == ["fragments"]
    assert lookalike_keys(["Conequence", "Consequnce", "summery", "vin", "zzz"]) == [
        ("Consequnce", "Consequence"),
        ("summery", "summary"),
    ]


def test_the_closest_products_names_meet_across_punctuation() -> None:
    from sources.nhtsa.products import closest

    models = ["ACCORD", "CIVIC", "CR-V", "CR-Z", "HR-V"]
    assert closest("CRV", models)[0] == "CR-V"
    assert closest("cr v", models)[0] == "CR-V"
    assert closest("ACORD", models) == ["ACCORD"]
    assert closest("QQQQQ", models) == []

"""A stateful fake of NHTSA's API and static host, serving the shapes of the reference (§2).

The records are invented, in the upstream's shapes and quirks:

- ``recalls/recallsByVehicle``: ``{"Count", "Message", "results"}`` envelope, PascalCase
  records with camelCase flags, ``ReportReceivedDate`` as DD/MM/YYYY;
- ``complaints/complaintsByVehicle``: all-lowercase envelope, ``odiNumber`` a number,
  ``components`` a comma-separated string, dates MM/DD/YYYY;
- both answer **400 with a zero count** when a vehicle year has no records, and the same for
  a make, model or year they do not recognise (``forget``);
- ``vehicles/byYmmt``: one result per variant (FWD/AWD), each with ``safetyIssues``; the
  ``associatedDocuments`` of an issue is a URL on api.nhtsa.gov;
- ``safetyIssues/byNhtsaId``: ``results[0].<filterValue>[]``, each record with its
  ``nhtsaIdNumber`` (``nhtsaActionNumber`` for investigations) and ``associatedDocuments[]``
  with PDF URLs on static.nhtsa.gov; the answer may hold other records beside the one
  asked for (``alongside``), listed first;
- ``products/vehicle/makes`` and ``products/vehicle/models``: the all-lowercase envelope,
  ``results[].make`` and ``results[].model`` (with ``modelYear`` and ``make``), the names
  NHTSA files records under (``CR-V``, never ``CRV``) [reference §2.1, §2.2]; a make or
  year without products answers a zero count (a recorded citation of
  ``products/vehicle/models?modelYear=1974&make=bmw&issueType=r``: "Returns a count of
  zero");
- complaints filed before about December 2002 are listed once per component, several
  records under one ``odiNumber`` (reference §6); ``miscount`` makes an answer's count
  disagree with its results;
- a path NHTSA does not know answers **403**; parameter names are case-sensitive.

Faults are injected per path (``fail(...)``): a status with an optional ``Retry-After``,
an HTML error page, an empty body. The static host serves files put in ``files``.
"""

from __future__ import annotations

import copy
import io
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from sources.nhtsa import source as nhtsa

PATH_OF = {
    "recalls": "/recalls/recallsByVehicle",
    "complaints": "/complaints/complaintsByVehicle",
}

# Where tests serve the fake (the source's endpoints pointed here by their environment
# variables), and NHTSA's own base URLs, which upstream records name.
API = "https://nhtsa.test"
STATIC = "https://static.nhtsa.test"
REAL_API = nhtsa.API.default_url
REAL_STATIC = nhtsa.STATIC.default_url

HTML_ERROR = (
    b"<!DOCTYPE html><html><head><title>Service Unavailable</title></head>"
    b"<body><h1>The service is temporarily unavailable</h1></body></html>"
)

# -- records -------------------------------------------------------------------------------


def recall(campaign: str, component: str, summary: str, received: str, year: int) -> dict[str, Any]:
    return {
        "Manufacturer": "Honda (American Honda Motor Co.)",
        "NHTSACampaignNumber": campaign,
        "parkIt": False,
        "parkOutSide": False,
        "overTheAirUpdate": False,
        "ReportReceivedDate": received,
        "Component": component,
        "Summary": summary,
        "Consequence": "An unexpected brake activation increases the risk of a crash.",
        "Remedy": "Dealers will update the software, free of charge.",
        "Notes": "Owners may also contact NHTSA's hotline.",
        "ModelYear": str(year),
        "Make": "HONDA",
        "Model": "CR-V",
        "NHTSAActionNumber": "N/A",
    }


def complaint(
    odi: int, components: str, summary: str, incident: str, filed: str, year: int
) -> dict[str, Any]:
    return {
        "odiNumber": odi,
        "manufacturer": "Honda (American Honda Motor Co.)",
        "crash": False,
        "fire": False,
        "numberOfInjuries": 0,
        "numberOfDeaths": 0,
        "dateOfIncident": incident,
        "dateComplaintFiled": filed,
        "vin": "7FARW2H80KE",
        "components": components,
        "summary": summary,
        "products": [
            {
                "type": "Vehicle",
                "productYear": str(year),
                "productMake": "HONDA",
                "productModel": "CR-V",
            }
        ],
    }


def investigation(action: str, subject: str, opened: str, closed: str | None) -> dict[str, Any]:
    return {
        "nhtsaActionNumber": action,
        "type": action[:2],
        "subject": subject,
        "summary": "<p>The agency has received reports of unexpected braking.</p>",
        "dateOpened": opened,
        "dateClosed": closed,
        "components": [{"id": 1, "name": "FORWARD COLLISION AVOIDANCE", "description": "AEB"}],
        "recalls": [],
        "associatedDocumentsCount": 2,
        "associatedDocuments": (
            f"{REAL_API}/safetyIssues/byNhtsaId?nhtsaId={action}"
            "&filter=issueType&filterValue=investigations"
        ),
    }


def communication(nhtsa_id: int, number: str, summary: str, component: str) -> dict[str, Any]:
    return {
        "nhtsaIdNumber": nhtsa_id,
        "manufacturerCommunicationNumber": number,
        "subject": summary[:40],
        "summary": summary,
        "communicationDate": "2021-03-02T00:00:00Z",
        "components": [{"id": 2, "name": component, "description": component}],
        "associatedDocumentsCount": 1,
        "associatedDocuments": (
            f"{REAL_API}/safetyIssues/byNhtsaId?nhtsaId={nhtsa_id}"
            "&filter=issueType&filterValue=manufacturerCommunications"
        ),
    }


def pdf(name: str, year: int, summary: str) -> dict[str, Any]:
    return {
        "id": zlib.crc32(name.encode()) % 100_000,
        "fileName": name,
        "fileSize": 123_456,
        "loadDate": f"{year}-01-05T00:00:00Z",
        "mimeType": "application/pdf",
        "summary": summary,
        "url": f"{REAL_STATIC}/odi/{'inv' if name.startswith('IN') else 'tsbs'}/{year}/{name}",
    }


@dataclass
class Vehicle:
    recalls: list[dict[str, Any]] = field(default_factory=list)
    complaints: list[dict[str, Any]] = field(default_factory=list)
    investigations: list[dict[str, Any]] = field(default_factory=list)
    communications: list[dict[str, Any]] = field(default_factory=list)


AEB_RECALL = "20V999001"
BELT_RECALL = "21V999002"
CMBS_TEXT_RECALL = "21V999003"
AEB_COMPLAINT = 11999001
RADIO_COMPLAINT = 11999002
CMBS_TEXT_COMPLAINT = 11999003
INVESTIGATION = "EA24002"
BULLETIN = 11035781
RADIO_BULLETIN = 11000001


def cr_v_aeb() -> dict[tuple[str, str, int], Vehicle]:
    """HONDA CR-V 2017–2022: AEB records that recur across years, plus unrelated ones."""
    vehicles: dict[tuple[str, str, int], Vehicle] = {}
    for year in range(2017, 2023):
        v = Vehicle()
        if year in (2019, 2020):
            v.recalls.append(
                recall(
                    AEB_RECALL,
                    "FORWARD COLLISION AVOIDANCE: AUTOMATIC EMERGENCY BRAKING",
                    "The AEB system may activate unexpectedly.",
                    "05/12/2021",
                    year,
                )
            )
            v.complaints.append(
                complaint(
                    AEB_COMPLAINT,
                    "FORWARD COLLISION AVOIDANCE,SERVICE BRAKES",
                    "The car braked hard on an empty road.",
                    "05/12/2021",
                    "06/02/2021",
                    year,
                )
            )
        if year == 2021:
            v.recalls.append(
                recall(
                    BELT_RECALL,
                    "SEAT BELTS:REAR/OTHER:RETRACTOR",
                    "A rear seat belt retractor may not lock.",
                    "18/11/2021",
                    year,
                )
            )
            v.recalls.append(
                recall(
                    CMBS_TEXT_RECALL,
                    "SERVICE BRAKES",
                    "The Collision Mitigation Braking System may brake without cause.",
                    "01/02/2022",
                    year,
                )
            )
            v.complaints.append(
                complaint(
                    RADIO_COMPLAINT,
                    "ELECTRICAL SYSTEM",
                    "The radio resets itself.",
                    "12/31/1969",
                    "03/04/2021",
                    year,
                )
            )
            v.complaints.append(
                complaint(
                    CMBS_TEXT_COMPLAINT,
                    "SERVICE BRAKES",
                    "The CMBS warning came on and the car stopped.",
                    "",
                    "07/08/2021",
                    year,
                )
            )
        if year >= 2018:
            v.investigations.append(
                investigation(
                    INVESTIGATION, "Unexpected AEB activation", "2024-03-13T00:00:00Z", None
                )
            )
        if year in (2017, 2018):
            v.communications.append(
                communication(
                    BULLETIN,
                    "A26-091",
                    "SERVICE BULLETIN - CMBS: brakes apply unexpectedly",
                    "SERVICE BRAKES",
                )
            )
            v.communications.append(
                communication(
                    RADIO_BULLETIN,
                    "A20-001",
                    "SERVICE BULLETIN - radio update",
                    "ELECTRICAL SYSTEM",
                )
            )
        vehicles[("HONDA", "CR-V", year)] = v
    return vehicles


def cr_v_documents() -> dict[tuple[str, str], list[dict[str, Any]]]:
    return {
        (str(INVESTIGATION), "investigations"): [
            pdf("INOA-EA24002-11766P1.pdf", 2024, "Opening Resume"),
            pdf("INIM-EA24002-22222P1.pdf", 2024, "Information Request"),
        ],
        (str(BULLETIN), "manufacturerCommunications"): [
            pdf("MC-11035781-0001.pdf", 2021, "CMBS bulletin")
        ],
        (str(RADIO_BULLETIN), "manufacturerCommunications"): [
            pdf("MC-11000001-0001.pdf", 2020, "radio bulletin")
        ],
    }


def cr_v_catalog() -> dict[str, list[str]]:
    """Makes and models of the products routes, spelled as NHTSA files them."""
    return {
        "HONDA": ["ACCORD", "CIVIC", "CR-V", "CR-Z", "HR-V", "PILOT"],
        "HYUNDAI": ["ELANTRA", "SANTA FE", "TUCSON"],
        "ACURA": ["MDX", "RDX"],
    }


# -- the fake ------------------------------------------------------------------------------
class SentBytes(httpx.SyncByteStream):
    """A body as a server sends it: read (and decoded, by its ``Content-Encoding``) by the
    client, as from a real server. respx reads (and decodes) an ``httpx.ByteStream`` body
    before handing the response over, so a body that does not decode would fail in the fake."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self.body


@dataclass
class Fault:
    path: str
    status: int
    times: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    when: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeNhtsa:
    vehicles: dict[tuple[str, str, int], Vehicle] = field(default_factory=cr_v_aeb)
    documents: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=cr_v_documents)
    files: dict[str, bytes] = field(default_factory=dict)
    # Other records ``safetyIssues/byNhtsaId`` lists before the one asked for (a bulletin
    # re-sent or revised under another id comes back in the same answer).
    alongside: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)
    # Other makes and models NHTSA lists for every year, beside those of ``vehicles``.
    catalog: dict[str, list[str]] = field(default_factory=cr_v_catalog)
    # (path, model year) -> the count the answer claims instead of its number of results.
    counts: dict[tuple[str, int], int] = field(default_factory=dict)

    # -- state changes -------------------------------------------------------------------
    def fail(
        self,
        path: str,
        status: int,
        *,
        times: int = 1,
        body: bytes = b"",
        content_type: str = "application/json",
        retry_after: str | None = None,
        **when: str,
    ) -> None:
        """The next ``times`` requests to ``path`` (whose query has ``when``) get ``status``."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.faults.append(Fault(path, status, times, body, content_type, headers, when))

    def remove(self, kind: str, key: object) -> list[tuple[int, dict[str, Any]]]:
        """Take a record out of every year; returns what was removed, for :meth:`restore`."""
        removed = []
        for (_, _, year), vehicle in self.vehicles.items():
            records: list[dict[str, Any]] = getattr(vehicle, kind)
            for record in list(records):
                if key in (
                    record.get("NHTSACampaignNumber"),
                    record.get("odiNumber"),
                    record.get("nhtsaActionNumber"),
                    record.get("nhtsaIdNumber"),
                ):
                    records.remove(record)
                    removed.append((year, record))
        return removed

    def restore(self, kind: str, removed: list[tuple[int, dict[str, Any]]]) -> None:
        for year, record in removed:
            getattr(self.vehicles[("HONDA", "CR-V", year)], kind).append(record)

    def forget(self, make: str, model: str, year: int) -> Vehicle:
        """NHTSA stops recognising a vehicle year: both vehicle endpoints answer it as for an
        unrecognised make or model, 400 with a zero count (the same answer as a year without
        records). Returns the vehicle, to put back in ``vehicles``."""
        return self.vehicles.pop((make, model, year))

    def miscount(self, path: str, year: int, count: int) -> None:
        """The answer of ``path`` for ``year`` claims ``count`` records whatever it holds."""
        self.counts[(path, year)] = count

    def paths(self) -> list[str]:
        return [r.url.path for r in self.requests]

    # -- serving -------------------------------------------------------------------------
    @contextmanager
    def serving(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNhtsa]:
        """Answer every request to the NHTSA base URLs, which the environment points here."""
        monkeypatch.setenv(nhtsa.API.env_var, API)
        monkeypatch.setenv(nhtsa.STATIC.env_var, STATIC)
        with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
            router.route(url__startswith=API).mock(side_effect=self.handle_api)
            router.route(url__startswith=STATIC).mock(side_effect=self.handle_static)
            yield self

    def _fault(self, request: httpx.Request) -> httpx.Response | None:
        for fault in self.faults:
            params = request.url.params
            if (
                fault.times > 0
                and request.url.path == fault.path
                and all(params.get(k) == v for k, v in fault.when.items())
            ):
                fault.times -= 1
                return httpx.Response(
                    fault.status,
                    stream=SentBytes(fault.body),
                    headers={"Content-Type": fault.content_type, **fault.headers},
                )
        return None

    def handle_api(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        faulted = self._fault(request)
        if faulted is not None:
            return faulted
        params = request.url.params
        path = request.url.path
        if path == "/recalls/recallsByVehicle":
            return self._by_vehicle(params, "recalls", ("Count", "Message", "results"))
        if path == "/complaints/complaintsByVehicle":
            return self._by_vehicle(params, "complaints", ("count", "message", "results"))
        if path == "/vehicles/byYmmt":
            return self._by_ymmt(params)
        if path == "/safetyIssues/byNhtsaId":
            return self._by_nhtsa_id(params)
        if path in ("/products/vehicle/makes", "/products/vehicle/models"):
            return self._products(path, params)
        return httpx.Response(403, content=b'{"message":"Forbidden"}')

    def _vehicle(self, params: httpx.QueryParams) -> tuple[Vehicle | None, int | None]:
        if not {"make", "model", "modelYear"} <= set(params.keys()):
            return None, None
        year = int(params["modelYear"])
        key = (params["make"].upper(), params["model"].upper(), year)
        return self.vehicles.get(key), year

    def _by_vehicle(
        self, params: httpx.QueryParams, kind: str, names: tuple[str, str, str]
    ) -> httpx.Response:
        count, message, results = names
        vehicle, year = self._vehicle(params)
        records = copy.deepcopy(getattr(vehicle, kind)) if vehicle else []
        claimed = self.counts.get((PATH_OF[kind], year or 0), len(records))
        body = {count: claimed, message: "Results returned successfully", results: records}
        return httpx.Response(200 if records or claimed else 400, json=body)

    def _products(self, path: str, params: httpx.QueryParams) -> httpx.Response:
        if "modelYear" not in params or "issueType" not in params:
            return httpx.Response(400, json={"count": 0, "message": "", "results": []})
        year = params["modelYear"]
        kind = {"r": "recalls", "c": "complaints"}.get(params["issueType"], "")
        listed: dict[str, set[str]] = {make: set(models) for make, models in self.catalog.items()}
        for (make, model, y), vehicle in self.vehicles.items():
            if str(y) == year and getattr(vehicle, kind, None):
                listed.setdefault(make, set()).add(model)
        if path.endswith("/makes"):
            results: list[dict[str, str]] = [{"make": make} for make in sorted(listed)]
        else:
            make = params.get("make", "").upper()
            results = [
                {"modelYear": year, "make": make, "model": model}
                for model in sorted(listed.get(make, ()))
            ]
        body = {"count": len(results), "message": "Results returned successfully"}
        return httpx.Response(200, json={**body, "results": results})

    def _by_ymmt(self, params: httpx.QueryParams) -> httpx.Response:
        vehicle, year = self._vehicle(params)
        if vehicle is None:
            return httpx.Response(200, json={"meta": {"pagination": {"total": 0}}, "results": []})
        variants = []
        for vehicle_id, series in ((10288, "FWD"), (10289, "AWD")):
            variants.append(
                {
                    "vehicleId": vehicle_id + (year or 0) * 10,
                    "modelYear": year,
                    "make": "HONDA",
                    "vehicleModel": "CR-V",
                    "trim": "SUV",
                    "series": series,
                    "complaintsCount": len(vehicle.complaints),
                    "safetyIssues": {
                        "manufacturerCommunications": copy.deepcopy(vehicle.communications),
                        "investigations": copy.deepcopy(vehicle.investigations),
                        "recalls": [],
                        "complaints": [],
                    },
                }
            )
        body = {"meta": {"pagination": {"total": len(variants)}}, "results": variants}
        return httpx.Response(200, json=body)

    def _by_nhtsa_id(self, params: httpx.QueryParams) -> httpx.Response:
        kind = params.get("filterValue", "")
        asked = params.get("nhtsaId", "")
        documents = self.documents.get((asked, kind))
        if documents is None:
            return httpx.Response(400, json={"count": 0, "message": "none", "results": []})
        identity: dict[str, Any] = (
            {"nhtsaActionNumber": asked}
            if kind == "investigations"
            else {"nhtsaIdNumber": int(asked) if asked.isdigit() else asked}
        )
        issue = {**identity, "associatedDocuments": documents}
        issues = [*copy.deepcopy(self.alongside.get((asked, kind), [])), issue]
        result = {kind: issues}
        return httpx.Response(200, json={"meta": {"pagination": {"total": 1}}, "results": [result]})

    def handle_static(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        faulted = self._fault(request)
        if faulted is not None:
            return faulted
        body = self.files.get(request.url.path)
        if body is None:
            return httpx.Response(
                404, content=b"<html>Not Found</html>", headers={"Content-Type": "text/html"}
            )
        return httpx.Response(200, content=body, headers={"Content-Type": "application/zip"})


# -- flat files ----------------------------------------------------------------------------
def cmpl_row(odi: int, cmplid: int, **values: str) -> list[str]:
    """A FLAT_CMPL row (49 fields) for a HONDA CR-V, overridable by field name."""
    from sources.nhtsa.flatfile.layouts import CMPL_FIELDS_49

    row = dict.fromkeys(CMPL_FIELDS_49, "")
    row.update(
        CMPLID=str(cmplid),
        ODINO=str(odi),
        MFR_NAME="Honda (American Honda Motor Co.)",
        MAKETXT="HONDA",
        MODELTXT="CR-V",
        YEARTXT="2019",
        CRASH="N",
        FAILDATE="20210512",
        FIRE="N",
        INJURED="0",
        DEATHS="0",
        COMPDESC="FORWARD COLLISION AVOIDANCE",
        CITY="SPRINGFIELD",
        STATE="IL",
        VIN="7FARW2H80KE",
        DATEA="20210603",
        LDATE="20210602",
        MILES="12000",
        CDESCR='The "CMBS" braked hard on an empty road.',
        CMPL_TYPE="IVOQ",
        PROD_TYPE="V",
    )
    row.update(values)
    return list(row.values())


def write_zip(
    path: Path, member: str, rows: Sequence[Sequence[str] | str], eol: str = "\n"
) -> Path:
    """A zipped flat file: tab-joined rows (or raw lines), ISO-8859-1."""
    text = "".join(("\t".join(r) if not isinstance(r, str) else r) + eol for r in rows)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, text.encode("iso-8859-1"))
    path.write_bytes(buffer.getvalue())
    return path

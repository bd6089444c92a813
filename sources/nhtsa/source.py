"""NHTSA vehicle-safety records for one make, model and model-year range.

A ``[[nhtsa]]`` entry names the vehicle, the kinds of records wanted and optional filters
that decide which records belong to the corpus. Per model year it asks
``recalls/recallsByVehicle``, ``complaints/complaintsByVehicle`` and, for investigations
and manufacturer communications (which have no other per-vehicle route), the vehicle
family's ``vehicles/byYmmt``, whose ``associatedDocuments`` are resolved to their PDF URLs
through ``safetyIssues/byNhtsaId``.

Documents: ``nhtsa/recall/<campaign>``, ``nhtsa/complaint/<odi>``,
``nhtsa/investigation/<action>``, ``nhtsa/communication/<nhtsa id>``. A record seen under
several model years or vehicle variants is one document; its stored body keeps the first
upstream record verbatim with the model years (and variants) it appeared under:
``{"record": ..., "modelYears": [...], "variants": [...], "associatedDocuments": [...]}``.

Complaint and recall listings are complete for their scope (one scope per entry and kind):
a record that disappears upstream becomes a tombstone. A listing is only handed over when
every model year of its kind was fetched; otherwise the entry fails and nothing is retired.
A model year answered 400 with a zero count (NHTSA's answer for a year without records, and
for a make or model it does not recognise) while the warehouse holds records of the scope
seen under that year makes the listing a lower bound, with a warning: nothing is retired.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import orjson
from pydantic import Field, StrictInt, field_validator, model_validator

from sources.base import Curated, CurationInput, FetchContext, Source, StrictModel
from sources.digits import is_ascii_digits
from sources.http import (
    TRANSIENT_STATUSES,
    Endpoint,
    HttpClient,
    HttpPolicy,
    checked_base_url,
    parse_json,
)
from sources.nhtsa.parse import (
    DOC_KIND,
    KINDS,
    SAFETY_ISSUE_KEY,
    RecordFilter,
    api_date,
    components_of,
    date_problems,
    display_action_number,
    envelope,
    flat_date,
    investigation_type,
    is_empty_result,
    known_date,
    record_key,
    texts_of,
)
from warehouse.canonical import canonical_json
from warehouse.clock import now
from warehouse.errors import NhtsaParseError, SourceError
from warehouse.ids import doc_id
from warehouse.records import Listing, Provenance, Record

# The API (records; an entry's ``base_url`` may name another) and the static host (PDFs of
# manufacturer communications, the flat files of ``receipts backfill nhtsa``).
API = Endpoint("nhtsa", "https://api.nhtsa.gov", "RECEIPTS_NHTSA_URL")
STATIC = Endpoint("nhtsa_static", "https://static.nhtsa.gov", "RECEIPTS_NHTSA_STATIC_URL")

Kind = Literal["recalls", "complaints", "investigations", "communications"]
COMPLETE_KINDS = frozenset({"recalls", "complaints"})
# NHTSA answers overload with 500 as well as 502/503/504; all are worth a polite retry.
NHTSA_TRANSIENT_STATUSES = TRANSIENT_STATUSES | {500}

ROUTES = {
    "recalls": ("/recalls/recallsByVehicle", "api:recallsByVehicle"),
    "complaints": ("/complaints/complaintsByVehicle", "api:complaintsByVehicle"),
    "vehicles": ("/vehicles/byYmmt", "api:byYmmt"),
}
SAFETY_ISSUES_ROUTE = "/safetyIssues/byNhtsaId"


class NhtsaEntry(StrictModel):
    """One vehicle line of a corpus: ``[[nhtsa]]`` in a manifest."""

    make: str = Field(min_length=1, max_length=60, pattern=r"^[^/:\s][^/:]*$")
    model: str = Field(min_length=1, max_length=60, pattern=r"^[^/:\s][^/:]*$")
    years: tuple[StrictInt, StrictInt] = Field(description="first and last model year, inclusive")
    kinds: tuple[Kind, ...] = ("recalls", "complaints", "investigations", "communications")
    components: tuple[str, ...] = ()
    text: str | None = None
    base_url: str | None = None
    concurrency: StrictInt = Field(default=4, ge=1, le=8)
    # Curation metadata carried onto every curated document of the entry.
    authority_domains: tuple[str, ...] = ()
    authority_rank: StrictInt | None = Field(default=None, ge=0, le=100)
    license: str | None = None

    @field_validator("years")
    @classmethod
    def _year_range(cls, value: tuple[int, int]) -> tuple[int, int]:
        first, last = value
        if not (1949 <= first <= last <= 2100):
            raise ValueError("must be [first, last] model years, 1949 ≤ first ≤ last ≤ 2100")
        if last - first >= 60:
            raise ValueError("spans more than 60 model years")
        return value

    @field_validator("kinds")
    @classmethod
    def _kinds_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError(f"name at least one of: {', '.join(KINDS)}")
        if len(set(value)) != len(value):
            raise ValueError("lists a kind twice")
        return value

    _base_url = field_validator("base_url")(checked_base_url)

    @field_validator("text")
    @classmethod
    def _text_is_a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _components_not_blank(self) -> NhtsaEntry:
        if any(not c.strip() for c in self.components):
            raise ValueError("components: an empty substring would match every record")
        return self

    @property
    def vehicle(self) -> str:
        return f"{self.make.strip().upper()}/{self.model.strip().upper()}"

    @property
    def year_range(self) -> range:
        return range(self.years[0], self.years[1] + 1)

    def scope(self, kind: str) -> str:
        return f"nhtsa:{self.vehicle}/{self.years[0]}-{self.years[1]}:{kind}"

    def record_filter(self) -> RecordFilter:
        pattern = re.compile(self.text, re.IGNORECASE) if self.text else None
        return RecordFilter(tuple(self.components), pattern)


def label(entry: NhtsaEntry) -> str:
    return f"{entry.make} {entry.model} {entry.years[0]}–{entry.years[1]}"


# -- fetching ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Page:
    """One answered request: its URL and its results (records, or vehicle variants).

    ``empty_400``: answered HTTP 400 with a zero count, NHTSA's answer both for a vehicle
    year without records and for a make or model it does not recognise."""

    year: int
    url: str
    results: list[dict[str, Any]]
    empty_400: bool = False


@dataclass
class Seen:
    """A record collected across model years and variants."""

    key: str
    record: dict[str, Any]
    url: str
    years: set[int] = field(default_factory=set)
    variants: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    documents: list[Any] | None = None


def nhtsa_policy(policy: HttpPolicy) -> HttpPolicy:
    return replace(policy, transient_statuses=policy.transient_statuses | NHTSA_TRANSIENT_STATUSES)


def get_answer(client: HttpClient, url: str, params: dict[str, Any]) -> tuple[str, list[Any], bool]:
    """GET an NHTSA listing: (request URL, results, whether it was a zero-count 400). A 400
    whose body says zero records is an empty result; HTML, empty or malformed bodies and
    other statuses fail the entry."""
    response = client.get(url, params=params, ok=(200, 400))
    data = parse_json(response)
    request_url = str(response.request.url)
    if response.status_code == 400:
        if is_empty_result(data):
            return request_url, [], True
        raise SourceError(f"nhtsa: HTTP 400 for {request_url}")
    try:
        env = envelope(data)
    except NhtsaParseError as exc:
        raise SourceError(f"nhtsa: unexpected response from {request_url}: {exc}") from None
    return request_url, env.results, False


def get_results(client: HttpClient, url: str, params: dict[str, Any]) -> tuple[str, list[Any]]:
    """GET an NHTSA listing: (request URL, results); see :func:`get_answer`."""
    request_url, results, _ = get_answer(client, url, params)
    return request_url, results


def fetch_page(client: HttpClient, api: str, route: str, entry: NhtsaEntry, year: int) -> Page:
    path, _ = ROUTES[route]
    params: dict[str, Any] = {"make": entry.make, "model": entry.model, "modelYear": year}
    if route == "vehicles":
        params["issueType"] = "m"
    url, results, empty_400 = get_answer(client, api + path, params)
    return Page(year, url, results, empty_400)


def model_years_held(body: bytes) -> set[int] | None:
    """The model years a stored document was seen under (its ``modelYears``); None when the
    body does not say (then it may belong to any year)."""
    try:
        years = orjson.loads(body).get("modelYears")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(years, list) or not all(isinstance(y, int) for y in years):
        return None
    return set(years)


def emptied_years(scope: str, pages: list[Page], known: dict[str, bytes]) -> list[tuple[Page, int]]:
    """The years answered 400 with a zero count for which the warehouse holds live documents
    of ``scope``, each with how many. NHTSA gives that answer for an unrecognised make or
    model too, so such a year is no evidence that its records are gone."""
    empty = [page for page in pages if page.empty_400]
    if not empty or not known:
        return []
    held = [model_years_held(body) for body in known.values()]
    found = []
    for page in sorted(empty, key=lambda p: p.year):
        count = sum(1 for years in held if years is None or page.year in years)
        if count:
            found.append((page, count))
    return found


def _variant(year: int, vehicle: dict[str, Any]) -> dict[str, Any]:
    described: dict[str, Any] = {"modelYear": year}
    for name in ("vehicleId", "trim", "series"):
        if name in vehicle:
            described[name] = vehicle[name]
    return described


def collect(kind: str, pages: list[Page]) -> list[Seen]:
    """De-duplicate records across model years (and variants): the first occurrence in year
    order is kept verbatim, with every year and variant it appeared under."""
    seen: dict[str, Seen] = {}

    def add(record: dict[str, Any], page: Page, variant: dict[str, Any] | None) -> None:
        try:
            key = record_key(kind, record)
        except NhtsaParseError as exc:
            raise SourceError(f"nhtsa: {page.url}: {exc}") from None
        item = seen.setdefault(key, Seen(key, record, page.url))
        item.years.add(page.year)
        if variant is not None:
            item.variants[(page.year, orjson.dumps(variant).decode())] = variant

    for page in sorted(pages, key=lambda p: p.year):
        if kind in ("recalls", "complaints"):
            for record in page.results:
                add(record, page, None)
            continue
        for index, vehicle in enumerate(page.results):
            for record in vehicle_issues(kind, vehicle, index, page.url):
                add(record, page, _variant(page.year, vehicle))
    return list(seen.values())


def vehicle_issues(kind: str, vehicle: Any, index: int, url: str) -> list[dict[str, Any]]:
    """The records of ``kind`` under one ``byYmmt`` vehicle's ``safetyIssues``; a body of
    another shape is a :class:`NhtsaParseError` that says what was wrong and where."""
    key = SAFETY_ISSUE_KEY[kind]
    where = f"results[{index}]"
    if not isinstance(vehicle, dict):
        raise NhtsaParseError(
            f"nhtsa: {url}: {where} is a {type(vehicle).__name__}, not a vehicle object"
        )
    issues = vehicle.get("safetyIssues")
    if issues is None:
        return []
    if not isinstance(issues, dict):
        raise NhtsaParseError(
            f"nhtsa: {url}: {where}.safetyIssues is a {type(issues).__name__}, not an object"
        )
    records = issues.get(key)
    if records is None:
        return []
    if not isinstance(records, list):
        raise NhtsaParseError(
            f"nhtsa: {url}: {where}.safetyIssues.{key} is a {type(records).__name__}, not a list"
        )
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            raise NhtsaParseError(
                f"nhtsa: {url}: {where}.safetyIssues.{key}[{number}] is a "
                f"{type(record).__name__}, not a record object"
            )
    return records


def belongs(item: Seen, wanted: RecordFilter) -> bool:
    return wanted.matches(components_of(item.record), texts_of(item.record))


def resolve_documents(client: HttpClient, api: str, kind: str, item: Seen) -> None:
    """Resolve a record's ``associatedDocuments`` URL to its list of PDF documents.

    The URL upstream names api.nhtsa.gov; its query is re-asked of the configured base URL
    so mirrors and fakes work and no other host is contacted."""
    value = item.record.get("associatedDocuments")
    if not isinstance(value, str) or not value.startswith(("http://", "https://", "/")):
        return
    query = dict(parse_qsl(urlsplit(value).query))
    issue_key = query.get("filterValue") or SAFETY_ISSUE_KEY[kind]
    params = {
        "nhtsaId": query.get("nhtsaId") or item.key,
        "filter": query.get("filter") or "issueType",
        "filterValue": issue_key,
    }
    url, results = get_results(client, api + SAFETY_ISSUES_ROUTE, params)
    item.documents = documents_of(kind, item.key, params["nhtsaId"], issue_key, results, url)


def _same_id(issue: dict[str, Any], kind: str, key: str, asked: str) -> bool:
    """Whether a ``byNhtsaId`` record is the one asked for: its ``nhtsaIdNumber`` is the id
    asked, or its identity (campaign, action number, ...) is the record's own."""
    number = issue.get("nhtsaIdNumber")
    if number is not None and not isinstance(number, bool) and str(number).strip() == asked:
        return True
    try:
        return record_key(kind, issue) == key
    except NhtsaParseError:
        return False


def documents_of(
    kind: str, key: str, asked: str, issue_key: str, results: list[dict[str, Any]], url: str
) -> list[Any]:
    """The ``associatedDocuments`` of the record asked for in a ``byNhtsaId`` answer.

    An answer can hold several records (a bulletin re-sent or revised under another id):
    the one whose ``nhtsaIdNumber`` is the id asked for is taken, never the first blindly.
    No record at all is no documents; records of which none is the one asked for fail."""
    issue_keys = dict.fromkeys((issue_key, SAFETY_ISSUE_KEY[kind]))
    candidates: list[dict[str, Any]] = []
    for index, result in enumerate(results):
        for name in issue_keys:
            issues = result.get(name)
            if issues is None:
                continue
            if not isinstance(issues, list) or not all(isinstance(i, dict) for i in issues):
                raise NhtsaParseError(
                    f"nhtsa: {url}: results[{index}].{name} is not a list of records"
                )
            candidates.extend(issues)
    if not candidates:
        return []
    matching = [issue for issue in candidates if _same_id(issue, kind, key, asked)]
    if not matching:
        ids = ", ".join(str(c.get("nhtsaIdNumber", "?")) for c in candidates)
        raise NhtsaParseError(
            f"nhtsa: {url}: {len(candidates)} records ({ids}), none with nhtsaIdNumber {asked}"
        )
    found = matching[0].get("associatedDocuments")
    if found is None or found == "N/A":
        return []
    if not isinstance(found, list):
        raise NhtsaParseError(f"nhtsa: {url}: associatedDocuments is not a list")
    return found


def stored_body(kind: str, item: Seen) -> bytes:
    body: dict[str, Any] = {"record": item.record, "modelYears": sorted(item.years)}
    if kind in ("investigations", "communications"):
        body["variants"] = [item.variants[k] for k in sorted(item.variants)]
    if item.documents is not None:
        body["associatedDocuments"] = item.documents
    return canonical_json(body)


def to_record(kind: str, item: Seen, source_format: str) -> Record:
    return Record(
        doc_id=doc_id("nhtsa", DOC_KIND[kind], item.key),
        kind=DOC_KIND[kind],
        body=stored_body(kind, item),
        provenance=Provenance(url=item.url, source_format=source_format, fetched_at=now()),
    )


def fetch(entry: NhtsaEntry, ctx: FetchContext) -> Iterable[Listing]:
    """One listing per kind of the entry, fetched with bounded concurrency."""
    api = API.base_url(entry.base_url)
    client = ctx.http.client(
        "nhtsa", [api, STATIC.base_url()], policy=nhtsa_policy(ctx.http.policy)
    )
    wanted = entry.record_filter()
    pool = ThreadPoolExecutor(max_workers=entry.concurrency, thread_name_prefix="nhtsa")
    try:
        pending: dict[str, list[Future[Page]]] = {}
        for kind in entry.kinds:
            route = kind if kind in ROUTES else "vehicles"
            if route not in pending:
                pending[route] = [
                    pool.submit(fetch_page, client, api, route, entry, year)
                    for year in entry.year_range
                ]
        for kind in entry.kinds:
            route = kind if kind in ROUTES else "vehicles"
            pages = [future.result() for future in pending[route]]
            items = [item for item in collect(kind, pages) if belongs(item, wanted)]
            for item in items:
                for problem in date_problems(item.record):
                    ctx.warn(f"{DOC_KIND[kind]} {item.key}: {problem}")
            if route == "vehicles":
                for done in [pool.submit(resolve_documents, client, api, kind, i) for i in items]:
                    done.result()
            source_format = ROUTES[route][1]
            scope = entry.scope(kind)
            complete = kind in COMPLETE_KINDS
            if complete:
                for page, count in emptied_years(scope, pages, ctx.known_in_scope(scope)):
                    complete = False
                    ctx.warn(
                        f"{scope}: {page.url} answered HTTP 400 with a zero count for model "
                        f"year {page.year}, which held {count} stored document(s); NHTSA "
                        "answers an unrecognised make or model the same way, so the listing "
                        "is not taken as complete and nothing in the scope is retired"
                    )
            yield Listing(
                scope=scope,
                records=[to_record(kind, item, source_format) for item in items],
                complete=complete,
                lower_bound=kind in COMPLETE_KINDS and not complete,
                label=f"{label(entry)} {kind}",
            )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# -- curation ------------------------------------------------------------------------------
def _pick(record: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = record.get(key)
        if value is not None and value != "":
            return value
    return None


def _text(record: dict[str, Any], *keys: str) -> str | None:
    value = _pick(record, *keys)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _api_date(record: dict[str, Any], *names: str) -> str | None:
    """A date for curation: parsed with its field's format; placeholders and dates that do
    not parse (reported as warnings at fetch time) are left out."""
    try:
        return known_date(api_date(record, *names))
    except NhtsaParseError:
        return None


def _flat_date(row: dict[str, str], name: str) -> str | None:
    try:
        return known_date(flat_date(row.get(name, "")))
    except NhtsaParseError:
        return None


def _yes(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().upper() in ("Y", "N"):
        return value.strip().upper() == "Y"
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and is_ascii_digits(value.strip()):
        return int(value.strip())
    return None


def _api_facts(kind: str, key: str, r: dict[str, Any]) -> dict[str, Any]:
    """Curated facts of a record from the JSON API (any casing, any route)."""
    if kind == "recall":
        return {
            "campaignNumber": key,
            "manufacturer": _text(r, "Manufacturer", "manufacturer"),
            "make": _text(r, "Make", "make"),
            "model": _text(r, "Model", "model"),
            "reportReceivedDate": _api_date(r, "ReportReceivedDate", "reportReceivedDate"),
            "subject": _text(r, "subject", "Subject"),
            "summary": _text(r, "Summary", "summary"),
            "consequence": _text(r, "Consequence", "consequence"),
            "remedy": _text(r, "Remedy", "correctiveAction"),
            "notes": _text(r, "Notes", "notes"),
            "potentialUnitsAffected": _int(
                _pick(r, "PotentialNumberofUnitsAffected", "potentialNumberOfUnitsAffected")
            ),
            "parkIt": _yes(r.get("parkIt")),
            "parkOutSide": _yes(r.get("parkOutSide")),
            "overTheAirUpdate": _yes(r.get("overTheAirUpdate")),
        }
    if kind == "complaint":
        return {
            "odiNumber": key,
            "manufacturer": _text(r, "manufacturer"),
            "dateOfIncident": _api_date(r, "dateOfIncident"),
            "dateFiled": _api_date(r, "dateComplaintFiled", "dateFiled"),
            "crash": _yes(r.get("crash")),
            "fire": _yes(r.get("fire")),
            "injuries": _int(r.get("numberOfInjuries")),
            "deaths": _int(r.get("numberOfDeaths")),
            "summary": _text(r, "summary", "description"),
        }
    if kind == "investigation":
        recalls = r.get("recalls")
        campaigns = {
            x["nhtsaCampaignNumber"]
            for x in (recalls if isinstance(recalls, list) else [])
            if isinstance(x, dict) and x.get("nhtsaCampaignNumber")
        }
        return {
            "actionNumber": display_action_number(key),
            "investigationType": _text(r, "type") or investigation_type(key),
            "subject": _text(r, "subject"),
            "summary": _text(r, "summary"),
            "dateOpened": _api_date(r, "dateOpened"),
            "dateClosed": _api_date(r, "dateClosed"),
            "status": "closed" if r.get("dateClosed") else "open",
            "recalls": sorted(campaigns),
        }
    return {
        "nhtsaId": key,
        "manufacturerCommunicationNumber": _text(r, "manufacturerCommunicationNumber"),
        "subject": _text(r, "subject"),
        "summary": _text(r, "summary"),
        "communicationDate": _api_date(r, "communicationDate"),
    }


def _distinct(rows: list[dict[str, str]], name: str) -> list[str]:
    return sorted({r[name].strip() for r in rows if r.get(name, "").strip()})


def _flat_facts(kind: str, key: str, rows: list[dict[str, str]]) -> dict[str, Any]:
    """Curated facts of a flat-file document (its rows, first row for the shared fields)."""
    r = rows[0]

    def date(name: str) -> str | None:
        return _flat_date(r, name)

    if kind == "recall":
        return {
            "campaignNumber": key,
            "manufacturer": _text(r, "MFGNAME"),
            "make": _text(r, "MAKETXT"),
            "model": _text(r, "MODELTXT"),
            "reportReceivedDate": date("RCDATE"),
            "summary": _text(r, "DESC_DEFECT"),
            "consequence": _text(r, "CONEQUENCE_DEFECT"),
            "remedy": _text(r, "CORRECTIVE_ACTION"),
            "notes": _text(r, "NOTES"),
            "potentialUnitsAffected": _int(r.get("POTAFF")),
        }
    if kind == "complaint":
        return {
            "odiNumber": key,
            "manufacturer": _text(r, "MFR_NAME"),
            "make": _text(r, "MAKETXT"),
            "model": _text(r, "MODELTXT"),
            "dateOfIncident": date("FAILDATE"),
            "dateFiled": date("LDATE"),
            "crash": _yes(r.get("CRASH")),
            "fire": _yes(r.get("FIRE")),
            "injuries": _int(r.get("INJURED")),
            "deaths": _int(r.get("DEATHS")),
            "summary": _text(r, "CDESCR"),
        }
    if kind == "investigation":
        return {
            "actionNumber": display_action_number(key),
            "investigationType": investigation_type(key),
            "manufacturer": _text(r, "MFR_NAME"),
            "subject": _text(r, "SUBJECT"),
            "summary": _text(r, "SUMMARY"),
            "dateOpened": date("ODATE"),
            "dateClosed": date("CDATE"),
            "status": "closed" if r.get("CDATE", "").strip() else "open",
            "recalls": _distinct(rows, "CAMPNO"),
        }
    return {
        "nhtsaId": key,
        "manufacturerCommunicationNumber": _text(r, "tsbID", "BULNO"),
        "summary": _text(r, "summary", "SUMMARY"),
        "communicationDate": date("manufacturerDate") or date("BULDTE"),
        "dateReceived": date("nhtsaDate") or date("DATEA"),
    }


def _pdf_urls(body: dict[str, Any]) -> list[str]:
    documents = body.get("associatedDocuments")
    if documents is None:
        documents = body.get("record", {}).get("associatedDocuments")
    if not isinstance(documents, list):
        return []
    return [d["url"] for d in documents if isinstance(d, dict) and isinstance(d.get("url"), str)]


def entry_for(
    doc: CurationInput, entries: list[NhtsaEntry], make: str | None, model: str | None
) -> NhtsaEntry | None:
    """The manifest entry a document came from: by scope, else by make and model."""
    for entry in entries:
        if any(doc.scope == entry.scope(kind) for kind in entry.kinds):
            return entry
    vehicle = f"{(make or '').strip().upper()}/{(model or '').strip().upper()}"
    return next((e for e in entries if e.vehicle == vehicle), None)


def curate(doc: CurationInput, entries: list[NhtsaEntry]) -> Curated:
    """A ``safetyRecord``: the record's key facts, dates in ISO form, its components, the
    model years it appeared under, its PDF URLs, and the entry's curation metadata."""
    body = orjson.loads(doc.body)
    source_format = str(doc.provenance.get("source_format") or "")
    key = doc.doc_id.split("/", 2)[2]
    if "rows" in body:
        rows = body["rows"]
        facts = _flat_facts(doc.kind, key, rows)
        components = sorted({c for row in rows for c in components_of(row)})
    else:
        facts = _api_facts(doc.kind, key, body["record"])
        components = components_of(body["record"])
    entry = entry_for(doc, entries, facts.get("make"), facts.get("model"))
    fields: dict[str, Any] = {
        "recordType": doc.kind,
        **{k: v for k, v in facts.items() if v is not None and v != []},
        "components": components,
        "modelYears": body.get("modelYears", []),
        "pdfUrls": _pdf_urls(body),
        "sourceFormat": source_format,
    }
    if entry is not None:
        fields["make"] = fields.get("make") or entry.make
        fields["model"] = fields.get("model") or entry.model
        if entry.authority_domains:
            fields["authorityDomains"] = list(entry.authority_domains)
        if entry.authority_rank is not None:
            fields["authorityRank"] = entry.authority_rank
        if entry.license:
            fields["license"] = entry.license
    return Curated(type="safetyRecord", fields=fields)


SOURCE = Source(
    name="nhtsa",
    entry_model=NhtsaEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(API, STATIC),
)

__all__ = ["API", "SOURCE", "STATIC", "NhtsaEntry", "curate", "fetch"]

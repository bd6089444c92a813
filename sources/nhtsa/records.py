"""NHTSA records collected across model years and variants into documents, and the stored
(canonical) body of each: ``{"record": ..., "modelYears": [...], "variants": [...],
"associatedDocuments": [...]}``.

A complaint filed before about December 2002 is listed by ``complaintsByVehicle`` once per
component: several records share its ``odiNumber``, each with its own ``components`` and
``summary`` (reference §6, NHTSA). Every one of them is kept: the document's body holds
them all, ``{"records": [...], "modelYears": [...]}``, sorted by their canonical bytes so
that an answer listing them in another order stores the same bytes. A complaint with one
record keeps the ``{"record": ...}`` body it always had."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from sources.nhtsa.api import Page
from sources.nhtsa.parse import (
    DOC_KIND,
    SAFETY_ISSUE_KEY,
    RecordFilter,
    components_of,
    record_key,
    texts_of,
)
from warehouse.canonical import canonical_json
from warehouse.clock import now
from warehouse.errors import NhtsaParseError, SourceError
from warehouse.ids import doc_id
from warehouse.records import Provenance, Record, json_body


@dataclass
class Seen:
    """A record collected across model years and variants."""

    key: str
    record: dict[str, Any]
    url: str
    years: set[int] = field(default_factory=set)
    variants: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    documents: list[Any] | None = None
    # Every distinct record listed under the key (by components and text), first seen first.
    parts: dict[bytes, dict[str, Any]] = field(default_factory=dict)

    @property
    def records(self) -> list[dict[str, Any]]:
        """The records of the document in their stored order: one, or (a complaint listed
        once per component) several, sorted by their canonical bytes."""
        if len(self.parts) <= 1:
            return [self.record]
        return sorted(self.parts.values(), key=canonical_json)


def part_of(record: dict[str, Any]) -> bytes:
    """What tells one per-component record of a complaint from another: its components and
    its texts (the same record seen under another model year is not another part)."""
    return canonical_json([components_of(record), texts_of(record)])


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
    order is kept verbatim, with every year and variant it appeared under; a complaint's
    other per-component records under the same ODI number are kept beside it."""
    seen: dict[str, Seen] = {}

    def add(record: dict[str, Any], page: Page, variant: dict[str, Any] | None) -> None:
        try:
            key = record_key(kind, record)
        except NhtsaParseError as exc:
            raise SourceError(f"nhtsa: {page.url}: {exc}") from None
        item = seen.setdefault(key, Seen(key, record, page.url))
        if kind == "complaints":
            item.parts.setdefault(part_of(record), record)
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
    """Whether any record of the item (any component's, for a complaint listed once per
    component) passes the entry's filters."""
    records = item.records
    return wanted.matches(
        [c for r in records for c in components_of(r)], [t for r in records for t in texts_of(r)]
    )


def stored_value(kind: str, item: Seen) -> dict[str, Any]:
    """The JSON record the item is stored as."""
    records = item.records
    body: dict[str, Any] = {"record": records[0]} if len(records) == 1 else {"records": records}
    body["modelYears"] = sorted(item.years)
    if kind in ("investigations", "communications"):
        body["variants"] = [item.variants[k] for k in sorted(item.variants)]
    if item.documents is not None:
        body["associatedDocuments"] = item.documents
    return body


def to_record(kind: str, item: Seen, source_format: str) -> Record:
    return Record(
        doc_id=doc_id("nhtsa", DOC_KIND[kind], item.key),
        kind=DOC_KIND[kind],
        **json_body(stored_value(kind, item)),
        provenance=Provenance(url=item.url, source_format=source_format, fetched_at=now()),
    )

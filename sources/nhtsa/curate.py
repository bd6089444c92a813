"""NHTSA curation: a stored document (API record or flat-file rows) -> a ``safetyRecord``."""

from __future__ import annotations

from typing import Any

import orjson

from sources.base import Curated, CurationInput
from sources.digits import is_ascii_digits
from sources.nhtsa.aliases import spellings, value_of
from sources.nhtsa.entry import NhtsaEntry
from sources.nhtsa.parse import (
    api_date,
    components_of,
    display_action_number,
    flat_date,
    investigation_type,
    known_date,
)
from warehouse.errors import NhtsaParseError


def _pick(record: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = record.get(key)
        if value is not None and value != "":
            return value
    return None


def _text(record: dict[str, Any], *keys: str) -> str | None:
    value = _pick(record, *keys)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _field(record: dict[str, Any], field: str) -> str | None:
    """A text field read under every spelling NHTSA has used for it (``aliases``)."""
    value = value_of(record, field)
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
            "manufacturer": _field(r, "manufacturer"),
            "make": _field(r, "make"),
            "model": _field(r, "model"),
            "reportReceivedDate": _api_date(r, *spellings("reportReceivedDate")),
            "subject": _field(r, "subject"),
            "summary": _field(r, "summary"),
            "consequence": _field(r, "consequence"),
            "remedy": _field(r, "remedy"),
            "notes": _field(r, "notes"),
            "potentialUnitsAffected": _int(value_of(r, "potentialUnitsAffected")),
            "parkIt": _yes(r.get("parkIt")),
            "parkOutSide": _yes(r.get("parkOutSide")),
            "overTheAirUpdate": _yes(r.get("overTheAirUpdate")),
        }
    if kind == "complaint":
        return {
            "odiNumber": key,
            "manufacturer": _text(r, "manufacturer"),
            "dateOfIncident": _api_date(r, "dateOfIncident"),
            "dateFiled": _api_date(r, *spellings("dateFiled")),
            "crash": _yes(r.get("crash")),
            "fire": _yes(r.get("fire")),
            "injuries": _int(r.get("numberOfInjuries")),
            "deaths": _int(r.get("numberOfDeaths")),
            "summary": _field(r, "complaintSummary"),
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
    elif "records" in body:
        # A complaint listed once per component (filed before about December 2002): the
        # facts of the first record in the stored order, the components of them all, as
        # the flat file's rows give for the same complaint.
        records = body["records"]
        facts = _api_facts(doc.kind, key, records[0])
        components = sorted({c for record in records for c in components_of(record)})
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

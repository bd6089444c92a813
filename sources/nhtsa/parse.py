"""Pure parsing of NHTSA data: envelopes, per-field dates, model years, identities, filters.

Nothing here does I/O, so every quirk of the upstream (reference §2) is testable on plain
values:

- envelopes differ in casing between endpoints (``Count``/``results`` for recalls,
  ``count``/``results`` for complaints, ``Count``/``Results`` for vPIC, ``meta``/``results``
  for the vehicle family) and are read alike;
- dates are parsed field by field, each with its own format: recall ``ReportReceivedDate``
  is DD/MM/YYYY, complaint dates are MM/DD/YYYY, the vehicle family is ISO-8601 and the
  flat files are YYYYMMDD;
- ``9999`` is not a model year (equipment, tyres, unknown);
- the same ODI number is ``odiNumber`` in complaintsByVehicle, ``nhtsaIdNumber`` in the
  vehicle family and ``ODINO`` in FLAT_CMPL, and is one identity.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sources.digits import is_ascii_digits
from sources.nhtsa.aliases import spellings
from warehouse.errors import NhtsaParseError

KINDS = ("recalls", "complaints", "investigations", "communications")
DOC_KIND = {
    "recalls": "recall",
    "complaints": "complaint",
    "investigations": "investigation",
    "communications": "communication",
}
# The key of each kind inside a vehicle's ``safetyIssues`` (the vehicle family of routes).
SAFETY_ISSUE_KEY = {
    "recalls": "recalls",
    "complaints": "complaints",
    "investigations": "investigations",
    "communications": "manufacturerCommunications",
}
UNKNOWN_MODEL_YEAR = 9999


@dataclass(frozen=True)
class Envelope:
    count: int | None
    message: str | None
    results: list[dict[str, Any]]


def _first_present(data: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in data:
            return data[key]
    return None


def envelope(data: Any) -> Envelope:
    """Read any of NHTSA's envelopes; refuse a body that is not one."""
    if not isinstance(data, dict):
        raise NhtsaParseError(f"expected a JSON object envelope, got {type(data).__name__}")
    results = _first_present(data, "results", "Results")
    if results is None:
        raise NhtsaParseError(
            f"no 'results' in the envelope (keys: {', '.join(sorted(data)) or 'none'})"
        )
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise NhtsaParseError("'results' is not a list of objects")
    count = _first_present(data, "count", "Count")
    meta = data.get("meta")
    if count is None and isinstance(meta, dict) and isinstance(meta.get("pagination"), dict):
        count = meta["pagination"].get("total")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise NhtsaParseError(f"envelope count {count!r} is not an integer")
    message = _first_present(data, "message", "Message")
    return Envelope(count, message if isinstance(message, str) else None, results)


def is_empty_result(data: Any) -> bool:
    """True for the well-formed "no records" body NHTSA may send with HTTP 400."""
    try:
        env = envelope(data)
    except NhtsaParseError:
        return False
    return env.count == 0 and not env.results


# -- dates ---------------------------------------------------------------------------------
_SLASH_DATE = re.compile(r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})\Z")
_ISO_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ].*)?\Z")


def _iso(year: int, month: int, day: int, raw: str, what: str) -> str:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        raise NhtsaParseError(f"{raw!r} is not a valid {what} date") from None


def _parse_slash_or_iso(value: Any, order: str) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    iso = _ISO_DATE.match(text)
    if iso:
        return _iso(int(iso[1]), int(iso[2]), int(iso[3]), text, "ISO-8601")
    slash = _SLASH_DATE.match(text)
    if not slash:
        raise NhtsaParseError(f"{text!r} is not a {order} date")
    first, second, year = int(slash[1]), int(slash[2]), int(slash[3])
    if order == "DD/MM/YYYY":
        return _iso(year, second, first, text, order)
    return _iso(year, first, second, text, order)


def recall_date(value: Any) -> str | None:
    """A recall date (``ReportReceivedDate``): DD/MM/YYYY, or ISO-8601."""
    return _parse_slash_or_iso(value, "DD/MM/YYYY")


def complaint_date(value: Any) -> str | None:
    """A complaint date (``dateOfIncident``, ``dateComplaintFiled``): MM/DD/YYYY, or ISO."""
    return _parse_slash_or_iso(value, "MM/DD/YYYY")


def iso_date(value: Any) -> str | None:
    """A date of the vehicle family of routes: an ISO-8601 date or datetime."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    iso = _ISO_DATE.match(text)
    if not iso:
        raise NhtsaParseError(f"{text!r} is not an ISO-8601 date")
    if "T" in text or " " in text:
        try:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise NhtsaParseError(f"{text!r} is not an ISO-8601 datetime") from None
    return _iso(int(iso[1]), int(iso[2]), int(iso[3]), text, "ISO-8601")


def flat_date(value: str) -> str | None:
    """A flat-file date: YYYYMMDD; blank (or all zeros) is no date."""
    text = value.strip()
    if not text or text == "00000000":
        return None
    if len(text) != 8 or not is_ascii_digits(text):
        raise NhtsaParseError(f"{text!r} is not a YYYYMMDD date")
    return _iso(int(text[:4]), int(text[4:6]), int(text[6:]), text, "YYYYMMDD")


def is_placeholder_date(iso: str | None) -> bool:
    """Placeholder dates NHTSA stores for "unknown": 1901 or earlier, and 1969-12-31."""
    return iso is not None and (iso[:4] <= "1901" or iso == "1969-12-31")


def known_date(iso: str | None) -> str | None:
    """The date, or None for a placeholder."""
    return None if is_placeholder_date(iso) else iso


# -- model years ---------------------------------------------------------------------------
def model_year(value: Any) -> int | None:
    """A model year, or None for blank and ``9999`` (equipment, tyres, unknown)."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not text:
        return None
    if not is_ascii_digits(text) or len(text) != 4:
        raise NhtsaParseError(f"{text!r} is not a model year")
    year = int(text)
    return None if year == UNKNOWN_MODEL_YEAR else year


# -- identities ----------------------------------------------------------------------------
_KEY_FIELDS: dict[str, tuple[str, ...]] = {
    "recalls": ("NHTSACampaignNumber", "nhtsaCampaignNumber", "CAMPNO"),
    "complaints": ("odiNumber", "nhtsaIdNumber", "ODINO"),
    "investigations": ("nhtsaActionNumber", "NHTSA ACTION NUMBER", "ACTION_NUMBER"),
    "communications": ("nhtsaIdNumber", "nhtsaID", "ID"),
}
_NUMERIC_KINDS = frozenset({"complaints", "communications"})
_CAMPAIGN = re.compile(r"^[0-9]{2}[A-Z][0-9]{6}\Z")
_ACTION = re.compile(r"^([A-Z]{2})-?([0-9]{2})-?([0-9]{3})\Z")
_SAFE_KEY = re.compile(r"^[A-Za-z0-9-]{1,40}\Z")


# Identities a bulk reader may take as they stand: a value that fully matches the pattern
# is its own key (through an integer when numeric, as str(int(...)) drops leading zeros);
# any other value is judged by :func:`record_key`. A property test holds the two equal.
PLAIN_KEYS: dict[str, tuple[str, bool]] = {
    "complaints": ("[0-9]{1,18}", True),
    "communications": ("[0-9]{1,18}", True),
    "recalls": ("[A-Z0-9-]{1,40}", False),
    "investigations": ("[A-Z]{2}[0-9]{5}", False),
}


def action_number(value: str) -> str:
    """An investigation action number in the flat-file form: ``EA24-002`` → ``EA24002``."""
    if not value.isascii():  # upper-casing would fold some letters into ASCII: ß → SS
        raise NhtsaParseError(f"{value!r} is not an investigation action number")
    text = value.strip().upper()
    match = _ACTION.match(text)
    if not match:
        if _SAFE_KEY.match(text):
            return text
        raise NhtsaParseError(f"{value!r} is not an investigation action number")
    return f"{match[1]}{match[2]}{match[3]}"


def display_action_number(key: str) -> str:
    """``EA24002`` → ``EA24-002``, as NHTSA writes it; other shapes unchanged."""
    match = _ACTION.match(key)
    return f"{match[1]}{match[2]}-{match[3]}" if match else key


def investigation_type(key: str) -> str | None:
    """The two-letter prefix of an action number: PE, EA, DP, RQ, AQ, ..."""
    match = _ACTION.match(key)
    return match[1] if match else None


def record_key(kind: str, record: Mapping[str, Any]) -> str:
    """The upstream identity of a record of ``kind`` (``recalls``, ``complaints``, ...).

    Complaints and communications are numbers (an int, or a numeric string); recall campaigns
    are upper-cased; investigation action numbers lose their dash.
    """
    raw = _first_present(record, *_KEY_FIELDS[kind])
    if raw is None or isinstance(raw, bool) or not str(raw).strip():
        raise NhtsaParseError(
            f"{DOC_KIND[kind]} without an identity (looked for {', '.join(_KEY_FIELDS[kind])})"
        )
    text = str(raw).strip()
    if kind in _NUMERIC_KINDS:
        if isinstance(raw, float) or not is_ascii_digits(text):
            raise NhtsaParseError(f"{DOC_KIND[kind]} identity {raw!r} is not a number")
        return str(int(text))
    if kind == "investigations":
        return action_number(text)
    key = text.upper()
    if not text.isascii() or not (_CAMPAIGN.match(key) or _SAFE_KEY.match(key)):
        raise NhtsaParseError(f"recall campaign number {raw!r} has an unexpected shape")
    return key


# -- components and texts ------------------------------------------------------------------
_COMPONENT_SEPARATOR = re.compile(r",(?! )")


def components_of(record: Mapping[str, Any]) -> list[str]:
    """Component names of a record in any shape: a comma-separated ``components`` string
    (complaints), a ``Component`` string (recalls), a list of ``{name}`` objects (vehicle
    family), or a flat-file ``COMPDESC``/``COMPNAME``/``component`` field.

    complaintsByVehicle joins names with a bare comma (``"ELECTRICAL SYSTEM,ENGINE"``,
    reference §2.2), while a name of NHTSA's component list may itself hold a comma and a
    space (``SERVICE BRAKES, HYDRAULIC``, ``FUEL SYSTEM, GASOLINE``, as FLAT_CMPL's
    ``COMPDESC`` and recalls' ``Component`` write them): only a comma not followed by a
    space separates two names."""
    found: list[str] = []
    value = _first_present(record, "components", "Component", "COMPDESC", "COMPNAME", "component")
    if isinstance(value, str):
        parts = _COMPONENT_SEPARATOR.split(value) if "components" in record else [value]
        found = [p.strip() for p in parts if p.strip()]
    elif isinstance(value, list):
        for item in value:
            name = item.get("name") if isinstance(item, dict) else item
            if isinstance(name, str) and name.strip():
                found.append(name.strip())
    return found


# The narrative fields: every spelling the JSON routes have used (``aliases``), then the
# flat files' names (whose ``CONEQUENCE_DEFECT`` is NHTSA's own misspelling).
TEXT_FIELDS = (
    *spellings("subject", "summary", "complaintSummary", "consequence", "remedy", "notes"),
    "CDESCR",
    "DESC_DEFECT",
    "CONEQUENCE_DEFECT",
    "CORRECTIVE_ACTION",
    "NOTES",
    "SUBJECT",
    "SUMMARY",
)


def texts_of(record: Mapping[str, Any]) -> list[str]:
    """The narrative texts of a record (summary, description, consequence, remedy, ...)."""
    return [v for k in TEXT_FIELDS if isinstance(v := record.get(k), str) and v.strip()]


@dataclass(frozen=True)
class RecordFilter:
    """Corpus membership: with no filter every record belongs; otherwise a record belongs
    when one of its components contains one of ``components`` (case-insensitive) or one of
    its texts matches ``text``."""

    components: tuple[str, ...] = ()
    text: re.Pattern[str] | None = None

    @property
    def active(self) -> bool:
        return bool(self.components) or self.text is not None

    def matches(self, components: Iterable[str], texts: Iterable[str]) -> bool:
        if not self.active:
            return True
        wanted = [c.upper() for c in self.components]
        if any(w in c.upper() for c in components for w in wanted):
            return True
        return self.text is not None and any(self.text.search(t) for t in texts)


# Each date field of the JSON routes and its own format (ISO-8601 is accepted by all).
API_DATE_PARSERS = {
    "ReportReceivedDate": recall_date,
    "reportReceivedDate": recall_date,
    "dateOfIncident": complaint_date,
    "dateComplaintFiled": complaint_date,
    "dateFiled": complaint_date,
    "dateOpened": iso_date,
    "dateClosed": iso_date,
    "communicationDate": iso_date,
}


def api_date(record: Mapping[str, Any], *names: str) -> str | None:
    """The first present date field of ``names``, parsed with that field's own format."""
    for name in names:
        value = record.get(name)
        if value is not None and str(value).strip():
            return API_DATE_PARSERS[name](value)
    return None


def date_problems(record: Mapping[str, Any]) -> list[str]:
    """Why any date field of an API record cannot be parsed with its own format."""
    problems = []
    for name, parse in API_DATE_PARSERS.items():
        if name in record:
            try:
                parse(record[name])
            except NhtsaParseError as exc:
                problems.append(f"{name}: {exc}")
    return problems

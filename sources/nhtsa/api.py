"""NHTSA's API: its hosts and routes, the requests for one model year, the answers' checks.

A 400 whose body says zero records is an empty result; HTML, empty or malformed bodies and
other statuses fail the entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from sources.http import Endpoint, HttpClient, parse_json
from sources.nhtsa.entry import NhtsaEntry
from sources.nhtsa.parse import SAFETY_ISSUE_KEY, envelope, is_empty_result, record_key
from warehouse.errors import NhtsaParseError, SourceError

# The API (records; an entry's ``base_url`` may name another) and the static host (PDFs of
# manufacturer communications, the flat files of ``receipts backfill nhtsa``).
API = Endpoint("nhtsa", "https://api.nhtsa.gov", "RECEIPTS_NHTSA_URL")
STATIC = Endpoint("nhtsa_static", "https://static.nhtsa.gov", "RECEIPTS_NHTSA_STATIC_URL")

ROUTES = {
    "recalls": ("/recalls/recallsByVehicle", "api:recallsByVehicle"),
    "complaints": ("/complaints/complaintsByVehicle", "api:complaintsByVehicle"),
    "vehicles": ("/vehicles/byYmmt", "api:byYmmt"),
}
SAFETY_ISSUES_ROUTE = "/safetyIssues/byNhtsaId"


@dataclass(frozen=True)
class Page:
    """One answered request: its URL and its results (records, or vehicle variants).

    ``empty_400``: answered HTTP 400 with a zero count, NHTSA's answer both for a vehicle
    year without records and for a make or model it does not recognise. ``count``: the
    envelope's ``Count``/``count`` (``meta.pagination.total`` for the vehicle family), None
    when the answer carries none."""

    year: int
    url: str
    results: list[dict[str, Any]]
    empty_400: bool = False
    count: int | None = None

    @property
    def count_disagrees(self) -> bool:
        """Whether the answer's count is not the number of results it holds."""
        return self.count is not None and self.count != len(self.results)


@dataclass(frozen=True)
class Answer:
    """An answered listing: its request URL, results, envelope count, and whether it was a
    zero-count 400."""

    url: str
    results: list[Any]
    count: int | None
    empty_400: bool


def get_answer(client: HttpClient, url: str, params: dict[str, Any]) -> Answer:
    """GET an NHTSA listing. A 400 whose body says zero records is an empty result; HTML,
    empty or malformed bodies and other statuses fail the entry."""
    response = client.get(url, params=params, ok=(200, 400))
    data = parse_json(response)
    request_url = str(response.request.url)
    if response.status_code == 400:
        if is_empty_result(data):
            return Answer(request_url, [], 0, True)
        raise SourceError(f"nhtsa: HTTP 400 for {request_url}")
    try:
        env = envelope(data)
    except NhtsaParseError as exc:
        raise SourceError(f"nhtsa: unexpected response from {request_url}: {exc}") from None
    return Answer(request_url, env.results, env.count, False)


def get_results(client: HttpClient, url: str, params: dict[str, Any]) -> tuple[str, list[Any]]:
    """GET an NHTSA listing: (request URL, results); see :func:`get_answer`."""
    answer = get_answer(client, url, params)
    return answer.url, answer.results


def fetch_page(client: HttpClient, api: str, route: str, entry: NhtsaEntry, year: int) -> Page:
    path, _ = ROUTES[route]
    params: dict[str, Any] = {"make": entry.make, "model": entry.model, "modelYear": year}
    if route == "vehicles":
        params["issueType"] = "m"
    answer = get_answer(client, api + path, params)
    return Page(year, answer.url, answer.results, answer.empty_400, answer.count)


def associated_documents(
    client: HttpClient, api: str, kind: str, key: str, link: Any
) -> list[Any] | None:
    """The PDF documents behind a record's ``associatedDocuments`` URL; None when the
    record names no such URL.

    The URL upstream names api.nhtsa.gov; its query is re-asked of the configured base URL
    so mirrors and fakes work and no other host is contacted."""
    if not isinstance(link, str) or not link.startswith(("http://", "https://", "/")):
        return None
    query = dict(parse_qsl(urlsplit(link).query))
    issue_key = query.get("filterValue") or SAFETY_ISSUE_KEY[kind]
    params = {
        "nhtsaId": query.get("nhtsaId") or key,
        "filter": query.get("filter") or "issueType",
        "filterValue": issue_key,
    }
    url, results = get_results(client, api + SAFETY_ISSUES_ROUTE, params)
    return documents_of(kind, key, params["nhtsaId"], issue_key, results, url)


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

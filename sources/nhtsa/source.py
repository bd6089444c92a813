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

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from sources.base import FetchContext, Source
from sources.http import HttpClient
from sources.nhtsa.aliases import lookalike_keys
from sources.nhtsa.api import API, ROUTES, STATIC, Page, associated_documents, fetch_page
from sources.nhtsa.curate import curate
from sources.nhtsa.entry import NhtsaEntry
from sources.nhtsa.parse import DOC_KIND, date_problems
from sources.nhtsa.products import ISSUE_TYPE, unknown_vehicle
from sources.nhtsa.records import Seen, belongs, collect, emptied_years, to_record
from sources.nhtsa.retries import nhtsa_policy
from warehouse.errors import SourceError, TerminalHttpError
from warehouse.records import Listing

COMPLETE_KINDS = frozenset({"recalls", "complaints"})


def label(entry: NhtsaEntry) -> str:
    return f"{entry.make} {entry.model} {entry.years[0]}–{entry.years[1]}"


def resolve_documents(client: HttpClient, api: str, kind: str, item: Seen) -> None:
    """Resolve a record's ``associatedDocuments`` URL to its list of PDF documents."""
    link = item.record.get("associatedDocuments")
    item.documents = associated_documents(client, api, kind, item.key, link)


def route_of(kind: str) -> str:
    return kind if kind in ROUTES else "vehicles"


def check_known_vehicle(
    entry: NhtsaEntry, ctx: FetchContext, client: HttpClient, api: str, pages: list[Page]
) -> None:
    """Fail a first run whose every model year answered with a zero count when NHTSA's own
    lists of makes and models do not hold the entry's (a typo: ``CRV`` for ``CR-V``),
    naming the closest names they do hold."""
    if any(page.results or page.count for page in pages):
        return
    if any(ctx.known_in_scope(entry.scope(kind)) for kind in entry.kinds):
        return  # the warehouse holds records of the vehicle: not a first run
    issue_type = ISSUE_TYPE["complaints" if "complaints" in entry.kinds else "recalls"]
    year = entry.years[1]
    try:
        unknown = unknown_vehicle(client, api, entry.make, entry.model, year, issue_type)
    except (SourceError, TerminalHttpError) as exc:  # a transient error stays transient
        raise SourceError(
            f"nhtsa: every model year of {label(entry)} answered with a zero count, and "
            f"NHTSA's lists of makes and models could not be read to tell a vehicle without "
            f"records from a name NHTSA does not know: {exc}"
        ) from None
    if unknown is not None:
        raise SourceError(
            f"nhtsa: every model year of {label(entry)} answered with a zero count, and "
            f"{unknown.describe()}"
        )


def warn_lookalike_keys(ctx: FetchContext, kind: str, items: list[Seen]) -> None:
    """One warning per key that is no known spelling of a field but looks like one."""
    found: dict[tuple[str, str], list[str]] = {}
    for item in items:
        for record in item.records:
            for key, known in lookalike_keys(record):
                found.setdefault((key, known), []).append(item.key)
    for (key, known), keys in sorted(found.items()):
        ctx.warn(
            f"{DOC_KIND[kind]} {keys[0]}"
            + (f" (and {len(keys) - 1} more)" if len(keys) > 1 else "")
            + f": unknown key {key!r} looks like {known!r}, which it is not read as; kept "
            "verbatim"
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
            route = route_of(kind)
            if route not in pending:
                pending[route] = [
                    pool.submit(fetch_page, client, api, route, entry, year)
                    for year in entry.year_range
                ]
        answered = {route: [f.result() for f in futures] for route, futures in pending.items()}
        check_known_vehicle(
            entry, ctx, client, api, [page for pages in answered.values() for page in pages]
        )
        for kind in entry.kinds:
            route = route_of(kind)
            pages = answered[route]
            collected = collect(kind, pages)
            warn_lookalike_keys(ctx, kind, collected)
            items = [item for item in collected if belongs(item, wanted)]
            for item in items:
                for record in item.records:
                    for problem in date_problems(record):
                        ctx.warn(f"{DOC_KIND[kind]} {item.key}: {problem}")
            if route == "vehicles":
                for done in [pool.submit(resolve_documents, client, api, kind, i) for i in items]:
                    done.result()
            source_format = ROUTES[route][1]
            scope = entry.scope(kind)
            complete = kind in COMPLETE_KINDS
            if complete:
                for page in pages:
                    if page.count_disagrees:
                        complete = False
                        ctx.warn(
                            f"{scope}: {page.url} says {page.count} record(s) but holds "
                            f"{len(page.results)}; the listing is not taken as complete and "
                            "nothing in the scope is retired"
                        )
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


SOURCE = Source(
    name="nhtsa",
    entry_model=NhtsaEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(API, STATIC),
)

__all__ = ["API", "SOURCE", "STATIC", "NhtsaEntry", "curate", "fetch"]

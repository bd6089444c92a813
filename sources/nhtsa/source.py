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
from sources.nhtsa.api import API, ROUTES, STATIC, Page, associated_documents, fetch_page
from sources.nhtsa.curate import curate
from sources.nhtsa.entry import NhtsaEntry
from sources.nhtsa.parse import DOC_KIND, date_problems
from sources.nhtsa.records import Seen, belongs, collect, emptied_years, to_record
from sources.nhtsa.retries import nhtsa_policy
from warehouse.records import Listing

COMPLETE_KINDS = frozenset({"recalls", "complaints"})


def label(entry: NhtsaEntry) -> str:
    return f"{entry.make} {entry.model} {entry.years[0]}–{entry.years[1]}"


def resolve_documents(client: HttpClient, api: str, kind: str, item: Seen) -> None:
    """Resolve a record's ``associatedDocuments`` URL to its list of PDF documents."""
    link = item.record.get("associatedDocuments")
    item.documents = associated_documents(client, api, kind, item.key, link)


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


SOURCE = Source(
    name="nhtsa",
    entry_model=NhtsaEntry,
    label=label,
    fetch=fetch,
    curate=curate,
    endpoints=(API, STATIC),
)

__all__ = ["API", "SOURCE", "STATIC", "NhtsaEntry", "curate", "fetch"]

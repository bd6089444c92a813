"""What each page of ``receipts serve`` shows, read from an open warehouse: one function per
page, each returning a :class:`Page` whose ``data`` is the JSON twin (``<path>.json``) and
whose template shows the same data (with ``extra``: what only the HTML needs).

Every list is a page of rows (:data:`PAGE_SIZE` and the limits below); nothing here reads
all the documents of a warehouse into memory.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from itertools import pairwise
from typing import Any

from markupsafe import Markup

from pipelines.checks import text_search
from pipelines.checks.diffing import (
    MAX_DIFF_BYTES,
    diff_snapshots,
    word_diff,
)
from pipelines.serve.text import body_view, side_by_side, title_of
from warehouse import history, serving
from warehouse.asof import (
    Point,
    iter_as_of,
    known_corpora,
    known_sources,
    resolve_point,
    utc_iso,
)
from warehouse.clock import now
from warehouse.drift import compare, default_points, snapshot_bodies
from warehouse.errors import BadParameter, NotFound, PointError, ReceiptsError, UsageError
from warehouse.pushes import pushes as push_ledger
from warehouse.store import Warehouse

PAGE_SIZE = 50  # rows of a listing: as-of, claims, drift
SEARCH_PAGE_SIZE = 20
MAX_SEARCH_PAGE = 50  # a search lists at most the first 1,000 hits, in doc_id order
MAX_DRIFT_PAGE = 20  # a drift page lists at most 1,000 documents deep
PUSH_PAGE_SIZE = 20
RUNS_SHOWN = 20
MAX_PAGE = 100_000
DIFF_FIELDS = 1_000  # a diff page shows at most this many changed fields
DIFF_LINES = 2_000  # or lines of a unified diff


@dataclass(frozen=True)
class Page:
    template: str
    title: str
    data: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


# -- parameters ----------------------------------------------------------------------------
def page_number(text: str | None, *, most: int = MAX_PAGE) -> int:
    """``page``: a whole number from 1 to ``most`` (1 when not given)."""
    if text is None or text == "":
        return 1
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise BadParameter("page", f"must be a whole number from 1 to {most}, not {text!r}")
    return int(text)


def revision_number(text: str | None, name: str) -> int:
    if text is None or not text.isdigit() or len(text) > 9 or int(text) < 1:
        raise BadParameter(name, f"must be a revision number (1, 2, …), not {text!r}")
    return int(text)


def point(wh: Warehouse, text: str | None, name: str) -> Point | None:
    """A run id or a date, as the command line reads one; None when not given."""
    if text is None or not text.strip():
        return None
    try:
        return resolve_point(wh, text)
    except PointError as exc:
        raise BadParameter(name, str(exc)) from None


def _pages(page: int, size: int, more: bool) -> dict[str, Any]:
    return {"page": page, "page_size": size, "next_page": page + 1 if more else None}


# -- the warehouse at a glance ---------------------------------------------------------------
def home(wh: Warehouse) -> Page:
    sources = serving.source_counts(wh)
    data = {
        "location": wh.location,
        "backend": wh.backend,
        "corpora": [c._asdict() for c in serving.corpus_counts(wh)],
        "sources": [s._asdict() for s in sources],
        "documents": sum(s.documents for s in sources),
        "runs": history.runs(wh, limit=RUNS_SHOWN),
    }
    return Page("index.html", "receipts", data)


# -- search --------------------------------------------------------------------------------
def search(
    wh: Warehouse,
    q: str | None,
    *,
    source: str | None,
    kind: str | None,
    corpus: str | None,
    since: str | None,
    page_text: str | None,
) -> Page:
    page = page_number(page_text, most=MAX_SEARCH_PAGE)
    changed_since = point(wh, since, "since")
    filters = {"q": q or "", "source": source, "kind": kind, "corpus": corpus, "since": since}
    hits: list[dict[str, Any]] = []
    more = False
    reading: dict[str, Any] | None = None
    if q and q.strip():
        wanted = page * SEARCH_PAGE_SIZE + 1
        try:
            found, how = text_search.first_hits(
                wh, q, wanted, source=source, kind=kind, corpus=corpus, changed_since=changed_since
            )
        except UsageError as exc:
            raise BadParameter("q", str(exc)) from None
        reading = how.as_json()
        start = (page - 1) * SEARCH_PAGE_SIZE
        more = len(found) > page * SEARCH_PAGE_SIZE
        hits = [
            {
                "doc_id": hit.doc_id,
                "revision": hit.revision,
                "content_hash": hit.content_hash,
                "hits": hit.hits,
                "where": hit.where,
                "snippet": hit.excerpt,
            }
            for hit in found[start : start + SEARCH_PAGE_SIZE]
        ]
    data = {
        "filters": filters,
        "hits": hits,
        "read": reading,
        **_pages(page, SEARCH_PAGE_SIZE, more),
    }
    extra = {"sources": known_sources(wh), "corpora": known_corpora(wh)}
    return Page("search.html", f"search: {q}" if q else "search", data, extra)


# -- a document ----------------------------------------------------------------------------
def _revisions(wh: Warehouse, doc_id: str) -> tuple[serving.DocumentInfo, list[dict[str, Any]]]:
    info = serving.document_info(wh, doc_id)
    if info is None:
        raise history.unknown_document(wh, doc_id)
    revisions = history.history(wh, doc_id)
    positions = serving.log_positions(wh, doc_id)
    for rev in revisions:
        rev["log_index"] = positions.get(int(rev["revision"]))
    return info, revisions


def _shown_revision(
    wh: Warehouse, doc_id: str, revisions: list[dict[str, Any]], rev: dict[str, Any]
) -> dict[str, Any]:
    """The revision's bytes as the page shows them (none for a tombstone)."""
    if rev["tombstone"]:
        return {"media_type": None, "size": None, "title": None, "body": None}
    snap = history.snapshot(wh, doc_id, revision=int(rev["revision"]), revisions=revisions)
    return {
        "media_type": snap.media_type,
        "size": len(snap.body),
        "title": title_of(snap.body, snap.media_type),
        "body": body_view(snap.body, snap.media_type),
    }


def _document_json(info: serving.DocumentInfo, revisions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"doc_id": info.doc_id, "source": info.source, "kind": info.kind, "revisions": revisions}


def document(wh: Warehouse, doc_id: str) -> Page:
    info, revisions = _revisions(wh, doc_id)
    current = revisions[-1]
    shown = _shown_revision(wh, doc_id, revisions, current)
    body = shown.pop("body")
    data = _document_json(info, revisions) | {
        "current": {"revision": current["revision"], **shown, "text": _text(body)}
    }
    extra = {"revision": current, "body": body, "pairs": _pairs(revisions)}
    return Page("document.html", doc_id, data, extra)


def revision(wh: Warehouse, doc_id: str, number: int) -> Page:
    info, revisions = _revisions(wh, doc_id)
    chosen = [r for r in revisions if r["revision"] == number]
    if not chosen:
        raise NotFound(f"{doc_id} has no revision {number}; it has revisions 1..{len(revisions)}")
    rev = chosen[0]
    shown = _shown_revision(wh, doc_id, revisions, rev)
    body = shown.pop("body")
    data = {"doc_id": doc_id, "source": info.source, "kind": info.kind, **rev, **shown}
    data["text"] = _text(body)
    extra = {"revision": rev, "body": body, "revisions": revisions, "pairs": _pairs(revisions)}
    return Page("revision.html", f"{doc_id} revision {number}", data, extra)


def _text(body: Any) -> str | None:
    """A shown body's text for the JSON twin: a text, or a JSON record as stored (None for a
    tombstone or bytes that are not UTF-8)."""
    return body.text if body is not None and body.kind in ("text", "json") else None


def _pairs(revisions: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Each revision with content and the one with content before it: the diffs a timeline
    links."""
    numbers = [int(r["revision"]) for r in revisions if not r["tombstone"]]
    return list(pairwise(numbers))


def diff(wh: Warehouse, doc_id: str, old_text: str | None, new_text: str | None) -> Page:
    info, revisions = _revisions(wh, doc_id)
    with_content = [r for r in revisions if not r["tombstone"]]
    if old_text is None and new_text is None and len(with_content) >= 2:
        old, new = with_content[-2], with_content[-1]
    else:
        old = _pick(doc_id, revisions, revision_number(old_text, "from"))
        new = _pick(doc_id, revisions, revision_number(new_text, "to"))
    (old_media, old_body), (new_media, new_body) = history.revision_pair_bodies(
        wh, doc_id, old, new
    )
    result = diff_snapshots(
        old_body,
        old_media,
        new_body,
        new_media,
        old_label=f"revision {old['revision']}",
        new_label=f"revision {new['revision']}",
        max_fields=DIFF_FIELDS,
        max_lines=DIFF_LINES,
    )
    words = None
    if result.kind == "text" and max(len(old_body), len(new_body)) <= MAX_DIFF_BYTES:
        words = word_diff(old_body.decode("utf-8"), new_body.decode("utf-8"))
    data = {
        "doc_id": doc_id,
        "source": info.source,
        "kind": info.kind,
        "old": _diff_side(old, old_media),
        "new": _diff_side(new, new_media),
        "identical": old["content_hash"] == new["content_hash"],
        "diff": result.as_json(),
        "words": None if words is None else [list(w) for w in words],
    }
    extra = {
        "result": result,
        "rows": side_by_side(result.lines) if result.kind == "text" else [],
        "words": words,
        "revisions": revisions,
        "pairs": _pairs(revisions),
    }
    title = f"{doc_id}: revision {old['revision']} → {new['revision']}"
    return Page("diff.html", title, data, extra)


def _pick(doc_id: str, revisions: list[dict[str, Any]], number: int) -> dict[str, Any]:
    chosen = [r for r in revisions if r["revision"] == number]
    if not chosen:
        raise NotFound(f"{doc_id} has no revision {number}; it has revisions 1..{len(revisions)}")
    if chosen[0]["tombstone"]:
        raise NotFound(f"{doc_id} revision {number} is a tombstone; it has no bytes to compare")
    return chosen[0]


def _diff_side(rev: dict[str, Any], media_type: str) -> dict[str, Any]:
    return {
        "revision": rev["revision"],
        "content_hash": rev["content_hash"],
        "media_type": media_type,
        "valid_from_run": rev["valid_from_run"],
        "valid_from": rev["valid_from"],
    }


# -- the corpus at a point -----------------------------------------------------------------
def as_of(
    wh: Warehouse,
    at: str | None,
    *,
    source: str | None,
    corpus: str | None,
    page_text: str | None,
) -> Page:
    page = page_number(page_text)
    cut = point(wh, at, "point") or point(wh, "now", "point")
    assert cut is not None
    rows = list(
        iter_as_of(
            wh,
            cut,
            source,
            corpus,
            limit=PAGE_SIZE + 1,
            offset=(page - 1) * PAGE_SIZE,
        )
    )
    data = {
        "point": cut.as_json(),
        "filters": {"point": at, "source": source, "corpus": corpus},
        "documents": [r.as_json() for r in rows[:PAGE_SIZE]],
        **_pages(page, PAGE_SIZE, len(rows) > PAGE_SIZE),
    }
    extra = {"sources": known_sources(wh), "corpora": known_corpora(wh)}
    return Page("as_of.html", f"as of {cut.label}", data, extra)


# -- drift ---------------------------------------------------------------------------------
def drift(
    wh: Warehouse,
    since_text: str | None,
    until_text: str | None,
    *,
    corpus: str | None,
    page_text: str | None,
) -> Page:
    from pipelines.refresh import metadata_fields
    from pipelines.reports.drift_model import build_report

    page = page_number(page_text, most=MAX_DRIFT_PAGE)
    since, until = point(wh, since_text, "from"), point(wh, until_text, "to")
    start, end = default_points(wh, corpus, since, until)
    try:
        found = compare(
            wh, start, end, corpus=corpus, limit=page * PAGE_SIZE, metadata=metadata_fields()
        )
    except PointError as exc:
        raise BadParameter("from", str(exc)) from None
    offset = (page - 1) * PAGE_SIZE
    more = found.omitted > 0
    shown = replace(
        found,
        rows=found.rows[offset:],
        metadata_rows=found.metadata_rows[offset:] if page == 1 else [],
        unseen=found.unseen[:PAGE_SIZE] if page == 1 else [],
    )
    report = build_report(wh, shown, now())
    titles = _titles(
        wh, [d.row.new.content_hash for d in report.documents if d.row.outcome == "new"]
    )
    data = report.as_json() | _pages(page, PAGE_SIZE, more)
    for doc in data["documents"]:
        doc["title"] = titles.get(doc["new"]["content_hash"]) if doc["outcome"] == "new" else None
    extra = {
        "report": report,
        "corpora": known_corpora(wh),
        "unseen": data.get("unseen", []),
        "claims": data.get("claims"),
    }
    return Page("drift.html", f"drift: {start.label} → {end.label}", data, extra)


def _titles(wh: Warehouse, hashes: Sequence[str | None]) -> dict[str, str | None]:
    wanted = [h for h in hashes if h is not None]
    bodies = snapshot_bodies(wh, wanted) if wanted else {}
    return {h: title_of(body, media) for h, (media, body) in bodies.items()}


# -- claims --------------------------------------------------------------------------------
def _claim_json(row: serving.ClaimRow) -> dict[str, Any]:
    check = row.check
    return {
        "claim_id": row.claim_id,
        "quote": row.quote,
        "quote_exact": _quote_is_exact(row),
        **check._asdict(),
        "recorded_at": utc_iso(check.recorded_at),
    }


def _quote_is_exact(row: serving.ClaimRow) -> bool:
    """Whether the words the ledger keeps are the quote as cited (its hash is theirs)."""
    if row.quote is None:
        return False
    return hashlib.sha256(row.quote.encode()).hexdigest() == row.check.quote_hash


def claims(wh: Warehouse, status: str | None, page_text: str | None) -> Page:
    page = page_number(page_text)
    counts = serving.claim_status_counts(wh)
    if status and status not in counts:
        known = ", ".join(counts) or "none: no claim has been checked"
        raise BadParameter("status", f"no claim is {status!r}; statuses: {known}")
    rows = serving.latest_claims(
        wh, status=status or None, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE
    )
    data = {
        "counts": counts,
        "status": status or None,
        "claims": [_claim_json(r) for r in rows[:PAGE_SIZE]],
        **_pages(page, PAGE_SIZE, len(rows) > PAGE_SIZE),
    }
    return Page("claims.html", "claims", data)


def claim(wh: Warehouse, claim_id: str) -> Page:
    from warehouse.claims import claim_history

    latest = serving.latest_claims(wh, claim_id=claim_id, limit=1)
    if not latest:
        raise NotFound(f"no check of claim {claim_id!r} in {wh.location}")
    checks = [
        {**h._asdict(), "recorded_at": utc_iso(h.recorded_at)} for h in claim_history(wh, claim_id)
    ]
    data = {"claim": _claim_json(latest[0]), "checks": checks}
    return Page("claim.html", f"claim {claim_id}", data)


def claim_bundle(wh: Warehouse, claim_id: str) -> bytes:
    """The proof bundle of a claim that holds, as ``verify-claims --bundles`` writes it:
    its quote in the cited revision, with the log's inclusion proof and the claim's
    history. Refused (:class:`NotFound`) when the claim does not hold or the ledger keeps
    only the quote's reader text, not its words as cited."""
    from pipelines.proofs.bundle import ClaimCheck, bundle_bytes, claim_json
    from pipelines.proofs.make import prove
    from warehouse.claims import claim_history

    latest = serving.latest_claims(wh, claim_id=claim_id, limit=1)
    if not latest:
        raise NotFound(f"no check of claim {claim_id!r} in {wh.location}")
    row, check = latest[0], latest[0].check
    if check.status != "holds" or check.cited_revision is None or row.quote is None:
        raise NotFound(
            f"claim {claim_id!r} is {check.status}: only a claim that holds has a bundle"
        )
    if not _quote_is_exact(row):
        raise NotFound(
            f"the ledger keeps claim {claim_id!r}'s quote as reader text only (markup removed); "
            "`receipts verify-claims --bundles DIR` writes its bundle from the claims file"
        )
    try:
        bundle = prove(wh, check.doc_id, row.quote, revision=check.cited_revision)
    except ReceiptsError as exc:  # no signed checkpoint, no log entry, no span: no bundle
        raise NotFound(f"no proof bundle for claim {claim_id!r}: {exc}") from None
    checks = [
        ClaimCheck(h.check_id, h.status, h.recorded_at, h.cited_revision, h.cited_hash)
        for h in claim_history(wh, claim_id)
    ]
    bundle["claim"] = claim_json(claim_id, check.status, checks)
    return bundle_bytes(bundle)


# -- pushes --------------------------------------------------------------------------------
def pushes(wh: Warehouse, page_text: str | None) -> Page:
    page = page_number(page_text)
    offset = (page - 1) * PUSH_PAGE_SIZE
    rows = push_ledger(wh, limit=offset + PUSH_PAGE_SIZE + 1)[offset:]
    data = {
        "pushes": rows[:PUSH_PAGE_SIZE],
        **_pages(page, PUSH_PAGE_SIZE, len(rows) > PUSH_PAGE_SIZE),
    }
    return Page("pushes.html", "pushes", data)


# -- plots ---------------------------------------------------------------------------------
PLOTS: tuple[tuple[str, str, str, bool], ...] = (
    ("revisions_per_day", "Revisions per day, by source", "revisions_per_day", True),
    ("documents_by_status", "Documents by status", "documents_by_status", True),
    ("claims_by_status", "Claims by status", "claims_by_status", True),
)


def plots(wh: Warehouse) -> Page:
    """The series of :mod:`warehouse.series` and their charts (:mod:`pipelines.serve.plots`)."""
    # The other half of the plots, by name: they are imported only when the page is asked.
    charts = importlib.import_module("pipelines.serve.plots")
    series = importlib.import_module("warehouse.series")

    data: dict[str, Any] = {}
    svgs = []
    for key, title, function, stacked in PLOTS:
        read: Callable[[Warehouse], list[tuple[date, str, int]]] = getattr(series, function)
        rows = read(wh)
        data[key] = [{"day": day.isoformat(), "series": name, "count": n} for day, name, n in rows]
        # The SVG is escaped by its maker (pipelines.serve.plots).
        svgs.append((title, Markup(charts.chart_svg(title, rows, stacked=stacked))))
    return Page("plots.html", "plots", data, {"charts": svgs})

"""``receipts search``: documents whose reader text holds a phrase, ranked.

A document is read exactly as ``verify-quote`` reads it (:func:`pipelines.checks.quote.
quote_matches`: markup, Markdown, entities, invisible characters and whitespace as a reader
sees them; JSON records one string value at a time, never their keys), and the phrase must
occur on word boundaries, as a quote must. Letters are compared ignoring case. A search hit
is therefore a quote ``verify-quote`` confirms, up to case.

Hits are ranked by how often the phrase occurs in the document (most first), then by
doc_id; each hit shows where the first occurrence is (``text`` or ``field <path>``) and the
reader text around it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from pipelines.checks.quote import is_searchable, quote_matches, reader_text
from warehouse.errors import QuoteError, UsageError
from warehouse.explore import CurrentBody


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    revision: int
    content_hash: str
    hits: int
    where: str
    excerpt: str


def search(text: str, documents: Iterable[CurrentBody], limit: int) -> list[SearchHit]:
    """The ``limit`` best hits of ``text`` among ``documents`` (see the module docstring);
    documents that are not text are passed over."""
    if not reader_text(text):
        raise UsageError("give some text to search for (it is empty once markup is removed)")
    found: list[SearchHit] = []
    for doc in documents:
        if not is_searchable(doc.media_type):
            continue
        try:
            matches = list(quote_matches(text, doc.body, doc.media_type, ignore_case=True))
        except QuoteError:  # bytes that are not UTF-8 text
            continue
        if matches:
            first = matches[0]
            hit = SearchHit(
                doc.doc_id, doc.revision, doc.content_hash, len(matches), first.where, first.excerpt
            )
            found.append(hit)
            if len(found) > 4 * limit:  # keep memory to the best few
                found = heapq.nsmallest(limit, found, key=_rank)
    return heapq.nsmallest(limit, found, key=_rank)


def _rank(hit: SearchHit) -> tuple[int, str]:
    return (-hit.hits, hit.doc_id)

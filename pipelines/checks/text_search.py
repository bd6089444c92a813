"""``receipts search``: documents whose reader text holds a phrase, ranked.

A document is read exactly as ``verify-quote`` reads it (:func:`pipelines.checks.quote.
quote_matches`: markup, Markdown, entities, invisible characters and whitespace as a reader
sees them; JSON records one string value at a time, never their keys), and the phrase must
occur on word boundaries, as a quote must. Letters are compared ignoring case. A search hit
is therefore a quote ``verify-quote`` confirms, up to case.

``receipts search`` ranks hits by how often the phrase occurs in the document (most first),
then by doc_id; the web view lists them in doc_id order, a page at a time. Each hit shows
where the first occurrence is (``text`` or ``field <path>``) and the reader text around it.

With a search index (``receipts index``; :mod:`warehouse.search_index`), only the documents
whose words include every word of the phrase (:mod:`pipelines.checks.search_words`) are
read, in doc_id order, and those that changed since the build are read as they are now;
without one, or for a phrase without a word to look up, every document is read. Either
way each document read is decided by the same match, so the hits are the same.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pipelines.checks.quote import is_searchable, quote_matches, reader_text
from pipelines.checks.search_words import WORDS_VERSION, phrase_words, word_hash
from warehouse import search_index
from warehouse.errors import QuoteError, UsageError
from warehouse.explore import CurrentBody, iter_current_bodies
from warehouse.store import Warehouse

# Candidates read per batch: the first batch is small (a page of a common word's hits needs
# few), each next one twice the last, up to the most.
FIRST_BATCH = 32
MOST_BATCH = 4_096


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    revision: int
    content_hash: str
    hits: int
    where: str
    excerpt: str


def _check(text: str) -> None:
    if not reader_text(text):
        raise UsageError("give some text to search for (it is empty once markup is removed)")


def hit_in(text: str, doc: CurrentBody) -> SearchHit | None:
    """``doc``'s hit for ``text``, or None (a document that is not text has none)."""
    if not is_searchable(doc.media_type):
        return None
    try:
        matches = list(quote_matches(text, doc.body, doc.media_type, ignore_case=True))
    except QuoteError:  # bytes that are not UTF-8 text
        return None
    if not matches:
        return None
    first = matches[0]
    return SearchHit(
        doc.doc_id, doc.revision, doc.content_hash, len(matches), first.where, first.excerpt
    )


def _hits(text: str, documents: Iterable[CurrentBody]) -> Iterator[SearchHit]:
    for doc in documents:
        hit = hit_in(text, doc)
        if hit is not None:
            yield hit


def search(text: str, documents: Iterable[CurrentBody], limit: int) -> list[SearchHit]:
    """The ``limit`` best hits of ``text`` among ``documents`` (see the module docstring);
    documents that are not text are passed over."""
    _check(text)
    return _best(_hits(text, documents), limit)


def _best(hits: Iterable[SearchHit], limit: int) -> list[SearchHit]:
    found: list[SearchHit] = []
    for hit in hits:
        found.append(hit)
        if len(found) > 4 * limit:  # keep memory to the best few
            found = heapq.nsmallest(limit, found, key=_rank)
    return heapq.nsmallest(limit, found, key=_rank)


def _rank(hit: SearchHit) -> tuple[int, str]:
    return (-hit.hits, hit.doc_id)


# -- searching a warehouse, with its index where it has one ----------------------------------
@dataclass(frozen=True)
class Reading:
    """How a search read the warehouse: through the index (``indexed``), with the documents
    changed since its build read directly, or every document (``note`` says why)."""

    indexed: bool
    note: str
    changed: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"indexed": self.indexed, "note": self.note, "changed_since_index": self.changed}


def _plan(wh: Warehouse, text: str) -> tuple[search_index.IndexState | None, list[int], Reading]:
    state = search_index.index_state(wh)
    if state is None:
        return None, [], Reading(False, "no search index: every document read (receipts index)")
    if state.words_version != WORDS_VERSION:
        note = "the search index has other word rules: every document read (receipts index)"
        return None, [], Reading(False, note)
    words = phrase_words(text)
    if not words:
        return None, [], Reading(False, "no word to look up: every document read")
    return state, sorted({word_hash(w) for w in words}), Reading(True, "search index")


def _indexed_hits(
    wh: Warehouse, text: str, words: list[int], changed: set[str], filters: dict[str, Any]
) -> Iterator[SearchHit]:
    """The hits among the indexed documents that did not change since the build, in doc_id
    order, reading candidates a batch at a time."""
    ordinals = search_index.matching_ordinals(wh, words)
    batch = FIRST_BATCH
    while taken := list(itertools.islice(ordinals, batch)):
        found = search_index.candidates(wh, taken, **filters)
        kept = [c for c in found if c.doc_id not in changed]
        for c, media_type, body in search_index.candidate_bodies(wh, kept):
            hit = hit_in(text, CurrentBody(c.doc_id, c.revision, c.content_hash, media_type, body))
            if hit is not None:
                yield hit
        batch = min(2 * batch, MOST_BATCH)


def _searched(
    wh: Warehouse, text: str, filters: dict[str, Any]
) -> tuple[Iterator[SearchHit], list[SearchHit], Reading]:
    """The hits of ``text``: those of the index in doc_id order (or of every document, in no
    order), those of documents changed since the index's build, and how it read."""
    _check(text)
    state, words, reading = _plan(wh, text)
    if state is None:
        return _hits(text, iter_current_bodies(wh, **filters)), [], reading
    changed = search_index.changed_since_build(wh, state)
    fresh = (
        list(_hits(text, iter_current_bodies(wh, doc_ids=changed, **filters))) if changed else []
    )
    reading = Reading(
        True, f"search index; {len(changed)} changed since read directly", len(changed)
    )
    return _indexed_hits(wh, text, words, changed, filters), fresh, reading


def first_hits(
    wh: Warehouse,
    text: str,
    wanted: int,
    *,
    source: str | None = None,
    kind: str | None = None,
    corpus: str | None = None,
    changed_since: Any = None,
) -> tuple[list[SearchHit], Reading]:
    """The first ``wanted`` hits of ``text`` in doc_id order (a page of the web view's)."""
    filters = {"source": source, "kind": kind, "corpus": corpus, "changed_since": changed_since}
    hits, fresh, reading = _searched(wh, text, filters)
    if not reading.indexed:
        return heapq.nsmallest(wanted, hits, key=_doc_order), reading
    first = list(itertools.islice(hits, wanted))
    return sorted(first + fresh, key=_doc_order)[:wanted], reading


def best_hits(
    wh: Warehouse, text: str, limit: int, *, source: str | None = None, corpus: str | None = None
) -> tuple[list[SearchHit], Reading]:
    """The ``limit`` best hits of ``text`` (``receipts search``)."""
    hits, fresh, reading = _searched(wh, text, {"source": source, "corpus": corpus})
    return _best(itertools.chain(hits, fresh), limit), reading


def _doc_order(hit: SearchHit) -> str:
    return hit.doc_id

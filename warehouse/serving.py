"""What the web view (``receipts serve``) reads that no command reads as such: the counts of
each source and corpus, one document's source and kind, where each of its revisions sits in
the transparency log, and the claims board (each claim's latest check, a page at a time).

Every function here reads; each list takes a ``limit`` (and an ``offset``), so a page of a
warehouse of millions of documents holds one page of rows.
"""

from __future__ import annotations

from typing import NamedTuple

from warehouse.claims import ClaimHistoryRow
from warehouse.row_hints import source
from warehouse.store import Warehouse
from warehouse.tlog.store import has_log


class SourceCount(NamedTuple):
    source: str
    kind: str
    documents: int  # current revisions, tombstones included
    tombstoned: int


def source_counts(warehouse: Warehouse) -> list[SourceCount]:
    """Each source and kind with its number of documents (and how many are tombstoned)."""
    rows = warehouse._con.execute(
        "SELECT d.source, d.kind, count(*), count(*) FILTER (WHERE c.tombstone) "
        "FROM current_revisions c JOIN documents d USING (doc_id) "
        "GROUP BY d.source, d.kind ORDER BY d.source, d.kind"
    ).fetchall()
    return [SourceCount(str(s), str(k), int(n), int(t)) for s, k, n, t in rows]


class CorpusCount(NamedTuple):
    corpus: str
    members: int


def corpus_counts(warehouse: Warehouse) -> list[CorpusCount]:
    """Each corpus that has members now, with their number."""
    rows = warehouse._con.execute(
        "SELECT corpus, count(*) FROM corpus_members GROUP BY corpus ORDER BY corpus"
    ).fetchall()
    return [CorpusCount(str(c), int(n)) for c, n in rows]


class DocumentInfo(NamedTuple):
    doc_id: str
    source: str
    kind: str


def document_info(warehouse: Warehouse, doc_id: str) -> DocumentInfo | None:
    """A document's source and kind; None if the warehouse has no such document."""
    documents = source(warehouse, "documents", doc_id)
    row = warehouse._first_row(
        f"SELECT doc_id, source, kind FROM {documents} WHERE doc_id = $d LIMIT 1", {"d": doc_id}
    )
    return None if row is None else DocumentInfo(str(row[0]), str(row[1]), str(row[2]))


def log_positions(warehouse: Warehouse, doc_id: str) -> dict[int, int]:
    """Where each revision of ``doc_id`` is in the transparency log: revision → entry index
    (empty for a warehouse without a log)."""
    if not has_log(warehouse._con):
        return {}
    entries = source(warehouse, "tlog_entries", doc_id)
    rows = warehouse._con.execute(
        f"SELECT revision, min(idx) FROM {entries} WHERE doc_id = $d AND revision IS NOT NULL "
        "GROUP BY revision",
        {"d": doc_id},
    ).fetchall()
    return {int(revision): int(idx) for revision, idx in rows}


class ClaimRow(NamedTuple):
    """A claim as its latest check left it, with the quote's words as reader text (None
    when the ledger keeps none): the search string a check stored, without the marks of
    its word boundaries."""

    claim_id: str
    quote: str | None
    check: ClaimHistoryRow


_LATEST_CHECKS = """
WITH latest AS (
    SELECT * FROM claim_checks
    QUALIFY row_number() OVER (PARTITION BY claim_id ORDER BY check_id DESC) = 1
)
"""


def claim_status_counts(warehouse: Warehouse) -> dict[str, int]:
    """How many claims each status has at their latest check."""
    rows = warehouse._con.execute(
        _LATEST_CHECKS + "SELECT status, count(*) FROM latest GROUP BY status ORDER BY status"
    ).fetchall()
    return {str(status): int(n) for status, n in rows}


def latest_claims(
    warehouse: Warehouse,
    *,
    status: str | None = None,
    claim_id: str | None = None,
    limit: int,
    offset: int = 0,
) -> list[ClaimRow]:
    """Claims at their latest check (of one status, or the one claim ``claim_id``), by
    status then claim id, a page at a time."""
    rows = warehouse._con.execute(
        _LATEST_CHECKS
        + """
        SELECT l.claim_id,
               (SELECT replace(replace(min(q.needle), chr(30), ''), chr(31), '')
                FROM quote_needles q WHERE q.quote_hash = l.quote_hash),
               l.check_id, l.claim_set, l.run_id, l.recorded_at, l.doc_id, l.quote_hash,
               l.cited_revision, l.cited_hash, l.status, l.checked_revision, l.at_revision,
               l.found_in
        FROM latest l
        WHERE ($status IS NULL OR l.status = $status)
          AND ($claim IS NULL OR l.claim_id = $claim)
        ORDER BY l.status, l.claim_id LIMIT $limit OFFSET $offset
        """,
        {"status": status, "claim": claim_id, "limit": limit, "offset": offset},
    ).fetchall()
    return [
        ClaimRow(
            str(row[0]),
            row[1],
            ClaimHistoryRow._make([*row[2:13], [int(n) for n in row[13] or []]]),
        )
        for row in rows
    ]

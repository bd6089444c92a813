"""A corpus in the warehouse: its members, and the current revision of each with its bytes.

A document joins a corpus when an entry of its manifest yields it and leaves after a complete
run no longer does (the ``corpus_members`` view).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from warehouse.canonical import REENCODED
from warehouse.snapshots import checked_body
from warehouse.store import Warehouse


class Member(NamedTuple):
    doc_id: str
    joined_run: int


def members(warehouse: Warehouse, corpus: str) -> list[Member]:
    """The documents of ``corpus`` now, with the run each joined in, ordered by doc_id."""
    rows = warehouse._con.execute(
        "SELECT doc_id, joined_run FROM corpus_members WHERE corpus = $c ORDER BY doc_id",
        {"c": corpus},
    ).fetchall()
    return [Member(str(d), int(r)) for d, r in rows]


class CurrentDocument(NamedTuple):
    """A member's current revision, its provenance and stored bytes (a tuple: corpora have
    many documents)."""

    doc_id: str
    kind: str
    revision: int
    content_hash: str
    media_type: str
    body: bytes
    scope: str
    source_url: str | None
    source_commit: str | None
    source_format: str | None
    fetched_at: datetime | None
    etag: str | None
    last_modified: str | None
    attributes: Any  # the stored JSON: text or already decoded, depending on DuckDB
    valid_from: datetime
    valid_from_run: int
    first_seen_run: int


# A current revision that only re-encodes its document (canonical form v1 -> RFC 8785) holds
# the value of the revision before it, which stays the one published: the curated document,
# its provenance included, is the same as before the re-encoding.
_CURRENT = f"""
SELECT c.doc_id, d.kind, c.revision, c.content_hash, s.media_type, s.body, c.scope,
       c.source_url, c.source_commit, c.source_format, c.fetched_at, c.etag, c.last_modified,
       c.attributes, c.valid_from, c.valid_from_run, d.first_seen_run
FROM corpus_members m
JOIN current_revisions cur ON cur.doc_id = m.doc_id
JOIN revisions c ON c.doc_id = cur.doc_id AND c.revision = cur.revision
    - CASE WHEN cur.tombstone_reason = '{REENCODED}' THEN 1 ELSE 0 END
JOIN documents d ON d.doc_id = c.doc_id
JOIN snapshots s ON s.content_hash = c.content_hash
WHERE m.corpus = $corpus AND NOT cur.tombstone
ORDER BY c.doc_id
"""


def current_documents(
    warehouse: Warehouse, corpus: str, chunk: int = 2_000
) -> Iterator[CurrentDocument]:
    """Every member of ``corpus`` whose current revision is not a tombstone, with that
    revision and its bytes, ordered by doc_id. Streamed ``chunk`` rows at a time on a cursor
    of its own, so the corpus is never all in memory."""
    cursor = warehouse._con.cursor()
    try:
        cursor.execute(_CURRENT, {"corpus": corpus})
        while rows := cursor.fetchmany(chunk):
            for row in rows:
                document = CurrentDocument._make(row)
                checked_body(
                    warehouse,
                    document.content_hash,
                    document.body,
                    doc_id=document.doc_id,
                    revision=document.revision,
                )
                yield document
    finally:
        cursor.close()

"""What a proof bundle is built from, read in one query for any number of revisions: each
revision's document, snapshot bytes (checked against their hash), provenance and log entry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa

from warehouse.snapshots import checked_body
from warehouse.store import Warehouse
from warehouse.tlog.entries_sql import instant_sql
from warehouse.tlog.store import any_unstored, entries_sql, stored_entries_sql


class ProofRow(NamedTuple):
    doc_id: str
    revision: int
    content_hash: str
    kind: str
    source: str
    media_type: str
    body: bytes
    source_url: str | None
    source_commit: str | None
    # when the bytes were fetched, else when the revision was recorded: UTC text with
    # microseconds and ``Z``, as the log writes an instant
    captured_at: str
    log_index: int | None  # None: the revision has no entry in the log
    entry: bytes | None
    canonical_form: str | None  # as snapshot_forms records it (None: not recorded)


# Instants as text made by DuckDB: it hands TIMESTAMPTZ to Python through pytz, row by row
# (a third of the time of 10,000 bundles), and a datetime made per row from microseconds,
# then written as text, took 2 µs a bundle more.
_ROWS = """
WITH r AS (
    SELECT r.doc_id, r.revision, r.content_hash, r.source_url, r.source_commit,
           {captured} AS captured
    FROM revisions r SEMI JOIN _proof_wanted w ON r.doc_id = w.doc_id AND r.revision = w.revision
    WHERE NOT r.tombstone),
s AS (SELECT content_hash, any_value(media_type) AS media_type, any_value(body) AS body
      FROM snapshots WHERE {snapshots} GROUP BY content_hash),
f AS (SELECT content_hash, min(canonical_form) AS canonical_form
      FROM snapshot_forms SEMI JOIN r USING (content_hash) GROUP BY content_hash)
SELECT r.doc_id, r.revision, r.content_hash, d.kind, d.source, s.media_type, s.body,
       r.source_url, r.source_commit, r.captured, e.idx, e.entry, f.canonical_form
FROM r
JOIN documents d ON d.doc_id = r.doc_id
JOIN s ON s.content_hash = r.content_hash
LEFT JOIN f ON f.content_hash = r.content_hash
LEFT JOIN {entries} e
    ON e.doc_id = r.doc_id AND e.revision = r.revision AND e.kind IN ('revision', 'restoration')
ORDER BY e.idx DESC NULLS FIRST
"""
# The wanted snapshots: on a DuckDB file, by rowid, found first from their hashes alone (a
# join on the hash read the bytes of every snapshot, 40,000 for the 10,000 wanted in the
# proofs benchmark: a sixth of this query's time); a lake's rows by their hash.
_BY_ROWID = "rowid IN (SELECT rowid FROM snapshots SEMI JOIN r USING (content_hash))"
_BY_HASH = "content_hash IN (SELECT content_hash FROM r)"
# The wanted revisions' own entries: the entries of the documents' other revisions are
# neither read nor rebuilt (rebuilding every revision of the wanted documents took a third
# of this query's time on 10,000 revisions of 4 each).
_WANTED_ENTRIES = "(e.doc_id, e.revision) IN (SELECT doc_id, revision FROM _proof_wanted)"
# Every entry read with its bytes: those stored, and those a DuckDB file leaves NULL (its
# revisions', since migration 0012), rebuilt from their rows
# (warehouse.tlog.store.entries_sql).
_REBUILT = entries_sql(
    _WANTED_ENTRIES,
    "doc_id IN (SELECT doc_id FROM _proof_wanted)",
    "r.doc_id IN (SELECT doc_id FROM _proof_wanted)",
)
# When the log holds no NULL entry (a lake's, whose every entry is stored): the stored
# entries alone, without the rebuilding branch (which took a third of this query's time on
# 10,000 revisions, rebuilding nothing).
_STORED = f"({stored_entries_sql(_WANTED_ENTRIES)})"
# (any entry unstored, a lake) -> the query
_QUERIES = {
    (unstored, lake): _ROWS.format(
        entries=_REBUILT if unstored else _STORED,
        snapshots=_BY_HASH if lake else _BY_ROWID,
        captured=instant_sql("coalesce(r.fetched_at, r.valid_from)"),
    )
    for unstored in (True, False)
    for lake in (True, False)
}


def proof_rows(
    warehouse: Warehouse, revisions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], ProofRow]:
    """The rows of each (doc_id, revision) that has bytes (a tombstone has none: absent),
    each body checked against its content hash (:class:`SnapshotCorrupted` otherwise)."""
    if not revisions:
        return {}
    wanted = pa.table(
        {
            "doc_id": pa.array([d for d, _ in revisions], pa.string()),
            "revision": pa.array([r for _, r in revisions], pa.int32()),
        }
    )
    con = warehouse._con
    con.register("_proof_wanted", wanted)
    try:
        # as Arrow columns, each turned into Python values in one call: several times faster
        # than fetchall's row by row on 10,000 bodies
        query = _QUERIES[(any_unstored(con), warehouse.is_lake)]
        table = con.execute(query).to_arrow_table()
    finally:
        con.unregister("_proof_wanted")
    out = {}
    for row in zip(*(column.to_pylist() for column in table.columns), strict=True):
        body = checked_body(warehouse, row[2], row[6], doc_id=row[0], revision=row[1])
        found = ProofRow._make((*row[:6], body, row[7], row[8] or None, *row[9:]))
        out[(found.doc_id, found.revision)] = found  # the first entry wins (sorted last)
    return out

"""What each writer appends to the log, inside the transaction that writes the rows: the
entries of an ingest batch's revisions, of a listing's tombstones, of a backfill's range, of
a push's receipt; and, when migration 0009 is applied to an older warehouse, of its whole
history.

Each is a statement selecting ``kind, doc_id, revision, push_id, entry`` (see
:func:`warehouse.tlog.store.append`) from the tables the writer registered for its own
statements; the revisions' bytes are built by the one expression of
:mod:`warehouse.tlog.entries_sql`.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from warehouse.tlog import entries, store
from warehouse.tlog.entries_sql import (
    ROW_COLUMNS,
    RevisionColumns,
    revision_entry,
    revision_kind,
    rows_with_context,
)


def select_entries(c: RevisionColumns, source: str) -> str:
    return (
        f"SELECT {revision_kind(c)} AS kind, {c.doc_id} AS doc_id, "
        f"CAST({c.revision} AS INTEGER) AS revision, CAST(NULL AS BIGINT) AS push_id, "
        f"{revision_entry(c)} AS entry {source}"
    )


# An ingest batch (warehouse.ingest): the revisions INSERT_REVISIONS wrote from ``_payload``,
# restorations told by the batch's classification.
_INGEST = RevisionColumns(
    doc_id="p.doc_id",
    document="p.kind",
    revision="coalesce(p.current_revision, 0) + 1",
    content_hash="p.content_hash",
    tombstone="false",
    reason="p.reason",
    restores="c.outcome = 'restored'",
    source_url="p.source_url",
    source_commit="p.source_commit",
    seen_at="p.fetched_at",
    run="$run",
)
INGEST_BATCH = select_entries(
    _INGEST, "FROM _payload p LEFT JOIN _classified c ON c.doc_id = p.doc_id"
)

# A complete listing's tombstones (INSERT_TOMBSTONES, from ``_gone``).
_TOMBSTONES = RevisionColumns(
    doc_id="g.doc_id",
    document="d.kind",
    revision="g.revision",
    content_hash="CAST(NULL AS VARCHAR)",
    tombstone="true",
    reason="'gone upstream'",
    restores="false",
    source_url="CAST(NULL AS VARCHAR)",
    source_commit="CAST(NULL AS VARCHAR)",
    seen_at="CAST(NULL AS TIMESTAMPTZ)",
    run="$run",
)
TOMBSTONES = select_entries(
    _TOMBSTONES,
    "FROM _gone g LEFT JOIN (SELECT doc_id, min(kind) AS kind FROM documents "
    "WHERE doc_id IN (SELECT doc_id FROM _gone) GROUP BY doc_id) d ON d.doc_id = g.doc_id",
)

# Within a batch: by doc_id, then revision.
BATCH_ORDER = "doc_id, revision"


# An ingest's revisions and tombstones are rebuilt from their rows when read: on a DuckDB
# file their bytes are not stored (a lake stores them: see store.append). (A first ingest of
# 200,000 records, alternating, medians of 5: the log added 25% with them stored, 14%
# without.) On a DuckDB file, an ingest batch's entries are made by warehouse.tlog.ahead
# while the batch's rows are written; a lake's (and every tombstone's) here.
def append_ingest_batch(
    con: duckdb.DuckDBPyConnection, run_id: int, *, lake: bool, logged: bool | None = None
) -> None:
    store.append(con, INGEST_BATCH, BATCH_ORDER, {"run": run_id}, logged=logged, keep_entries=lake)


def append_tombstones(
    con: duckdb.DuckDBPyConnection, run_id: int, *, lake: bool, logged: bool | None = None
) -> None:
    store.append(con, TOMBSTONES, BATCH_ORDER, {"run": run_id}, logged=logged, keep_entries=lake)


# -- pushes ----------------------------------------------------------------------------------
# A push's receipt: its 'finished' row.
PUSH_ROWS = """
SELECT push_id, target, namespace, manifest_name, run_id, status, applied, unrelated_before,
       unrelated_after, touched_by_us, transaction_ids, recorded_at
FROM pushes WHERE event = 'finished' AND {where}
ORDER BY recorded_at, push_id
"""


def push_entry_of_row(row: tuple[Any, ...]) -> bytes:
    """The entry of a push's 'finished' row (the columns of :data:`PUSH_ROWS`)."""
    ids = json.loads(row[10]) if row[10] else []
    return entries.push_entry(
        push_id=int(row[0]),
        target=str(row[1]),
        namespace=str(row[2]),
        manifest=row[3],
        run=None if row[4] is None else int(row[4]),
        status=row[5],
        applied=None if row[6] is None else int(row[6]),
        unrelated_before=None if row[7] is None else int(row[7]),
        unrelated_after=None if row[8] is None else int(row[8]),
        touched_by_us=None if row[9] is None else int(row[9]),
        transaction_ids=[str(i) for i in ids],
    )


def _append_pushes(con: duckdb.DuckDBPyConnection, where: str, params: dict[str, Any]) -> None:
    rows = con.execute(PUSH_ROWS.format(where=where), params).fetchall()
    if not rows:
        return
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _tlog_pushes (ord INTEGER, push_id BIGINT, entry BLOB)"
    )
    con.executemany(
        "INSERT INTO _tlog_pushes VALUES (?, ?, ?)",
        [(i, int(r[0]), push_entry_of_row(r)) for i, r in enumerate(rows)],
    )
    store.append(
        con,
        "SELECT 'push' AS kind, CAST(NULL AS VARCHAR) AS doc_id, CAST(NULL AS INTEGER) "
        "AS revision, push_id, entry, ord FROM _tlog_pushes",
        "ord",
    )
    con.execute("DROP TABLE _tlog_pushes")


def append_push(con: duckdb.DuckDBPyConnection, push_id: int) -> None:
    """The entry of push ``push_id``'s receipt, just written (inside its transaction)."""
    _append_pushes(
        con,
        f"push_id = $id AND NOT EXISTS (SELECT 1 FROM {store.ENTRIES} e WHERE e.push_id = $id)",
        {"id": push_id},
    )


# -- the history of a warehouse made before the log ------------------------------------------
HISTORY_REVISIONS = select_entries(
    ROW_COLUMNS, rows_with_context(where="true", docs="true")
).replace(
    "AS entry",
    "AS entry, r.valid_from AS committed, r.valid_from_run AS run, r.fetched_at AS seen_at",
)
# In order of commit: the instant the rows were written, then the run, seen-at, doc id and
# revision.
HISTORY_ORDER = "committed, run, seen_at NULLS FIRST, doc_id, revision"


def log_history(con: duckdb.DuckDBPyConnection) -> None:
    """Log every revision and push receipt of a warehouse the log is new to (inside the
    transaction of migration 0009): the revisions in order of commit, then the push
    receipts in theirs."""
    if store.size(con):
        return
    # Before migration 0012, an entry's bytes are stored (the column takes no NULL).
    store.append(con, HISTORY_REVISIONS, HISTORY_ORDER)
    _append_pushes(con, "true", {})

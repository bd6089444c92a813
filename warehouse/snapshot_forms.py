"""The canonical form of the snapshots stored before forms were recorded, filled in when
migration 0010 is applied: a GitHub file's bytes (and any bytes not JSON) are ``raw``; a
JSON snapshot is ``rfc8785`` where its bytes are their value's RFC 8785 bytes
(:func:`warehouse.canonical.stored_form`), as most are, else ``receipts-json-v1``."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from warehouse.canonical import FORM_JCS, FORM_RAW, FORM_V1, stored_form

# Bodies read at a time (streamed: a warehouse of millions of snapshots never holds them all).
CHUNK = 2048

# A GitHub file's bytes are stored as served; its entry kinds that are not a file's content
# (a symlink, a submodule, an LFS pointer) are JSON records of media types of their own.
_RAW = """
(media_type NOT LIKE 'application/vnd.receipts.%' AND content_hash IN (
    SELECT r.content_hash FROM revisions r JOIN documents d USING (doc_id)
    WHERE d.source = 'github' AND r.content_hash IS NOT NULL
)) OR NOT (media_type = 'application/json' OR media_type LIKE '%+json')
"""
_JSON = f"SELECT content_hash, body FROM snapshots WHERE NOT ({_RAW})"
_FILL = f"""
INSERT INTO snapshot_forms
SELECT content_hash, CASE
    WHEN {_RAW} THEN '{FORM_RAW}'
    WHEN content_hash IN (SELECT content_hash FROM _v1_only) THEN '{FORM_V1}'
    ELSE '{FORM_JCS}'
END
FROM snapshots
"""


def v1_only(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The hashes of the JSON snapshots whose bytes are not RFC 8785 bytes."""
    kept: list[str] = []
    con.execute(_JSON)
    while rows := con.fetchmany(CHUNK):
        kept.extend(str(h) for h, body in rows if stored_form(bytes(body)) == FORM_V1)
    return kept


def fill_forms(con: duckdb.DuckDBPyConnection) -> None:
    """Record the form of every snapshot stored so far (inside the migration's
    transaction)."""
    con.register("_v1_only", pa.table({"content_hash": pa.array(v1_only(con), pa.string())}))
    try:
        con.execute(_FILL)
    finally:
        con.unregister("_v1_only")

"""Snapshot bytes as every reader gets them: checked against their address first.

"Hash what you store, store what you hash" holds only while the stored bytes stay as they
were. Every function of ``warehouse/`` that hands out snapshot bytes (``show``, ``diff``,
``verify-quote``, drift reports, curation for publishing, ingest's reuse of known bytes)
passes them through :func:`checked_body`, which recomputes their SHA-256 and raises
:class:`SnapshotCorrupted` on a mismatch instead of serving altered text under the
original hash.
"""

from __future__ import annotations

import hashlib

from warehouse.errors import SnapshotCorrupted
from warehouse.store import Warehouse


def checked_body(
    warehouse: Warehouse,
    content_hash: str,
    body: bytes,
    *,
    doc_id: str | None = None,
    revision: int | None = None,
) -> bytes:
    """``body`` itself when it hashes to ``content_hash``; otherwise raises
    :class:`SnapshotCorrupted` naming the document and revision (looked up when not
    given) and both hashes."""
    actual = hashlib.sha256(body).hexdigest()
    if actual == content_hash:
        return body
    if revision is None:
        row = warehouse._first_row(
            "SELECT doc_id, revision FROM revisions WHERE content_hash = $h "
            "AND ($doc IS NULL OR doc_id = $doc) ORDER BY doc_id, revision DESC LIMIT 1",
            {"h": content_hash, "doc": doc_id},
        )
        if row is not None:
            doc_id, revision = str(row[0]), int(row[1])
    raise SnapshotCorrupted(warehouse.location, content_hash, actual, doc_id, revision)


def stored_bodies(warehouse: Warehouse, hashes: list[str]) -> dict[str, tuple[str, bytes]]:
    """The stored bytes (and media type) of each of ``hashes``, in one query, unchecked:
    the caller checks each with :func:`checked_body`, naming its revision."""
    if not hashes:
        return {}
    rows = warehouse._con.execute(
        "SELECT content_hash, any_value(media_type), any_value(body) FROM snapshots "
        "WHERE content_hash IN (SELECT unnest($h::VARCHAR[])) GROUP BY content_hash",
        {"h": sorted(set(hashes))},
    ).fetchall()
    return {str(h): (str(m), bytes(b)) for h, m, b in rows}

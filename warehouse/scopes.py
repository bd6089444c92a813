"""What the warehouse holds for one listing scope: its live documents, with their bytes.

A source that cannot tell from an answer alone whether its listing is the whole truth (NHTSA
answers an unrecognised vehicle exactly as a vehicle without records) asks this before it
declares a listing complete.
"""

from __future__ import annotations

from typing import NamedTuple

from warehouse.snapshots import checked_body
from warehouse.store import Warehouse


class LiveDocument(NamedTuple):
    doc_id: str
    revision: int
    body: bytes


def live_in_scope(warehouse: Warehouse, scope: str) -> list[LiveDocument]:
    """The documents of ``scope`` whose current revision is not a tombstone, with that
    revision's stored bytes (checked against their hash), ordered by doc_id."""
    rows = warehouse._con.execute(
        "SELECT c.doc_id, c.revision, s.content_hash, s.body "
        "FROM current_revisions c JOIN snapshots s USING (content_hash) "
        "WHERE c.scope = $scope AND NOT c.tombstone ORDER BY c.doc_id",
        {"scope": scope},
    ).fetchall()
    return [
        LiveDocument(
            str(doc),
            int(revision),
            checked_body(warehouse, str(digest), bytes(body), doc_id=str(doc), revision=revision),
        )
        for doc, revision, digest, body in rows
    ]

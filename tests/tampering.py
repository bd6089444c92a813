"""Bit rot behind the warehouse's back: a snapshot's stored bytes replaced by forged ones."""

from __future__ import annotations

import hashlib

from warehouse.store import Warehouse


def forge_snapshot(
    warehouse: str, doc: str, old: bytes, new: bytes, revision: int | None = None
) -> tuple[str, str]:
    """Replace ``old`` with ``new`` in the stored bytes of ``doc``'s snapshot (of
    ``revision``, or of its first revision found); returns (recorded hash, hash of the
    forged bytes)."""
    with Warehouse.open(warehouse) as wh:
        con = wh._connection_for_tests()
        recorded, body = con.execute(
            "SELECT s.content_hash, s.body FROM snapshots s JOIN revisions r USING "
            "(content_hash) WHERE r.doc_id = $d AND ($r IS NULL OR r.revision = $r)",
            {"d": doc, "r": revision},
        ).fetchall()[0]
        forged = bytes(body).replace(old, new)
        assert forged != bytes(body)
        con.execute(
            "UPDATE snapshots SET body = $b WHERE content_hash = $h", {"b": forged, "h": recorded}
        )
    return str(recorded), hashlib.sha256(forged).hexdigest()

"""Sightings: where (URL) and at which commit each document's bytes were seen, by which run.

A revision is written once per distinct content; a sighting is written every time known
bytes are seen at a new place, so it answers "what did this document hold at commit X?".
The other side, a document *not* seen: a listing that is not provably complete records the
live documents of its scope it lacked (table ``listing_misses``): a drift report's unseen
documents (:mod:`warehouse.unseen`).
"""

from __future__ import annotations

from typing import NamedTuple

from warehouse.clock import now
from warehouse.scopes import CURRENT_IN_SCOPE
from warehouse.snapshots import checked_body
from warehouse.store import Warehouse


class LastCommit(NamedTuple):
    doc_id: str
    commit: str


def last_commits(warehouse: Warehouse, source: str) -> list[LastCommit]:
    """Each live document of ``source`` seen at a commit, with the commit it was last seen
    at, ordered by doc_id."""
    rows = warehouse._con.execute(
        """
        SELECT s.doc_id, arg_max(s.source_commit, s.run_id) AS commit
        FROM sightings s JOIN current_revisions c USING (doc_id)
        WHERE s.doc_id LIKE $pattern AND s.source_commit <> '' AND NOT c.tombstone
        GROUP BY s.doc_id ORDER BY s.doc_id
        """,
        {"pattern": f"{source}/%"},
    ).fetchall()
    return [LastCommit(str(doc_id), str(commit)) for doc_id, commit in rows]


def digest_at_commit(warehouse: Warehouse, doc_id: str, commit: str) -> str | None:
    """The content hash of the bytes last seen for ``doc_id`` at ``commit``, if any."""
    value = warehouse._scalar(
        "SELECT content_hash FROM sightings WHERE doc_id = $doc AND source_commit = $commit "
        "ORDER BY run_id DESC LIMIT 1",
        {"doc": doc_id, "commit": commit},
    )
    return None if value is None else str(value)


def body_seen_at(warehouse: Warehouse, doc_id: str, url: str, commit: str | None) -> bytes | None:
    """The stored bytes last seen for ``doc_id`` at ``url`` and ``commit`` (None: no commit),
    if any."""
    row = warehouse._first_row(
        "SELECT s.content_hash, s.body FROM sightings g JOIN snapshots s USING (content_hash) "
        "WHERE g.doc_id = $doc AND g.source_url = $url AND g.source_commit = $commit "
        "ORDER BY g.run_id DESC LIMIT 1",
        {"doc": doc_id, "url": url, "commit": commit or ""},
    )
    if row is None:
        return None
    return checked_body(warehouse, str(row[0]), bytes(row[1]), doc_id=doc_id)


# -- documents a listing missed ------------------------------------------------------------
_RECORD_MISSES = f"""
INSERT INTO listing_misses
SELECT $run, $scope, c.doc_id, c.revision, $at
FROM {CURRENT_IN_SCOPE} c
WHERE c.scope = $scope AND NOT c.tombstone
  AND c.doc_id NOT IN (SELECT doc_id FROM _seen)
  AND NOT EXISTS (
      SELECT 1 FROM listing_misses m
      WHERE m.run_id = $run AND m.scope = $scope AND m.doc_id = c.doc_id
  )
"""


def record_misses(warehouse: Warehouse, run_id: int, scope: str) -> None:
    """The live documents of ``scope`` that the listing just ingested (the engine's ``_seen``
    table) did not contain, recorded as missed by run ``run_id``. Called for listings that
    are not complete: what they lack is not tombstoned, so without this row its absence
    would leave no trace."""
    with warehouse._transaction():
        warehouse._con.execute(_RECORD_MISSES, {"run": run_id, "scope": scope, "at": now()})

"""Unseen documents: live documents that a run listed the scope of, with a listing that is
not provably complete, without finding them (view ``run_misses``). Nothing retires them, yet
they were not there; :mod:`warehouse.drift` reports them beside what drifted, each with the
last run that saw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from warehouse.asof import Point, members_sql
from warehouse.store import Warehouse


@dataclass(frozen=True)
class UnseenRow:
    """A live document the run at the newer point listed the scope of without finding it:
    not provably gone, not seen since ``last_seen_run``. ``revision`` is its revision
    there (its last content)."""

    doc_id: str
    source: str
    kind: str
    scope: str
    revision: int
    content_hash: str
    valid_from_run: int
    last_seen_run: int
    missed_run: int

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "source": self.source,
            "kind": self.kind,
            "scope": self.scope,
            "revision": self.revision,
            "content_hash": self.content_hash,
            "valid_from_run": self.valid_from_run,
            "last_seen_run": self.last_seen_run,
            "missed_run": self.missed_run,
        }


_UNSEEN = """
WITH missed AS (SELECT doc_id, scope FROM run_misses WHERE run_id = $missed_run),
cut AS (
    SELECT r.doc_id, max(r.revision) AS revision
    FROM revisions r
    WHERE {condition} AND r.doc_id IN (SELECT doc_id FROM missed)
    GROUP BY r.doc_id
),
{members}
live AS (
    SELECT r.doc_id, r.revision, r.content_hash, r.valid_from_run, mi.scope
    FROM cut
    JOIN revisions r USING (doc_id, revision)
    JOIN missed mi USING (doc_id)
    WHERE NOT r.tombstone {member_filter}
),
finished AS (SELECT run_id FROM run_summary WHERE status <> 'unfinished')
SELECT l.doc_id, d.source, d.kind, l.scope, l.revision, l.content_hash, l.valid_from_run,
    greatest(
        l.valid_from_run,
        coalesce((
            SELECT max(p.run_id) FROM run_progress p
            WHERE p.scope = l.scope AND p.run_id < $missed_run AND p.run_id > l.valid_from_run
              AND p.run_id IN (SELECT run_id FROM finished)
              AND NOT EXISTS (
                  SELECT 1 FROM run_misses x WHERE x.run_id = p.run_id AND x.doc_id = l.doc_id
              )
        ), 0),
        coalesce((
            SELECT max(g.run_id) FROM sightings g
            WHERE g.doc_id = l.doc_id AND g.run_id < $missed_run
        ), 0)
    ) AS last_seen_run
FROM live l JOIN documents d USING (doc_id)
ORDER BY d.source, l.doc_id
"""


def unseen(
    warehouse: Warehouse, point: Point, missed_run: int, corpus: str | None = None
) -> list[UnseenRow]:
    """The documents that run ``missed_run`` (the run at ``point``) listed the scope of
    without finding them, live at ``point`` (and members of ``corpus`` there, if given),
    ordered by source and doc_id.

    Only scopes the run listed count: an entry that failed or a source left out with
    ``--only`` listed nothing, so nothing of theirs is unseen. The last run that saw a
    document is the newest of: the run that wrote its revision, a run that sighted it, and
    a finished run that listed its scope without missing it."""
    condition, params = point.condition("r", "unseen_point")
    params["missed_run"] = missed_run
    members, member_filter = "", ""
    if corpus is not None:
        sql, _ = members_sql(point, "unseen_point")
        members = f"members AS ({sql}),"
        member_filter = "AND r.doc_id IN (SELECT doc_id FROM members WHERE member)"
        params["corpus"] = corpus
    rows = warehouse._con.execute(
        _UNSEEN.format(condition=condition, members=members, member_filter=member_filter),
        params,
    ).fetchall()
    return [
        UnseenRow(
            str(doc_id),
            str(source),
            str(kind),
            str(scope),
            int(revision),
            str(digest),
            int(valid_from),
            int(last_seen),
            missed_run,
        )
        for doc_id, source, kind, scope, revision, digest, valid_from, last_seen in rows
    ]

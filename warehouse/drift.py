"""Drift between two points of the corpus: what is new, changed, gone or restored.

Pure SQL over the append-only revisions. Each document's revision at the older point is
compared with its revision at the newer point (see :mod:`warehouse.asof` for points):

=========  =================================================================
new        no content at the older point, content at the newer one
changed    content at both points, different content hashes
unchanged  content at both points, the same content hash
gone       content at the older point; at the newer one a tombstone, or (for a
           corpus) no longer a member: no entry of the manifest yields it
restored   a tombstone at the older point, content at the newer one
=========  =================================================================

Documents without content at either point (e.g. new and gone in between) are not counted.

Apart from these outcomes, a document is *unseen* at the newer point when the run there
listed its scope with a listing that is not provably complete (a comment tree smaller than
its article's ``comments_count``) and the listing lacked it: nothing retires it, yet it was
not there. It is reported with the last run that saw it (view ``run_misses``; see
:mod:`warehouse.unseen`).

Given a corpus (a manifest name), a document counts at a point only while it is a member
of that corpus there (table ``memberships``), so corpora sharing a warehouse stay apart.

A changed document of a source that declares metadata fields (``metadata``: source name →
its dotted paths, see :mod:`warehouse.changes`) is classified when drift is read, from its
two stored bodies: a change of metadata fields only (an author's profile, a field the API
added) is not counted as ``changed`` nor listed with the drifted documents; it is counted
in ``metadata_counts`` and listed in ``metadata_rows``, apart. Nothing is stored: only the
changed documents of declaring sources are read, streamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from typing import Any

from warehouse.asof import Point, members_sql, utc_iso
from warehouse.canonical import REENCODED
from warehouse.changes import Change, classify
from warehouse.errors import NotFound, PointError
from warehouse.snapshots import checked_body, stored_bodies
from warehouse.staged import build_in_stages
from warehouse.store import Warehouse
from warehouse.unseen import UnseenRow, unseen

OUTCOMES = ("new", "changed", "unchanged", "gone", "restored")
DRIFT_OUTCOMES = ("new", "changed", "gone", "restored")


@dataclass(frozen=True)
class RevisionRef:
    """One revision as a drift row shows it (``content_hash`` None for a tombstone)."""

    revision: int
    content_hash: str | None
    media_type: str | None
    valid_from_run: int
    valid_from: datetime
    tombstone_reason: str | None = None
    source_url: str | None = None
    source_commit: str | None = None

    @property
    def tombstone(self) -> bool:
        return self.content_hash is None

    def as_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "content_hash": self.content_hash,
            "tombstone": self.tombstone,
            "tombstone_reason": self.tombstone_reason,
            "media_type": self.media_type,
            "valid_from_run": self.valid_from_run,
            "valid_from": utc_iso(self.valid_from),
            "source_url": self.source_url,
            "source_commit": self.source_commit,
        }


@dataclass(frozen=True)
class DriftRow:
    """One document that drifted. ``baseline`` is the revision its new content is compared
    with: the old revision, or for a restored document its last content before it went.
    ``left_corpus`` marks a document gone because the corpus no longer yields it (its
    content may be unchanged). ``change`` is what kind of change a changed document of a
    source declaring metadata fields is (None: not classified, a content change)."""

    doc_id: str
    source: str
    kind: str
    outcome: str
    old: RevisionRef | None
    new: RevisionRef
    baseline: RevisionRef | None
    timeline: list[RevisionRef] = field(default_factory=list)
    left_corpus: bool = False
    change: Change | None = None


@dataclass(frozen=True)
class RunRef:
    run_id: int
    command: str
    manifest: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "command": self.command,
            "manifest": self.manifest,
            "status": self.status,
            "started_at": utc_iso(self.started_at),
            "finished_at": utc_iso(self.finished_at),
        }


@dataclass(frozen=True)
class Drift:
    """Counts per source and outcome, and the rows of the documents that drifted (up to
    ``limit``; ``omitted`` says how many more there were). Documents whose change is to
    metadata fields only are counted per source in ``metadata_counts`` (not in ``changed``)
    and listed in ``metadata_rows`` (up to ``limit``; ``metadata_omitted`` more)."""

    corpus: str | None
    since: Point
    until: Point
    since_run: RunRef | None
    until_run: RunRef | None
    counts: dict[str, dict[str, int]]
    rows: list[DriftRow]
    omitted: int = 0
    unseen: list[UnseenRow] = field(default_factory=list)
    metadata_counts: dict[str, int] = field(default_factory=dict)
    metadata_rows: list[DriftRow] = field(default_factory=list)
    metadata_omitted: int = 0

    @property
    def totals(self) -> dict[str, int]:
        return {k: sum(c[k] for c in self.counts.values()) for k in OUTCOMES}

    @property
    def metadata_total(self) -> int:
        """How many documents changed in metadata fields only."""
        return sum(self.metadata_counts.values())

    @property
    def found(self) -> bool:
        """True when anything is new, changed (in content), gone, restored or unseen; a
        metadata-only change is not drift."""
        totals = self.totals
        return any(totals[k] for k in DRIFT_OUTCOMES) or bool(self.unseen)


# -- choosing the points -------------------------------------------------------------------
def finished_runs(
    warehouse: Warehouse, corpus: str | None = None, started_by: datetime | None = None
) -> list[int]:
    """Ids of the runs that finished (ok or failed), newest first: of one corpus if named,
    started at or before ``started_by`` if given."""
    sql = "SELECT run_id FROM run_summary WHERE status <> 'unfinished'"
    params: dict[str, Any] = {}
    if corpus is not None:
        sql += " AND manifest_name = $corpus"
        params["corpus"] = corpus
    if started_by is not None:
        sql += " AND started_at <= $at"
        params["at"] = started_by
    rows = warehouse._con.execute(sql + " ORDER BY run_id DESC", params).fetchall()
    return [int(r) for (r,) in rows]


def refreshed_corpora(warehouse: Warehouse) -> list[str]:
    """The corpora (manifest names) that have a finished run, by name."""
    rows = warehouse._con.execute(
        "SELECT DISTINCT manifest_name FROM run_summary WHERE status <> 'unfinished' "
        "AND manifest_name IS NOT NULL ORDER BY 1"
    ).fetchall()
    return [str(name) for (name,) in rows]


def default_points(
    warehouse: Warehouse,
    corpus: str | None = None,
    since: Point | None = None,
    until: Point | None = None,
) -> tuple[Point, Point]:
    """Fill in what was not given: ``until`` is the newest finished run, ``since`` the
    finished run before ``until`` (or before the first run when there is none)."""
    if until is None:
        runs = finished_runs(warehouse, corpus)
        if not runs:
            whose = f" of corpus {corpus!r}" if corpus else ""
            raise NotFound(f"no finished run{whose} in {warehouse.location}; nothing to compare")
        until = Point(run_id=runs[0])
    if since is None:
        if until.run_id is not None:
            earlier = [r for r in finished_runs(warehouse, corpus) if r < until.run_id]
        else:
            # the newest run started by the instant is the one it shows; compare with the one before
            earlier = finished_runs(warehouse, corpus, started_by=until.at)[1:]
        since = Point(run_id=earlier[0]) if earlier else Point.before_any_run()
    return since, until


def run_ref(warehouse: Warehouse, point: Point, corpus: str | None = None) -> RunRef | None:
    """The run a point is; for an instant, the newest run (of the corpus) started by then."""
    params: dict[str, Any]
    if point.run_id is not None:
        where, params = "run_id = $r", {"r": point.run_id}
    else:
        where, params = "started_at <= $at", {"at": point.at}
        if corpus is not None:
            where += " AND manifest_name = $corpus"
            params["corpus"] = corpus
    row = warehouse._first_row(
        "SELECT run_id, command, manifest_name, status, started_at, finished_at "
        f"FROM run_summary WHERE {where} ORDER BY run_id DESC LIMIT 1",
        params,
    )
    return None if row is None else RunRef(int(row[0]), *row[1:])


# -- the comparison ------------------------------------------------------------------------
# The comparison, in stages (see warehouse.staged): each aggregate or join is written to a
# temporary table of its own, so that no statement holds more than one hash table. In one
# statement, the comparison ran out of memory under the default limit on the 1.5 million
# documents of a two-million-row backfill.
_CUT = "SELECT r.doc_id, max(r.revision) AS revision FROM revisions r WHERE {condition} GROUP BY 1"

_PAIRS = """
SELECT coalesce(n.doc_id, o.doc_id) AS doc_id, o.revision AS old_rev, n.revision AS new_rev
FROM _drift_new_cut n FULL OUTER JOIN _drift_old_cut o ON o.doc_id = n.doc_id
"""

_WITH_DOCUMENT = """
SELECT p.*, d.source, d.kind FROM _drift_pairs p JOIN documents d ON d.doc_id = p.doc_id
"""

# A revision is compared by its value: one that only re-encodes its document (canonical form
# v1 -> RFC 8785, reason REENCODED) holds the value of the revision before it, and is
# compared by that revision's hash (the one before a re-encoding is never one itself). The
# re-encodings are few: their table is small, and so is each join's hash table on it.
_REENCODED = f"""
SELECT r.doc_id, r.revision, p.content_hash AS value_hash
FROM revisions r JOIN revisions p ON p.doc_id = r.doc_id AND p.revision = r.revision - 1
WHERE r.tombstone_reason = '{REENCODED}'
"""

_WITH_OLD = """
SELECT p.*, coalesce(ro.tombstone, false) AS old_dead,
       coalesce(e.value_hash, ro.content_hash) AS old_hash
FROM _drift_documents p
LEFT JOIN revisions ro ON ro.doc_id = p.doc_id AND ro.revision = p.old_rev
LEFT JOIN _drift_reencoded e ON e.doc_id = p.doc_id AND e.revision = p.old_rev
"""

_WITH_NEW = """
SELECT p.*, coalesce(rn.tombstone, false) AS new_dead,
       coalesce(e.value_hash, rn.content_hash) AS new_hash
FROM _drift_old p
LEFT JOIN revisions rn ON rn.doc_id = p.doc_id AND rn.revision = p.new_rev
LEFT JOIN _drift_reencoded e ON e.doc_id = p.doc_id AND e.revision = p.new_rev
"""

_JUDGED = """
WITH {members}
compared AS (
    SELECT p.doc_id, p.source, p.kind, p.old_rev, p.new_rev, p.old_dead, p.new_dead,
           p.old_hash, p.new_hash, {in_old} AS in_old, {in_new} AS in_new
    FROM _drift_new p
    {member_joins}
),
judged AS (
    SELECT *,
        in_old AND old_rev IS NOT NULL AND NOT old_dead AS old_live,
        in_new AND new_rev IS NOT NULL AND NOT new_dead AS new_live
    FROM compared
)
SELECT * EXCLUDE (old_live, new_live),
    CASE
        WHEN old_live AND new_live AND old_hash = new_hash THEN 'unchanged'
        WHEN old_live AND new_live THEN 'changed'
        WHEN old_live THEN 'gone'
        WHEN new_live AND old_dead THEN 'restored'
        WHEN new_live THEN 'new'
    END AS outcome,
    old_live AND NOT new_live AND NOT new_dead AS left_corpus
FROM judged
"""

_MEMBER_JOINS = (
    "LEFT JOIN old_members om ON om.doc_id = p.doc_id "
    "LEFT JOIN new_members nm ON nm.doc_id = p.doc_id"
)

_OUTCOME_ORDER = "CASE outcome " + " ".join(
    f"WHEN '{name}' THEN {rank}" for rank, name in enumerate(OUTCOMES)
)

_DRIFTED = "outcome IN (" + ", ".join(f"'{name}'" for name in DRIFT_OUTCOMES) + ")"

_REVISION_COLUMNS = (
    "r.revision, r.content_hash, s.media_type, r.valid_from_run, r.valid_from, "
    "r.tombstone_reason, r.source_url, nullif(r.source_commit, '')"
)


def _ref(row: tuple[Any, ...]) -> RevisionRef:
    return RevisionRef(int(row[0]), row[1], row[2], int(row[3]), row[4], row[5], row[6], row[7])


def _histories(warehouse: Warehouse, doc_ids: list[str]) -> dict[str, list[RevisionRef]]:
    """Every revision of the drifted documents up to their new revision, oldest first."""
    out: dict[str, list[RevisionRef]] = {d: [] for d in doc_ids}
    if not doc_ids:
        return out
    rows = warehouse._con.execute(
        f"""
        SELECT r.doc_id, {_REVISION_COLUMNS}
        FROM revisions r
        JOIN _drift t ON t.doc_id = r.doc_id
        LEFT JOIN snapshots s ON s.content_hash = r.content_hash
        WHERE r.doc_id IN (SELECT unnest($docs::VARCHAR[])) AND r.revision <= t.new_rev
        QUALIFY row_number() OVER (PARTITION BY r.doc_id, r.revision) = 1
        ORDER BY r.doc_id, r.revision
        """,
        {"docs": doc_ids},
    ).fetchall()
    for row in rows:
        out[str(row[0])].append(_ref(row[1:]))
    return out


def _drift_row(
    doc_id: str,
    source: str,
    kind: str,
    outcome: str,
    old_rev: int | None,
    left_corpus: bool,
    history: list[RevisionRef],
    change: Change | None = None,
) -> DriftRow:
    by_number = {ref.revision: ref for ref in history}
    old = by_number.get(old_rev) if old_rev is not None else None
    baseline = old
    if outcome == "restored" and old is not None:
        earlier = [r for r in history if r.revision < old.revision and not r.tombstone]
        baseline = earlier[-1] if earlier else None
    first = 1 if old is None else min(r.revision for r in (baseline, old) if r is not None)
    timeline = [r for r in history if r.revision >= first]
    new = history[-1]
    return DriftRow(
        doc_id, source, kind, outcome, old, new, baseline, timeline, left_corpus, change
    )


def _check_order(since: Point, until: Point) -> None:
    later = (
        since.run_id is not None and until.run_id is not None and since.run_id > until.run_id
    ) or (since.at is not None and until.at is not None and since.at > until.at)
    if later:
        raise PointError(f"{since.label} is after {until.label}; nothing to compare")


def compare(
    warehouse: Warehouse,
    since: Point,
    until: Point,
    *,
    corpus: str | None = None,
    limit: int | None = None,
    metadata: Mapping[str, Sequence[str]] | None = None,
) -> Drift:
    """The drift of the corpus (every document, or those of ``corpus``) from ``since`` to
    ``until``: counts per source, and up to ``limit`` drifted documents ordered by source,
    outcome and doc_id, each with its timeline of revisions. The changed documents of the
    sources in ``metadata`` (source name → metadata field patterns) are classified; those
    changed in metadata fields only are counted and listed apart."""
    _check_order(since, until)
    old, old_params = since.condition("r", "old_point")
    new, new_params = until.condition("r", "new_point")
    params = {**old_params, **new_params}
    parts = {"members": "", "in_old": "true", "in_new": "true", "member_joins": ""}
    if corpus is not None:
        old_members, _ = members_sql(since, "old_point")
        new_members, _ = members_sql(until, "new_point")
        parts = {
            "members": f"old_members AS ({old_members}), new_members AS ({new_members}),",
            "in_old": "coalesce(om.member, false)",
            "in_new": "coalesce(nm.member, false)",
            "member_joins": _MEMBER_JOINS,
        }
        params["corpus"] = corpus
    con = warehouse._con
    build_in_stages(
        warehouse,
        [
            ("_drift_old_cut", _CUT.format(condition=old), old_params),
            ("_drift_new_cut", _CUT.format(condition=new), new_params),
            ("_drift_pairs", _PAIRS, {}),
            ("_drift_documents", _WITH_DOCUMENT, {}),
            ("_drift_reencoded", _REENCODED, {}),
            ("_drift_old", _WITH_OLD, {}),
            ("_drift_new", _WITH_NEW, {}),
            ("_drift", _JUDGED.format(**parts), params if corpus is not None else {}),
        ],
    )
    changes = _classified(warehouse, metadata or {})
    metadata_only = sorted(d for d, c in changes.items() if c.metadata_only)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _drift_metadata AS SELECT unnest($ids::VARCHAR[]) AS doc_id",
        {"ids": metadata_only},
    )
    counts: dict[str, dict[str, int]] = {}
    for source, outcome, n in con.execute(
        "SELECT source, outcome, count(*) FROM _drift WHERE outcome IS NOT NULL "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall():
        counts.setdefault(str(source), dict.fromkeys(OUTCOMES, 0))[str(outcome)] = int(n)
    metadata_counts: dict[str, int] = {}
    for source, n in con.execute(
        "SELECT source, count(*) FROM _drift SEMI JOIN _drift_metadata USING (doc_id) "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall():
        metadata_counts[str(source)] = int(n)
        counts[str(source)]["changed"] -= int(n)
    content = f"{_DRIFTED} AND doc_id NOT IN (SELECT doc_id FROM _drift_metadata)"
    drifted = int(warehouse._scalar(f"SELECT count(*) FROM _drift WHERE {content}"))
    rows = _listed(warehouse, content, limit, changes)
    metadata_rows = _listed(
        warehouse, "doc_id IN (SELECT doc_id FROM _drift_metadata)", limit, changes
    )
    until_run = run_ref(warehouse, until, corpus)
    return Drift(
        corpus=corpus,
        since=since,
        until=until,
        since_run=run_ref(warehouse, since, corpus),
        until_run=until_run,
        counts=counts,
        rows=rows,
        omitted=drifted - len(rows),
        unseen=[] if until_run is None else unseen(warehouse, until, until_run.run_id, corpus),
        metadata_counts=metadata_counts,
        metadata_rows=metadata_rows,
        metadata_omitted=len(metadata_only) - len(metadata_rows),
    )


def _listed(
    warehouse: Warehouse, condition: str, limit: int | None, changes: Mapping[str, Change]
) -> list[DriftRow]:
    """The rows of ``_drift`` that meet ``condition``, up to ``limit``, ordered by source,
    outcome and doc_id, each with its history."""
    limit_sql = "" if limit is None else f" LIMIT {int(limit)}"
    listed = warehouse._con.execute(
        f"SELECT doc_id, source, kind, outcome, old_rev, left_corpus FROM _drift "
        f"WHERE {condition} ORDER BY source, {_OUTCOME_ORDER} END, doc_id{limit_sql}"
    ).fetchall()
    histories = _histories(warehouse, [str(r[0]) for r in listed])
    return [
        _drift_row(
            doc_id,
            source,
            kind,
            outcome,
            old_rev,
            bool(left),
            histories[doc_id],
            changes.get(doc_id),
        )
        for doc_id, source, kind, outcome, old_rev, left in listed
    ]


# The changed documents of the declaring sources, then each one's two stored bodies as two
# rows (side 0 the old, 1 the new), staged (see warehouse.staged) and read back
# CLASSIFY_CHUNK documents at a time in doc_id order: no statement holds every body at once
# (one aggregate, or one sort, over the bodies of 200,000 changed documents ran out of
# memory under the default limit).
CLASSIFY_CHUNK = 5_000
_CHANGED_PAIRS = """
SELECT doc_id, source, old_hash, new_hash FROM _drift
WHERE outcome = 'changed' AND source IN (SELECT unnest($sources::VARCHAR[]))
"""
_PAIR_BODIES = """
SELECT p.doc_id, p.source, p.side, p.content_hash, s.body
FROM snapshots s JOIN (
    SELECT doc_id, source, 0 AS side, old_hash AS content_hash FROM _drift_changed
    UNION ALL
    SELECT doc_id, source, 1 AS side, new_hash AS content_hash FROM _drift_changed
) p ON p.content_hash = s.content_hash
"""
_CHUNK_BODIES = """
SELECT doc_id, source, side, content_hash, body FROM _drift_pair_bodies
WHERE doc_id BETWEEN $first AND $last ORDER BY doc_id, side
"""


def _classified(warehouse: Warehouse, metadata: Mapping[str, Sequence[str]]) -> dict[str, Change]:
    """The kind of change of every changed document of the sources that declare metadata
    fields, from the stored bodies of its two revisions, each checked against its hash."""
    declared = sorted(name for name, patterns in metadata.items() if patterns)
    if not declared:
        return {}
    build_in_stages(
        warehouse,
        [
            ("_drift_changed", _CHANGED_PAIRS, {"sources": declared}),
            ("_drift_pair_bodies", _PAIR_BODIES, {}),
        ],
    )
    con = warehouse._con
    doc_ids = [
        str(d)
        for (d,) in con.execute(
            "SELECT DISTINCT doc_id FROM _drift_pair_bodies ORDER BY doc_id"
        ).fetchall()
    ]
    out: dict[str, Change] = {}
    for start in range(0, len(doc_ids), CLASSIFY_CHUNK):
        chunk = doc_ids[start : start + CLASSIFY_CHUNK]
        rows = con.execute(_CHUNK_BODIES, {"first": chunk[0], "last": chunk[-1]}).fetchall()
        for doc_id, group in groupby(rows, key=lambda row: str(row[0])):
            bodies: dict[int, bytes] = {}
            sources: set[str] = set()
            for _, source, side, content_hash, body in group:
                sources.add(str(source))
                if side not in bodies:  # a snapshot stored twice holds the same bytes
                    bodies[side] = checked_body(warehouse, content_hash, bytes(body), doc_id=doc_id)
            if len(bodies) == 2:
                out[doc_id] = classify(bodies[0], bodies[1], metadata[sources.pop()])
    con.execute("DROP TABLE IF EXISTS _drift_pair_bodies")
    return out


def corpora_of(warehouse: Warehouse, doc_ids: list[str], point: Point) -> dict[str, list[str]]:
    """The corpora each document was a member of at ``point`` (each corpus's latest
    membership event by then, as :func:`warehouse.asof.members_sql` decides); for a
    document that was a member of none then, the corpora it had left. Sorted names; a
    document that never joined any corpus is left out."""
    if not doc_ids:
        return {}
    condition, params = point.condition("m", "point", "run_id", "recorded_at")
    rows = warehouse._con.execute(
        f"""
        SELECT m.doc_id, m.corpus, m.event = 'joined' AS member FROM memberships m
        WHERE m.doc_id IN (SELECT unnest($doc_ids)) AND {condition}
        QUALIFY row_number() OVER (
            PARTITION BY m.doc_id, m.corpus ORDER BY m.run_id DESC, m.event) = 1
        ORDER BY m.doc_id, m.corpus
        """,
        {**params, "doc_ids": sorted(set(doc_ids))},
    ).fetchall()
    members: dict[str, list[str]] = {}
    former: dict[str, list[str]] = {}
    for doc_id, corpus, member in rows:
        (members if member else former).setdefault(str(doc_id), []).append(str(corpus))
    return {doc_id: members.get(doc_id) or former[doc_id] for doc_id in {*members, *former}}


def snapshot_bodies(
    warehouse: Warehouse, hashes: list[str], doc_id: str | None = None
) -> dict[str, tuple[str, bytes]]:
    """The stored bytes (and media type) of each content hash, in one query, each checked
    against its hash (:class:`SnapshotCorrupted` names ``doc_id``'s revision, or any
    revision, holding a corrupted one)."""
    return {
        h: (m, checked_body(warehouse, h, b, doc_id=doc_id))
        for h, (m, b) in stored_bodies(warehouse, hashes).items()
    }

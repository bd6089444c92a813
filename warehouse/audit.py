"""Read-only questions about the warehouse: the run ledger, a document's history, its bytes,
and whether every stored snapshot still hashes to its address."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from warehouse.asof import utc_iso
from warehouse.digests import Progress
from warehouse.errors import NotFound
from warehouse.snapshots import checked_body
from warehouse.store import Warehouse


def _json_or_none(value: Any) -> Any:
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else value


def runs(
    warehouse: Warehouse, limit: int | None = None, active_run: int | None = None
) -> list[dict[str, Any]]:
    """The run ledger, newest first.

    A run with no 'finished' row is ``interrupted`` unless it is ``active_run`` (the run of
    this process): whoever opened a DuckDB file holds its only writer, so no other run can
    still be going. On a lake, the newest unfinished run of a corpus whose lock is held is
    ``running``.
    """
    sql = (
        "SELECT run_id, command, manifest_name, manifest_hash, status, started_at, finished_at, "
        "pid, host, resumes_run, counts, failures, warnings FROM run_summary ORDER BY run_id DESC"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    rows = warehouse._con.execute(sql).fetchall()
    out = []
    considered: set[str] = set()
    for row in rows:
        (run_id, command, name, mhash, status, started, finished, pid, host, resumes) = row[:10]
        out.append(
            {
                "run_id": int(run_id),
                "command": command,
                "manifest": name,
                "manifest_hash": mhash,
                "status": _status(warehouse, status, run_id == active_run, name, considered),
                "started_at": _iso(started),
                "finished_at": _iso(finished),
                "pid": pid,
                "host": host,
                "resumes_run": resumes,
                "counts": _json_or_none(row[10]) or {},
                "failures": _json_or_none(row[11]) or [],
                "warnings": _json_or_none(row[12]) or [],
            }
        )
    return out


def _status(
    warehouse: Warehouse, status: str, active: bool, manifest: str | None, considered: set[str]
) -> str:
    """An unfinished run is going on (this process's; or, on a lake, the newest unfinished
    run of a corpus whose lock is held) or was interrupted."""
    if status != "unfinished" or active:
        return status
    if manifest is None or manifest in considered:
        return "interrupted"
    considered.add(manifest)
    return "running" if warehouse.corpus_running(manifest) else "interrupted"


def _iso(value: datetime | None) -> str | None:
    """A ledger timestamp as ISO-8601 UTC with ``Z``, to the microsecond."""
    return utc_iso(value)


def _id_key(doc_id: str) -> str:
    """A doc id as compared for suggestions: lowercased, without ``/ _ - .``."""
    return _SEPARATORS.sub("", doc_id.lower())


_SEPARATORS = re.compile(r"[/_.\-]")
SUGGESTION_CANDIDATES = 200


def similar_doc_ids(warehouse: Warehouse, doc_id: str, n: int = 3) -> list[str]:
    """Up to ``n`` existing doc ids closest to ``doc_id``, closest first, ignoring case and
    the separators ``/ _ - .``: DuckDB ranks every id by Jaro-Winkler similarity, then
    :func:`difflib.get_close_matches` picks among the best :data:`SUGGESTION_CANDIDATES`."""
    key = _id_key(doc_id)
    rows = warehouse._con.execute(
        """
        SELECT doc_id FROM documents
        ORDER BY jaro_winkler_similarity(
            regexp_replace(lower(doc_id), '[-/_.]', '', 'g'), $key) DESC, doc_id
        LIMIT $n
        """,
        {"key": key, "n": SUGGESTION_CANDIDATES},
    ).fetchall()
    by_key: dict[str, str] = {}
    for (candidate,) in rows:
        by_key.setdefault(_id_key(str(candidate)), str(candidate))
    return [by_key[k] for k in difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.6)]


def unknown_document(warehouse: Warehouse, doc_id: str) -> NotFound:
    """The error for a doc id the warehouse does not hold, naming the closest ones."""
    similar = similar_doc_ids(warehouse, doc_id)
    listed = " or ".join([", ".join(similar[:-1]), similar[-1]] if len(similar) > 1 else similar)
    closest = f"; did you mean {listed}?" if similar else ""
    error = NotFound(f"no document {doc_id!r} in {warehouse.location}{closest}")
    error.hint = "`receipts ls` lists the documents; `receipts search TEXT` finds them by text"
    return error


def history(warehouse: Warehouse, doc_id: str) -> list[dict[str, Any]]:
    """Every revision of a document, oldest first, with provenance and where it was seen."""
    rows = warehouse._con.execute(
        """
        SELECT revision, content_hash, tombstone, tombstone_reason, valid_from_run, valid_from,
               valid_until_run, valid_until, is_current, scope, source_url, source_commit,
               source_format, fetched_at, etag, last_modified, attributes
        FROM revision_validity WHERE doc_id = $doc ORDER BY revision
        """,
        {"doc": doc_id},
    ).fetchall()
    if not rows:
        raise unknown_document(warehouse, doc_id)
    sightings: dict[str, list[dict[str, Any]]] = {}
    for content_hash, url, commit, run_id, fetched_at in warehouse._con.execute(
        "SELECT content_hash, source_url, source_commit, run_id, fetched_at FROM sightings "
        "WHERE doc_id = $doc ORDER BY run_id, source_commit, source_url",
        {"doc": doc_id},
    ).fetchall():
        sightings.setdefault(content_hash, []).append(
            {"url": url, "commit": commit or None, "run_id": run_id, "fetched_at": _iso(fetched_at)}
        )
    out = []
    for r in rows:
        out.append(
            {
                "revision": r[0],
                "content_hash": r[1],
                "tombstone": r[2],
                "tombstone_reason": r[3],
                "valid_from_run": r[4],
                "valid_from": _iso(r[5]),
                "valid_until_run": r[6],
                "valid_until": _iso(r[7]),
                "current": r[8],
                "scope": r[9],
                "provenance": {
                    "url": r[10],
                    "commit": r[11],
                    "source_format": r[12],
                    "fetched_at": _iso(r[13]),
                    "etag": r[14],
                    "last_modified": r[15],
                },
                "attributes": _json_or_none(r[16]),
                "seen_at": sightings.get(r[1], []) if r[1] else [],
            }
        )
    return out


@dataclass(frozen=True)
class Snapshot:
    doc_id: str
    revision: int
    content_hash: str
    media_type: str
    body: bytes


def snapshot(
    warehouse: Warehouse,
    doc_id: str,
    revision: int | None = None,
    content_hash: str | None = None,
) -> Snapshot:
    """The stored bytes of one revision: the current one unless a revision or hash is named."""
    revisions = history(warehouse, doc_id)
    if revision is not None:
        chosen = [r for r in revisions if r["revision"] == revision]
        what = f"revision {revision}"
    elif content_hash is not None:
        chosen = [r for r in revisions if (r["content_hash"] or "").startswith(content_hash)]
        what = f"hash {content_hash}"
    else:
        chosen = revisions[-1:]
        what = "a current revision"
    if not chosen:
        raise NotFound(f"{doc_id} has no {what}; it has revisions 1..{len(revisions)}")
    if len(chosen) > 1 and content_hash is not None:
        distinct = {r["content_hash"] for r in chosen}
        if len(distinct) > 1:
            raise NotFound(f"hash prefix {content_hash!r} is ambiguous for {doc_id}")
    picked = chosen[-1]
    if picked["tombstone"]:
        raise NotFound(
            f"{doc_id} revision {picked['revision']} is a tombstone "
            f"({picked['tombstone_reason']}); it has no bytes"
        )
    row = warehouse._first_row(
        "SELECT media_type, body FROM snapshots WHERE content_hash = $h LIMIT 1",
        {"h": picked["content_hash"]},
    )
    if row is None:
        raise NotFound(f"snapshot {picked['content_hash']} of {doc_id} is missing")
    body = checked_body(
        warehouse,
        picked["content_hash"],
        bytes(row[1]),
        doc_id=doc_id,
        revision=picked["revision"],
    )
    return Snapshot(doc_id, picked["revision"], picked["content_hash"], row[0], body)


@dataclass(frozen=True)
class VerifyResult:
    """``mismatches``: snapshots whose bytes do not hash to their address (or are missing);
    ``problems``: revisions that disagree with their snapshot or their provenance, each
    ``{"check", "doc_id", "revision", "message"}``."""

    checked: int
    mismatches: list[dict[str, str]]
    problems: list[dict[str, Any]]

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.problems


class StoredSnapshot(NamedTuple):
    content_hash: str
    body: bytes


def iter_snapshots(warehouse: Warehouse, chunk: int = 1000) -> Iterator[StoredSnapshot]:
    """Every stored snapshot, in no particular order, streamed ``chunk`` at a time."""
    cursor = warehouse._con.cursor()
    cursor.execute("SELECT content_hash, body FROM snapshots")
    while True:
        rows = cursor.fetchmany(chunk)
        if not rows:
            cursor.close()
            return
        for content_hash, body in rows:
            yield StoredSnapshot(str(content_hash), bytes(body))


class RevisionRow(NamedTuple):
    doc_id: str
    revision: int
    content_hash: str | None  # None for a tombstone
    tombstone: bool
    tombstone_reason: str | None
    valid_from_run: int
    source_format: str | None


def revisions(warehouse: Warehouse, *, current: bool = False) -> list[RevisionRow]:
    """Every revision of every document (only the current ones with ``current``), ordered
    by doc_id and revision."""
    table = "current_revisions" if current else "revisions"
    rows = warehouse._con.execute(
        "SELECT doc_id, revision, content_hash, tombstone, tombstone_reason, valid_from_run, "
        f"source_format FROM {table} ORDER BY doc_id, revision"
    ).fetchall()
    return [RevisionRow._make(row) for row in rows]


def verify(warehouse: Warehouse, progress: Progress | None = None) -> VerifyResult:
    """Recompute every snapshot's SHA-256 from its stored bytes; ``progress(step, done,
    total)`` hears of every 1,000 snapshots checked and of the revision checks."""
    checked = 0
    mismatches = []
    total = int(warehouse._scalar("SELECT count(*) FROM snapshots") or 0)
    for content_hash, body in iter_snapshots(warehouse):
        checked += 1
        actual = hashlib.sha256(body).hexdigest()
        if actual != content_hash:
            mismatches.append({"content_hash": content_hash, "actual": actual})
        if progress is not None and (checked % 1000 == 0 or checked == total):
            progress("snapshots hashed", checked, total)
    revisions = int(warehouse._scalar("SELECT count(*) FROM revisions") or 0)
    if progress is not None:
        progress("revisions checked", 0, revisions)
    dangling = warehouse._con.execute(
        "SELECT DISTINCT r.content_hash FROM revisions r WHERE r.content_hash IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.content_hash = r.content_hash)"
    ).fetchall()
    for (content_hash,) in dangling:
        mismatches.append({"content_hash": str(content_hash), "actual": "missing"})
    problems = _revision_problems(warehouse)
    if progress is not None:
        progress("revisions checked", revisions, revisions)
    return VerifyResult(checked, mismatches, problems)


def _problem(check: str, doc_id: str | None, revision: int | None, message: str) -> dict[str, Any]:
    return {"check": check, "doc_id": doc_id, "revision": revision, "message": message}


def _revision_problems(warehouse: Warehouse) -> list[dict[str, Any]]:
    """What the ledger says that its own rows contradict:

    - a snapshot whose recorded size is not the length of its bytes;
    - a (doc_id, revision) written more than once;
    - a revision whose snapshot was never seen for that document at the URL and commit its
      provenance names (every ingest records that sighting with the revision), e.g. one
      re-pointed at another document's snapshot;
    - a revision pointing at a snapshot first stored by a later run.
    """
    con = warehouse._con
    problems = []
    for content_hash, size, actual in con.execute(
        "SELECT content_hash, size, octet_length(body) FROM snapshots "
        "WHERE size <> octet_length(body) ORDER BY content_hash"
    ).fetchall():
        problems.append(
            _problem(
                "size",
                None,
                None,
                f"snapshot {content_hash} records a size of {size} bytes but holds {actual}",
            )
        )
    for doc_id, revision, copies in con.execute(
        "SELECT doc_id, revision, count(*) FROM revisions GROUP BY doc_id, revision "
        "HAVING count(*) > 1 ORDER BY doc_id, revision"
    ).fetchall():
        problems.append(
            _problem(
                "duplicate",
                str(doc_id),
                int(revision),
                f"{doc_id} revision {revision} is recorded {copies} times",
            )
        )
    for doc_id, revision, content_hash, url, commit, seen_by in con.execute(
        """
        SELECT r.doc_id, r.revision, r.content_hash, r.source_url, r.source_commit,
               (SELECT string_agg(DISTINCT g.doc_id, ', ' ORDER BY g.doc_id) FROM sightings g
                WHERE g.content_hash = r.content_hash)
        FROM revisions r
        WHERE NOT r.tombstone AND r.content_hash IS NOT NULL AND r.source_url IS NOT NULL
          AND NOT EXISTS (
            SELECT 1 FROM sightings g
            WHERE g.doc_id = r.doc_id AND g.content_hash = r.content_hash
              AND g.source_url = r.source_url
              AND g.source_commit = coalesce(r.source_commit, '')
          )
        ORDER BY r.doc_id, r.revision
        """
    ).fetchall():
        at = f" @ {commit}" if commit else ""
        others = f"; it was seen as {seen_by}" if seen_by else ""
        problems.append(
            _problem(
                "provenance",
                str(doc_id),
                int(revision),
                f"{doc_id} revision {revision} points to snapshot {content_hash}, which was "
                f"never seen for {doc_id} at {url}{at}{others}",
            )
        )
    for doc_id, revision, content_hash, run, stored in con.execute(
        """
        SELECT r.doc_id, r.revision, r.content_hash, r.valid_from_run, min(s.stored_run)
        FROM revisions r JOIN snapshots s USING (content_hash)
        GROUP BY ALL HAVING min(s.stored_run) > r.valid_from_run
        ORDER BY r.doc_id, r.revision
        """
    ).fetchall():
        problems.append(
            _problem(
                "order",
                str(doc_id),
                int(revision),
                f"{doc_id} revision {revision} (run {run}) points to snapshot {content_hash}, "
                f"first stored by the later run {stored}",
            )
        )
    return problems

"""A document's history read back: the run ledger, a document's revisions, the bytes of one
revision, and every revision of the warehouse in order. Whether the stored bytes still hash
to their addresses is :mod:`warehouse.integrity`'s question."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from warehouse.asof import utc_iso
from warehouse.errors import NotFound
from warehouse.row_hints import source
from warehouse.runs import committed_counts, interruptions, observed_warnings
from warehouse.snapshots import checked_body
from warehouse.store import Warehouse
from warehouse.tlog.check import check_revisions
from warehouse.tlog.store import has_log


def json_or_none(value: Any) -> Any:
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
    ``running``. The counts of an unfinished run are those of its committed batches.
    """
    sql = (
        "SELECT run_id, command, manifest_name, manifest_hash, status, started_at, finished_at, "
        "pid, host, resumes_run, counts, failures, warnings FROM run_summary ORDER BY run_id DESC"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    rows = warehouse._con.execute(sql).fetchall()
    observed = observed_warnings(warehouse)
    stopped, so_far = interruptions(warehouse), committed_counts(warehouse)
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
                "started_at": utc_iso(started),
                "finished_at": utc_iso(finished),
                "pid": pid,
                "host": host,
                "resumes_run": resumes,
                "counts": json_or_none(row[10]) or {},
                "failures": json_or_none(row[11]) or [],
                "warnings": (json_or_none(row[12]) or []) + observed.get(int(run_id), []),
            }
        )
        if status == "unfinished":  # what it committed so far; when a signal stopped it
            out[-1]["counts"] = so_far.get(int(run_id), {})
            if int(run_id) in stopped:
                stop = stopped[int(run_id)]
                out[-1].update(status="interrupted", finished_at=utc_iso(stop["recorded_at"]))
                out[-1]["failures"] = stop["failures"]
                out[-1]["warnings"] = stop["warnings"] + out[-1]["warnings"]
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
    # revision_validity's window over this document's rows (its partition), read through
    # their row hints
    revisions = source(warehouse, "revisions", doc_id)
    rows = warehouse._con.execute(
        f"""
        SELECT revision, content_hash, tombstone, tombstone_reason, valid_from_run, valid_from,
               lead(valid_from_run) OVER w, lead(valid_from) OVER w, lead(revision) OVER w IS NULL,
               scope, source_url, source_commit, source_format, fetched_at, etag, last_modified,
               attributes
        FROM (SELECT * FROM {revisions} WHERE doc_id = $doc)
        WINDOW w AS (ORDER BY revision) ORDER BY revision
        """,
        {"doc": doc_id},
    ).fetchall()
    if not rows:
        raise unknown_document(warehouse, doc_id)
    hashes = sorted({str(r[1]) for r in rows if r[1] is not None})
    forms: dict[str, str] = {}
    if hashes:
        forms = dict(
            warehouse._con.execute(
                "SELECT content_hash, min(canonical_form) "
                f"FROM {source(warehouse, 'snapshot_forms', hashes)} "
                "WHERE content_hash IN (SELECT unnest($h)) GROUP BY content_hash",
                {"h": hashes},
            ).fetchall()
        )
    sightings: dict[str, list[dict[str, Any]]] = {}
    for content_hash, url, commit, run_id, fetched_at in warehouse._con.execute(
        "SELECT content_hash, source_url, source_commit, run_id, fetched_at "
        f"FROM {source(warehouse, 'sightings', doc_id)} "
        "WHERE doc_id = $doc ORDER BY run_id, source_commit, source_url",
        {"doc": doc_id},
    ).fetchall():
        sightings.setdefault(content_hash, []).append(
            {
                "url": url,
                "commit": commit or None,
                "run_id": run_id,
                "fetched_at": utc_iso(fetched_at),
            }
        )
    out = []
    for r in rows:
        out.append(
            {
                "revision": r[0],
                "content_hash": r[1],
                "tombstone": r[2],
                "tombstone_reason": r[3] if r[2] else None,
                # why the revision was written, where it says: a tombstone's reason, or
                # REENCODED for one that only re-encodes the value before it
                "reason": r[3],
                "canonical_form": forms.get(r[1]) if r[1] else None,
                "valid_from_run": r[4],
                "valid_from": utc_iso(r[5]),
                "valid_until_run": r[6],
                "valid_until": utc_iso(r[7]),
                "current": r[8],
                "scope": r[9],
                "provenance": {
                    "url": r[10],
                    "commit": r[11],
                    "source_format": r[12],
                    "fetched_at": utc_iso(r[13]),
                    "etag": r[14],
                    "last_modified": r[15],
                },
                "attributes": json_or_none(r[16]),
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


def missing_snapshot(doc_id: str, content_hash: str) -> NotFound:
    """The error for a revision whose snapshot row is gone (``show``, ``diff``)."""
    return NotFound(f"snapshot {content_hash} of {doc_id} is missing")


def revision_pair_bodies(
    warehouse: Warehouse, doc_id: str, old: dict[str, Any], new: dict[str, Any]
) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """The media type and checked bytes of two revisions of ``doc_id`` (rows of
    :func:`history`), read in one query (``diff``, the web view's diff page); a revision
    whose bytes are gone raises :func:`missing_snapshot`, as ``show`` does."""
    from warehouse.drift import snapshot_bodies

    bodies = snapshot_bodies(warehouse, [old["content_hash"], new["content_hash"]], doc_id)
    for rev in (old, new):
        if rev["content_hash"] not in bodies:
            raise missing_snapshot(doc_id, rev["content_hash"])
    return bodies[old["content_hash"]], bodies[new["content_hash"]]


def snapshot(
    warehouse: Warehouse,
    doc_id: str,
    revision: int | None = None,
    content_hash: str | None = None,
    revisions: list[dict[str, Any]] | None = None,
) -> Snapshot:
    """The stored bytes of one revision: the current one unless a revision or hash is named
    (``revisions``: the document's :func:`history`, when the caller has read it already)."""
    if revisions is None:
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
    if has_log(warehouse._con):  # refuses a revision whose rows disagree with its log entry
        check_revisions(warehouse, [(doc_id, int(picked["revision"]))])
    if picked["tombstone"]:
        raise NotFound(
            f"{doc_id} revision {picked['revision']} is a tombstone "
            f"({picked['tombstone_reason']}); it has no bytes"
        )
    snapshots = source(warehouse, "snapshots", picked["content_hash"])
    row = warehouse._first_row(
        f"SELECT media_type, body FROM {snapshots} WHERE content_hash = $h LIMIT 1",
        {"h": picked["content_hash"]},
    )
    if row is None:
        raise missing_snapshot(doc_id, picked["content_hash"])
    body = checked_body(
        warehouse,
        picked["content_hash"],
        bytes(row[1]),
        doc_id=doc_id,
        revision=picked["revision"],
    )
    return Snapshot(doc_id, picked["revision"], picked["content_hash"], row[0], body)


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

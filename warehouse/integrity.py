"""Whether the warehouse still holds what it recorded: a lake's data files read against its
catalog (:mod:`warehouse.data_files`), every stored snapshot's bytes hashed again against its
address, and the revision ledger checked against its own rows."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from warehouse.data_files import check_data_files, listed_files
from warehouse.digests import Progress
from warehouse.store import Warehouse
from warehouse.tlog.check import check_log
from warehouse.tlog.store import has_log


@dataclass(frozen=True)
class VerifyResult:
    """``mismatches``: snapshots whose bytes do not hash to their address (or are missing);
    ``problems``: revisions that disagree with their snapshot or their provenance, each
    ``{"check", "doc_id", "revision", "message"}``."""

    checked: int
    mismatches: list[dict[str, str]]
    problems: list[dict[str, Any]]
    data_files: int | None = None  # a lake's data files read (None: a DuckDB file)

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


def verify(warehouse: Warehouse, progress: Progress | None = None) -> VerifyResult:
    """Recompute every snapshot's SHA-256 from its stored bytes; ``progress(step, done,
    total)`` hears of every 1,000 snapshots checked and of the revision checks."""
    data_files = None
    if warehouse.is_lake:
        # First: a query over a table with a missing or replaced file fails, or skips it.
        files = listed_files(warehouse)
        data_files = len(files)
        if progress is not None:
            progress("data files read", 0, data_files)
        damaged = list(check_data_files(warehouse, files))
        if progress is not None:
            progress("data files read", data_files, data_files)
        if damaged:
            return VerifyResult(0, [], damaged, data_files)
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
    if has_log(warehouse._con):  # the transparency log rebuilt from the rows
        problems += check_log(warehouse).problems
    if progress is not None:
        progress("revisions checked", revisions, revisions)
    return VerifyResult(checked, mismatches, problems, data_files)


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

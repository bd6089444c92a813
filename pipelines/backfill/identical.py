"""A backfill of a file the warehouse already holds as it is: recognized by the file's digest
and answered without reading the file again.

A backfill that completes (status ok, not resumed) records with its counts what a later run
of the same request needs (:func:`record`): the name its sightings give the file, what its
first pass found (rows read and kept, malformed lines, field counts), and how many revisions
the warehouse holds under the scope's document prefix once its own are written: the count
taken when it started plus the revisions it wrote. Another writer's revision committed in
that prefix meanwhile makes the real count larger, never equal.

Revisions are only ever appended. So when a later run of the same request (the same run hash:
file digest, kind, vehicle filter and member) and the same file name finds that count
unchanged, no document under the prefix has a revision that run did not see: every document
of the file is still current at the file's bytes and sighted under its name, and reading the
file again would write nothing. That run records the same counts, every document unchanged,
without reading a line (:func:`recognized`); ``--rescan`` reads it anyway. Anything else (an
earlier run resumed or failed, another revision in the prefix, another name, a file the
malformed-share check would now refuse) reads the file as any run does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines import __version__
from pipelines.backfill.request import SOURCE, BackfillRequest, BackfillResult
from sources.nhtsa.flatfile.readable import FileShape, layouts_seen, refusal
from sources.nhtsa.flatfile.spec import flat_spec
from warehouse.ingest import Counts
from warehouse.runs import latest_ok_counts, revisions_under
from warehouse.store import Warehouse

KEY = "identical_file"  # the record's key in the run's counts (under the source's)


def scope_revisions(warehouse: Warehouse, request: BackfillRequest) -> int:
    """How many revisions the warehouse holds under the request's document prefix."""
    return revisions_under(warehouse, flat_spec(request.layout, request.vehicle).doc_prefix)


def reader(request: BackfillRequest) -> str:
    """What read the file: this version of receipts, and the rules its documents' bytes and
    fingerprints follow (another version may check or build lines differently)."""
    return f"receipts {__version__}|{flat_spec(request.layout, request.vehicle).salt}"


def record(
    result: BackfillResult, request: BackfillRequest, revisions_before: int
) -> dict[str, Any]:
    """What a later run of the same file needs, for a run that completed the whole file."""
    docs = result.documents
    return {
        "url": request.source_url,
        "reader": reader(request),
        "scope_revisions": revisions_before + docs.new + docs.changed + docs.restored,
        "documents": docs.records,
        "matched": result.matched,
        "malformed_lines": result.malformed_lines,
        "field_counts": {str(k): v for k, v in sorted(result.field_counts.items())},
    }


@dataclass(frozen=True)
class Earlier:
    run_id: int
    counts: dict[str, Any]  # the run's counts of the source
    facts: dict[str, Any]  # its record (:func:`record`)


# How many of the request's latest complete runs are looked at for one under the file's name
# (the same bytes backfilled under several names take turns).
RUNS_LOOKED_AT = 10


def _latest_complete(warehouse: Warehouse, run_hash: str, url: str) -> Earlier | None:
    """The latest of the request's runs that finished ok under the file's name ``url`` and
    recorded what a later run needs (a run that resumed another read part of the file only,
    and recorded nothing)."""
    for run_id, counts in latest_ok_counts(warehouse, "backfill", run_hash, RUNS_LOOKED_AT):
        source = counts.get(SOURCE) or {}
        facts = source.get(KEY)
        if isinstance(facts, dict) and facts.get("url") == url:
            return Earlier(run_id, source, facts)
    return None


def recognized(
    warehouse: Warehouse,
    request: BackfillRequest,
    run_hash: str,
    revisions_now: int,
    source_name: str,
) -> Earlier | None:
    """The latest complete run of this very request whose file a new run need not read
    (see the module's docstring), or None."""
    earlier = _latest_complete(warehouse, run_hash, request.source_url)
    if earlier is None:
        return None
    facts = earlier.facts
    if facts.get("reader") != reader(request):
        return None
    if facts.get("scope_revisions") != revisions_now:
        return None
    if refusal(request.layout, _shape(earlier), source_name, request.allow_malformed):
        return None  # read it, to fail as a run of this file fails
    return earlier


def _shape(earlier: Earlier) -> FileShape:
    counts = earlier.facts.get("field_counts", {})
    return FileShape(
        rows=int(earlier.counts.get("rows", 0)),
        malformed=int(earlier.counts.get("malformed", 0)),
        field_counts={int(k): int(v) for k, v in counts.items()},
    )


def fill(result: BackfillResult, request: BackfillRequest, earlier: Earlier) -> None:
    """What a run that read the file again would find: ``earlier``'s first pass, and every
    document unchanged."""
    facts = earlier.facts
    shape = _shape(earlier)
    result.rows, result.malformed = shape.rows, shape.malformed
    result.matched = int(facts.get("matched", 0))
    result.malformed_lines = list(facts.get("malformed_lines", []))
    result.field_counts = dict(sorted(shape.field_counts.items()))
    result.layouts = layouts_seen(request.layout, shape.field_counts)
    documents = int(facts.get("documents", 0))
    result.documents = Counts(records=documents, unchanged=documents)
    result.identical_to_run = earlier.run_id

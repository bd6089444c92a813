"""One backfill run, from the ledger's first row to its last."""

from __future__ import annotations

import time

from pipelines.backfill.identical import KEY, fill, recognized, record, scope_revisions
from pipelines.backfill.ledger import ledger_counts, ledger_warnings, record_failure
from pipelines.backfill.memory import arrow_memory_returned, arrow_pages_kept, plan_memory_limit
from pipelines.backfill.passes import build_and_commit, scan
from pipelines.backfill.request import SOURCE, BackfillRequest, BackfillResult
from pipelines.backfill.resume import resume_point, run_hash
from pipelines.backfill.scratch import scratch_directory
from pipelines.ingest import interrupted_summary
from pipelines.progress import BackfillReporter
from sources.nhtsa.flatfile.layouts import LAYOUTS
from sources.nhtsa.flatfile.readable import FileShape, layouts_seen, refusal
from sources.nhtsa.flatfile.reading import LineSource, file_sha256
from sources.nhtsa.flatfile.rows import RowChecker
from sources.nhtsa.flatfile.spec import flat_spec
from warehouse.bulk.build_engine import build_memory_limit
from warehouse.bulk.engine import FlatBulk
from warehouse.errors import BackfillError, FlatFileError, UsageError
from warehouse.interrupt import interruption
from warehouse.runs import finish_run, interrupt_run, start_run
from warehouse.store import Warehouse

COMMAND = "backfill"


def run_backfill(
    warehouse: Warehouse,
    request: BackfillRequest,
    *,
    reporter: BackfillReporter | None = None,
) -> BackfillResult:
    """Backfill one flat file into the warehouse as one run; resume an interrupted one.

    A known error fails the run (recorded in the ledger) and is raised; an unexpected
    exception is recorded as an internal error and raised as it is. A signal (Ctrl-C,
    SIGTERM) records the run ``interrupted`` with what its committed batches wrote, and
    raises :class:`~warehouse.interrupt.Interrupted` saying so.

    A file the warehouse already holds as it is, backfilled completely by an earlier run of
    the same request with nothing revised under its prefix since, is not read again unless
    ``request.rescan`` (:mod:`pipelines.backfill.identical`)."""
    reporter = reporter or BackfillReporter()
    if request.kind not in LAYOUTS:
        raise UsageError(f"unknown kind {request.kind!r}; valid: {', '.join(LAYOUTS)}")
    build_limit = build_memory_limit()
    planning_limit = plan_memory_limit(request.memory_limit, build_limit)  # refuses a bad one
    try:
        source = LineSource(request.path, request.member)
        digest = file_sha256(request.path)
    except (FlatFileError, OSError) as exc:
        raise BackfillError(str(exc)) from None
    scope = request.scope()
    label = f"{request.layout.name} {request.kind} ({request.path.name})"
    started = time.monotonic()
    same_run = run_hash(request, digest, source.name)
    info = start_run(warehouse, COMMAND, f"nhtsa {request.kind} backfill", same_run)
    result = BackfillResult(
        run_id=info.run_id,
        status="failed",
        scope=scope,
        file=request.url or str(request.path),
        file_sha256=digest,
        resumes_run=info.resumes_run,
        resumed_after_line=resume_point(warehouse, scope, digest),
    )
    revisions_before = 0
    try:
        revisions_before = scope_revisions(warehouse, request)
        earlier = None
        if not request.rescan and info.resumes_run is None and result.resumed_after_line is None:
            earlier = recognized(warehouse, request, same_run, revisions_before, source.name)
        if earlier is not None:
            fill(result, request, earlier)
        else:
            _passes(warehouse, request, source, result, (build_limit, planning_limit), reporter)
    except BaseException as exc:
        stop = interruption(exc)  # Ctrl-C or SIGTERM, or DuckDB's words for it
        if stop is not None:
            committed = interrupt_run(warehouse, info.run_id, [], ledger_warnings(label, result))
            stop.summary = interrupted_summary(info.run_id, committed)
            raise stop from None
        if not isinstance(exc, Exception):
            raise
        known = record_failure(warehouse, info.run_id, label, result, exc, request.path.name)
        if known is None or known is exc:  # a bug (an internal error), or a known error
            raise
        raise known from exc  # out of memory, or reading or writing failed: it says what
    finally:
        reporter.close()
    result.status = "ok"
    result.seconds = time.monotonic() - started
    counts = ledger_counts(result)
    if result.resumed_after_line is None:  # it read the whole file (or knew it)
        counts[SOURCE][KEY] = record(result, request, revisions_before)
    head = finish_run(warehouse, info.run_id, "ok", counts, [], ledger_warnings(label, result))
    result.log_checkpoint = None if head is None else head.as_json()
    return result


def _passes(
    warehouse: Warehouse,
    request: BackfillRequest,
    source: LineSource,
    result: BackfillResult,
    limits: tuple[str, str],
    reporter: BackfillReporter,
) -> None:
    """Both passes, in the scratch directory and under the memory limits (the build
    database's, and the warehouse's while it plans): what they found goes into ``result``."""
    build_limit, planning_limit = limits
    with (
        scratch_directory(request.scratch_dir) as scratch,
        warehouse.memory_limit(request.memory_limit),
        arrow_memory_returned(),
        warehouse.bulk_writes(),
    ):
        bulk = FlatBulk(
            warehouse,
            flat_spec(request.layout, request.vehicle),
            RowChecker(request.layout, request.vehicle),
            scratch,
            build_memory_limit=build_limit,
            plan_memory_limit=planning_limit,
        )
        try:
            with arrow_pages_kept():
                scanned = scan(source, request, bulk, reporter)
            result.rows, result.matched = scanned.rows, scanned.matched
            result.malformed = scanned.malformed
            result.malformed_lines = scanned.malformed_lines
            result.field_counts = dict(sorted(scanned.field_counts.items()))
            result.layouts = layouts_seen(request.layout, scanned.field_counts)
            shape = FileShape(
                scanned.rows, scanned.malformed, scanned.field_counts, scanned.first_line
            )
            refused = refusal(request.layout, shape, source.name, request.allow_malformed)
            if refused is not None:  # nothing is committed: the run fails
                raise BackfillError(refused)
            result.documents, result.built = build_and_commit(
                request, source, bulk, result.run_id, result.resumed_after_line or 0,
                result.file_sha256, reporter,
            )  # fmt: skip
        finally:
            bulk.close()

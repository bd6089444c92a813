"""A backfill's two passes over its file, and their threads.

Pass 1 checks every line and stages the wanted rows; pass 2 reads the file again, builds the
documents the plan says must be built, and commits them a range at a time, each range in a
thread of its own while the next blocks are built.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipelines.backfill.memory import return_freed_memory
from pipelines.backfill.request import SOURCE, BackfillRequest
from pipelines.in_order import InOrder
from pipelines.progress import BackfillReporter
from sources.nhtsa.flatfile.layouts import is_header
from sources.nhtsa.flatfile.lines import checked_table, line_digests, text_table
from sources.nhtsa.flatfile.reading import LineSource, read_blocks
from warehouse.bulk.build_engine import build_memory_limit
from warehouse.bulk.engine import CommitContext, FlatBulk, Plan
from warehouse.bulk.out_of_memory import governed_by, warehouse_hint
from warehouse.bulk.spec import Malformed
from warehouse.clock import now
from warehouse.errors import BackfillError
from warehouse.ingest import Counts

# The file is handed to DuckDB this many bytes at a time: enough lines per statement for
# its threads to share, few enough to keep memory flat.
BLOCK_BYTES = 4 << 20
MALFORMED_KEPT = 1_000  # line details kept in memory (all are counted)


def _memory_named(request: BackfillRequest) -> AbstractContextManager[None]:
    """DuckDB running out of memory on the warehouse's connection, raised with a hint that
    names the setting governing it: the backfill's ``--memory-limit`` (the build database's
    statements name their own, :mod:`warehouse.bulk.build_engine`)."""
    return governed_by(warehouse_hint(request.memory_limit, build_memory_limit()))


# -- pass 1: checking ----------------------------------------------------------------------
@dataclass
class ScanResult:
    rows: int = 0
    matched: int = 0
    malformed: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)
    field_counts: dict[int, int] = field(default_factory=dict)  # lines by number of fields
    first_line: str = ""  # the start of the first line checked

    def add_malformed(self, bad: Malformed) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MALFORMED_KEPT:
            self.malformed_lines.append({"line": bad.line, "reason": bad.reason})


def scan(
    source: LineSource,
    request: BackfillRequest,
    bulk: FlatBulk,
    reporter: BackfillReporter,
) -> ScanResult:
    """Pass 1: check every line (in bulk; the lines the bulk check cannot vouch for, one at
    a time, by the source's row judge), keep the wanted rows, count and report what is
    malformed.

    Three threads share the work on each block, one block apart: this one hashes its lines
    (hashlib holds the GIL for inputs this short) and splits them into Arrow; a second checks
    them (Arrow kernels, which release it); a third adds the wanted rows to the scratch
    database (DuckDB). Measured on a 2,000,000-row re-run: pass 1 took 10.0-11.8 s, where
    with the check and the staging in one thread, and the split there too, it took
    12.7-13.6 s (the main thread waited 7.4-7.8 s for it; 3.0-3.5 s now)."""
    result = ScanResult()

    with _memory_named(request), InOrder("backfill-staging") as staging:

        def keep(rows: pa.Table) -> None:  # in the checking thread
            staging.submit(functools.partial(bulk.add_checked, rows))

        def check(start: int, table: pa.Table, read: int) -> None:
            skip = 1 if start == 1 and is_header(request.layout, table["text"][0].as_py()) else 0
            checked = bulk.check(table, skip, keep)
            for count, lines in checked.field_counts.items():
                result.field_counts[count] = result.field_counts.get(count, 0) + lines
            if start == 1 and len(table) > skip:
                result.first_line = str(table["text"][skip].as_py())[:200]
            result.rows += checked.rows
            result.matched += checked.matched
            for bad in checked.malformed:
                result.add_malformed(bad)
            reporter.reading(result.rows, read, source.total_bytes)

        with InOrder("backfill-checks") as checks:
            for start, data in read_blocks(source, BLOCK_BYTES):
                digests = line_digests(data)  # the part that holds the GIL
                table = checked_table(start, data, digests)
                checks.submit(functools.partial(check, start, table, source.bytes_read))
    reporter.read_finished(result.rows, result.matched, result.malformed)
    return result


# -- pass 2: building and committing -------------------------------------------------------
def _build(
    source: LineSource,
    bulk: FlatBulk,
    plan: Plan,
    commit_through: Callable[[int], None],
) -> None:
    """Read the file again up to the last line of a document to build; build each document
    at its last line and commit each range of documents as soon as all of it is built."""
    if not plan.to_build:
        return
    last = 0
    for start, data in read_blocks(source, BLOCK_BYTES):
        table = text_table(start, data)
        last = start + len(table) - 1
        bulk.build(table, start, last)
        del table
        commit_through(last)
        return_freed_memory()
        if last >= plan.last_needed_line:
            break
    if last < plan.last_needed_line or bulk.leftover_lines():
        raise BackfillError(f"{source.name} changed while it was read (near line {last})")


def build_and_commit(
    request: BackfillRequest,
    source: LineSource,
    bulk: FlatBulk,
    run_id: int,
    after_line: int,
    digest: str,
    reporter: BackfillReporter,
) -> tuple[Counts, int]:
    """Plan, build and commit: the counts, and how many documents were built."""
    context = CommitContext(
        run_id=run_id,
        source=SOURCE,
        scope=request.scope(),
        url=request.source_url,
        fetched_at=now(),
        file_sha256=digest,
    )
    with _memory_named(request):
        return _build_and_commit(request, source, bulk, context, after_line, reporter)


def _build_and_commit(
    request: BackfillRequest,
    source: LineSource,
    bulk: FlatBulk,
    context: CommitContext,
    after_line: int,
    reporter: BackfillReporter,
) -> tuple[Counts, int]:
    plan = bulk.plan(after_line, request.batch_size, context.url)
    boundaries = deque(plan.boundaries)
    total = Counts()
    done = {"rows": 0}
    submitted = {"lo": after_line}

    def commit(lo: int, hi: int, built: pa.Table) -> None:  # in the committing thread
        counts, rows = bulk.commit(context, lo, hi, built)
        done["rows"] += rows
        total.add(counts)
        reporter.writing(done["rows"], plan.rows, total.records)

    with InOrder("backfill-commits") as commits:

        def commit_through(line: int) -> None:
            while boundaries and boundaries[0] <= line:
                hi = boundaries.popleft()
                commits.submit(functools.partial(commit, submitted["lo"], hi, bulk.take_built(hi)))
                submitted["lo"] = hi

        _build(source, bulk, plan, commit_through)
        commit_through(plan.boundaries[-1] if plan.boundaries else 0)
    return total, plan.to_build

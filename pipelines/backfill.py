"""A one-off backfill of an NHTSA flat file: one run, resumable, in bulk.

The rows of one identity are one document (a complaint appears once per vehicle and
component, a recall once per make/model/year), and they need not be adjacent in the file.
The file is streamed twice, a few MB at a time, so memory does not grow with it; the work
per line runs inside DuckDB (:mod:`warehouse.flatbulk`), on every core:

1. **Check.** Every line is validated against the layout of the kind; malformed rows (wrong
   field count, bad date, no identity) are counted and reported with their line numbers
   (lines the bulk check cannot vouch for are judged by :class:`RowChecker`, one at a
   time). For the rows of the wanted vehicle, the line number, identity and a SHA-256 of
   the raw line go to a scratch database attached to the warehouse.
2. **Plan.** Rows are grouped into documents; each one's *fingerprint* (a digest of its
   lines' digests and of the rules that build its bytes) is compared with the one recorded
   when it was last built. Documents whose input did not change are not built again.
3. **Build and commit.** The file is read again up to the last line a document to build
   needs; each such document's canonical JSON is assembled at its last line and hashed.
   Documents are committed in the order of their last line, ``--batch-size`` per
   transaction, each carrying the checkpoint ``<file digest>:<last line>``; each batch
   commits in a thread of its own (:class:`pipelines.in_order.InOrder`) while the next
   blocks are built, one batch at a time.

An interrupted backfill of the same file resumes after the last committed line and never
counts a document twice; a checkpoint of a different file is ignored (start over).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipelines.in_order import InOrder
from pipelines.memory import arrow_memory_returned, arrow_pages_kept, return_freed_memory
from pipelines.progress import BackfillReporter
from sources.nhtsa.flatfile import (
    LAYOUTS,
    Layout,
    LineSource,
    Malformed,
    RowChecker,
    VehicleFilter,
    checked_table,
    file_sha256,
    flat_spec,
    is_header,
    is_plain,
    line_digests,
    read_blocks,
    text_table,
)
from warehouse.backends import ROW_GROUP_SIZE
from warehouse.build_engine import DEFAULT_MEMORY_LIMIT as DEFAULT_BUILD_MEMORY_LIMIT
from warehouse.canonical import canonical_json
from warehouse.clock import now
from warehouse.errors import BackfillError, FlatFileError, UsageError
from warehouse.flatbulk import CommitContext, FlatBulk, Plan
from warehouse.flatcheck import KEPT_SCHEMA
from warehouse.ids import doc_id
from warehouse.ingest import Counts
from warehouse.runs import finish_run, latest_checkpoint, start_run
from warehouse.store import Warehouse, known_error

SOURCE = "nhtsa"
COMMAND = "backfill"
# DuckDB's buffers for the scratch database, the plan's statements and what is committed but
# not yet in the file; beyond this it spills to disk. The build statements run in a database
# of their own (warehouse.build_engine), with a limit of their own. Two million rows: 128MB
# here kept the peak RSS at 540-550 MB; 160MB and 192MB ran within the noise of it (67-74 s
# against 69-78 s) with peaks of 572-606 MB. While the backfill plans, before the build
# database opens, the warehouse may use that database's allowance too (plan_memory_limit).
DEFAULT_MEMORY_LIMIT = "128MB"
DEFAULT_BATCH_SIZE = ROW_GROUP_SIZE  # documents per transaction: a row group of each table
# The file is handed to DuckDB this many bytes at a time: enough lines per statement for
# its threads to share, few enough to keep memory flat.
BLOCK_BYTES = 4 << 20
MALFORMED_KEPT = 1_000  # line details kept in memory (all are counted)
LEDGER_WARNINGS = 100  # line details written to the run ledger
_MEMORY_LIMIT_RE = re.compile(r"(\d+(?:\.\d+)?) *(KB|MB|GB|KiB|MiB|GiB)", re.IGNORECASE | re.ASCII)
_UNIT_BYTES = {
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
}
_SCRATCH_PREFIX = "receipts-backfill-"


def memory_bytes(limit: str) -> int:
    """The bytes of a memory limit like ``'128MB'`` (1000s) or ``'2GiB'`` (1024s), as DuckDB
    reads it."""
    match = _MEMORY_LIMIT_RE.fullmatch(limit)
    if match is None:
        raise UsageError(f"memory limit {limit!r} is not like '256MB' or '2GB'")
    return int(float(match.group(1)) * _UNIT_BYTES[match.group(2).lower()])


def plan_memory_limit(limit: str, build_limit: str) -> str:
    """The warehouse's limit while the backfill plans: ``limit`` and the build database's
    ``build_limit``, which is not yet open then."""
    return f"{memory_bytes(limit) + memory_bytes(build_limit)}B"


@dataclass(frozen=True)
class BackfillRequest:
    path: Path
    kind: str
    vehicle: VehicleFilter = field(default_factory=VehicleFilter)
    member: str | None = None
    url: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    scratch_dir: Path | None = None

    @property
    def layout(self) -> Layout:
        return LAYOUTS[self.kind]

    def scope(self) -> str:
        scope = f"nhtsa:{self.layout.source_format}:{self.kind}"
        return f"{scope}:{self.vehicle.describe()}" if self.vehicle.active else scope


@dataclass
class BackfillResult:
    run_id: int
    status: str
    scope: str
    file: str
    file_sha256: str
    resumes_run: int | None
    resumed_after_line: int | None
    rows: int = 0
    matched: int = 0
    malformed: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)
    documents: Counts = field(default_factory=Counts)
    built: int = 0  # documents whose bytes were assembled (the others' lines had not changed)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "scope": self.scope,
            "file": self.file,
            "file_sha256": self.file_sha256,
            "resumes_run": self.resumes_run,
            "resumed_after_line": self.resumed_after_line,
            "rows": self.rows,
            "matched": self.matched,
            "malformed": self.malformed,
            "malformed_lines": self.malformed_lines,
            "documents": {"records": self.documents.records, **self.documents.as_dict()},
            "built": self.built,
            "seconds": round(self.seconds, 3),
        }


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def scratch_directory(parent: Path | None) -> Iterator[Path | None]:
    """A scratch directory in ``parent``, named after this process (ones left there by
    killed backfills go); without a parent, none: the scratch database is kept in memory and
    spills where the warehouse does."""
    if parent is None:
        yield None
        return
    base = Path(parent)
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob(f"{_SCRATCH_PREFIX}*"):
        pid = stale.name.removeprefix(_SCRATCH_PREFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    directory = base / f"{_SCRATCH_PREFIX}{os.getpid()}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- pass 1: checking ----------------------------------------------------------------------
@dataclass
class ScanResult:
    rows: int = 0
    matched: int = 0
    malformed: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)

    def add_malformed(self, bad: Malformed) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MALFORMED_KEPT:
            self.malformed_lines.append({"line": bad.line, "reason": bad.reason})


def scan(
    source: LineSource,
    request: BackfillRequest,
    bulk: FlatBulk,
    checker: RowChecker,
    reporter: BackfillReporter,
) -> ScanResult:
    """Pass 1: check every line (in bulk; the lines the bulk check cannot vouch for, one at
    a time), keep the wanted rows, count and report what is malformed.

    Three threads share the work on each block, one block apart: this one hashes its lines
    (hashlib holds the GIL for inputs this short) and splits them into Arrow; a second checks
    them (Arrow kernels, which release it); a third adds the wanted rows to the scratch
    database (DuckDB). Measured on a 2,000,000-row re-run: pass 1 took 10.0-11.8 s, where
    with the check and the staging in one thread, and the split there too, it took
    12.7-13.6 s (the main thread waited 7.4-7.8 s for it; 3.0-3.5 s now)."""
    result = ScanResult()

    with InOrder("backfill-staging") as staging:

        def keep(rows: pa.Table) -> None:  # in the checking thread
            staging.submit(functools.partial(bulk.add_checked, rows))

        def check(start: int, table: pa.Table, read: int) -> None:
            skip = 1 if start == 1 and is_header(request.layout, table["text"][0].as_py()) else 0
            checked = bulk.check(table, skip, keep)
            result.rows += checked.rows
            result.matched += checked.matched
            if checked.suspects:
                _judge(table, start, checked.suspects, checker, keep, result)
            reporter.reading(result.rows, read, source.total_bytes)

        with InOrder("backfill-checks") as checks:
            for start, data in read_blocks(source, BLOCK_BYTES):
                digests = line_digests(data)  # the part that holds the GIL
                table = checked_table(start, data, digests)
                checks.submit(functools.partial(check, start, table, source.bytes_read))
    reporter.read_finished(result.rows, result.matched, result.malformed)
    return result


def _judge(
    table: pa.Table,
    start: int,
    suspects: list[int],
    checker: RowChecker,
    keep: Callable[[pa.Table], None],
    result: ScanResult,
) -> None:
    """The line-at-a-time checker's verdict on the lines the bulk check left to it; the
    wanted rows go to ``keep``."""
    texts, hashes = table["text"], table["h"]
    kept: dict[str, list[Any]] = {name: [] for name in KEPT_SCHEMA.names}
    for number in suspects:
        at = number - start
        text = texts[at].as_py()
        parts = text.split("\t")
        verdict = checker.check(parts)
        if isinstance(verdict, str):
            result.add_malformed(Malformed(number, verdict))
            continue
        key, wanted = verdict
        if not wanted:
            continue
        doc_id(SOURCE, checker.layout.doc_kind, key)  # refuses a key no id can hold
        shape = checker.shapes[len(parts)]
        year_text = parts[shape.year_index] if shape.year_index is not None else ""
        result.matched += 1
        for name, value in (
            ("number", number),
            ("key", key),
            ("h", hashes[at].as_py()),
            ("n", len(parts)),
            ("year", checker.year(year_text)[0]),
            ("plain", is_plain(text)),
        ):
            kept[name].append(value)
    if kept["number"]:
        keep(pa.table(kept, schema=KEPT_SCHEMA))


# -- pass 2: building and committing -------------------------------------------------------
def _build(
    source: LineSource,
    bulk: FlatBulk,
    checker: RowChecker,
    plan: Plan,
    commit_through: Callable[[int], None],
) -> None:
    """Read the file again up to the last line of a document to build; build each document
    at its last line and commit each range of documents as soon as all of it is built."""
    if not plan.to_build:
        return
    kind = checker.layout.doc_kind
    last = 0
    for start, data in read_blocks(source, BLOCK_BYTES):
        table = text_table(start, data)
        last = start + len(table) - 1
        leftover = bulk.build(table, start, last)
        del table
        if leftover:
            built = []
            for key, lines in leftover:
                body, source_format = checker.body([text for _, text in lines])
                numbers = [number for number, _ in lines]
                built.append((doc_id(SOURCE, kind, key), numbers[-1], body, source_format, numbers))
            bulk.add_built(built)
        commit_through(last)
        return_freed_memory()
        if last >= plan.last_needed_line:
            break
    if last < plan.last_needed_line or bulk.leftover_lines():
        raise BackfillError(f"{source.name} changed while it was read (near line {last})")


def _resume_point(warehouse: Warehouse, scope: str, digest: str) -> int | None:
    """The last committed line of an interrupted backfill of this very file, if any."""
    checkpoint = latest_checkpoint(warehouse, SOURCE, scope)
    if checkpoint is None:
        return None
    file_part, _, line = checkpoint.partition(":")
    return int(line) if file_part == digest[:16] and line.isdigit() else None


def _run_hash(request: BackfillRequest, digest: str, member: str) -> str:
    params = {
        "source": SOURCE,
        "kind": request.kind,
        "vehicle": request.vehicle.describe() if request.vehicle.active else None,
        "file_sha256": digest,
        "member": member,
    }
    return hashlib.sha256(canonical_json(params)).hexdigest()


def run_backfill(
    warehouse: Warehouse,
    request: BackfillRequest,
    *,
    reporter: BackfillReporter | None = None,
) -> BackfillResult:
    """Backfill one flat file into the warehouse as one run; resume an interrupted one."""
    reporter = reporter or BackfillReporter()
    if request.kind not in LAYOUTS:
        raise UsageError(f"unknown kind {request.kind!r}; valid: {', '.join(LAYOUTS)}")
    build_limit = DEFAULT_BUILD_MEMORY_LIMIT
    planning_limit = plan_memory_limit(request.memory_limit, build_limit)  # refuses a bad one
    try:
        source = LineSource(request.path, request.member)
        digest = file_sha256(request.path)
    except (FlatFileError, OSError) as exc:
        raise BackfillError(str(exc)) from None
    scope = request.scope()
    label = f"{request.layout.name} {request.kind} ({request.path.name})"
    started = time.monotonic()
    run_hash = _run_hash(request, digest, source.name)
    info = start_run(warehouse, COMMAND, f"nhtsa {request.kind} backfill", run_hash)
    after_line = _resume_point(warehouse, scope, digest)
    result = BackfillResult(
        run_id=info.run_id,
        status="failed",
        scope=scope,
        file=request.url or str(request.path),
        file_sha256=digest,
        resumes_run=info.resumes_run,
        resumed_after_line=after_line,
    )
    try:
        with (
            scratch_directory(request.scratch_dir) as scratch,
            warehouse.memory_limit(request.memory_limit),
            arrow_memory_returned(),
            warehouse.bulk_writes(),
        ):
            checker = RowChecker(request.layout, request.vehicle)
            bulk = FlatBulk(
                warehouse,
                flat_spec(request.layout, request.vehicle),
                scratch,
                build_memory_limit=build_limit,
                plan_memory_limit=planning_limit,
            )
            try:
                with arrow_pages_kept():
                    scanned = scan(source, request, bulk, checker, reporter)
                result.rows, result.matched = scanned.rows, scanned.matched
                result.malformed = scanned.malformed
                result.malformed_lines = scanned.malformed_lines
                result.documents, result.built = _write(
                    warehouse, request, source, bulk, checker, info.run_id, after_line or 0,
                    digest, reporter,
                )  # fmt: skip
            finally:
                bulk.close()
    except Exception as exc:
        known = known_error(exc)
        reason = str(known or exc) or type(exc).__name__
        failure = {"source": SOURCE, "entry": label, "reason": reason}
        finish_run(
            warehouse,
            info.run_id,
            "failed",
            _ledger_counts(result),
            [failure],
            _ledger_warnings(label, result),
        )
        if known is exc:
            raise
        if known is not None:  # DuckDB ran out of memory: the known error says what to change
            raise known from exc
        raise BackfillError(f"backfill of {request.path.name} failed: {reason}") from exc
    finally:
        reporter.close()
    result.status = "ok"
    result.seconds = time.monotonic() - started
    finish_run(
        warehouse, info.run_id, "ok", _ledger_counts(result), [], _ledger_warnings(label, result)
    )
    return result


def _write(
    warehouse: Warehouse,
    request: BackfillRequest,
    source: LineSource,
    bulk: FlatBulk,
    checker: RowChecker,
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
        url=request.url or f"file:{request.path.name}",
        fetched_at=now(),
        file_sha256=digest,
    )
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

        _build(source, bulk, checker, plan, commit_through)
        commit_through(plan.boundaries[-1] if plan.boundaries else 0)
    return total, plan.to_build


def _ledger_counts(result: BackfillResult) -> dict[str, Any]:
    return {
        SOURCE: {
            **result.documents.as_dict(),
            "failed": 0 if result.status == "ok" else 1,
            "rows": result.rows,
            "malformed": result.malformed,
        }
    }


def _ledger_warnings(label: str, result: BackfillResult) -> list[dict[str, Any]]:
    warnings = [
        {"source": SOURCE, "entry": label, "warning": f"line {m['line']}: {m['reason']}"}
        for m in result.malformed_lines[:LEDGER_WARNINGS]
    ]
    if result.malformed > len(warnings):
        more = result.malformed - len(warnings)
        warnings.append(
            {"source": SOURCE, "entry": label, "warning": f"and {more} more malformed rows"}
        )
    return warnings

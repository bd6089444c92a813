"""A one-off backfill of an NHTSA flat file: one run on the ingest engine, resumable.

The rows of one identity are one document (a complaint appears once per vehicle and
component, a recall once per make/model/year), and they need not be adjacent in the file.
The file is streamed twice, so memory does not grow with it:

1. **Scan.** Every line is validated against the layout of the kind; malformed rows (wrong
   field count, bad date, no identity) are counted and reported with their line numbers.
   For the rows of the wanted vehicle, ``(key, line)`` goes to a scratch DuckDB database
   (memory-limited, spilling to disk), which then names the line that ends each document:
   a bitmap over line numbers.
2. **Write.** The file is read again; rows wait in a buffer until their document's last
   line, where the document is handed to the ingest engine (one listing). Documents thus
   go in the order of their last line, and every committed batch carries the checkpoint
   ``<file digest>:<last line>`` in its transaction.

An interrupted backfill of the same file resumes after the last committed line and never
counts a document twice; a checkpoint of a different file is ignored (start over).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.progress import BackfillReporter
from sources.nhtsa.flatfile import (
    LAYOUTS,
    FlatRow,
    Layout,
    LineSource,
    Malformed,
    VehicleFilter,
    file_sha256,
    flat_record,
    is_header,
    parse_line,
    row_matches,
)
from warehouse.canonical import canonical_json
from warehouse.clock import now
from warehouse.errors import BackfillError, FlatFileError, ReceiptsError, UsageError
from warehouse.ingest import DEFAULT_BATCH_SIZE, Counts, Ingestor
from warehouse.records import Listing, Provenance, Record
from warehouse.runs import finish_run, latest_checkpoint, start_run
from warehouse.scratch import KeyLines
from warehouse.store import Warehouse

SOURCE = "nhtsa"
COMMAND = "backfill"
DEFAULT_MEMORY_LIMIT = "256MB"
STAGE_CHUNK = 50_000
PROGRESS_EVERY = 20_000
MALFORMED_KEPT = 1_000  # line details kept in memory (all are counted)
LEDGER_WARNINGS = 100  # line details written to the run ledger
_MEMORY_LIMIT_RE = re.compile(r"^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$", re.IGNORECASE)
_SCRATCH_PREFIX = "receipts-backfill-"


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
            "seconds": round(self.seconds, 3),
        }


# -- scanning ------------------------------------------------------------------------------
class LineSet:
    """A set of line numbers of the file: one bit per line."""

    def __init__(self) -> None:
        self._bits = bytearray()

    def add(self, line: int) -> None:
        index = line >> 3
        if index >= len(self._bits):
            self._bits.extend(bytes(index + 1 - len(self._bits) + (1 << 16)))
        self._bits[index] |= 1 << (line & 7)

    def __contains__(self, line: object) -> bool:
        if not isinstance(line, int):
            return False
        index = line >> 3
        return index < len(self._bits) and bool(self._bits[index] & (1 << (line & 7)))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def scratch_directory(parent: Path | None) -> Iterator[Path]:
    """A scratch directory named after this process; ones left by killed backfills go."""
    base = Path(parent or tempfile.gettempdir())
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


@dataclass
class ScanResult:
    rows: int = 0
    matched: int = 0
    malformed: int = 0
    malformed_lines: list[dict[str, Any]] = field(default_factory=list)
    wanted: LineSet = field(default_factory=LineSet)
    ends: LineSet = field(default_factory=LineSet)

    def add_malformed(self, bad: Malformed) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MALFORMED_KEPT:
            self.malformed_lines.append({"line": bad.line, "reason": bad.reason})


def file_rows(source: LineSource, request: BackfillRequest) -> Iterator[FlatRow | Malformed | None]:
    """Every data row of the file (a header line skipped): a row of the wanted vehicle, why
    the row is malformed, or None for a row of another vehicle."""
    layout = request.layout
    for number, text in source:
        if number == 1 and is_header(layout, text):
            continue
        parsed = parse_line(layout, number, text)
        if isinstance(parsed, Malformed) or row_matches(layout, parsed, request.vehicle):
            yield parsed
        else:
            yield None


def scan(
    source: LineSource,
    request: BackfillRequest,
    scratch: Path,
    reporter: BackfillReporter,
) -> ScanResult:
    """Pass 1: validate every line, count what is malformed, find each document's end."""
    result = ScanResult()
    index = KeyLines(scratch, request.memory_limit)
    keys: list[str] = []
    lines: list[int] = []
    try:
        for row in file_rows(source, request):
            result.rows += 1
            if isinstance(row, FlatRow):
                result.matched += 1
                result.wanted.add(row.line)
                keys.append(row.key)
                lines.append(row.line)
                if len(keys) >= STAGE_CHUNK:
                    index.add(keys, lines)
                    keys, lines = [], []
            elif row is not None:
                result.add_malformed(row)
            if result.rows % PROGRESS_EVERY == 0:
                reporter.reading(result.rows, source.bytes_read, source.total_bytes)
        if keys:
            index.add(keys, lines)
        for line in index.last_lines():  # the line that ends each document
            result.ends.add(line)
    finally:
        index.close()
    reporter.reading(result.rows, source.bytes_read, source.total_bytes)
    reporter.read_finished(result.rows, result.matched, result.malformed)
    return result


# -- writing -------------------------------------------------------------------------------
def documents(
    source: LineSource,
    request: BackfillRequest,
    scanned: ScanResult,
    after_line: int,
    provenance: Provenance,
    digest: str,
    emitted_rows: deque[int],
) -> Iterator[Record]:
    """Pass 2: each document at its last line, rows in file order; documents ending at or
    before ``after_line`` were committed by an interrupted run and are skipped."""
    waiting: dict[str, list[FlatRow]] = {}
    for number, text in source:
        if number not in scanned.wanted:
            continue
        row = parse_line(request.layout, number, text, checked=True)
        if not isinstance(row, FlatRow):
            raise BackfillError(f"{source.name} changed while it was read (line {number})")
        rows = waiting.setdefault(row.key, [])
        rows.append(row)
        if row.line not in scanned.ends:
            continue
        del waiting[row.key]
        if row.line <= after_line:
            continue
        emitted_rows.append(len(rows))
        yield flat_record(
            request.layout,
            row.key,
            [r.values for r in rows],
            provenance=provenance,
            checkpoint=f"{digest[:16]}:{row.line}",
            attributes={"file_sha256": digest, "lines": [r.line for r in rows]},
        )
    if waiting:
        raise BackfillError(
            f"{source.name} changed while it was read: {len(waiting)} records have no end"
        )


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
    if not _MEMORY_LIMIT_RE.match(request.memory_limit):
        raise UsageError(f"memory limit {request.memory_limit!r} is not like '256MB' or '2GB'")
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
        ):
            scanned = scan(source, request, scratch, reporter)
            result.rows, result.matched = scanned.rows, scanned.matched
            result.malformed = scanned.malformed
            result.malformed_lines = scanned.malformed_lines
            result.documents = _write(
                warehouse, request, source, scanned, info.run_id, after_line or 0, digest, reporter
            )
    except Exception as exc:
        reason = str(exc) or type(exc).__name__
        failure = {"source": SOURCE, "entry": label, "reason": reason}
        finish_run(
            warehouse,
            info.run_id,
            "failed",
            _ledger_counts(result),
            [failure],
            _ledger_warnings(label, result),
        )
        if isinstance(exc, ReceiptsError):
            raise
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
    scanned: ScanResult,
    run_id: int,
    after_line: int,
    digest: str,
    reporter: BackfillReporter,
) -> Counts:
    emitted_rows: deque[int] = deque()
    done = {"rows": 0, "documents": 0}

    def on_batch(counts: Counts) -> None:
        for _ in range(min(counts.records, len(emitted_rows))):
            done["rows"] += emitted_rows.popleft()
        done["documents"] += counts.records
        reporter.writing(done["rows"], scanned.matched, done["documents"])

    provenance = Provenance(
        url=request.url or f"file:{request.path.name}",
        source_format=request.layout.source_format,
        fetched_at=now(),
    )
    ingestor = Ingestor(warehouse, run_id, batch_size=request.batch_size, on_batch=on_batch)
    records = documents(source, request, scanned, after_line, provenance, digest, emitted_rows)
    return ingestor.ingest(SOURCE, Listing(scope=request.scope(), records=records))


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

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipelines.progress import BackfillReporter
from sources.nhtsa.flatfile import (
    LAYOUTS,
    Layout,
    LineSource,
    Malformed,
    RowChecker,
    VehicleFilter,
    file_sha256,
    is_header,
    read_chunks,
)
from warehouse.canonical import CANONICAL_FORM_VERSION, canonical_json
from warehouse.clock import now
from warehouse.errors import BackfillError, FlatFileError, ReceiptsError, UsageError
from warehouse.ids import doc_id
from warehouse.ingest import FINGERPRINT, Counts, Drafts, Ingestor
from warehouse.records import Provenance, Record
from warehouse.runs import finish_run, latest_checkpoint, start_run
from warehouse.scratch import KeyLines
from warehouse.store import Warehouse

SOURCE = "nhtsa"
COMMAND = "backfill"
DEFAULT_MEMORY_LIMIT = "256MB"
DEFAULT_BATCH_SIZE = 20_000  # documents per transaction
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


def scan(
    source: LineSource,
    request: BackfillRequest,
    scratch: Path,
    reporter: BackfillReporter,
) -> ScanResult:
    """Pass 1: validate every line, count what is malformed, find each document's end."""
    result = ScanResult()
    checker = RowChecker(request.layout, request.vehicle)
    layout = request.layout
    wanted = result.wanted
    index = KeyLines(scratch, request.memory_limit)
    try:
        for start, lines in read_chunks(source):
            keys: list[str] = []
            numbers: list[int] = []
            for number, text in enumerate(lines, start):
                if not text or (number == 1 and is_header(layout, text)):
                    continue
                verdict = checker.check(text.split("\t"))
                if isinstance(verdict, str):
                    result.add_malformed(Malformed(number, verdict))
                elif verdict[1]:
                    wanted.add(number)
                    keys.append(verdict[0])
                    numbers.append(number)
                result.rows += 1
            result.matched += len(keys)
            if keys:
                index.add(keys, numbers)
            reporter.reading(result.rows, source.bytes_read, source.total_bytes)
        for line in index.last_lines():  # the line that ends each document
            result.ends.add(line)
    finally:
        index.close()
    reporter.read_finished(result.rows, result.matched, result.malformed)
    return result


# -- writing -------------------------------------------------------------------------------
@dataclass
class _Document:
    key: str
    end: int
    numbers: list[int]
    lines: list[str]


def _ended_documents(
    source: LineSource,
    request: BackfillRequest,
    checker: RowChecker,
    scanned: ScanResult,
    after_line: int,
) -> Iterator[_Document]:
    """Pass 2: each document at its last line, its lines in file order; documents ending at
    or before ``after_line`` were committed by an interrupted run and are skipped. Lines are
    not split again: only the identity is read."""
    waiting: dict[str, _Document] = {}
    shapes = checker.shapes
    wanted, ends = scanned.wanted, scanned.ends
    for start, lines in read_chunks(source):
        for number, text in enumerate(lines, start):
            if number not in wanted:
                continue
            shape = shapes.get(text.count("\t") + 1)
            if shape is None:
                raise BackfillError(f"{source.name} changed while it was read (line {number})")
            key = checker.key(shape, text.split("\t", max(shape.key_indexes) + 1))
            doc = waiting.get(key)
            if doc is None:
                doc = waiting[key] = _Document(key, number, [], [])
            doc.numbers.append(number)
            doc.lines.append(text)
            if number not in ends:
                continue
            del waiting[key]
            if number > after_line:
                doc.end = number
                yield doc
    if waiting:
        raise BackfillError(
            f"{source.name} changed while it was read: {len(waiting)} records have no end"
        )


def _fingerprint(salt: bytes, lines: list[str]) -> str:
    """A digest of a document's raw lines and of the rules that build its bytes."""
    return hashlib.blake2b(salt + "\n".join(lines).encode("utf-8"), digest_size=16).hexdigest()


def draft_batches(
    documents: Iterator[_Document],
    request: BackfillRequest,
    checker: RowChecker,
    provenance: Provenance,
    digest: str,
    emitted_rows: deque[int],
) -> Iterator[Drafts]:
    """Batches of ``batch_size`` documents; each one's bytes are built only if the engine
    asks (its raw lines differ from the ones its current revision was built from)."""
    layout = request.layout
    labels = "+".join(names.label for names in layout.layouts)
    salt = f"canonical-v{CANONICAL_FORM_VERSION}|{layout.name}|{labels}|".encode()
    kind = layout.doc_kind
    batch: list[_Document] = []
    provenances: dict[str, Provenance] = {}

    def by_format(source_format: str) -> Provenance:
        found = provenances.get(source_format)
        if found is None:
            found = provenances[source_format] = replace(provenance, source_format=source_format)
        return found

    def drafts_of(docs: list[_Document]) -> Drafts:
        doc_ids = [doc_id(SOURCE, kind, d.key) for d in docs]
        fingerprints = [_fingerprint(salt, d.lines) for d in docs]

        def build(positions: list[int]) -> list[Record]:
            records = []
            for i in positions:
                doc = docs[i]
                body, source_format = checker.body(doc.lines)
                records.append(
                    Record(
                        doc_id=doc_ids[i],
                        kind=kind,
                        body=body,
                        provenance=by_format(source_format),
                        attributes={
                            "file_sha256": digest,
                            "lines": doc.numbers,
                            FINGERPRINT: fingerprints[i],
                        },
                    )
                )
            return records

        emitted_rows.append(sum(len(d.numbers) for d in docs))
        return Drafts(
            doc_ids=doc_ids,
            fingerprints=fingerprints,
            provenance=provenance,
            build=build,
            checkpoint=f"{digest[:16]}:{docs[-1].end}",
        )

    for document in documents:
        batch.append(document)
        if len(batch) >= request.batch_size:
            yield drafts_of(batch)
            batch = []
    if batch:
        yield drafts_of(batch)


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
        if counts.records and emitted_rows:
            done["rows"] += emitted_rows.popleft()
        done["documents"] += counts.records
        reporter.writing(done["rows"], scanned.matched, done["documents"])

    provenance = Provenance(
        url=request.url or f"file:{request.path.name}",
        source_format=request.layout.source_format,
        fetched_at=now(),
    )
    checker = RowChecker(request.layout, request.vehicle)
    ingestor = Ingestor(warehouse, run_id, batch_size=request.batch_size, on_batch=on_batch)
    documents = _ended_documents(source, request, checker, scanned, after_line)
    batches = draft_batches(documents, request, checker, provenance, digest, emitted_rows)
    return ingestor.ingest_drafts(SOURCE, request.scope(), batches)


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

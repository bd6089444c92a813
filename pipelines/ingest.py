"""An ingest run: every entry of a manifest, fetched and written into the warehouse.

One failing entry does not stop the others: its failure is recorded with its reason, what
it had already committed stays, and the run ends ``failed``. A signal (Ctrl-C, SIGTERM)
stops the run: it is recorded ``interrupted`` with what its committed batches wrote, and the
next run of the manifest resumes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines import USER_AGENT
from pipelines.manifest import Manifest
from pipelines.progress import Reporter
from sources import registry
from sources.base import FetchContext
from sources.http import HttpFactory
from warehouse.errors import MassRetireRefused
from warehouse.ingest import COUNT_KEYS, DEFAULT_BATCH_SIZE, Counts, Ingestor
from warehouse.interrupt import interruption
from warehouse.runs import finish_run, interrupt_run, start_run
from warehouse.scopes import live_in_scope
from warehouse.sightings import body_seen_at
from warehouse.store import Warehouse, known_error


@dataclass
class RunResult:
    run_id: int
    status: str
    counts: dict[str, dict[str, int]]
    failures: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    resumes_run: int | None = None
    http_requests: int = 0
    left_corpus: list[str] = field(default_factory=list)
    # The transparency log's checkpoint the run recorded (None when the log did not grow).
    log_checkpoint: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        log = {} if self.log_checkpoint is None else {"log_checkpoint": self.log_checkpoint}
        return {
            "run_id": self.run_id,
            "status": self.status,
            "resumes_run": self.resumes_run,
            "counts": self.counts,
            "failures": self.failures,
            "warnings": self.warnings,
            "http_requests": self.http_requests,
            "left_corpus": self.left_corpus,
            **log,
        }


def interrupted_summary(run_id: int, committed: dict[str, dict[str, int]]) -> str:
    """One line for a run a signal stopped: what its committed batches wrote, and that the
    next run of the same manifest resumes it."""
    totals = {key: sum(c.get(key, 0) for c in committed.values()) for key in COUNT_KEYS}
    listed = ", ".join(f"{key} {value:,}" for key, value in totals.items() if value)
    return f"run {run_id} committed {listed or 'nothing'}; the next run resumes it"


def internal_error_reason(exc: BaseException) -> str:
    """How the ledger records an exception receipts did not expect: a bug, not an upstream
    failure."""
    return f"internal error: {type(exc).__name__}: {exc}"


@dataclass
class IngestOptions:
    only: list[str] | None = None
    allow_mass_retire: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    command: str = "ingest"
    extra: dict[str, Any] = field(default_factory=dict)


def _lookup(warehouse: Warehouse) -> Any:
    def lookup(doc_id: str, url: str, commit: str | None) -> bytes | None:
        return body_seen_at(warehouse, doc_id, url, commit)

    return lookup


def _known_in_scope(warehouse: Warehouse) -> Any:
    def known_in_scope(scope: str) -> dict[str, bytes]:
        return {d.doc_id: d.body for d in live_in_scope(warehouse, scope)}

    return known_in_scope


def run_ingest(
    manifest: Manifest,
    warehouse: Warehouse,
    *,
    http: HttpFactory | None = None,
    options: IngestOptions | None = None,
    reporter: Reporter | None = None,
) -> RunResult:
    options = options or IngestOptions()
    http = http or HttpFactory(user_agent=USER_AGENT)
    reporter = reporter or Reporter()
    info = start_run(warehouse, options.command, manifest.name, manifest.content_hash)
    reporter.run_started(info.run_id, manifest.name)
    ingestor = Ingestor(
        warehouse,
        info.run_id,
        batch_size=options.batch_size,
        allow_mass_retire=options.allow_mass_retire,
        corpus=manifest.name,
    )
    per_source: dict[str, Counts] = {}
    failures: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    retired: list[str] = []
    internal: Exception | None = None
    try:
        for source_name in manifest.sources():
            if options.only and source_name not in options.only:
                continue
            source = registry.SOURCES[source_name]
            source_total = per_source.setdefault(source_name, Counts())
            for entry in manifest.entries[source_name]:
                label = source.label(entry)
                ctx = FetchContext(
                    http=http,
                    lookup=_lookup(warehouse),
                    known_in_scope=_known_in_scope(warehouse),
                    options=options.extra,
                )
                # Counted as batches commit, so an entry that fails half-way still reports
                # what it committed.
                entry_total = Counts()
                reporter.entry_started(source_name, label)

                def on_batch(
                    counts: Counts,
                    _src: str = source_name,
                    _label: str = label,
                    _total: Counts = entry_total,
                ) -> None:
                    _total.add(counts)
                    reporter.batch_committed(_src, _label, _total)

                ingestor.on_batch = on_batch
                error: str | None = None
                try:
                    for listing in source.fetch(entry, ctx):
                        ingestor.ingest(source_name, listing)
                except Exception as exc:
                    stop = interruption(exc)  # DuckDB stopped a statement for a signal
                    if stop is not None:
                        raise stop from exc
                    known = known_error(exc)
                    if known is not None:  # one entry's failure must not stop the others
                        error = str(known) or type(known).__name__
                        failure = {"source": source_name, "entry": label, "reason": error}
                        failures.append({**failure, "hint": known.hint} if known.hint else failure)
                    else:  # a bug: recorded as such, then the run stops
                        internal = exc
                        error = internal_error_reason(exc)
                        failure = {"source": source_name, "entry": label, "reason": error}
                        failures.append({**failure, "internal": True})
                source_total.add(entry_total)
                warnings.extend(
                    {"source": source_name, "entry": label, "warning": w} for w in ctx.warnings
                )
                reporter.entry_finished(source_name, label, entry_total, error)
                if internal is not None:
                    break
            if internal is not None:
                break
        # Closed world: after a complete run of the whole manifest, documents no entry
        # yielded any more leave the corpus (they are no longer published).
        if not failures and not options.only:
            try:
                retired = ingestor.retire_departed()
            except MassRetireRefused as exc:
                failures.append({"source": "corpus", "entry": manifest.name, "reason": str(exc)})
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: record what committed, stop
        stop = interruption(exc)
        assert stop is not None
        committed = interrupt_run(warehouse, info.run_id, failures, warnings)
        stop.summary = interrupted_summary(info.run_id, committed)
        raise stop from None
    finally:
        reporter.close()
    counts = {
        name: {**total.as_dict(), "failed": sum(1 for f in failures if f["source"] == name)}
        for name, total in per_source.items()
    }
    status = "internal error" if internal is not None else ("failed" if failures else "ok")
    if retired:
        counts["corpus"] = {"left": len(retired)}
    if ingestor.conflicts_retried:  # batches a lake's other writers made us write again
        counts["warehouse"] = {"conflicts_retried": ingestor.conflicts_retried}
    head = finish_run(warehouse, info.run_id, status, counts, failures, warnings)
    if internal is not None:
        raise internal
    return RunResult(
        run_id=info.run_id,
        status=status,
        counts=counts,
        failures=failures,
        warnings=warnings,
        resumes_run=info.resumes_run,
        http_requests=http.requests_made,
        left_corpus=retired,
        log_checkpoint=None if head is None else head.as_json(),
    )


__all__ = ["COUNT_KEYS", "IngestOptions", "RunResult", "run_ingest"]

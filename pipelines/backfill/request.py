"""What a backfill is asked to do, and what its run reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sources.nhtsa.flatfile.layouts import LAYOUTS, Layout
from sources.nhtsa.flatfile.rows import VehicleFilter
from warehouse.backends import ROW_GROUP_SIZE
from warehouse.ingest import Counts

SOURCE = "nhtsa"
# The warehouse connection's limit while a backfill runs (--memory-limit): DuckDB's buffers
# for the scratch database, the plan's statements and what is committed but not yet in the
# file; beyond this it spills to disk. The build statements run in a database of their own
# (warehouse.bulk.build_engine), with a limit of their own. Two million rows on DuckDB 2.0.1:
# 128MB here kept the peak RSS at 540-550 MB; 160MB and 192MB ran within the noise of it
# (67-74 s against 69-78 s) with peaks of 572-606 MB. On DuckDB 1.5.5 the identical re-run
# of two million rows ran out of memory under 192MB while its plan kept each document's
# latest fingerprint and revision in aggregates over strings, which 1.5.5 cannot spill (see
# warehouse.bulk.plan_sql); with windows it completes under 192MB (peak RSS 819 MB, the
# first run's 701 MB) and under 64MB (603 MB). While the backfill plans, before the build
# database opens, the warehouse may use that database's allowance too (plan_memory_limit).
BACKFILL_WAREHOUSE_MEMORY_LIMIT = "192MB"
DEFAULT_BATCH_SIZE = ROW_GROUP_SIZE  # documents per transaction: a row group of each table


@dataclass(frozen=True)
class BackfillRequest:
    path: Path
    kind: str
    vehicle: VehicleFilter = field(default_factory=VehicleFilter)
    member: str | None = None
    url: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    memory_limit: str = BACKFILL_WAREHOUSE_MEMORY_LIMIT
    scratch_dir: Path | None = None
    allow_malformed: bool = False  # keep the readable rows of a mostly malformed file
    rescan: bool = False  # read a file the warehouse already holds as it is (identical)

    @property
    def layout(self) -> Layout:
        return LAYOUTS[self.kind]

    @property
    def source_url(self) -> str:
        """The file's name in its documents' sightings: its URL, else ``file:`` and its name."""
        return self.url or f"file:{self.path.name}"

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
    layouts: dict[str, int] = field(default_factory=dict)  # lines by layout label
    field_counts: dict[int, int] = field(default_factory=dict)  # lines by number of fields
    documents: Counts = field(default_factory=Counts)
    built: int = 0  # documents whose bytes were assembled (the others' lines had not changed)
    seconds: float = 0.0
    # The transparency log's checkpoint at the end of the run (Head.as_json), if it has one.
    log_checkpoint: dict[str, Any] | None = None
    # The earlier run of the same file whose counts this one took without reading it
    # (pipelines.backfill.identical), if so.
    identical_to_run: int | None = None

    @property
    def kept_nothing(self) -> str | None:
        """Why a run that read rows imported nothing (its filter matched none), or None."""
        if self.rows == 0 or self.matched > 0:
            return None
        return (
            f"none of the {self.rows:,} rows read matched the filter ({self.scope}): "
            "nothing was imported"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "scope": self.scope,
            "file": self.file,
            "file_sha256": self.file_sha256,
            "resumes_run": self.resumes_run,
            "resumed_after_line": self.resumed_after_line,
            "identical_to_run": self.identical_to_run,
            "rows": self.rows,
            "matched": self.matched,
            "malformed": self.malformed,
            "malformed_lines": self.malformed_lines,
            "layouts": self.layouts,
            "field_counts": {str(k): v for k, v in sorted(self.field_counts.items())},
            "documents": {"records": self.documents.records, **self.documents.as_dict()},
            "built": self.built,
            "seconds": round(self.seconds, 3),
            "warnings": [self.kept_nothing] if self.kept_nothing else [],
            **({} if self.log_checkpoint is None else {"log_checkpoint": self.log_checkpoint}),
        }

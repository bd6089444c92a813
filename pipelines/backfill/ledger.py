"""A backfill's row of the run ledger: its counts, its warnings (the malformed lines) and,
when it fails, why: a known error, or an unexpected exception, recorded as an internal error
as an ingest records one."""

from __future__ import annotations

from typing import Any

from pipelines.backfill.request import SOURCE, BackfillResult
from pipelines.ingest import internal_error_reason
from warehouse.errors import BackfillError, ReceiptsError
from warehouse.runs import finish_run
from warehouse.store import Warehouse, known_error

LEDGER_WARNINGS = 100  # line details written to the run ledger


def record_failure(
    warehouse: Warehouse,
    run_id: int,
    label: str,
    result: BackfillResult,
    exc: Exception,
    file_name: str,
) -> ReceiptsError | None:
    """Record the run as failed, and return the known error ``exc`` is or stands for: DuckDB
    out of memory, or the file or scratch directory failing to read or write (an
    ``OSError``). Anything else is a bug: the run is recorded as an ``internal error`` and
    None is returned (the caller raises ``exc`` itself)."""
    counts, warnings = ledger_counts(result), ledger_warnings(label, result)
    known = known_error(exc)
    if known is None and not isinstance(exc, OSError):
        failure = {"source": SOURCE, "entry": label, "reason": internal_error_reason(exc)}
        finish_run(
            warehouse, run_id, "internal error", counts, [{**failure, "internal": True}], warnings
        )
        return None
    reason = str(known or exc) or type(exc).__name__
    failure = {"source": SOURCE, "entry": label, "reason": reason}
    finish_run(warehouse, run_id, "failed", counts, [failure], warnings)
    return known or BackfillError(f"backfill of {file_name} failed: {reason}")


def ledger_counts(result: BackfillResult) -> dict[str, Any]:
    return {
        SOURCE: {
            **result.documents.as_dict(),
            "failed": 0 if result.status == "ok" else 1,
            "rows": result.rows,
            "malformed": result.malformed,
        }
    }


def ledger_warnings(label: str, result: BackfillResult) -> list[dict[str, Any]]:
    warnings = [
        {"source": SOURCE, "entry": label, "warning": f"line {m['line']}: {m['reason']}"}
        for m in result.malformed_lines[:LEDGER_WARNINGS]
    ]
    if result.malformed > len(warnings):
        more = result.malformed - len(warnings)
        warnings.append(
            {"source": SOURCE, "entry": label, "warning": f"and {more} more malformed rows"}
        )
    if result.kept_nothing:
        warnings.append({"source": SOURCE, "entry": label, "warning": result.kept_nothing})
    return warnings

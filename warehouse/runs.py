"""The run ledger: a 'started' row, then a 'finished' row; a run a signal stopped gets an
'interrupted' row instead (it stays unfinished, to be resumed). Nothing is updated."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from warehouse.clock import now
from warehouse.ingest import COUNT_KEYS
from warehouse.store import Warehouse
from warehouse.tlog.heads import Head, record_head
from warehouse.tlog.transactions import logged_transaction


@dataclass(frozen=True)
class RunInfo:
    run_id: int
    resumes_run: int | None


def start_run(
    warehouse: Warehouse,
    command: str,
    manifest_name: str | None = None,
    manifest_hash: str | None = None,
) -> RunInfo:
    """Append a 'started' row and return the new run's id.

    The id is the next integer, chosen inside the transaction that appends the row while the
    writer lock is held (on a lake: the corpus lock, held until the warehouse is closed, and
    a short lock around taking the id). When the previous run of the same manifest never
    finished (it was interrupted), the new run records that it resumes it.
    """
    if manifest_name is not None:
        warehouse.lock_corpus(manifest_name)
    # On a lake several writers append runs: one at a time takes the next id.
    with warehouse.serial("ids:runs"), warehouse._transaction() as con:
        run_id = int(warehouse._scalar("SELECT coalesce(max(run_id), 0) + 1 FROM runs"))
        resumes = None
        if manifest_hash is not None:
            row = warehouse._first_row(
                "SELECT run_id, status FROM run_summary WHERE manifest_hash = $h "
                "AND command = $c ORDER BY run_id DESC LIMIT 1",
                {"h": manifest_hash, "c": command},
            )
            if row is not None and row[1] == "unfinished":
                resumes = int(row[0])
        con.execute(
            "INSERT INTO runs (run_id, event, recorded_at, command, manifest_name, manifest_hash, "
            "pid, host, status, resumes_run) VALUES ($run, 'started', $at, $command, $name, $hash, "
            "$pid, $host, 'running', $resumes)",
            {
                "run": run_id,
                "at": now(),
                "command": command,
                "name": manifest_name,
                "hash": manifest_hash,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "resumes": resumes,
            },
        )
    warehouse.describe_holder(run_id)
    return RunInfo(run_id, resumes)


def finish_run(
    warehouse: Warehouse,
    run_id: int,
    status: str,
    counts: dict[str, Any],
    failures: list[dict[str, Any]],
    warnings: list[dict[str, Any]] | None = None,
) -> Head | None:
    """Append the 'finished' row of a run (status ``ok`` or ``failed``), and the transparency
    log's checkpoint (:func:`warehouse.tlog.heads.record_head`), which is returned (None when
    the log did not grow)."""
    with logged_transaction(warehouse) as con:
        con.execute(
            "INSERT INTO runs "
            "(run_id, event, recorded_at, command, status, counts, failures, warnings) "
            "SELECT run_id, 'finished', $at, command, $status, $counts, $failures, $warnings "
            "FROM runs WHERE run_id = $run AND event = 'started' AND NOT EXISTS "
            "(SELECT 1 FROM runs WHERE run_id = $run AND event = 'finished')",
            {
                "run": run_id,
                "at": now(),
                "status": status,
                "counts": json.dumps(counts, sort_keys=True),
                "failures": json.dumps(failures, sort_keys=True),
                "warnings": json.dumps(warnings or [], sort_keys=True),
            },
        )
        return record_head(con, run_id)


def interrupt_run(
    warehouse: Warehouse,
    run_id: int,
    failures: list[dict[str, Any]] | None = None,
    warnings: list[dict[str, Any]] | None = None,
) -> dict[str, dict[str, int]]:
    """Append an 'interrupted' row to a run stopped by a signal, with the counts of what its
    committed batches wrote (read from ``run_progress``, which commits with each batch: the
    truth whatever the process was doing when the signal came), and return those counts.

    The run stays unfinished in ``run_summary``: the next run of the same manifest resumes
    it, and drift never compares against it, as for a run killed outright."""
    counts = committed_counts(warehouse, run_id).get(run_id, {})
    with warehouse._transaction() as con:
        con.execute(
            "INSERT INTO runs "
            "(run_id, event, recorded_at, command, status, counts, failures, warnings) "
            "SELECT run_id, 'interrupted', $at, command, 'interrupted', $counts, $failures, "
            "$warnings FROM runs WHERE run_id = $run AND event = 'started' AND NOT EXISTS "
            "(SELECT 1 FROM runs WHERE run_id = $run AND event IN ('finished', 'interrupted'))",
            {
                "run": run_id,
                "at": now(),
                "counts": json.dumps(counts, sort_keys=True),
                "failures": json.dumps(failures or [], sort_keys=True),
                "warnings": json.dumps(warnings or [], sort_keys=True),
            },
        )
    return counts


def committed_counts(
    warehouse: Warehouse, run_id: int | None = None
) -> dict[int, dict[str, dict[str, int]]]:
    """What the committed batches of each unfinished run (or of ``run_id``, finished or
    not) wrote, per source: ``{run_id: {source: {new, changed, ...}}}``. For a run still
    going or interrupted, these are its counts so far."""
    rows = warehouse._con.execute(
        "SELECT p.run_id, p.source, sum(p.new), sum(p.changed), "
        "sum(p.unchanged), sum(p.gone), sum(p.restored) FROM run_progress p "
        "WHERE CASE WHEN $run IS NULL THEN p.run_id IN "
        "(SELECT run_id FROM run_summary WHERE status = 'unfinished') ELSE p.run_id = $run END "
        "GROUP BY p.run_id, p.source ORDER BY p.run_id, p.source",
        {"run": run_id},
    ).fetchall()
    out: dict[int, dict[str, dict[str, int]]] = {}
    for run, source, *sums in rows:
        out.setdefault(int(run), {})[str(source)] = {
            key: int(value or 0) for key, value in zip(COUNT_KEYS, sums, strict=True)
        }
    return out


def interruptions(warehouse: Warehouse) -> dict[int, dict[str, Any]]:
    """The 'interrupted' row of every run a signal stopped: ``{run_id: {recorded_at,
    failures, warnings}}``."""
    rows = warehouse._con.execute(
        "SELECT run_id, recorded_at, failures, warnings FROM runs WHERE event = 'interrupted'"
    ).fetchall()
    return {
        int(run_id): {
            "recorded_at": recorded_at,
            "failures": json.loads(failures or "[]"),
            "warnings": json.loads(warnings or "[]"),
        }
        for run_id, recorded_at, failures, warnings in rows
    }


def latest_run(warehouse: Warehouse, manifest_name: str) -> int | None:
    """The newest run of the manifest named ``manifest_name``, if any."""
    value = warehouse._scalar(
        "SELECT max(run_id) FROM runs WHERE manifest_name = $name", {"name": manifest_name}
    )
    return None if value is None else int(value)


class BatchProgress(NamedTuple):
    """One committed batch of a run: what it read, what it wrote, where it stopped."""

    run_id: int
    batch_no: int
    source: str
    scope: str
    recorded_at: datetime
    records: int
    new: int
    changed: int
    unchanged: int
    gone: int
    restored: int
    checkpoint: str | None


def progress(warehouse: Warehouse, run_id: int | None = None) -> list[BatchProgress]:
    """The committed batches of every run (or of ``run_id``), in order."""
    rows = warehouse._con.execute(
        "SELECT run_id, batch_no, source, scope, recorded_at, records, new, changed, "
        "unchanged, gone, restored, checkpoint FROM run_progress "
        "WHERE $run IS NULL OR run_id = $run ORDER BY run_id, batch_no",
        {"run": run_id},
    ).fetchall()
    return [BatchProgress._make(row) for row in rows]


def latest_checkpoint(warehouse: Warehouse, source: str, scope: str) -> str | None:
    """Where an interrupted run stopped reading ``scope``, if its last run did not finish.

    Returns None when the newest run that touched the scope finished (start over) or when
    nothing was ever committed for it.
    """
    row = warehouse._first_row(
        """
        SELECT p.checkpoint, s.status
        FROM run_progress p JOIN run_summary s USING (run_id)
        WHERE p.source = $source AND p.scope = $scope
        ORDER BY p.run_id DESC, p.batch_no DESC
        LIMIT 1
        """,
        {"source": source, "scope": scope},
    )
    if row is None or row[1] == "ok":
        return None
    return None if row[0] is None else str(row[0])


def record_observed(warehouse: Warehouse, run_id: int, warnings: list[dict[str, Any]]) -> None:
    """Append an 'observed' row to a finished run: the warnings of the observers that failed
    after it finished (a notification not delivered, a metrics file not written)."""
    with warehouse._transaction() as con:
        con.execute(
            "INSERT INTO runs (run_id, event, recorded_at, command, warnings) "
            "SELECT run_id, 'observed', $at, command, $warnings FROM runs "
            "WHERE run_id = $run AND event = 'started'",
            {"run": run_id, "at": now(), "warnings": json.dumps(warnings, sort_keys=True)},
        )


def observed_warnings(warehouse: Warehouse) -> dict[int, list[dict[str, Any]]]:
    """The observers' warnings of every run that has some, by run."""
    rows = warehouse._con.execute(
        "SELECT run_id, warnings FROM runs WHERE event = 'observed' ORDER BY run_id, recorded_at"
    ).fetchall()
    out: dict[int, list[dict[str, Any]]] = {}
    for run_id, warnings in rows:
        out.setdefault(int(run_id), []).extend(json.loads(warnings or "[]"))
    return out


def revisions_under(warehouse: Warehouse, prefix: str) -> int:
    """How many revisions the warehouse holds of documents whose id starts with ``prefix``
    (revisions are only appended: a count that did not move means none was written)."""
    return int(
        warehouse._scalar(
            "SELECT count(*) FROM revisions WHERE starts_with(doc_id, $p)", {"p": prefix}
        )
    )


def latest_ok_counts(
    warehouse: Warehouse, command: str, manifest_hash: str, runs: int
) -> list[tuple[int, dict[str, Any]]]:
    """The ids and counts of the latest ``runs`` runs of ``command`` with this manifest hash
    that finished ok, newest first."""
    rows = warehouse._con.execute(
        "SELECT run_id, counts FROM run_summary WHERE manifest_hash = $h AND command = $c "
        "AND status = 'ok' ORDER BY run_id DESC LIMIT $n",
        {"h": manifest_hash, "c": command, "n": runs},
    ).fetchall()
    return [(int(run_id), json.loads(counts or "{}")) for run_id, counts in rows]

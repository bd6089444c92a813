"""The report of a finished writing run: a typed, pure summary built from the results the
commands already have (refresh, ingest, publish, backfill, verify-claims)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.backfill.request import BackfillResult
from pipelines.checks.claims import ClaimsCheck
from pipelines.ingest import RunResult
from pipelines.publish.result import PushResult
from pipelines.refresh import RefreshResult

# The drift that is a "drift found" event: documents that changed in content, went or came
# back (new documents are counted, but a growing corpus is not news).
DRIFT_EVENT = ("changed", "gone", "restored")
# The document counts a report keeps per source, in this order.
COUNTS = ("new", "changed", "gone", "unseen", "restored", "failed")


@dataclass(frozen=True)
class ClaimChange:
    claim_id: str
    doc_id: str
    before: str | None
    after: str


@dataclass(frozen=True)
class PushSummary:
    target: str
    namespace: str
    status: str
    push_id: int | None
    mutations: int
    unknown_batches: int
    unrelated_before: int | None
    unrelated_after: int | None
    touched_by_us: int | None
    message: str | None


@dataclass(frozen=True)
class RunReport:
    """One finished run: what ran, how it ended, and what it found."""

    command: str
    corpus: str | None
    run_ids: tuple[int, ...]
    status: str  # ok | failed | interrupted
    started: datetime
    finished: datetime
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    drifted: tuple[str, ...] = ()  # drifted documents upstream, then in the target (listed)
    drift_total: int = 0  # all of them (the listing may be cut short)
    unseen: tuple[str, ...] = ()
    claims: dict[str, int] = field(default_factory=dict)  # claims by status
    claim_changes: tuple[ClaimChange, ...] = ()
    push: PushSummary | None = None
    failures: tuple[str, ...] = ()
    retries: int = 0
    report_hint: str | None = None  # where the full report is

    @property
    def duration(self) -> float:
        return max((self.finished - self.started).total_seconds(), 0.0)

    @property
    def guard_tripped(self) -> bool:
        return self.push is not None and self.push.status == "guard-tripped"

    @property
    def push_unknown(self) -> bool:
        return self.push is not None and self.push.unknown_batches > 0

    @property
    def claims_changed(self) -> tuple[ClaimChange, ...]:
        """The claims that stopped holding (holds -> stale, misattributed, gone, ...)."""
        return tuple(c for c in self.claim_changes if c.before == "holds" and c.after != "holds")

    def as_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "corpus": self.corpus,
            "run_ids": list(self.run_ids),
            "status": self.status,
            "started": self.started.isoformat(),
            "finished": self.finished.isoformat(),
            "duration_seconds": round(self.duration, 3),
            "counts": self.counts,
            "drifted": list(self.drifted),
            "drift_total": self.drift_total,
            "unseen": list(self.unseen),
            "claims": self.claims,
            "claim_changes": [vars(c) for c in self.claim_changes],
            "push": None if self.push is None else vars(self.push),
            "failures": list(self.failures),
            "retries": self.retries,
        }


def _counts(run: RunResult) -> dict[str, dict[str, int]]:
    counts = {
        source: {key: int(values.get(key, 0)) for key in COUNTS}
        for source, values in run.counts.items()
    }
    for failure in run.failures:  # a source whose counts do not say how many entries failed
        source = str(failure.get("source", "?"))
        if "failed" not in run.counts.get(source, {}):
            counts.setdefault(source, dict.fromkeys(COUNTS, 0))["failed"] += 1
    return counts


def _push(push: PushResult) -> PushSummary:
    return PushSummary(
        target=push.target,
        namespace=push.namespace,
        status=push.status,
        push_id=push.push_id,
        mutations=push.applied,
        unknown_batches=sum(1 for b in push.batches if b.get("status") == "unknown"),
        unrelated_before=push.unrelated_before,
        unrelated_after=push.unrelated_after,
        touched_by_us=push.touched_by_us,
        message=push.message,
    )


def _claims(check: ClaimsCheck) -> tuple[dict[str, int], tuple[ClaimChange, ...]]:
    changes = tuple(ClaimChange(c.claim_id, c.doc_id, c.before, c.after) for c in check.changed)
    return dict(check.counts), changes


def _push_failed(push: PushResult | None) -> bool:
    return push is not None and push.status not in ("ok", "dry-run")


def from_ingest(
    run: RunResult, corpus: str, started: datetime, finished: datetime, retries: int = 0
) -> RunReport:
    failures = tuple(f"{f['source']}: {f['entry']}: {f['reason']}" for f in run.failures)
    return RunReport(
        command="ingest",
        corpus=corpus,
        run_ids=(run.run_id,),
        status="ok" if run.status == "ok" else "failed",
        started=started,
        finished=finished,
        counts=_counts(run),
        failures=failures,
        retries=retries,
        report_hint=f"receipts runs (run {run.run_id})",
    )


def from_refresh(
    result: RefreshResult, corpus: str, started: datetime, finished: datetime, retries: int = 0
) -> RunReport:
    run = result.ingest
    counts = _counts(run)
    for row in result.drift.unseen:
        counts.setdefault(row.source, dict.fromkeys(COUNTS, 0))["unseen"] += 1
    worst = {outcome: n for n, outcome in enumerate(("gone", "changed", "restored"))}
    rows = sorted(
        (row for row in result.drift.rows if row.outcome in DRIFT_EVENT),
        key=lambda row: worst[row.outcome],
    )
    drifted = [row.doc_id for row in rows]
    totals = result.drift.totals
    drift_total = sum(totals[k] for k in DRIFT_EVENT)
    target = result.target_drift
    if target is not None and target.found:
        in_target = [*target.edited, *target.written, *target.deleted, *target.drafts]
        drifted += in_target
        drift_total += len(in_target)
    failures = [f"{f['source']}: {f['entry']}: {f['reason']}" for f in run.failures]
    failures += [e for e in (result.publish_error, result.claims_error) if e]
    if result.push is not None and _push_failed(result.push) and result.push.message:
        failures.append(f"push: {result.push.message}")
    claims, changes = _claims(result.claims) if result.claims else ({}, ())
    bad = bool(result.claims and result.claims.bad)
    failed = run.status != "ok" or bool(failures) or _push_failed(result.push) or bad
    return RunReport(
        command="refresh",
        corpus=corpus,
        run_ids=(run.run_id,),
        status="failed" if failed else "ok",
        started=started,
        finished=finished,
        counts=counts,
        drifted=tuple(dict.fromkeys(drifted)),
        drift_total=drift_total,
        unseen=tuple(row.doc_id for row in result.drift.unseen),
        claims=claims,
        claim_changes=changes,
        push=None if result.push is None else _push(result.push),
        failures=tuple(failures),
        retries=retries,
        report_hint=f"receipts drift MANIFEST (run {run.run_id})",
    )


def from_push(push: PushResult, corpus: str, started: datetime, finished: datetime) -> RunReport:
    return RunReport(
        command="publish",
        corpus=corpus,
        run_ids=(),
        status="failed" if _push_failed(push) else "ok",
        started=started,
        finished=finished,
        push=_push(push),
        failures=(f"push: {push.message}",) if _push_failed(push) and push.message else (),
        report_hint=None if push.push_id is None else f"receipts pushes (push {push.push_id})",
    )


def from_backfill(result: BackfillResult, started: datetime, finished: datetime) -> RunReport:
    docs = result.documents.as_dict()
    counts = {"nhtsa": {key: int(docs.get(key, 0)) for key in COUNTS}}
    return RunReport(
        command="backfill nhtsa",
        corpus=None,
        run_ids=(result.run_id,),
        status="ok" if result.status == "ok" else "failed",
        started=started,
        finished=finished,
        counts=counts,
        failures=() if result.status == "ok" else (f"backfill {result.scope}: {result.status}",),
    )


def from_claims(
    check: ClaimsCheck, corpus: str | None, started: datetime, finished: datetime
) -> RunReport:
    claims, changes = _claims(check)
    return RunReport(
        command="verify-claims",
        corpus=corpus,
        run_ids=() if check.run_id is None else (check.run_id,),
        status="failed" if check.bad else "ok",
        started=started,
        finished=finished,
        claims=claims,
        claim_changes=changes,
        failures=tuple(f"claim row {b.origin}: {b.problem}" for b in check.bad),
        report_hint=None if check.check_id is None else f"claims check {check.check_id}",
    )

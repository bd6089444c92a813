"""What a push did: its plan, what it applied, its receipt and its status (``PushResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.publish.plan import Plan
from pipelines.publish.writers import Write
from warehouse.pushes import Receipt


@dataclass
class PushResult:
    target: str
    namespace: str
    status: str  # ok | dry-run | conflict | failed | guard-tripped (running while it runs)
    plan: Plan
    push_id: int | None = None
    applied: int = 0
    transaction_ids: list[str] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    unrelated_before: int | None = None
    unrelated_after: int | None = None
    touched_by_us: int | None = None
    touched_ids: list[str] = field(default_factory=list)
    edited_by_others: int | None = None  # unrelated documents others edited during the push
    edited_by_others_ids: list[str] = field(default_factory=list)
    written_by_others: list[Write] = field(default_factory=list)  # up to writers.SHOWN
    written_by_others_count: int | None = None
    conflicts: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    message: str | None = None
    # documents over the request limit: sent without their largest fields, or skipped
    oversize: list[dict[str, Any]] = field(default_factory=list)
    # The transparency log's checkpoint once the push is recorded (Head.as_json), if any.
    log_checkpoint: dict[str, Any] | None = None

    @property
    def dry_run(self) -> bool:
        return self.status == "dry-run"

    @property
    def receipt(self) -> Receipt:
        return Receipt(self.unrelated_before, self.unrelated_after, self.touched_by_us)

    def as_json(self) -> dict[str, Any]:
        return {
            "push_id": self.push_id,
            "target": self.target,
            "namespace": self.namespace,
            "status": self.status,
            "dry_run": self.dry_run,
            "plan": self.plan.counts(),
            "create": self.plan.create,
            "update": self.plan.update,
            "orphan": self.plan.orphan,
            "blocked": self.plan.blocked,
            "applied": self.applied,
            "transaction_ids": self.transaction_ids,
            "batches": self.batches,
            "receipt": {
                "unrelated_before": self.unrelated_before,
                "unrelated_after": self.unrelated_after,
                "touched_by_us": self.touched_by_us,
                "touched_ids": self.touched_ids,
                "edited_by_others": self.edited_by_others,
                "edited_by_others_ids": self.edited_by_others_ids,
                "written_by_others": [w.as_json() for w in self.written_by_others],
                "written_by_others_count": self.written_by_others_count,
            },
            "releases": [o.as_json() for o in self.plan.overlays],
            "held": self.plan.held,
            "conflicts": self.conflicts,
            "notices": self.notices,
            "reconciled": self.reconciled,
            "oversize": self.oversize,
            "message": self.message,
            **({} if self.log_checkpoint is None else {"log_checkpoint": self.log_checkpoint}),
        }

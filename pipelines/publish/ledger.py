"""The push ledger (``warehouse.pushes``): the push, each transaction and the receipt.

Before sending, a push reconciles: namespace documents whose ``_rev`` is the id of a
transaction of an earlier push of ours that has no committed row (the push was killed, or
the answer lost) get a 'reconciled' row, so they are ours again for target drift.
A dry run (or a push without a warehouse) records nothing: :class:`NoLedger`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from pipelines.publish.plan import Plan, TargetState
from pipelines.publish.result import PushResult
from warehouse.pushes import (
    finish_push,
    push_key,
    record_batch,
    record_handover,
    record_reconciled,
    start_push,
    unrecorded_transactions,
)
from warehouse.store import Warehouse


class Ledger(Protocol):
    """What a push records, and where; ``push_id`` numbers the push once it has started
    (None while it has not, or when nothing is recorded)."""

    push_id: int | None
    push_key: str | None  # part of the push's transaction ids (warehouse.pushes.push_key)

    def refuse(self, message: str) -> None: ...
    def start(
        self, plan_counts: dict[str, int], unrelated_before: int | None, take_over: str | None
    ) -> None: ...
    def reconcile(self, state: TargetState) -> list[str]: ...
    def record_batch(self, row: Mapping[str, Any]) -> None: ...
    def finish(self, result: PushResult, conflicts: list[dict[str, Any]]) -> None: ...


class NoLedger:
    """Records nothing: a dry run, or a push without a warehouse."""

    push_id: int | None = None
    push_key: str | None = None

    def refuse(self, message: str) -> None:
        pass

    def start(
        self, plan_counts: dict[str, int], unrelated_before: int | None, take_over: str | None
    ) -> None:
        pass

    def reconcile(self, state: TargetState) -> list[str]:
        return []

    def record_batch(self, row: Mapping[str, Any]) -> None:
        pass

    def finish(self, result: PushResult, conflicts: list[dict[str, Any]]) -> None:
        pass


class PushLedger:
    """The record of one push of the corpus ``manifest_name`` (namespace ``namespace``) to
    ``target`` in ``warehouse``."""

    def __init__(
        self,
        warehouse: Warehouse,
        *,
        target: str,
        namespace: str,
        manifest_name: str | None,
        run_id: int | None,
    ) -> None:
        self.warehouse = warehouse
        self.target = target
        self.namespace = namespace
        self.manifest_name = manifest_name
        self.run_id = run_id
        self.push_id: int | None = None
        self.push_key: str | None = None

    def _start(self, plan_counts: dict[str, int], unrelated_before: int | None) -> int:
        return start_push(
            self.warehouse,
            target=self.target,
            namespace=self.namespace,
            manifest_name=self.manifest_name,
            run_id=self.run_id,
            plan_counts=plan_counts,
            unrelated_before=unrelated_before,
        )

    def refuse(self, message: str) -> None:
        """A push refused before anything was sent: one row saying why."""
        refused = PushResult(self.target, self.namespace, "refused", Plan(self.namespace, 0))
        refused.message = message
        self._finish(self._start({}, None), refused, [])

    def start(
        self, plan_counts: dict[str, int], unrelated_before: int | None, take_over: str | None
    ) -> None:
        """The push's row; with ``take_over`` (the corpus this one is a rename of), the
        handover of its namespace beside it."""
        self.push_id = self._start(plan_counts, unrelated_before)
        self.push_key = push_key(self.warehouse, self.push_id)
        if take_over is not None:
            record_handover(self.warehouse, self.push_id, self.target, self.namespace, take_over)

    def reconcile(self, state: TargetState) -> list[str]:
        """Record the transactions of ours that committed unrecorded (an interrupted push, a
        lost answer): the documents carry their ids as ``_rev``. Returns them, sorted."""
        revisions = Counter(d.rev for d in state.documents.values() if d.rev)
        found = unrecorded_transactions(self.warehouse, self.target, self.namespace, revisions)
        if not found:
            return []
        record_reconciled(self.warehouse, {tx: revisions[tx] for tx in found}, self.push_id)
        return sorted(found)

    def record_batch(self, row: Mapping[str, Any]) -> None:
        if self.push_id is not None:
            record_batch(self.warehouse, self.push_id, row)

    def finish(self, result: PushResult, conflicts: list[dict[str, Any]]) -> None:
        if self.push_id is not None:
            self._finish(self.push_id, result, conflicts)

    def _finish(self, push_id: int, result: PushResult, conflicts: list[dict[str, Any]]) -> None:
        head = finish_push(
            self.warehouse,
            push_id,
            status=result.status,
            applied=result.applied,
            transaction_ids=result.transaction_ids,
            receipt=result.receipt,
            conflicts=conflicts,
            notices=result.notices,
            message=result.message,
        )
        result.log_checkpoint = None if head is None else head.as_json()

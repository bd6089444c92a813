"""Sending a plan's actions to the target as Sanity transactions, and keeping their record.

Transactions (size-limited batches, deterministic ``transactionId``\\ s) are sent level by
level with bounded concurrency. No transaction id is ever sent twice: when the answer to a
transaction is lost (timeout, dropped connection, 5xx, and also a 429 or an answer that its
id is already used: nothing says it was not written, and Sanity's own client never resends a
mutation), the batch's documents are read back (``committed_from_documents``): if they carry
its id as ``_rev`` it committed and is recorded so; if they provably do not, its actions go
out again in a new transaction; if nothing can tell, the push stops and says so. A
transaction refused because a revision moved is re-read and re-planned (``plan.replan``):
untouched documents are sent again, a document edited in the target is reported, never
overwritten. A failed transaction stops the push; the batches that committed stay committed
and recorded (one ledger row per transaction), and re-running the push completes the rest.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from pipelines.manifest import Publish
from pipelines.publish.curate import CuratedDocument
from pipelines.publish.ledger import Ledger
from pipelines.publish.plan import ENVELOPE_BYTES, Action, TargetDocument, batches, replan
from pipelines.publish.targets.base import Committed, Target, Transaction
from warehouse.canonical import canonical_json
from warehouse.errors import (
    CommitUncertain,
    HttpError,
    MutationRateLimited,
    RevisionConflict,
    TargetError,
)

# ``progress(step, done, total, detail)``: told of the mutations applied after each
# committed transaction (e.g. a :class:`pipelines.progress.Steps`).
PushProgress = Callable[[str, int, int | None, str], None]

# A document may be in at most this many refused transactions before it is reported.
MAX_CONFLICT_ROUNDS = 2
# A document may be in at most this many transactions that provably did not commit...
MAX_RESENDS = 2
# ...not counting those answered 429 (rate limited), of which it may be in this many.
MAX_RATE_LIMITED = 5


def transaction_id(
    namespace: str, push_id: int | None, batch_no: int, mutations: Any, key: str | None = None
) -> str:
    """``rcpt-<push>-<key>-<batch>-<digest>``: a function of the push (its number and its
    ``key``, ``warehouse.pushes.push_key``, which a warehouse restored from a backup does not
    repeat), the batch and its content; ``rcpt-0-<batch>-<digest>`` when no ledger numbers
    the push."""
    digest = hashlib.sha256(namespace.encode() + b"\n" + canonical_json(mutations)).hexdigest()
    if push_id and key:
        return f"rcpt-{push_id}-{key}-{batch_no}-{digest[:16]}"
    return f"rcpt-{push_id or 0}-{batch_no}-{digest[:16]}"


def committed_from_documents(
    transaction_id: str, actions: Sequence[Action], current: Mapping[str, TargetDocument]
) -> bool | None:
    """Pure: did the transaction commit, judging by the current state of its documents?

    True when one of them carries its id as ``_rev`` (transaction ids are unique, so only it
    can have put it there); False when one of them is provably untouched by it (a create
    whose document does not exist, a patch or delete whose document still has the revision
    it was planned against) and none carries its id; None when nothing tells."""
    untouched = False
    for action in actions:
        document = current.get(action.id)
        if document is not None and document.rev == transaction_id:
            return True
        if action.op == "create":
            untouched = untouched or document is None
        elif document is not None and action.planned_rev is not None:
            untouched = untouched or document.rev == action.planned_rev
    return False if untouched else None


@dataclass(frozen=True)
class _Batch:
    number: int
    transaction: Transaction
    actions: list[Action]


class Sender:
    """Sends a plan's actions and keeps the record: one ledger row per transaction."""

    def __init__(
        self,
        target: Target,
        namespace: str,
        settings: Publish,
        wanted: dict[str, CuratedDocument],
        ledger: Ledger,
        progress: PushProgress | None = None,
    ) -> None:
        self.target = target
        self.progress = progress
        self.total = 0
        self.namespace = namespace
        self.settings = settings
        self.wanted = wanted
        self.ledger = ledger
        self.batch_no = 0
        self.applied = 0
        self.sent_ids: list[str] = []  # every transaction sent, committed or not
        self.batches: list[dict[str, Any]] = []
        self.conflicts: list[dict[str, str]] = []
        self.failure: str | None = None
        self._replanned: set[str] = set()
        self._rounds: Counter[str] = Counter()
        self._resends: Counter[str] = Counter()
        self._rate_limited: Counter[str] = Counter()

    @property
    def transaction_ids(self) -> list[str]:
        """The committed transactions, in batch order."""
        rows = sorted(self.batches, key=lambda b: int(b["batch_no"]))
        return [str(b["transaction_id"]) for b in rows if b["status"] == "committed"]

    def send(self, actions: Sequence[Action]) -> None:
        self.total = len(actions)
        for level in sorted({a.level for a in actions}):
            queue = [a for a in actions if a.level == level]
            while queue and self.failure is None:
                queue = self._send_round(queue)
            if self.failure is not None:
                return

    def _transaction(self, actions: list[Action]) -> _Batch:
        self.batch_no += 1
        mutations = [a.mutation for a in actions]
        size = ENVELOPE_BYTES + sum(a.size for a in actions) + len(actions) - 1
        tx_id = transaction_id(
            self.namespace, self.ledger.push_id, self.batch_no, mutations, self.ledger.push_key
        )
        return _Batch(self.batch_no, Transaction(tx_id, mutations, size), actions)

    def _send_round(self, queue: list[Action]) -> list[Action]:
        """Send ``queue`` as transactions; return what must be sent again."""
        planned = [
            self._transaction(group)
            for group in batches(queue, self.settings.batch_bytes, self.settings.batch_mutations)
        ]
        again: list[Action] = []
        waiting = iter(planned)
        in_flight: dict[Future[Committed], _Batch] = {}
        with ThreadPoolExecutor(self.settings.concurrency, thread_name_prefix="push") as pool:

            def fill() -> None:
                # Never more than `concurrency` in flight, and nothing new after a failure.
                while len(in_flight) < self.settings.concurrency and self.failure is None:
                    batch = next(waiting, None)
                    if batch is None:
                        return
                    self.sent_ids.append(batch.transaction.id)
                    in_flight[pool.submit(self.target.commit, batch.transaction)] = batch

            fill()
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: in_flight[f].number):
                    again += self._outcome(in_flight.pop(future), future)
                fill()
        return again

    def _outcome(self, batch: _Batch, future: Future[Committed]) -> list[Action]:
        """Record how a transaction ended; return its actions that must be sent again."""
        try:
            committed = future.result()
        except CommitUncertain as exc:
            return self._after_uncertain(batch, exc)
        except RevisionConflict as exc:
            self._record(batch, "conflict", str(exc))
            return self._after_conflict(batch.actions)
        except (HttpError, TargetError) as exc:
            self._record(batch, "failed", str(exc))
            self.failure = f"transaction {batch.transaction.id} failed: {exc}"
            return []
        again = self._after_commit(batch, committed)
        if self.progress is not None:
            committed_count = len(self.transaction_ids)
            noun = "transaction" if committed_count == 1 else "transactions"
            self.progress(
                "mutations applied",
                self.applied,
                self.total,
                f"({committed_count:,} {noun} committed)",
            )
        return again

    def _after_commit(
        self, batch: _Batch, committed: Committed, message: str | None = None
    ) -> list[Action]:
        if committed.transaction_id not in self.sent_ids:
            self.sent_ids.append(committed.transaction_id)
        self.applied += len(batch.actions)
        self._record(batch, "committed", message, committed.transaction_id)
        existed = [
            a
            for a in batch.actions
            if a.op == "create" and committed.operations.get(a.id, "create") != "create"
        ]
        return self._after_conflict(existed) if existed else []

    def _after_uncertain(self, batch: _Batch, exc: CommitUncertain) -> list[Action]:
        """The answer to ``batch`` was lost: read its documents back and record the truth;
        return its actions only if it provably did not commit."""
        tx_id = batch.transaction.id
        try:
            current = self.target.read_documents([a.id for a in batch.actions])
        except (HttpError, TargetError) as read_error:
            current, why = {}, f"; reading its documents back failed: {read_error}"
        else:
            why = ""
        verdict = committed_from_documents(tx_id, batch.actions, current) if not why else None
        if verdict is True:
            operations = {
                a.id: (
                    "none"
                    if a.op == "create" and (d := current.get(a.id)) and d.rev != tx_id
                    else a.op
                )
                for a in batch.actions
            }
            note = f"{exc}; verified committed: its documents carry it as _rev"
            return self._after_commit(batch, Committed(tx_id, operations), note)
        if verdict is None:
            self._record(batch, "unknown", f"{exc}; whether it committed is unknown{why}")
            self.failure = (
                f"transaction {tx_id}: {exc}; whether it committed is unknown{why} "
                "(the next push reads the target and reconciles)"
            )
            return []
        counter, limit = (
            (self._rate_limited, MAX_RATE_LIMITED)
            if isinstance(exc, MutationRateLimited)
            else (self._resends, MAX_RESENDS)
        )
        for action in batch.actions:
            counter[action.id] += 1
        if any(counter[a.id] > limit for a in batch.actions):
            self._record(batch, "failed", f"{exc}; verified not committed")
            self.failure = (
                f"transaction {tx_id} failed: {exc}; verified not committed, and its "
                f"documents were already sent {limit + 1} times"
            )
            return []
        self._record(batch, "not-committed", f"{exc}; verified not committed; sent again")
        return list(batch.actions)

    def _after_conflict(self, group: list[Action]) -> list[Action]:
        try:
            current = self.target.read_documents([a.id for a in group])
        except (HttpError, TargetError) as exc:
            self.failure = f"re-reading documents after a conflict failed: {exc}"
            self.conflicts += [{"id": a.id, "reason": "could not be re-read"} for a in group]
            return []
        outcome = replan(group, current, self.wanted, self._replanned)
        self.conflicts += outcome.conflicts
        resend = []
        for action in outcome.resend:
            self._rounds[action.id] += 1
            if self._rounds[action.id] > MAX_CONFLICT_ROUNDS:
                self.conflicts.append(
                    {"id": action.id, "reason": "the target refused it repeatedly; not retried"}
                )
            else:
                resend.append(action)
        return resend

    def _record(
        self, batch: _Batch, status: str, message: str | None, committed_id: str | None = None
    ) -> None:
        row: dict[str, Any] = {
            "batch_no": batch.number,
            "transaction_id": committed_id or batch.transaction.id,
            "mutations": len(batch.actions),
            "bytes": batch.transaction.size,
            "status": status,
            "message": message,
        }
        self.batches.append(row)
        self.ledger.record_batch(row)

"""Publishing a corpus: curate, plan against the target, push, and prove nothing else moved.

1. Every curated ``_id`` is checked against the namespace before any request.
2. The plan reads the namespace's documents from the target; every mutation it builds is
   checked against the namespace again before the first one is sent.
3. The unrelated-document count is taken before the first mutation.
4. Transactions (size-limited batches, deterministic ``transactionId``\\ s) are sent level by
   level with bounded concurrency. No transaction id is ever sent twice: when the answer to
   a transaction is lost (timeout, dropped connection, 5xx), the batch's documents are read
   back (``committed_from_documents``): if they carry its id as ``_rev`` it committed and is
   recorded so; if they provably do not, its actions go out again in a new transaction;
   if nothing can tell, the push stops and says so. A transaction
   refused because a revision moved is re-read and re-planned (``plan.replan``): untouched
   documents are sent again, a document edited in the target is reported, never overwritten.
   A failed transaction stops the push; the batches that committed stay committed and
   recorded, and re-running the push completes the rest.
5. After the last mutation: the unrelated count again, and the unrelated documents whose
   ``_rev`` is one of this push's transaction ids (Sanity sets ``_rev`` to the transaction
   that last wrote a document). Any difference trips the guard (exit 4).

Another corpus of the same warehouse that publishes to the same target (the ledger knows
them, ``warehouse.pushes.other_corpora``) is never planned, pruned or counted as ours: a
corpus whose namespace another one already publishes there is refused (exit 2); documents
under another corpus's namespace inside ours (one from before namespaces were single
segments) are *foreign* (``confinement``): left out of the state, refused as a mutation's
``_id``, and counted as unrelated before and after, so the guard sees them move.

The ledger (``warehouse.pushes``) records the push, each transaction and the receipt. Before
sending, a push reconciles: namespace documents whose ``_rev`` is the id of a transaction of
an earlier push of ours that has no committed row (the push was killed, or the answer lost)
get a 'reconciled' row, so they are ours again for target drift.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines import USER_AGENT
from pipelines.manifest import Manifest, Publish
from pipelines.publish.confinement import (
    check_confinement,
    check_mutations,
    foreign_namespaces,
)
from pipelines.publish.curate import CuratedDocument, curate_manifest
from pipelines.publish.plan import (
    ENVELOPE_BYTES,
    Action,
    Plan,
    TargetDocument,
    TargetState,
    batches,
    make_plan,
    replan,
)
from pipelines.publish.targets import open_target
from pipelines.publish.targets.base import Committed, Target, Transaction
from sources.http import HttpFactory
from warehouse.canonical import canonical_json
from warehouse.errors import (
    CommitUncertain,
    HttpError,
    MassPruneRefused,
    NamespaceTaken,
    NamespaceViolation,
    RevisionConflict,
    TargetError,
    UsageError,
)
from warehouse.pushes import (
    Receipt,
    finish_push,
    other_corpora,
    record_batch,
    record_handover,
    record_reconciled,
    start_push,
    unrecorded_transactions,
)
from warehouse.runs import latest_run
from warehouse.store import Warehouse

# ``progress(step, done, total, detail)``: told of the mutations applied after each
# committed transaction (e.g. a :class:`pipelines.progress.Steps`).
PushProgress = Callable[[str, int, int | None, str], None]

# A document may be in at most this many refused transactions before it is reported.
MAX_CONFLICT_ROUNDS = 2
# A document may be in at most this many transactions that provably did not commit.
MAX_RESENDS = 2


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
    conflicts: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    message: str | None = None

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
            },
            "conflicts": self.conflicts,
            "notices": self.notices,
            "reconciled": self.reconciled,
            "message": self.message,
        }


def transaction_id(namespace: str, push_id: int | None, batch_no: int, mutations: Any) -> str:
    """``rcpt-<push>-<batch>-<digest>``: a function of the push, the batch and its content
    (push 0 when no ledger numbers the push)."""
    digest = hashlib.sha256(namespace.encode() + b"\n" + canonical_json(mutations)).hexdigest()
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


class _Sender:
    """Sends a plan's actions and keeps the record: one ledger row per transaction."""

    def __init__(
        self,
        target: Target,
        namespace: str,
        settings: Publish,
        wanted: dict[str, CuratedDocument],
        ledger: Warehouse | None,
        push_id: int | None,
        progress: PushProgress | None = None,
    ) -> None:
        self.target = target
        self.progress = progress
        self.total = 0
        self.namespace = namespace
        self.settings = settings
        self.wanted = wanted
        self.ledger = ledger
        self.push_id = push_id
        self.batch_no = 0
        self.applied = 0
        self.sent_ids: list[str] = []  # every transaction sent, committed or not
        self.batches: list[dict[str, Any]] = []
        self.conflicts: list[dict[str, str]] = []
        self.failure: str | None = None
        self._replanned: set[str] = set()
        self._rounds: Counter[str] = Counter()
        self._resends: Counter[str] = Counter()

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
        tx_id = transaction_id(self.namespace, self.push_id, self.batch_no, mutations)
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
        for action in batch.actions:
            self._resends[action.id] += 1
        if any(self._resends[a.id] > MAX_RESENDS for a in batch.actions):
            self._record(batch, "failed", f"{exc}; verified not committed")
            self.failure = (
                f"transaction {tx_id} failed: {exc}; verified not committed, and its "
                f"documents were already sent {MAX_RESENDS + 1} times"
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
        if self.ledger is not None and self.push_id is not None:
            record_batch(self.ledger, self.push_id, row)


def _record_refusal(
    ledger: Warehouse | None,
    target: Target,
    namespace: str,
    manifest_name: str | None,
    run_id: int | None,
    message: str,
) -> None:
    if ledger is None:
        return
    push_id = start_push(
        ledger,
        target=target.name,
        namespace=namespace,
        manifest_name=manifest_name,
        run_id=run_id,
        plan_counts={},
        unrelated_before=None,
    )
    finish_push(
        ledger,
        push_id,
        status="refused",
        applied=0,
        transaction_ids=[],
        receipt=Receipt(None, None, None),
        conflicts=[],
        notices=[],
        message=message,
    )


def _guard_message(result: PushResult) -> str | None:
    before, after, touched = result.unrelated_before, result.unrelated_after, result.touched_by_us
    if before == after and not touched:
        return None
    parts = []
    if before != after and before is not None and after is not None:
        parts.append(
            f"unrelated documents moved during the push: {before} before, {after} after "
            f"({after - before:+d})"
        )
    if touched:
        shown = ", ".join(result.touched_ids)
        parts.append(
            f"{touched} unrelated document(s) carry one of this push's transaction ids"
            + (f": {shown}" if shown else "")
        )
    return "; ".join(parts)


def foreign_to(
    ledger: Warehouse | None,
    target: Target,
    namespace: str,
    manifest_name: str | None,
    take_over: str | None = None,
) -> tuple[str, ...]:
    """The namespaces inside ours that other corpora of the warehouse publish to ``target``;
    :class:`NamespaceTaken` when one of them publishes ``namespace`` itself, but for
    ``take_over`` (a corpus this one is a rename of), which must be one that does."""
    if ledger is None:
        return ()
    others = other_corpora(ledger, target.name, manifest_name)
    if take_over is not None:
        handed = [o for o in others if o.manifest_name == take_over and o.namespace == namespace]
        if take_over == manifest_name or not handed:
            raise UsageError(
                f"--take-over {take_over!r}: no other corpus of that name publishes namespace "
                f"{namespace!r} to {target.name}; there is nothing to take over"
            )
        others = [o for o in others if o not in handed]
    taken = [o for o in others if o.namespace == namespace]
    if taken:
        names = ", ".join(f"{o.manifest_name!r} (push {o.push_id})" for o in taken)
        rename = (
            f" If this corpus is {taken[0].manifest_name!r} renamed, `receipts publish "
            f"MANIFEST --take-over {taken[0].manifest_name}` hands its namespace over."
            if len(taken) == 1
            else ""
        )
        raise NamespaceTaken(
            f"refusing to publish: namespace {namespace!r} in {target.name} is published by "
            f"another corpus of this warehouse: {names}; its documents would be planned, "
            "pruned and counted as this corpus's. Give this corpus its own namespace (or "
            f"publish it from its own warehouse); nothing was sent.{rename}"
        )
    return foreign_namespaces(namespace, (o.namespace for o in others))


def _checked_plan(
    documents: Sequence[CuratedDocument],
    target: Target,
    namespace: str,
    foreign: tuple[str, ...],
    prune: bool,
    allow_mass_prune: bool,
) -> tuple[Plan, TargetState]:
    """The plan, once every ``_id`` (before any request) and every mutation (before any is
    sent) is inside the namespace and outside every foreign one, and a prune would not
    empty most of it."""
    check_confinement(namespace, (d.id for d in documents), foreign)
    state = target.read_state(namespace, foreign)
    plan = make_plan(namespace, documents, state, prune=prune)
    check_mutations(namespace, (a.mutation for a in plan.actions), foreign)
    if prune and not allow_mass_prune and len(plan.orphan) * 2 > len(state.documents):
        raise MassPruneRefused(
            f"refusing to prune {len(plan.orphan)} of {len(state.documents)} documents of "
            f"namespace {namespace!r} in one push (more than half); check the manifest and "
            "the warehouse, then re-run with --allow-mass-prune if that is really meant"
        )
    return plan, state


def _reconcile(ledger: Warehouse, result: PushResult, target: Target, state: TargetState) -> None:
    """Record the transactions of ours that committed unrecorded (an interrupted push, a
    lost answer): the documents carry their ids as ``_rev``."""
    revisions = Counter(d.rev for d in state.documents.values() if d.rev)
    found = unrecorded_transactions(ledger, target.name, result.namespace, revisions)
    if not found:
        return
    record_reconciled(ledger, {tx: revisions[tx] for tx in found}, result.push_id)
    result.reconciled = sorted(found)
    result.notices.append(
        f"reconciled {len(found)} transaction(s) of earlier pushes that committed without "
        f"being recorded: {', '.join(sorted(found))}"
    )


def _conclude(result: PushResult, sender: _Sender) -> None:
    """What the push did, and its status: the guard first, then failures, then conflicts."""
    result.applied = sender.applied
    result.transaction_ids = sender.transaction_ids
    result.batches = sorted(sender.batches, key=lambda b: int(b["batch_no"]))
    result.conflicts = sender.conflicts
    guard = _guard_message(result) if result.unrelated_after is not None else None
    left_alone = len(sender.conflicts) + len(result.plan.blocked)
    if guard is not None:
        result.status, result.message = "guard-tripped", guard
    elif sender.failure is not None:
        result.status, result.message = "failed", sender.failure
    elif left_alone:
        result.status = "conflict"
        result.message = (
            f"{left_alone} document(s) left as the target has them; see conflicts and blocked"
        )
    else:
        result.status = "ok"


def push(
    documents: Sequence[CuratedDocument],
    target: Target,
    *,
    namespace: str,
    settings: Publish | None = None,
    ledger: Warehouse | None = None,
    manifest_name: str | None = None,
    run_id: int | None = None,
    dry_run: bool = False,
    prune: bool = False,
    allow_mass_prune: bool = False,
    notices: Sequence[str] = (),
    progress: PushProgress | None = None,
    take_over: str | None = None,
) -> PushResult:
    """Plan ``documents`` against ``target`` and, unless ``dry_run``, push the plan.
    ``ledger`` (the warehouse) tells which other corpora publish to the target and records
    the push; a dry run records nothing. ``take_over``: the corpus this one is a rename
    of, whose namespace it takes over (recorded with the push)."""
    known = ledger
    ledger = None if dry_run else ledger
    try:
        foreign = foreign_to(known, target, namespace, manifest_name, take_over)
        plan, state = _checked_plan(documents, target, namespace, foreign, prune, allow_mass_prune)
    except (NamespaceTaken, NamespaceViolation, MassPruneRefused) as exc:
        _record_refusal(ledger, target, namespace, manifest_name, run_id, str(exc))
        raise
    status = "dry-run" if dry_run else "running"
    result = PushResult(target.name, namespace, status, plan, notices=[*notices, *plan.notices])
    if take_over is not None:
        result.notices.append(
            f"takes over namespace {namespace!r} from corpus {take_over!r}: its earlier pushes "
            "no longer claim it"
        )
    if foreign:
        result.notices.append(
            f"not ours, counted as unrelated: the documents under namespace(s) "
            f"{', '.join(foreign)}, which other corpora of this warehouse publish here"
        )
    result.unrelated_before = target.count_unrelated(namespace, foreign)
    if dry_run:
        return result
    if ledger is not None:
        result.push_id = start_push(
            ledger,
            target=target.name,
            namespace=namespace,
            manifest_name=manifest_name,
            run_id=run_id,
            plan_counts=plan.counts(),
            unrelated_before=result.unrelated_before,
        )
        if take_over is not None:
            record_handover(ledger, result.push_id, target.name, namespace, take_over)
        _reconcile(ledger, result, target, state)
    wanted = {d.id: d for d in documents}
    sender = _Sender(
        target, namespace, settings or Publish(), wanted, ledger, result.push_id, progress
    )
    try:
        try:
            sender.send(plan.actions)
        finally:
            target.flush()
        result.unrelated_after = target.count_unrelated(namespace, foreign)
        # A transaction that failed on the wire may still have committed: check them all.
        touched = target.touched_by(namespace, sender.sent_ids, foreign)
        result.touched_by_us, result.touched_ids = touched.count, touched.ids
    except (HttpError, TargetError) as exc:
        sender.failure = sender.failure or str(exc)
    _conclude(result, sender)
    if ledger is not None and result.push_id is not None:
        finish_push(
            ledger,
            result.push_id,
            status=result.status,
            applied=result.applied,
            transaction_ids=result.transaction_ids,
            receipt=result.receipt,
            conflicts=[*plan.blocked, *result.conflicts],
            notices=result.notices,
            message=result.message,
        )
    return result


def publish_manifest(
    manifest: Manifest,
    warehouse: Warehouse,
    *,
    target: Target | None = None,
    dry_run: bool = False,
    prune: bool = False,
    allow_mass_prune: bool = False,
    http: HttpFactory | None = None,
    out: Path | None = None,
    run_id: int | None = None,
    progress: PushProgress | None = None,
    take_over: str | None = None,
) -> PushResult:
    """Publish the corpus of ``manifest`` from ``warehouse``: the library entry point of
    ``receipts publish`` (and of ``refresh``). The target is the one the environment
    configures (``pipelines.publish.targets.open_target``) unless one is given;
    ``take_over``: see :func:`push`."""
    documents = curate_manifest(manifest, warehouse)
    own_http = http is None
    http = http or HttpFactory(user_agent=USER_AGENT)
    notices: list[str] = []
    opened = target is None
    if target is None:
        target, notices = open_target(manifest.name, http=http, out=out)
    try:
        return push(
            documents,
            target,
            namespace=manifest.corpus.namespace,
            settings=manifest.publish,
            ledger=warehouse,
            manifest_name=manifest.name,
            run_id=run_id if run_id is not None else latest_run(warehouse, manifest.name),
            dry_run=dry_run,
            prune=prune,
            allow_mass_prune=allow_mass_prune,
            notices=notices,
            progress=progress,
            take_over=take_over,
        )
    finally:
        if opened:
            target.close()
        if own_http:
            http.close()

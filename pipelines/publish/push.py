"""Publishing a corpus: curate, plan against the target, push, and prove nothing else moved.

1. Every curated ``_id`` is checked against the namespace before any request.
2. The plan reads the namespace's documents from the target; every mutation it builds is
   checked against the namespace again before the first one is sent.
3. The unrelated-document count is taken before the first mutation.
4. Transactions are sent level by level (``transactions``); a failed one stops the push, and
   re-running the push completes the rest.
5. After the last mutation: the unrelated count again, and the unrelated documents whose
   ``_rev`` is one of this push's transaction ids (Sanity sets ``_rev`` to the transaction
   that last wrote a document). Any difference trips the guard (exit 4). Unrelated
   documents another writer edited while the push ran are counted and named too
   (``edited_by_others``): information, not a trip.

The plan also reads the Content Release versions of the namespace's documents
(``pipelines.publish.versions``): it names each release or scheduled draft that will put
another copy over a document it writes, and a prune holds an orphan a release would bring
back unless ``prune_versions`` (then its versions are deleted with it, the only writes the
pipeline makes outside published ``<namespace>.…`` ids, checked by
``confinement.check_version_deletes``).

Another corpus of the same warehouse that publishes to the same target (the ledger knows
them, ``warehouse.pushes.other_corpora``) is never planned, pruned or counted as ours: a
corpus whose namespace another one already publishes there is refused (exit 2); documents
under another corpus's namespace inside ours (one from before namespaces were single
segments) are *foreign* (``confinement``): left out of the state, refused as a mutation's
``_id``, and counted as unrelated before and after, so the guard sees them move.

The ledger (``ledger``: ``warehouse.pushes``) records the push, each transaction and the
receipt, after reconciling the transactions of earlier pushes that committed unrecorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipelines import USER_AGENT
from pipelines.manifest import Manifest, Publish
from pipelines.publish.confinement import (
    check_confinement,
    check_mutations,
    check_version_deletes,
    foreign_to,
    guard_message,
)
from pipelines.publish.curate import CuratedDocument, curate_manifest
from pipelines.publish.edited_by_others import note_edited_by_others
from pipelines.publish.ledger import Ledger, NoLedger, PushLedger
from pipelines.publish.oversize import Oversize, fit_documents, keep_skipped
from pipelines.publish.plan import Plan, TargetState, make_plan
from pipelines.publish.result import PushResult
from pipelines.publish.targets import open_target
from pipelines.publish.targets.base import Target
from pipelines.publish.targets.sanity_limits import MAX_REQUEST_BYTES
from pipelines.publish.transactions import PushProgress, Sender
from pipelines.publish.versions import split_version_id
from pipelines.publish.writers import guard_writers
from sources.http import HttpFactory
from warehouse.errors import (
    HttpError,
    MassPruneRefused,
    NamespaceTaken,
    NamespaceViolation,
    TargetError,
)
from warehouse.interrupt import interruption
from warehouse.runs import latest_run
from warehouse.store import Warehouse

__all__ = ["PushProgress", "PushResult", "publish_manifest", "push"]


def _checked_plan(
    documents: Sequence[CuratedDocument],
    target: Target,
    namespace: str,
    foreign: tuple[str, ...],
    prune: bool,
    allow_mass_prune: bool,
    prune_versions: bool = False,
) -> tuple[Plan, TargetState]:
    """The plan, once every ``_id`` (before any request) and every mutation (before any is
    sent) is inside the namespace and outside every foreign one, and a prune would not
    empty most of it."""
    check_confinement(namespace, (d.id for d in documents), foreign)
    state = target.read_state(namespace, foreign)
    plan = make_plan(namespace, documents, state, prune=prune, prune_versions=prune_versions)
    versioned = [a.mutation for a in plan.actions if split_version_id(a.id)]
    check_mutations(
        namespace, (a.mutation for a in plan.actions if not split_version_id(a.id)), foreign
    )
    if versioned and not prune_versions:
        raise NamespaceViolation(
            "refusing to push: the plan writes a release version; nothing was sent"
        )
    check_version_deletes(namespace, versioned, foreign)
    if prune and not allow_mass_prune and len(plan.orphan) * 2 > len(state.documents):
        raise MassPruneRefused(
            f"refusing to prune {len(plan.orphan)} of {len(state.documents)} documents of "
            f"namespace {namespace!r} in one push (more than half); check the manifest and "
            "the warehouse, then re-run with --allow-mass-prune if that is really meant"
        )
    return plan, state


def _find_other_writers(
    result: PushResult, target: Target, transaction_ids: Sequence[str], foreign: tuple[str, ...]
) -> None:
    """Who else wrote during the push (a target that can tell: ``writers``)."""
    find = getattr(target, "writes_by_others", None)
    if find is not None:
        result.written_by_others_count, result.written_by_others = find(
            result.namespace, transaction_ids, foreign
        )


def _conclude(result: PushResult, sender: Sender) -> None:
    """What the push did, and its status: the guard first, then failures, then conflicts."""
    result.applied = sender.applied
    result.transaction_ids = sender.transaction_ids
    result.batches = sorted(sender.batches, key=lambda b: int(b["batch_no"]))
    result.conflicts = sender.conflicts
    guard = (
        guard_message(
            result.unrelated_before,
            result.unrelated_after,
            result.touched_by_us,
            result.touched_ids,
        )
        if result.unrelated_after is not None
        else None
    )
    left_alone = len(sender.conflicts) + len(result.plan.blocked)
    if guard is not None:
        named = guard_writers(result.written_by_others)
        result.status, result.message = "guard-tripped", guard + (f"; {named}" if named else "")
    elif sender.failure is not None:
        result.status, result.message = "failed", sender.failure
    elif left_alone:
        result.status = "conflict"
        result.message = (
            f"{left_alone} document(s) left as the target has them; see conflicts and blocked"
        )
    else:
        result.status = "ok"


def _started(
    plan: Plan,
    target: Target,
    namespace: str,
    foreign: tuple[str, ...],
    notices: Sequence[str],
    take_over: str | None,
    dry_run: bool,
) -> PushResult:
    """The result of a push about to send ``plan``: its notices, and the unrelated
    documents counted before the first mutation."""
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
    return result


def _record_start(
    ledger: Ledger, result: PushResult, state: TargetState, take_over: str | None
) -> None:
    """Number the push in the ledger and reconcile what earlier pushes left unrecorded."""
    ledger.start(result.plan.counts(), result.unrelated_before, take_over)
    result.push_id = ledger.push_id
    found = ledger.reconcile(state)
    if found:
        result.reconciled = found
        result.notices.append(
            f"reconciled {len(found)} transaction(s) of earlier pushes that committed without "
            f"being recorded: {', '.join(found)}"
        )


def _send_and_count(
    sender: Sender, result: PushResult, target: Target, foreign: tuple[str, ...]
) -> None:
    """Send the plan, then count the unrelated documents again and look for our
    transaction ids on them."""
    try:
        started = target.now()
        try:
            sender.send(result.plan.actions)
        finally:
            target.flush()
        result.unrelated_after = target.count_unrelated(result.namespace, foreign)
        # A transaction that failed on the wire may still have committed: check them all.
        touched = target.touched_by(result.namespace, sender.sent_ids, foreign)
        result.touched_by_us, result.touched_ids = touched.count, touched.ids
        if started is not None:
            others = target.written_since(result.namespace, started, sender.sent_ids, foreign)
            note_edited_by_others(result, others.count, others.ids)
        _find_other_writers(result, target, sender.transaction_ids, foreign)
    except (HttpError, TargetError) as exc:
        sender.failure = sender.failure or str(exc)


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
    prune_versions: bool = False,
    notices: Sequence[str] = (),
    progress: PushProgress | None = None,
    take_over: str | None = None,
    oversize: Sequence[Oversize] = (),
) -> PushResult:
    """Plan ``documents`` against ``target`` and, unless ``dry_run``, push the plan.
    ``ledger`` (the warehouse) tells which other corpora publish to the target and records
    the push; a dry run records nothing. ``take_over``: the corpus this one is a rename
    of, whose namespace it takes over (recorded with the push). ``oversize``: documents
    too large to send whole (``oversize.fit_documents``), named in the receipt."""
    record: Ledger = (
        NoLedger()
        if ledger is None or dry_run
        else PushLedger(
            ledger,
            target=target.name,
            namespace=namespace,
            manifest_name=manifest_name,
            run_id=run_id,
        )
    )
    try:
        foreign = foreign_to(ledger, target.name, namespace, manifest_name, take_over)
        plan, state = _checked_plan(
            documents, target, namespace, foreign, prune, allow_mass_prune, prune_versions
        )
    except (NamespaceTaken, NamespaceViolation, MassPruneRefused) as exc:
        record.refuse(str(exc))
        raise
    keep_skipped(plan, oversize)
    notices = [*notices, *(o.notice(MAX_REQUEST_BYTES) for o in oversize)]
    result = _started(plan, target, namespace, foreign, notices, take_over, dry_run)
    result.oversize = [o.as_json() for o in oversize]
    if dry_run:
        return result
    _record_start(record, result, state, take_over)
    wanted = {d.id: d for d in documents}
    sender = Sender(target, namespace, settings or Publish(), wanted, record, progress)
    try:
        _send_and_count(sender, result, target, foreign)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the push stays unfinished
        stop = interruption(exc)
        assert stop is not None
        stop.summary = (
            f"push {result.push_id} applied {sender.applied:,} of {len(plan.actions):,} "
            "mutations (`receipts pushes` shows it); the next publish sends the rest"
        )
        raise stop from None
    _conclude(result, sender)
    record.finish(result, [*plan.blocked, *result.conflicts])
    return result


def publish_manifest(
    manifest: Manifest,
    warehouse: Warehouse,
    *,
    target: Target | None = None,
    dry_run: bool = False,
    prune: bool = False,
    allow_mass_prune: bool = False,
    prune_versions: bool = False,
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
    documents, oversize = fit_documents(
        curate_manifest(manifest, warehouse), manifest.publish.oversize
    )
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
            prune_versions=prune_versions,
            notices=notices,
            progress=progress,
            take_over=take_over,
            oversize=oversize,
        )
    finally:
        if opened:
            target.close()
        if own_http:
            http.close()

"""The plan of a push: curated documents against the target's current state. Pure.

Each curated document is a *create* (not in the target), an *update* (its ``curatedHash``
differs), *unchanged*, or *blocked* (the target has it under another ``_type``, which a patch
cannot change); each target document of the namespace that the corpus no longer has is an
*orphan*, deleted only with ``prune``.

Mutations own fields, never documents: a create is ``createIfNotExists``; an update is a
``patch`` that sets the owned fields, unsets those the pipeline owned before and owns no
more, and carries ``ifRevisionID`` with the ``_rev`` read at plan time, so fields added in
the Studio survive and a concurrent edit fails the transaction instead of being overwritten.

Sanity refuses a strong reference to a document that does not exist yet, so actions are put
in *levels*: a document that references another document created by this push comes one
level after it; deletes come last. Batches never mix levels, and levels are sent in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import orjson

from pipelines.publish.curate import CuratedDocument, hash_of_target_document
from pipelines.publish.versions import Overlay, Release, Version, overlays_of

# What a transaction adds around its mutations: {"mutations":[…],"transactionId":"…"}.
ENVELOPE_BYTES = 100


@dataclass(frozen=True)
class TargetDocument:
    """A namespace document as the target has it. ``body`` is only read for a conflict."""

    id: str
    rev: str | None
    type: str | None
    curated_hash: str | None
    owned_fields: tuple[str, ...] = ()
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TargetState:
    """The namespace's documents in the target, which of them have an open draft, their
    Content Release versions (by published id) and the releases those belong to."""

    documents: Mapping[str, TargetDocument]
    drafts: frozenset[str] = frozenset()
    versions: Mapping[str, tuple[Version, ...]] = field(default_factory=dict)
    releases: Mapping[str, Release] = field(default_factory=dict)


@dataclass(frozen=True)
class Action:
    op: str  # create | update | delete
    id: str
    mutation: dict[str, Any]
    size: int
    level: int = 0
    planned_rev: str | None = None


@dataclass
class Plan:
    namespace: str
    documents: int
    create: list[str] = field(default_factory=list)
    update: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    orphan: list[str] = field(default_factory=list)
    blocked: list[dict[str, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    prune: bool = False
    prune_versions: bool = False
    # releases, scheduled drafts and variants that will put another copy over a document
    overlays: list[Overlay] = field(default_factory=list)
    # orphans a prune leaves because a release will bring them back (or unpublish them)
    held: list[dict[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "documents": self.documents,
            "create": len(self.create),
            "update": len(self.update),
            "unchanged": len(self.unchanged),
            "orphan": len(self.orphan),
            "delete": len(self.orphan) - len(self.held) if self.prune else 0,
            "blocked": len(self.blocked),
        }


def mutation_size(mutation: Mapping[str, Any]) -> int:
    return len(orjson.dumps(mutation, option=orjson.OPT_SORT_KEYS))


def _action(
    op: str, doc_id: str, mutation: dict[str, Any], rev: str | None = None, level: int = 0
) -> Action:
    return Action(op, doc_id, mutation, mutation_size(mutation), level, rev)


def create_action(document: CuratedDocument, level: int = 0) -> Action:
    # {"createIfNotExists":<body>} in canonical form, without serialising the body again
    size = len(document.body) + len(b'{"createIfNotExists":}')
    mutation = {"createIfNotExists": document.document()}
    return Action("create", document.id, mutation, size, level, None)


def update_action(document: CuratedDocument, current: TargetDocument, level: int = 0) -> Action:
    patch: dict[str, Any] = {"id": document.id}
    if current.rev is not None:
        patch["ifRevisionID"] = current.rev
    patch["set"] = document.fields
    dropped = sorted(set(current.owned_fields) - set(document.owned_fields))
    if dropped:
        patch["unset"] = dropped
    return _action("update", document.id, {"patch": patch}, current.rev, level)


def delete_action(current: TargetDocument, level: int) -> Action:
    return _action("delete", current.id, {"delete": {"id": current.id}}, current.rev, level)


def _levels(created: set[str], refs: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """The level of every document that references a document created by this push (the
    others are at level 0): one more than the highest level among those it references."""
    level: dict[str, int] = {}

    def level_of(doc_id: str, visiting: frozenset[str]) -> int:
        if doc_id not in level:
            deps = [r for r in refs.get(doc_id, ()) if r in created and r not in visiting]
            level[doc_id] = 1 + max((level_of(r, visiting | {doc_id}) for r in deps), default=-1)
        return level[doc_id]

    for doc_id, targets in refs.items():
        if any(r in created for r in targets):
            level_of(doc_id, frozenset())
    return level


def make_plan(
    namespace: str,
    documents: Sequence[CuratedDocument],
    state: TargetState,
    *,
    prune: bool = False,
    prune_versions: bool = False,
) -> Plan:
    """Classify every curated and every target document; build the mutations to send.

    A document this push writes that has a pending Content Release version is named (the
    release will put its own copy over it, or unpublish it, and when). An orphan with one is
    held, not deleted, by a prune (the release would bring it back), unless
    ``prune_versions``: then its versions are deleted with it."""
    plan = Plan(
        namespace=namespace, documents=len(documents), prune=prune, prune_versions=prune_versions
    )
    wanted = {d.id for d in documents}
    created = {d.id for d in documents if d.id not in state.documents}
    level = _levels(created, {d.id: d.refs for d in documents if d.refs}) if created else {}
    actions: list[Action] = []
    for document in documents:
        current = state.documents.get(document.id)
        if current is None:
            plan.create.append(document.id)
            actions.append(create_action(document, level.get(document.id, 0)))
        elif current.type is not None and current.type != document.type:
            plan.blocked.append(
                {
                    "id": document.id,
                    "reason": f"the target has it as _type {current.type!r}, the corpus as "
                    f"{document.type!r}; a patch cannot change a type, so it was left alone "
                    "(delete it in the target to let the next push create it)",
                }
            )
            continue
        elif current.curated_hash == document.curated_hash:
            plan.unchanged.append(document.id)
            continue
        else:
            plan.update.append(document.id)
            actions.append(update_action(document, current, level.get(document.id, 0)))
        if document.id in state.drafts:
            plan.notices.append(
                f"{document.id}: open draft — the next publish in the Studio will overwrite "
                "this update"
            )
        _note_overlays(plan, document.id, state)
    last = 1 + max(level.values(), default=0) if actions else 0
    for doc_id in sorted(set(state.documents) - wanted):
        plan.orphan.append(doc_id)
        if prune and not _prunable(plan, doc_id, state, actions, last):
            continue
        if prune:
            actions.append(delete_action(state.documents[doc_id], last))
            if doc_id in state.drafts:
                plan.notices.append(f"{doc_id}: deleted, but its open draft stays in the target")
    for document in documents:
        for ref in document.refs:
            if ref not in wanted and ref not in state.documents:
                plan.notices.append(
                    f"{document.id} references {ref}, which is neither in the corpus nor in "
                    "the target; Sanity refuses a strong reference to a missing document"
                )
            elif ref not in wanted and prune:
                plan.notices.append(
                    f"{document.id} references {ref}, an orphan this push deletes; Sanity "
                    "refuses to delete a document that is still referenced"
                )
    plan.actions = sorted(actions, key=attrgetter("level", "id"))
    return plan


def _note_overlays(plan: Plan, doc_id: str, state: TargetState) -> None:
    for found in overlays_of(doc_id, state.versions, state.releases):
        plan.overlays.append(found)
        plan.notices.append(found.sentence())


def _prunable(
    plan: Plan, doc_id: str, state: TargetState, actions: list[Action], level: int
) -> bool:
    """Whether a prune may delete orphan ``doc_id``: yes when no pending release version
    would bring it back, or with ``prune_versions`` (its versions are deleted too)."""
    pending = overlays_of(doc_id, state.versions, state.releases)
    if not pending:
        return True
    plan.overlays.extend(pending)
    releases = ", ".join(o.release for o in pending)
    if plan.prune_versions:
        revs = {v.id: v.rev for v in state.versions.get(doc_id, ())}
        for found in pending:
            mutation = {"delete": {"id": found.version}}
            actions.append(
                _action("delete", found.version, mutation, revs.get(found.version), level)
            )
        plan.notices.append(
            f"{doc_id}: deleted with its version(s) in {releases} (--prune-versions)"
        )
        return True
    reason = "; ".join(o.sentence(orphan=True) for o in pending)
    plan.held.append(
        {
            "id": doc_id,
            "reason": f"not deleted: {reason}; --prune-versions deletes its versions too",
        }
    )
    plan.notices.append(f"{doc_id}: orphan held, not pruned: {reason}")
    return False


def batches(
    actions: Iterable[Action], max_bytes: int, max_mutations: int | None = None
) -> list[list[Action]]:
    """Consecutive actions packed into transactions of at most ``max_bytes`` of JSON (and
    ``max_mutations``), never mixing levels. An action larger than the limit travels alone."""
    out: list[list[Action]] = []
    current: list[Action] = []
    size = ENVELOPE_BYTES
    for action in actions:
        full = bool(current) and (
            size + action.size + 1 > max_bytes
            or (max_mutations is not None and len(current) >= max_mutations)
            or action.level != current[-1].level
        )
        if full:
            out.append(current)
            current, size = [], ENVELOPE_BYTES
        current.append(action)
        size += action.size + 1
    if current:
        out.append(current)
    return out


# -- after a conflict ------------------------------------------------------------------------
@dataclass
class Replan:
    resend: list[Action] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)


def replan(
    actions: Iterable[Action],
    current: Mapping[str, TargetDocument],
    wanted: Mapping[str, CuratedDocument],
    replanned: set[str],
) -> Replan:
    """Decide, from a fresh read of the target, what to do with the actions of a
    transaction that was refused because a revision moved (or a create found the document
    already there).

    An action whose document did not move is sent again as it was. A document that moved
    and already has what the corpus wants is settled. A document that moved only in fields
    the pipeline does not own is re-planned once against its new ``_rev``. Anything else is
    a conflict, reported and left as the target has it.
    """
    out = Replan()

    def conflict(doc_id: str, reason: str) -> None:
        out.conflicts.append({"id": doc_id, "reason": reason})

    for action in actions:
        now = current.get(action.id)
        if action.op == "delete":
            if now is None:
                out.settled.append(action.id)
            elif now.rev == action.planned_rev:
                out.resend.append(action)
            else:
                conflict(action.id, "edited in the target since the plan; not deleted")
            continue
        document = wanted[action.id]
        if now is None:
            if action.op == "create":
                out.resend.append(action)
            else:
                conflict(action.id, "deleted in the target since the plan; not recreated")
        elif now.curated_hash == document.curated_hash and now.type == document.type:
            out.settled.append(action.id)
        elif action.op == "create":
            conflict(action.id, "created in the target since the plan; not overwritten")
        elif now.rev == action.planned_rev:
            out.resend.append(action)
        elif action.id in replanned:
            conflict(action.id, "changed again after it was re-planned; not retried")
        elif (
            now.body is not None
            and now.type == document.type
            and now.curated_hash is not None
            and hash_of_target_document(now.body) == now.curated_hash
        ):
            replanned.add(action.id)
            out.resend.append(update_action(document, now, action.level))
        else:
            conflict(
                action.id,
                "a field the pipeline owns was edited in the target since the plan; "
                "not overwritten",
            )
    return out

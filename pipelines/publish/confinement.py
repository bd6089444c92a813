"""Namespace confinement: which ``_id``s a corpus owns, and the check every mutation passes
before anything is sent.

A corpus owns ``<namespace>.…``; its drafts (``drafts.<namespace>.…``) and Content Release
versions (``versions.<release>.<namespace>.…``) are its editors' work on its documents.
Everything else in the dataset is *unrelated*: the push counts it before and after.

Except what another corpus of the same warehouse publishes there: a namespace pushed to
the same target by another corpus (the push ledger knows them) that lies inside ours — a
namespace from before namespaces were single segments, e.g. ``hyphae.atlas`` inside
``hyphae`` — is *foreign*. Its documents are never planned, pruned or counted as ours; they
are unrelated, so the receipt sees any change to them.
The pipeline itself only ever writes published ``<namespace>.…`` documents, addressed by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from warehouse.errors import NamespaceTaken, NamespaceViolation, UsageError
from warehouse.ids import in_namespace
from warehouse.pushes import other_corpora
from warehouse.store import Warehouse

_SHOWN = 5


def is_ours(document_id: str, namespace: str, foreign: Iterable[str] = ()) -> bool:
    """True for the namespace's documents, their drafts and their release versions, unless
    they are under one of the ``foreign`` namespaces (another corpus's)."""
    return _under(document_id, namespace) and not any(_under(document_id, f) for f in foreign)


def foreign_namespaces(namespace: str, others: Iterable[str]) -> tuple[str, ...]:
    """Of the namespaces other corpora publish to the same target, those inside ours."""
    return tuple(sorted({o for o in others if o.startswith(namespace + ".")}))


def _under(document_id: str, namespace: str) -> bool:
    prefix = namespace + "."
    if document_id.startswith(prefix) or document_id.startswith("drafts." + prefix):
        return True
    parts = document_id.split(".", 2)
    return len(parts) == 3 and parts[0] == "versions" and parts[2].startswith(prefix)


def mutation_ids(mutation: dict[str, Any]) -> list[str]:
    """The ``_id``s a mutation writes. A mutation not addressed by explicit ids (a query, a
    generated id) is refused: its reach cannot be checked before it is sent."""
    if len(mutation) != 1:
        raise NamespaceViolation(f"a mutation must have exactly one kind: {sorted(mutation)}")
    kind, body = next(iter(mutation.items()))
    if not isinstance(body, dict):
        raise NamespaceViolation(f"malformed {kind} mutation")
    if kind in ("create", "createIfNotExists", "createOrReplace"):
        ids: Any = body.get("_id")
    elif kind in ("patch", "delete"):
        if "query" in body:
            raise NamespaceViolation(f"a {kind} by query cannot be confined to the namespace")
        ids = body.get("id")
    else:
        raise NamespaceViolation(f"unknown mutation kind {kind!r}")
    ids = ids if isinstance(ids, list) else [ids]
    if not ids or not all(isinstance(i, str) and i for i in ids):
        raise NamespaceViolation(f"a {kind} mutation without an explicit _id")
    return list(ids)


def check_confinement(namespace: str, ids: Iterable[str], foreign: Iterable[str] = ()) -> None:
    """Raise :class:`NamespaceViolation` unless every id lies under ``<namespace>.`` and
    under none of the ``foreign`` namespaces."""
    ids, foreign = list(ids), tuple(foreign)
    outside = sorted({i for i in ids if not in_namespace(i, namespace)})
    if outside:
        raise NamespaceViolation(
            f"refusing to push: {len(outside)} mutation(s) would write outside namespace "
            f"{namespace!r} ({_shown(outside)}); nothing was sent"
        )
    theirs = sorted({i for i in ids if any(in_namespace(i, f) for f in foreign)})
    if theirs:
        names = ", ".join(repr(f) for f in foreign if any(in_namespace(i, f) for i in theirs))
        raise NamespaceViolation(
            f"refusing to push: {len(theirs)} mutation(s) would write into namespace {names}, "
            f"which another corpus of this warehouse publishes to this target "
            f"({_shown(theirs)}); nothing was sent"
        )


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:_SHOWN]) + (" …" if len(ids) > _SHOWN else "")


def check_mutations(
    namespace: str, mutations: Iterable[dict[str, Any]], foreign: Iterable[str] = ()
) -> None:
    check_confinement(namespace, (i for m in mutations for i in mutation_ids(m)), foreign)


def check_version_deletes(
    namespace: str, mutations: Iterable[dict[str, Any]], foreign: Iterable[str] = ()
) -> None:
    """The mutations ``--prune-versions`` adds: each a delete by id of a Content Release
    version (``versions.<release>.<namespace>.…``) of one of the namespace's documents, and
    nothing else; :class:`NamespaceViolation` otherwise."""
    foreign = tuple(foreign)
    for mutation in mutations:
        ids = mutation_ids(mutation)
        if set(mutation) != {"delete"} or not all(
            i.startswith("versions.") and is_ours(i, namespace, foreign) for i in ids
        ):
            raise NamespaceViolation(
                f"refusing to push: a version mutation outside namespace {namespace!r} "
                f"({_shown(sorted(ids))}); only deletes of its documents' versions are "
                "allowed; nothing was sent"
            )


def foreign_to(
    ledger: Warehouse | None,
    target: str,
    namespace: str,
    manifest_name: str | None,
    take_over: str | None = None,
) -> tuple[str, ...]:
    """The namespaces inside ours that other corpora of the warehouse publish to ``target``
    (a target's name); :class:`NamespaceTaken` when one of them publishes ``namespace``
    itself, but for ``take_over`` (a corpus this one is a rename of), which must be one
    that does."""
    if ledger is None:
        return ()
    others = other_corpora(ledger, target, manifest_name)
    if take_over is not None:
        handed = [o for o in others if o.manifest_name == take_over and o.namespace == namespace]
        if take_over == manifest_name or not handed:
            raise UsageError(
                f"--take-over {take_over!r}: no other corpus of that name publishes namespace "
                f"{namespace!r} to {target}; there is nothing to take over"
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
            f"refusing to publish: namespace {namespace!r} in {target} is published by "
            f"another corpus of this warehouse: {names}; its documents would be planned, "
            "pruned and counted as this corpus's. Give this corpus its own namespace (or "
            f"publish it from its own warehouse); nothing was sent.{rename}"
        )
    return foreign_namespaces(namespace, (o.namespace for o in others))


def guard_message(
    before: int | None, after: int | None, touched: int | None, touched_ids: Sequence[str]
) -> str | None:
    """Pure: why the guard trips (None when it does not): the unrelated documents counted
    ``before`` and ``after`` the push differ, or ``touched`` of them (``touched_ids``) carry
    one of its transaction ids."""
    if before == after and not touched:
        return None
    parts = []
    if before != after and before is not None and after is not None:
        parts.append(
            f"unrelated documents moved during the push: {before} before, {after} after "
            f"({after - before:+d})"
        )
    if touched:
        shown = ", ".join(touched_ids)
        parts.append(
            f"{touched} unrelated document(s) carry one of this push's transaction ids"
            + (f": {shown}" if shown else "")
        )
    return "; ".join(parts)

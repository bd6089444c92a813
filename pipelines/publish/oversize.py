"""Documents too large for one request: published without their text, or skipped. Pure.

Sanity refuses a request body over 4,000,000 bytes (``targets.sanity_limits``), and a
GitHub file may be up to 20 MiB, so a document may not fit even in a transaction of its own.
Sent anyway, it would fail its transaction at the same batch on every push, and nothing after
it would be sent. So before the plan, every curated document is measured by the bytes its
mutation sends (its canonical JSON, as ``sources.http`` sends it, plus the room a mutation
and its transaction take around it, :data:`MUTATION_ROOM`):

- ``omit-text`` (the default, ``[publish] oversize``): the largest owned fields are left out,
  largest first, until it fits, and a ``textOmitted`` field says which, how large the
  document was and why; ``provenance`` keeps ``contentHash`` and ``sourceUrl`` (a GitHub
  document also keeps ``sha256``, ``size`` and ``url``), so the text can be fetched and
  checked. Its ``curatedHash`` covers what is published, so the next push finds it unchanged.
- ``skip``: the document is not published; a copy the target already has is left as it is
  (neither updated nor pruned).

Either way the push's receipt names it (``Oversize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pipelines.publish.curate import CuratedDocument, document_hash, strong_refs
from pipelines.publish.plan import Plan
from pipelines.publish.targets.sanity_limits import MAX_REQUEST_BYTES
from warehouse.canonical import canonical_json

OMITTED_FIELD = "textOmitted"
# Around a document's JSON: {"mutations":[{"createIfNotExists":…}],"transactionId":"…"}, or a
# patch's id, ifRevisionID and unset list; generous, so the bytes sent always fit.
MUTATION_ROOM = 4_096
POLICIES = ("omit-text", "skip")


@dataclass(frozen=True)
class Oversize:
    """A document too large to send whole: what was done with it."""

    id: str
    doc_id: str
    bytes: int
    action: str  # omit-text | skip
    fields: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "docId": self.doc_id,
            "bytes": self.bytes,
            "action": self.action,
            "fields": list(self.fields),
        }

    def notice(self, limit: int) -> str:
        if self.action == "skip":
            return (
                f"{self.id}: not published: {self.bytes:,} bytes, over the {limit:,}-byte "
                'request limit ([publish] oversize = "skip")'
            )
        return (
            f"{self.id}: published without {', '.join(self.fields)}: {self.bytes:,} bytes, "
            f"over the {limit:,}-byte request limit (see its {OMITTED_FIELD})"
        )


def _without(document: CuratedDocument, dropped: list[str], size: int, limit: int) -> bytes:
    body = document.document()
    provenance = dict(body.pop("provenance"))
    type_name = body.pop("_type")
    doc_id = body.pop("_id")
    fields = {k: v for k, v in body.items() if k not in dropped}
    fields[OMITTED_FIELD] = {
        "fields": dropped,
        "bytes": size,
        "limit": limit,
        "reason": f"the document is {size:,} bytes; a request to Sanity may carry "
        f"{limit:,}. The text is in the source: provenance.sourceUrl, checked by "
        "provenance.contentHash",
    }
    provenance.pop("curatedHash", None)
    provenance["ownedFields"] = sorted(fields)
    owned = {**fields, "provenance": provenance}
    provenance["curatedHash"] = document_hash(type_name, owned)
    return canonical_json({"_id": doc_id, "_type": type_name, **owned})


def fit(
    document: CuratedDocument, limit: int = MAX_REQUEST_BYTES
) -> tuple[CuratedDocument, Oversize | None]:
    """``document`` as it can be sent within ``limit`` bytes (itself when it fits)."""
    budget = limit - MUTATION_ROOM
    size = len(document.body)
    if size <= budget:
        return document, None
    body = document.document()
    sizes = sorted(
        ((len(canonical_json(body[f])), f) for f in document.owned_fields if f in body),
        key=lambda item: (-item[0], item[1]),
    )
    dropped: list[str] = []
    for _, name in sizes:
        dropped.append(name)
        smaller = _without(document, sorted(dropped), size, limit)
        if len(smaller) <= budget:
            value: dict[str, Any] = orjson.loads(smaller)
            provenance = value["provenance"]
            first = document.id.split(".", 1)[0]
            fitted = CuratedDocument(
                document.id,
                document.type,
                document.doc_id,
                smaller,
                str(provenance["curatedHash"]),
                tuple(provenance["ownedFields"]),
                tuple(r for r in document.refs if r in strong_refs(value, first)),
            )
            dropped_fields = tuple(sorted(dropped))
            return fitted, Oversize(document.id, document.doc_id, size, "omit-text", dropped_fields)
    return document, Oversize(document.id, document.doc_id, size, "skip")


def fit_documents(
    documents: Sequence[CuratedDocument], policy: str = "omit-text", limit: int = MAX_REQUEST_BYTES
) -> tuple[list[CuratedDocument], list[Oversize]]:
    """The documents to plan, and the oversize ones with what was done with them: under
    ``skip`` (or when even the provenance alone would not fit) left out of the list."""
    kept: list[CuratedDocument] = []
    found: list[Oversize] = []
    for document in documents:
        fitted, oversize = fit(document, limit) if policy == "omit-text" else (document, None)
        if policy == "skip" and len(document.body) > limit - MUTATION_ROOM:
            oversize = Oversize(document.id, document.doc_id, len(document.body), "skip")
        if oversize is not None:
            found.append(oversize)
            if oversize.action == "skip":
                continue
        kept.append(fitted)
    return kept, found


def keep_skipped(plan: Plan, oversize: Sequence[Oversize]) -> None:
    """Leave the target's copy of a skipped document alone: it is no orphan of the plan, so
    a prune never deletes it."""
    skipped = {o.id for o in oversize if o.action == "skip"}
    if not skipped & set(plan.orphan):
        return
    plan.orphan = [i for i in plan.orphan if i not in skipped]
    plan.actions = [a for a in plan.actions if not (a.op == "delete" and a.id in skipped)]

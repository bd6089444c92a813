"""Target drift: what happened to the corpus's documents in the target since we pushed.

Reported, never acted on. A document of the namespace is listed when

- ``edited``: the fields the pipeline owns no longer hash to the ``curatedHash`` it carries
  (someone changed them in the Studio; the next push that updates it will overwrite them);
- ``written``: its ``_rev`` is not a transaction of ours, but the owned fields are intact
  (someone edited fields we do not own; those survive our pushes);
- ``deleted``: the corpus has it, a push of ours that finished after the document joined
  the corpus should have put it there, but the target does not have it;
- ``draft``: it has an open ``drafts.`` sibling; publishing that draft in the Studio will
  replace what the pipeline wrote;
- ``versions``: it has a ``versions.<release>.`` sibling in a Content Release, Scheduled
  Draft or document variant (``pipelines.publish.versions``); publishing the release will
  replace (or unpublish) it. Listed by version id.

Our transaction ids are those the ledger records as committed or reconciled, and those the
target shows that a push of ours sent but never recorded (it was killed, or the answer was
lost: ``warehouse.pushes.unrecorded_transactions``). Documents carrying one of the latter
are listed as ``unrecorded`` (ours; the next push records the transaction), not as written
by someone else.

Documents under another corpus's namespace inside ours (``pipelines.publish.confinement``:
foreign) are that corpus's, and never listed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines import USER_AGENT
from pipelines.manifest import Manifest
from pipelines.publish.confinement import foreign_namespaces
from pipelines.publish.curate import CuratedDocument, curate_manifest, hash_of_target_document
from pipelines.publish.targets import open_target
from pipelines.publish.targets.base import Target
from sources.http import HttpFactory
from warehouse.corpus import members
from warehouse.pushes import (
    last_ok_push,
    other_corpora,
    our_transaction_ids,
    unrecorded_transactions,
)
from warehouse.store import Warehouse

READ_CHUNK = 100


@dataclass(frozen=True)
class TargetDrift:
    target: str
    namespace: str
    last_push: int | None
    edited: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    drafts: list[str] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.edited or self.written or self.deleted or self.drafts or self.versions)

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "namespace": self.namespace,
            "last_push": self.last_push,
            "edited": self.edited,
            "written": self.written,
            "deleted": self.deleted,
            "drafts": self.drafts,
            "versions": self.versions,
            "unrecorded": self.unrecorded,
        }


def classify(
    bodies: Mapping[str, Mapping[str, Any]],
    ours: frozenset[str],
    expected_present: Iterable[str],
    drafts: Iterable[str],
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Pure: (edited, written, deleted, drafts) from the target's documents of the namespace
    (full bodies by ``_id``), our transaction ids, the ``_id``s a push of ours should have
    put there, and the ``_id``s with an open draft."""
    edited, written = [], []
    for doc_id in sorted(bodies):
        body = bodies[doc_id]
        provenance = body.get("provenance")
        carried = provenance.get("curatedHash") if isinstance(provenance, dict) else None
        recomputed = hash_of_target_document(body)
        if carried is not None and recomputed is not None and recomputed != carried:
            edited.append(doc_id)
        elif body.get("_rev") is not None and body.get("_rev") not in ours:
            written.append(doc_id)
    deleted = sorted(set(expected_present) - set(bodies))
    return edited, written, deleted, sorted(set(drafts))


def target_drift(
    warehouse: Warehouse,
    target: Target,
    namespace: str,
    corpus: str,
    documents: list[CuratedDocument],
) -> TargetDrift:
    """Read the namespace from ``target`` and compare it with what our pushes wrote."""
    others = other_corpora(warehouse, target.name, corpus)
    state = target.read_state(
        namespace, foreign_namespaces(namespace, (o.namespace for o in others))
    )
    ids = sorted(state.documents)
    bodies: dict[str, Mapping[str, Any]] = {}
    for start in range(0, len(ids), READ_CHUNK):
        for doc_id, doc in target.read_documents(ids[start : start + READ_CHUNK]).items():
            if doc.body is not None:
                bodies[doc_id] = doc.body
    last = last_ok_push(warehouse, target.name, namespace)
    expected: list[str] = []
    if last is not None:
        joined = {m.doc_id: m.joined_run for m in members(warehouse, corpus)}
        expected = [
            d.id for d in documents if d.doc_id in joined and joined[d.doc_id] <= last.run_id
        ]
    revisions = [body.get("_rev") for body in bodies.values()]
    unrecorded = unrecorded_transactions(warehouse, target.name, namespace, revisions)
    edited, written, deleted, drafts = classify(
        bodies,
        our_transaction_ids(warehouse, target.name, namespace) | unrecorded,
        expected,
        [d for d in state.drafts if d in state.documents],
    )
    return TargetDrift(
        target=target.name,
        namespace=namespace,
        last_push=None if last is None else last.push_id,
        edited=edited,
        written=written,
        deleted=deleted,
        drafts=drafts,
        unrecorded=sorted(i for i, body in bodies.items() if body.get("_rev") in unrecorded),
        versions=sorted(v.id for versions in state.versions.values() for v in versions),
    )


def read_target_drift(
    manifest: Manifest,
    warehouse: Warehouse,
    *,
    http: HttpFactory | None = None,
    out: Path | None = None,
) -> TargetDrift:
    """Target drift of a manifest's corpus in the target the environment configures."""
    own_http = http is None
    http = http or HttpFactory(user_agent=USER_AGENT)
    target, _ = open_target(manifest.name, http=http, out=out)
    try:
        documents = curate_manifest(manifest, warehouse)
        return target_drift(warehouse, target, manifest.corpus.namespace, manifest.name, documents)
    finally:
        target.close()
        if own_http:
            http.close()

"""Planning and pushing N curated documents against an in-memory target, a share changed.

Three pushes of the same corpus to a target that applies mutations in memory: the first
(everything is a create), an identical one (must send zero mutations), and one where
``changed_percent`` of the upstream records changed (must send exactly that many
mutations, in the fewest transactions the size limit allows in ``_id`` order). Curation is
timed on its own: the pure part of ``pipelines.publish.curate`` (reading the warehouse is the
ingest benchmark's business).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from bench import synthetic_source as synthetic
from pipelines.manifest import Publish
from pipelines.publish.confinement import is_ours, mutation_ids
from pipelines.publish.curate import CuratedDocument, RevisionMeta, build_document
from pipelines.publish.plan import (
    ENVELOPE_BYTES,
    TargetDocument,
    TargetState,
    make_plan,
    mutation_size,
)
from pipelines.publish.push import PushResult, push
from pipelines.publish.targets.base import (
    Committed,
    NoOtherWriters,
    Touched,
    Transaction,
    target_document,
)
from sources.base import CurationInput
from warehouse.canonical import canonical_json, content_hash
from warehouse.ids import doc_id, sanity_id

NAMESPACE = "bench"
SEED = 11
SIZE = 1024
ENTRY = synthetic.SyntheticEntry(name="bench", count=0, size=SIZE, seed=SEED)


class MemoryTarget(NoOtherWriters):
    """A target that applies what a push sends to documents it keeps as JSON bytes (as a
    remote dataset would: not in the pusher's heap), and counts what it received."""

    name = "memory"

    def __init__(self) -> None:
        self.documents: dict[str, bytes] = {}
        # what a listing query projects ({_id, _rev, _type, curatedHash, ownedFields}), as
        # the remote side would answer it without sending whole documents
        self.listing: dict[str, TargetDocument] = {}
        self.mutations = 0
        # (first document, size of the transaction, size of its first mutation)
        self.transactions: list[tuple[str, int, int]] = []

    def _load(self, doc_id: str) -> dict[str, Any]:
        value: dict[str, Any] = orjson.loads(self.documents[doc_id])
        return value

    def read_state(self, namespace: str, foreign: Sequence[str] = ()) -> TargetState:
        prefix = namespace + "."
        return TargetState(
            {
                i: d
                for i, d in self.listing.items()
                if i.startswith(prefix) and is_ours(i, namespace, foreign)
            }
        )

    def read_documents(self, ids: Sequence[str]) -> dict[str, TargetDocument]:
        return {i: target_document(self._load(i), full=True) for i in ids if i in self.documents}

    def count_unrelated(self, namespace: str, foreign: Sequence[str] = ()) -> int:
        return sum(1 for i in self.documents if not is_ours(i, namespace, foreign))

    def touched_by(
        self, namespace: str, transaction_ids: Sequence[str], foreign: Sequence[str] = ()
    ) -> Touched:
        wanted = set(transaction_ids)
        ids = [
            i
            for i in self.documents
            if not is_ours(i, namespace, foreign) and self._load(i).get("_rev") in wanted
        ]
        return Touched(len(ids), ids)

    def commit(self, transaction: Transaction) -> Committed:
        operations = {}
        for mutation in transaction.mutations:
            kind, body = next(iter(mutation.items()))
            if kind == "createIfNotExists":
                doc_id, doc = body["_id"], dict(body)
                operations[doc_id] = "create"
            elif kind == "patch":
                doc_id, doc = body["id"], self._load(body["id"])
                doc.update(body.get("set", {}))
                for name in body.get("unset", []):
                    doc.pop(name, None)
                operations[doc_id] = "update"
            else:
                self.documents.pop(body["id"], None)
                self.listing.pop(body["id"], None)
                operations[body["id"]] = "delete"
                continue
            doc["_rev"] = transaction.id
            self.documents[doc_id] = memoryview(canonical_json(doc)).tobytes()
            self.listing[doc_id] = replace(target_document(doc), body=None)
        self.mutations += len(transaction.mutations)
        first = transaction.mutations[0]
        self.transactions.append((mutation_ids(first)[0], transaction.size, mutation_size(first)))
        return Committed(transaction.id, operations)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def curate(docs: int, changed_percent: float) -> list[CuratedDocument]:
    """The synthetic corpus, curated as ``pipelines.publish.curate`` does (no warehouse)."""
    captured = datetime(2026, 11, 1, tzinfo=UTC)
    settings = Publish()
    out = []
    for index in range(docs):
        variant = 1 if synthetic.is_changed(index, SEED, changed_percent) else 0
        body = canonical_json(synthetic.synthetic_record_value(index, SEED, SIZE, variant))
        key = f"bench-{index}"
        identity = doc_id("synthetic", "record", key)
        document_id = sanity_id(NAMESPACE, "record", key)
        document = CurationInput(
            doc_id=identity,
            kind="record",
            revision=1 + variant,
            content_hash=content_hash(body),
            media_type="application/json",
            body=body,
            scope="synthetic:bench",
            provenance={},
            attributes=None,
            sanity_id_of=lambda other: other,
        )
        meta = RevisionMeta(
            identity, "record", 1 + variant, document.content_hash, None, None, captured, 1, 1
        )
        curated = synthetic.curate(document, [ENTRY])
        out.append(build_document(NAMESPACE, document_id, meta, curated, settings))
    return sorted(out, key=lambda d: d.id)


def timed_push(
    documents: list[CuratedDocument], target: MemoryTarget, settings: Publish
) -> tuple[dict[str, Any], PushResult]:
    mutations_before, transactions_before = target.mutations, len(target.transactions)
    started = time.perf_counter()
    plan = make_plan(NAMESPACE, documents, target.read_state(NAMESPACE))
    plan_seconds = time.perf_counter() - started
    payload = sum(a.size + 1 for a in plan.actions)
    del plan
    started = time.perf_counter()
    result = push(documents, target, namespace=NAMESPACE, settings=settings)
    push_seconds = time.perf_counter() - started
    # concurrent transactions arrive in any order; batches follow the _id order
    sent = sorted(target.transactions[transactions_before:])
    part = {
        "plan_seconds": round(plan_seconds, 3),
        "push_seconds": round(push_seconds, 3),
        "mutations": target.mutations - mutations_before,
        "transactions": len(sent),
        "bytes": sum(size for _, size, _ in sent),
        # no packing can use fewer transactions than the payload divided by the room in one
        "size_lower_bound": math.ceil(payload / (settings.batch_bytes - ENVELOPE_BYTES)),
        # in _id order, the fewest transactions are those that each took every mutation that
        # still fitted: no transaction had room for the first mutation of the next one
        "each_transaction_full": all(
            size + first + 1 > settings.batch_bytes
            for (_, size, _), (_, _, first) in itertools.pairwise(sent)
        ),
        "status": result.status,
    }
    return part, result


def run(docs: int = 100_000, changed_percent: float = 1.0) -> dict[str, Any]:
    settings = Publish()
    started = time.perf_counter()
    original = curate(docs, 0.0)
    curate_seconds = time.perf_counter() - started
    changed = curate(docs, changed_percent)
    expected = sum(
        1 for a, b in zip(original, changed, strict=True) if a.curated_hash != b.curated_hash
    )

    target = MemoryTarget()
    first, _ = timed_push(original, target, settings)
    identical, _ = timed_push(original, target, settings)
    one_changed, result = timed_push(changed, target, settings)
    return {
        "documents": docs,
        "changed_percent": changed_percent,
        "expected_changed": expected,
        "batch_bytes": settings.batch_bytes,
        "curate_seconds": round(curate_seconds, 3),
        "curate_documents_per_second": round(docs / max(curate_seconds, 1e-9)),
        "first_push": first,
        "identical_push": identical,
        "changed_push": one_changed,
        "targets": {
            "identical_push_sends_nothing": identical["mutations"] == 0
            and identical["transactions"] == 0,
            "changed_push_sends_exactly_the_changed": one_changed["mutations"] == expected
            and result.plan.counts()["update"] == expected,
            "fewest_transactions": bool(
                first["each_transaction_full"] and one_changed["each_transaction_full"]
            ),
        },
    }


if __name__ == "__main__":
    import json
    import sys

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(json.dumps(run(count), indent=2))

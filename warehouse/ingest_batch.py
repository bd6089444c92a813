"""A batch of records as the ingest engine writes it (pure: no warehouse here).

The engine keeps one record per document of a batch, looks the batch up by the doc_id
prefix it shares with the listing's first batch, and moves it through Arrow: a small key
table to classify, then only the rows to write and the bytes to store.
"""

from __future__ import annotations

import orjson
import pyarrow as pa

from warehouse.canonical import REENCODED
from warehouse.records import Record

# Every record of a batch is classified from this small table; only the rows that need
# writing (new, changed, restored) are turned into the payload table, and only the bytes no
# snapshot holds yet into the snapshot table. Both are built in the order the statements
# insert them, so no statement joins or groups rows that carry bodies. Measured on a first
# ingest of 200,000 ~1 KB records: the snapshot insert took 0.63 s (and finding the new
# hashes 0.22 s) where joining and grouping the bodies took 1.23 s; the process faulted in
# 156,000-161,000 pages where it had 235,000.
_KEY_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("content_hash", pa.string()),
        ("source_url", pa.string()),
        ("source_commit", pa.string()),
        ("fetched_at", pa.timestamp("us", tz="UTC")),
    ]
)
_PAYLOAD_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("kind", pa.string()),
        ("content_hash", pa.string()),
        ("current_revision", pa.int64()),
        ("source_url", pa.string()),
        ("source_commit", pa.string()),
        ("fetched_at", pa.timestamp("us", tz="UTC")),
        ("source_format", pa.string()),
        ("etag", pa.string()),
        ("last_modified", pa.string()),
        ("attributes", pa.string()),
        ("reason", pa.string()),
    ]
)
_SNAPSHOT_SCHEMA = pa.schema(
    [
        ("content_hash", pa.string()),
        ("size", pa.int64()),
        ("media_type", pa.string()),
        ("body", pa.binary()),
        ("canonical_form", pa.string()),
    ]
)


def first_per_doc(records: list[Record], ids: list[str]) -> tuple[list[Record], list[str]]:
    """A listing carries each document once: the first record for a doc_id wins (here within
    the batch; across batches the classification skips doc_ids the listing already had).
    ``ids`` are the records' doc_ids; the kept records and theirs are returned."""
    if len(set(ids)) == len(ids):  # the usual case, decided without a loop in Python
        return records, ids
    first: dict[str, Record] = {}
    for record in records:
        first.setdefault(record.doc_id, record)
    return list(first.values()), list(first)


def shared_prefix(*ids: str) -> str:
    """The longest prefix every one of ``ids`` starts with (of a batch's, the prefix its lowest
    and highest doc_ids share)."""
    low, high = min(ids), max(ids)
    size = 0
    for a, b in zip(low, high, strict=False):
        if a != b:
            break
        size += 1
    return low[:size]


def key_table(rows: list[Record], ids: list[str], hashes: list[str]) -> pa.Table:
    return pa.table(
        {
            "doc_id": ids,
            "content_hash": hashes,
            "source_url": [r.provenance.url for r in rows],
            "source_commit": [r.provenance.commit for r in rows],
            "fetched_at": [r.provenance.fetched_at for r in rows],
        },
        schema=_KEY_SCHEMA,
    )


def payload_table(
    rows: list[Record],
    hashes: list[str],
    current: list[int | None],
    reencoded: frozenset[str] = frozenset(),
) -> pa.Table:
    """The revisions to write: ``rows`` with their ``hashes`` and ``current`` revisions; a
    document in ``reencoded`` only changes canonical form (its revision's reason says so)."""
    return pa.table(
        {
            "doc_id": [r.doc_id for r in rows],
            "kind": [r.kind for r in rows],
            "content_hash": hashes,
            "current_revision": current,
            "source_url": [r.provenance.url for r in rows],
            "source_commit": [r.provenance.commit for r in rows],
            "fetched_at": [r.provenance.fetched_at for r in rows],
            "source_format": [r.provenance.source_format for r in rows],
            "etag": [r.provenance.etag for r in rows],
            "last_modified": [r.provenance.last_modified for r in rows],
            "attributes": [
                None
                if r.attributes is None
                else orjson.dumps(r.attributes, option=orjson.OPT_SORT_KEYS).decode()
                for r in rows
            ],
            "reason": [REENCODED if r.doc_id in reencoded else None for r in rows],
        },
        schema=_PAYLOAD_SCHEMA,
    )


def snapshot_table(rows: list[Record], hashes: list[str], new: set[str]) -> pa.Table:
    """The first of ``rows`` for each hash in ``new`` (the hashes no snapshot holds yet, all
    of them among ``hashes``)."""
    if len(new) == len(rows):  # every row's bytes are new, and no two rows share them
        kept, digests = rows, hashes
    else:
        first: dict[str, Record] = {}
        for row, digest in zip(rows, hashes, strict=True):
            if digest in new:
                first.setdefault(digest, row)
        kept, digests = list(first.values()), list(first)
    return pa.table(
        {
            "content_hash": digests,
            "size": [len(r.body) for r in kept],
            "media_type": [r.media_type for r in kept],
            "body": [r.body for r in kept],
            "canonical_form": [r.canonical_form for r in kept],
        },
        schema=_SNAPSHOT_SCHEMA,
    )

"""Curation: the current revision of every document of a corpus, as a Sanity document.

Each document's source maps its stored bytes to a ``_type`` and curated fields
(``Source.curate``); this module adds what every curated document has in common:

- the deterministic ``_id`` ``<namespace>.<kind>.<key>`` (``warehouse.ids.sanity_id``);
- the manifest's renames (``[publish.types]``, ``[publish.fields.<type>]``);
- a deterministic ``_key`` on every object in an array that lacks one: a digest of the
  object's canonical JSON, with ``-2``, ``-3``… for repeats, so keys survive reordering;
- ``provenance``: ``docId``, ``revision``, ``contentHash`` (the snapshot it was built from),
  ``sourceUrl`` / ``sourceCommit`` as the revision recorded them, ``capturedAt`` and
  ``lastVerifiedRun`` (when and in which run the current revision's bytes were captured and
  hashed), ``firstSeenRun``, ``logIndex``, ``logTreeSize`` and ``logOrigin`` (its entry in the
  transparency log, and the size and origin of the first checkpoint that covers it, fixed
  once recorded: the address of the revision's proof),
  ``ownedFields`` (the top-level fields the pipeline writes) and ``curatedHash``.

No value depends on the time of the push or on runs that found nothing new: a run that sees
the same upstream bytes adds no revision, so ``lastVerifiedRun`` stays the run that last
captured a change (the run ledger keeps every later confirmation), and the curated document
is byte for byte the same.

``curatedHash`` is the SHA-256 of the canonical JSON of everything the pipeline owns in the
document: ``_type``, the owned fields and ``provenance`` without ``curatedHash`` itself. The
plan compares it with the target's copy to decide whether a document changed, and it lets a
re-read tell whether an owned field was edited in the target since the pipeline wrote it.

Which documents belong to a corpus: its members (``corpus_members``: a document joins when
an entry of the manifest yields it and leaves after a complete run no longer does) whose
current revision is not a tombstone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from pipelines.manifest import Manifest, Publish
from sources.base import Curated, CurationInput, Source
from sources.registry import SOURCES
from warehouse.canonical import canonical_json
from warehouse.corpus import CurrentDocument, current_documents
from warehouse.errors import CurationError, ManifestError
from warehouse.ids import sanity_id
from warehouse.store import Warehouse
from warehouse.tlog.check import check_revisions
from warehouse.tlog.positions import LogPosition, corpus_current, corpus_positions

KEY_HEX = 12
_FIELD_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*\Z")
RESERVED_FIELDS = frozenset({"provenance"})
_SHOWN_FAILURES = 5


@dataclass(frozen=True)
class CuratedDocument:
    """One Sanity document the corpus owns, kept as its canonical JSON bytes (``body``):
    a corpus of 100k documents is then 100k objects, not millions, for the garbage collector.
    ``refs`` are the in-namespace ``_id``s it references strongly."""

    id: str
    type: str
    doc_id: str
    body: bytes
    curated_hash: str
    owned_fields: tuple[str, ...]
    refs: tuple[str, ...] = ()

    def document(self) -> dict[str, Any]:
        value: dict[str, Any] = orjson.loads(self.body)
        return value

    @property
    def fields(self) -> dict[str, Any]:
        """The owned fields and ``provenance``: everything but ``_id`` and ``_type``."""
        value = self.document()
        del value["_id"], value["_type"]
        return value


@dataclass(frozen=True)
class RevisionMeta:
    """What curation needs to know about a document's current revision."""

    doc_id: str
    kind: str
    revision: int
    content_hash: str
    source_url: str | None
    source_commit: str | None
    valid_from: datetime
    valid_from_run: int
    first_seen_run: int
    log_index: int | None = None  # its entry in the transparency log
    log_tree_size: int | None = None  # the first checkpoint that covers that entry
    log_origin: str | None = None  # that checkpoint's origin: the log's name and address


# -- pure pieces ---------------------------------------------------------------------------
def document_hash(type_name: str, owned: Mapping[str, Any]) -> str:
    """The ``curatedHash`` of a document: ``_type`` + owned fields + provenance minus the
    hash itself, as canonical JSON, SHA-256."""
    value = dict(owned)
    provenance = value.get("provenance")
    if isinstance(provenance, dict):
        value["provenance"] = {k: v for k, v in provenance.items() if k != "curatedHash"}
    value["_type"] = type_name
    return hashlib.sha256(canonical_json(value)).hexdigest()


def hash_of_target_document(body: Mapping[str, Any]) -> str | None:
    """What ``curatedHash`` a target document would carry if nobody had edited the fields
    the pipeline owns; None when it carries no provenance of ours."""
    provenance = body.get("provenance")
    if not isinstance(provenance, dict) or not isinstance(provenance.get("ownedFields"), list):
        return None
    owned = {f: body[f] for f in provenance["ownedFields"] if isinstance(f, str) and f in body}
    owned["provenance"] = provenance
    return document_hash(str(body.get("_type")), owned)


def with_keys(value: Any) -> Any:
    """``value`` with a deterministic ``_key`` on every object in every array that lacks one."""
    if isinstance(value, dict):
        return {k: with_keys(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    items = [with_keys(item) for item in value]
    taken = {item["_key"] for item in items if isinstance(item, dict) and "_key" in item}
    keyed = []
    for item in items:
        if isinstance(item, dict) and "_key" not in item:
            base = hashlib.sha256(canonical_json(item)).hexdigest()[:KEY_HEX]
            key, n = base, 1
            while key in taken:
                n += 1
                key = f"{base}-{n}"
            taken.add(key)
            item = {"_key": key, **item}
        keyed.append(item)
    return keyed


def strong_refs(value: Any, namespace: str) -> set[str]:
    """The in-namespace ``_id``s that ``value`` references without ``_weak``."""
    found: set[str] = set()
    stack = [value]
    prefix = namespace + "."
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("_ref")
            if isinstance(ref, str) and ref.startswith(prefix) and not item.get("_weak"):
                found.add(ref)
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        else:
            stack.extend(v for v in item if isinstance(v, dict | list))
    return found


def _iso(value: datetime) -> str:
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def build_document(
    namespace: str, document_id: str, meta: RevisionMeta, curated: Curated, publish: Publish
) -> CuratedDocument:
    """Apply renames, keys and provenance to what a source curated. Pure."""
    type_name = publish.types.get(curated.type, curated.type)
    if not _FIELD_RE.match(type_name):
        raise CurationError(f"{meta.doc_id}: type {type_name!r} is not a valid type name")
    renames = publish.fields.get(curated.type, {})
    fields: dict[str, Any] = {}
    for name, value in curated.fields.items():
        final = renames.get(name, name)
        if not _FIELD_RE.match(final) or final in RESERVED_FIELDS:
            raise CurationError(
                f"{meta.doc_id}: field {final!r} is not a field the pipeline may own "
                f"(a letter, then letters, digits or '_'; not {', '.join(RESERVED_FIELDS)})"
            )
        if final in fields:
            raise CurationError(f"{meta.doc_id}: two fields would be named {final!r}")
        fields[final] = with_keys(value)
    provenance: dict[str, Any] = {
        "docId": meta.doc_id,
        "revision": meta.revision,
        "contentHash": meta.content_hash,
        "sourceUrl": meta.source_url,
        "sourceCommit": meta.source_commit,
        "capturedAt": _iso(meta.valid_from),
        "firstSeenRun": meta.first_seen_run,
        "lastVerifiedRun": meta.valid_from_run,
        "logIndex": meta.log_index,
        "logTreeSize": meta.log_tree_size,
        "logOrigin": meta.log_origin,
        "ownedFields": sorted(fields),
    }
    provenance = {k: v for k, v in provenance.items() if v is not None}
    fields = dict(sorted(fields.items()))
    fields["provenance"] = provenance
    digest = document_hash(type_name, fields)
    provenance["curatedHash"] = digest
    refs = strong_refs(fields, namespace)
    refs.discard(document_id)
    # orjson hands back bytes with a large spare buffer (~8-16 KB); keep an exact copy
    body = memoryview(canonical_json({"_id": document_id, "_type": type_name, **fields})).tobytes()
    return CuratedDocument(
        document_id,
        type_name,
        meta.doc_id,
        body,
        digest,
        tuple(provenance["ownedFields"]),
        tuple(sorted(refs)),
    )


# -- reading the warehouse -----------------------------------------------------------------
def _input(row: CurrentDocument, sanity_id_of: Callable[[str], str]) -> CurationInput:
    attributes = row.attributes
    return CurationInput(
        doc_id=row.doc_id,
        kind=row.kind,
        revision=int(row.revision),
        content_hash=row.content_hash,
        media_type=row.media_type,
        body=bytes(row.body),
        scope=row.scope,
        provenance={
            "url": row.source_url,
            "commit": row.source_commit,
            "source_format": row.source_format,
            "fetched_at": None if row.fetched_at is None else _iso(row.fetched_at),
            "etag": row.etag,
            "last_modified": row.last_modified,
        },
        attributes=orjson.loads(attributes) if isinstance(attributes, str) else attributes,
        sanity_id_of=sanity_id_of,
    )


def _meta(row: CurrentDocument, position: LogPosition | None) -> RevisionMeta:
    return RevisionMeta(
        doc_id=row.doc_id,
        kind=row.kind,
        revision=int(row.revision),
        content_hash=row.content_hash,
        source_url=row.source_url,
        source_commit=row.source_commit or None,
        valid_from=row.valid_from,
        valid_from_run=int(row.valid_from_run),
        first_seen_run=int(row.first_seen_run),
        log_index=None if position is None else position.entry,
        log_tree_size=None if position is None else position.tree_size,
        log_origin=None if position is None else position.origin,
    )


def rename_onto_existing(fields: Mapping[str, Any], renames: Mapping[str, str]) -> str | None:
    """Pure: the source field that ``renames`` moves onto a field the document already has
    and keeps (one not renamed away itself), or None."""
    for old, new in renames.items():
        if old in fields and new != old and new in fields and new not in renames:
            return old
    return None


def _check_renames(manifest: Manifest, curated: Curated, doc_id: str) -> None:
    renames = manifest.publish.fields.get(curated.type, {})
    clashing = rename_onto_existing(curated.fields, renames)
    if clashing is not None:
        raise ManifestError(
            f"{manifest.path}: [publish.fields.{curated.type}], field '{clashing}': renamed "
            f"to {renames[clashing]!r}, a field {curated.type} documents already have "
            f"(e.g. {doc_id}); rename that one too, or choose another name"
        )


def curate_manifest(
    manifest: Manifest, warehouse: Warehouse, sources: Mapping[str, Source[Any]] = SOURCES
) -> list[CuratedDocument]:
    """Every current document of the corpus, curated, ordered by ``_id``.

    Fails closed: if any document cannot be curated, raises :class:`CurationError` naming
    the first few, and nothing is published (a skipped document would look like an orphan).
    """
    namespace = manifest.corpus.namespace

    def sanity_id_of(other: str) -> str:
        source = sources[other.split("/", 1)[0]]
        return sanity_id(namespace, *source.identity(other))

    documents: dict[str, CuratedDocument] = {}
    failures: list[str] = []
    positions = corpus_positions(warehouse, manifest.name)
    for row in current_documents(warehouse, manifest.name):
        doc_id = row.doc_id
        source = sources.get(doc_id.split("/", 1)[0])
        if source is None or source.curate is None:
            failures.append(f"{doc_id}: its source does not curate documents for publishing")
            continue
        try:
            document_id = sanity_id_of(doc_id)
            curated = source.curate(_input(row, sanity_id_of), manifest.entries[source.name])
            _check_renames(manifest, curated, doc_id)
            meta = _meta(row, positions.get((doc_id, int(row.revision))))
            document = build_document(namespace, document_id, meta, curated, manifest.publish)
        except ManifestError:
            raise
        except Exception as exc:  # labelled with the document, then the whole step fails
            failures.append(f"{doc_id}: {exc}")
            continue
        clash = documents.get(document.id)
        if clash is not None:
            failures.append(f"{doc_id} and {clash.doc_id} would both be {document.id}")
            continue
        documents[document.id] = document
    if positions:  # refuses members whose rows disagree with their log entries
        check_revisions(warehouse, corpus_current(warehouse, manifest.name))
    if failures:
        shown = "; ".join(failures[:_SHOWN_FAILURES])
        more = f" (and {len(failures) - _SHOWN_FAILURES} more)" if len(failures) > 5 else ""
        raise CurationError(
            f"{len(failures)} document(s) of {manifest.name} could not be curated, so nothing "
            f"was published: {shown}{more}"
        )
    return [documents[key] for key in sorted(documents)]

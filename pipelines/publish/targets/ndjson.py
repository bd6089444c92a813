"""An NDJSON file as a publish target: the embedded default, in the format
``sanity dataset import`` reads (one JSON document per line, each with ``_id`` and
``_type``; objects in arrays carry ``_key``).

The file is treated as a small dataset: a push reads it as the target's state, applies the
same plan (create, update owned fields, unchanged, orphan) and writes it back. Lines are
ordered by ``_id`` and written as canonical JSON, so identical corpora give identical bytes;
documents the push does not write keep their exact bytes. Nothing is written when nothing
changed. Documents outside the namespace in the file are unrelated and counted like any
other target's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from pipelines.publish.confinement import is_ours
from pipelines.publish.plan import TargetDocument, TargetState
from pipelines.publish.targets.base import (
    Committed,
    NoOtherWriters,
    Touched,
    Transaction,
    target_document,
)
from pipelines.publish.versions import group_versions, release_from, version_from
from warehouse.canonical import canonical_json
from warehouse.errors import RevisionConflict, TargetError

_SIMPLE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class NdjsonTarget(NoOtherWriters):
    """The file at ``path``. Its name in the push ledger (``ndjson:/abs/path``) is the
    resolved absolute path: ``./out/x.ndjson``, ``out/x.ndjson`` and ``/abs/out/x.ndjson``
    are one target, so the pushes of each are the last pushes of the others (target drift
    finds what was deleted from the file since)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"ndjson:{path.resolve()}"
        self._documents: dict[str, dict[str, Any]] | None = None
        self._raw: dict[str, bytes] = {}
        self._dirty = False
        self._lock = threading.Lock()

    # -- reading ---------------------------------------------------------------------------
    def _dataset(self) -> dict[str, dict[str, Any]]:
        if self._documents is None:
            self._documents, self._raw = self._read()
        return self._documents

    def _read(self) -> tuple[dict[str, dict[str, Any]], dict[str, bytes]]:
        documents: dict[str, dict[str, Any]] = {}
        raw: dict[str, bytes] = {}
        if not self.path.exists():
            return documents, raw
        try:
            content = self.path.read_bytes()
        except OSError as exc:
            raise TargetError(f"cannot read {self.path}: {exc}") from None
        for number, line in enumerate(content.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                document = orjson.loads(line)
            except orjson.JSONDecodeError:
                document = None
            if not isinstance(document, dict) or not isinstance(document.get("_id"), str):
                raise TargetError(
                    f"{self.path}:{number}: not a JSON document with an _id; "
                    "an NDJSON target holds one Sanity document per line"
                )
            if document["_id"] in documents:
                raise TargetError(f"{self.path}:{number}: duplicate _id {document['_id']!r}")
            documents[document["_id"]] = document
            raw[document["_id"]] = line
        return documents, raw

    def read_state(self, namespace: str, foreign: Sequence[str] = ()) -> TargetState:
        prefix, drafts = namespace + ".", "drafts." + namespace + "."
        data = {i: d for i, d in self._dataset().items() if is_ours(i, namespace, foreign)}
        versions = [v for d in data.values() if (v := version_from(d)) is not None]
        wanted = {v.release for v in versions}
        releases = [r for d in self._dataset().values() if (r := release_from(d)) is not None]
        return TargetState(
            documents={i: target_document(d) for i, d in data.items() if i.startswith(prefix)},
            drafts=frozenset(i[len("drafts.") :] for i in data if i.startswith(drafts)),
            versions=group_versions(versions),
            releases={r.id: r for r in releases if r.id in wanted},
        )

    def read_documents(self, ids: Sequence[str]) -> dict[str, TargetDocument]:
        data = self._dataset()
        return {i: target_document(data[i], full=True) for i in ids if i in data}

    def count_unrelated(self, namespace: str, foreign: Sequence[str] = ()) -> int:
        return sum(1 for i in self._dataset() if not is_ours(i, namespace, foreign))

    def touched_by(
        self, namespace: str, transaction_ids: Sequence[str], foreign: Sequence[str] = ()
    ) -> Touched:
        wanted = set(transaction_ids)
        ids = sorted(
            i
            for i, d in self._dataset().items()
            if not is_ours(i, namespace, foreign) and d.get("_rev") in wanted
        )
        return Touched(len(ids), ids)

    # -- writing ---------------------------------------------------------------------------
    def commit(self, transaction: Transaction) -> Committed:
        with self._lock:
            return self._apply(transaction)

    def _apply(self, transaction: Transaction) -> Committed:
        data = self._dataset()
        changes: dict[str, dict[str, Any] | None] = {}
        operations: dict[str, str] = {}

        def current(doc_id: str) -> dict[str, Any] | None:
            return changes[doc_id] if doc_id in changes else data.get(doc_id)

        for mutation in transaction.mutations:
            kind, body = next(iter(mutation.items()))
            if kind == "createIfNotExists":
                doc_id = body["_id"]
                if current(doc_id) is None:
                    changes[doc_id] = dict(body)
                    operations[doc_id] = "create"
                else:
                    operations[doc_id] = "none"
            elif kind == "patch":
                doc_id = body["id"]
                document = current(doc_id)
                if document is None:
                    raise TargetError(f"{self.name}: cannot patch missing document {doc_id}")
                expected = body.get("ifRevisionID")
                if expected is not None and document.get("_rev") != expected:
                    raise RevisionConflict(
                        f"{doc_id} has revision {document.get('_rev')!r}, not {expected!r}",
                        [doc_id],
                    )
                patched = dict(document)
                for path, value in body.get("set", {}).items():
                    patched[self._field(path)] = value
                for path in body.get("unset", []):
                    patched.pop(self._field(path), None)
                changes[doc_id] = patched
                operations[doc_id] = "update"
            elif kind == "delete":
                changes[body["id"]] = None
                operations[body["id"]] = "delete"
            else:
                raise TargetError(f"{self.name}: unsupported mutation {kind!r}")
        for doc_id, document in changes.items():
            self._raw.pop(doc_id, None)
            if document is None:
                data.pop(doc_id, None)
            else:
                data[doc_id] = document
        self._dirty = self._dirty or bool(changes)
        return Committed(transaction.id, operations)

    @staticmethod
    def _field(path: str) -> str:
        if not path or not set(path) <= _SIMPLE_PATH:
            raise TargetError(f"NDJSON target: only top-level fields can be patched, not {path!r}")
        return path

    def flush(self) -> None:
        if not self._dirty and self.path.exists():
            return
        data = self._dataset()
        lines = [self._raw.get(i) or canonical_json(data[i]) for i in sorted(data)]
        content = b"".join(line + b"\n" for line in lines)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".part")
        partial.write_bytes(content)
        os.replace(partial, self.path)
        self._dirty = False
        self._documents = None  # later reads (the after-count) read the file as written

    def close(self) -> None:
        pass

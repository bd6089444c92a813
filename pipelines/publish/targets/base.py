"""What a publish target is: somewhere a push reads the namespace's state from, counts
unrelated documents in, and commits transactions of mutations to.

Two targets implement it: the Sanity HTTP API (``sanity_http``) and an NDJSON file in the
format ``sanity dataset import`` reads (``ndjson``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipelines.publish.plan import TargetDocument, TargetState


@dataclass(frozen=True)
class Transaction:
    id: str
    mutations: list[dict[str, Any]]
    size: int


@dataclass(frozen=True)
class Committed:
    """A committed transaction: the id the target gave it and each mutation's operation
    (``create``, ``update``, ``delete`` or ``none``) by document id."""

    transaction_id: str
    operations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Touched:
    """Unrelated documents whose ``_rev`` is one of a push's transaction ids."""

    count: int
    ids: list[str] = field(default_factory=list)


class NoOtherWriters:
    """For a target nobody else writes to during a push (a file, memory): it has no clock
    of its own and nothing in it is written by others."""

    def now(self) -> str | None:
        return None

    def written_since(
        self,
        namespace: str,
        since: str,
        transaction_ids: Sequence[str],
        foreign: Sequence[str] = (),
    ) -> Touched:
        return Touched(0)


class Target(Protocol):
    name: str

    def read_state(self, namespace: str, foreign: Sequence[str] = ()) -> TargetState:
        """The namespace's documents (``_id``, ``_rev``, ``_type``, provenance hash and
        owned fields), which of them have a ``drafts.`` sibling, their ``versions.``
        (Content Release) siblings and those releases; none under a ``foreign`` namespace
        (another corpus's, inside ours)."""

    def read_documents(self, ids: Sequence[str]) -> dict[str, TargetDocument]:
        """The latest committed state of these documents, with their bodies."""

    def count_unrelated(self, namespace: str, foreign: Sequence[str] = ()) -> int:
        """Documents that are not the namespace's, its drafts' or its versions' (those
        under a ``foreign`` namespace are not ours: they count)."""

    def touched_by(
        self, namespace: str, transaction_ids: Sequence[str], foreign: Sequence[str] = ()
    ) -> Touched:
        """Unrelated documents last written by one of these transactions."""

    def now(self) -> str | None:
        """The target's own clock (None when it has none that others write by)."""

    def written_since(
        self,
        namespace: str,
        since: str,
        transaction_ids: Sequence[str],
        foreign: Sequence[str] = (),
    ) -> Touched:
        """Unrelated documents whose ``_updatedAt`` is at or after ``since`` (the target's
        clock) and whose ``_rev`` is none of ``transaction_ids``: written by someone else."""

    def commit(self, transaction: Transaction) -> Committed:
        """Apply a transaction atomically, or raise :class:`RevisionConflict`,
        :class:`TargetError` or ``sources.http.HttpError`` (nothing applied), or
        :class:`CommitUncertain` (sent, and the answer lost: it may have committed). A
        target never sends the same transaction id twice."""

    def flush(self) -> None:
        """Make every committed transaction durable (a file target writes its file)."""

    def close(self) -> None: ...


def target_document(body: dict[str, Any], *, full: bool = False) -> TargetDocument:
    """A target document from its JSON: the whole document (``full``) or the projection a
    plan reads (``_id``, ``_rev``, ``_type``, ``curatedHash``, ``ownedFields``)."""
    provenance = body.get("provenance") if isinstance(body.get("provenance"), dict) else None
    curated_hash = body.get("curatedHash", (provenance or {}).get("curatedHash"))
    owned = body.get("ownedFields", (provenance or {}).get("ownedFields"))
    return TargetDocument(
        id=str(body["_id"]),
        rev=body.get("_rev"),
        type=body.get("_type"),
        curated_hash=curated_hash if isinstance(curated_hash, str) else None,
        owned_fields=tuple(f for f in owned if isinstance(f, str))
        if isinstance(owned, list)
        else (),
        body=body if full else None,
    )

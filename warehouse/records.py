"""What a source hands to the warehouse: records, grouped into listings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from warehouse.canonical import FORM_RAW, record_json


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where and how a snapshot was obtained."""

    url: str | None = None
    commit: str | None = None
    source_format: str | None = None
    fetched_at: datetime | None = None
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """One document's content as fetched: ``body`` is exactly the bytes to store and hash.

    ``canonical_form`` says how ``body`` was made (``snapshots.canonical_form``): a JSON
    record's :func:`warehouse.canonical.record_json` form, or ``raw`` (the bytes as served).
    ``attributes`` is source metadata kept beside a new revision (it never affects the hash).
    ``checkpoint`` marks how far a resumable source has read once this record is committed.
    """

    doc_id: str
    kind: str
    body: bytes
    media_type: str = "application/json"
    provenance: Provenance = field(default_factory=Provenance)
    attributes: dict[str, Any] | None = None
    checkpoint: str | None = None
    canonical_form: str = FORM_RAW

    @property
    def source(self) -> str:
        return self.doc_id.split("/", 1)[0]


def json_body(value: Any) -> dict[str, Any]:
    """The ``body`` and ``canonical_form`` of a :class:`Record` of the JSON record ``value``
    (:func:`warehouse.canonical.record_json`)."""
    body, form = record_json(value)
    return {"body": body, "canonical_form": form}


@dataclass(slots=True)
class Listing:
    """The records a source found for one scope.

    ``complete`` declares the listing the whole truth for its scope: a document of the scope
    that is missing from it becomes a tombstone (subject to the circuit breaker).
    ``lower_bound`` declares it known to miss part of its scope (a tree smaller than its
    upstream count): a document of the scope missing from it is neither tombstoned nor
    dropped from the corpus in this run.
    """

    scope: str
    records: Iterable[Record]
    complete: bool = False
    label: str | None = None
    lower_bound: bool = False

    def __post_init__(self) -> None:
        if self.complete and self.lower_bound:
            raise ValueError(f"listing {self.scope!r} cannot be complete and a lower bound")

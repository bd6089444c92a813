"""What a source is: a manifest entry model, and a fetch that yields listings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from sources.http import Endpoint, HttpFactory
from warehouse.records import Listing

Entry = TypeVar("Entry", bound=BaseModel)


def control_character(value: Any) -> str | None:
    """The first control character in a string (or in the strings of a list or tuple)."""
    if isinstance(value, str):
        for ch in value:
            code = ord(ch)
            if code < 32 or 127 <= code < 160 or ch in "\u2028\u2029":
                return f"U+{code:04X}"
    elif isinstance(value, list | tuple):
        for item in value:
            found = control_character(item)
            if found:
                return found
    return None


class StrictModel(BaseModel):
    """Manifest models refuse unknown fields and never coerce silently: numbers and booleans
    are declared with pydantic's strict types (``"50"`` and ``true`` are not 50), and no
    string may hold a control character (a newline inside a make, an escape sequence)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        found = control_character(value)
        if found:
            raise ValueError(f"contains a control character ({found})")
        return value


@dataclass
class FetchContext:
    """What a source's fetch may use: HTTP clients, read access to stored snapshots, and a
    place to report warnings (which end up in the run ledger and in ``--json``).

    ``lookup(doc_id, url, commit)`` gives the bytes last seen for a document at a URL and
    commit; ``known_in_scope(scope)`` gives the live documents the warehouse holds for a
    listing scope (doc_id → the bytes of its current revision), so a source can tell an
    answer that empties a scope that had records from one that never had any."""

    http: HttpFactory
    lookup: Callable[[str, str, str | None], bytes | None] = lambda doc_id, url, commit: None
    known_in_scope: Callable[[str], dict[str, bytes]] = lambda scope: {}
    warnings: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


@dataclass(frozen=True)
class CurationInput:
    """A document's current revision, as the curation step sees it."""

    doc_id: str
    kind: str
    revision: int
    content_hash: str
    media_type: str
    body: bytes
    scope: str
    provenance: dict[str, Any]
    attributes: dict[str, Any] | None
    # Computes the Sanity ``_id`` of another document of the corpus (for ``_ref``s).
    sanity_id_of: Callable[[str], str]


@dataclass(frozen=True)
class Curated:
    """What a source makes of one document: its Sanity ``_type`` (before any rename in the
    manifest) and its curated fields (before provenance is added)."""

    type: str
    fields: dict[str, Any]


def default_identity(doc_id: str) -> tuple[str, str]:
    """``<source>/<kind>/<key...>`` → (kind, key) for the Sanity ``_id``."""
    parts = doc_id.split("/")
    return parts[1], "/".join(parts[2:])


@dataclass(frozen=True)
class Source(Generic[Entry]):
    """A registered source: its name, the model of its manifest entries, how to label an
    entry in messages, its fetch, how its documents are curated for publishing, and the
    endpoints it fetches from.

    ``curate(input, entries)`` receives the manifest's entries of this source so it can find
    the curation metadata (lifecycle, authority, licence, model years, ...) of the document.
    ``identity(doc_id)`` gives the (kind, key) of the document's Sanity ``_id``.
    ``endpoints`` are the upstream's base URLs, each with its default and its environment
    variable (what a mirror, a proxy or a test fake sets to stand in for the upstream).
    ``metadata_fields`` are the dotted paths (shell wildcards allowed) of the stored JSON
    record that are about the record rather than its content (an author's profile, fields
    the API adds): a revision that changes only those is a metadata change, which drift,
    ``--fail-on-drift`` and the claims check leave apart (:mod:`warehouse.changes`). None
    declared: every change is a content change.
    """

    name: str
    entry_model: type[Entry]
    label: Callable[[Entry], str]
    fetch: Callable[[Entry, FetchContext], Iterable[Listing]]
    curate: Callable[[CurationInput, list[Entry]], Curated] | None = None
    identity: Callable[[str], tuple[str, str]] = default_identity
    endpoints: tuple[Endpoint, ...] = ()
    metadata_fields: tuple[str, ...] = ()

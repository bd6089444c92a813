"""What a source is: a manifest entry model, and a fetch that yields listings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from sources.http import HttpFactory
from warehouse.records import Listing

Entry = TypeVar("Entry", bound=BaseModel)


class StrictModel(BaseModel):
    """Manifest models refuse unknown fields and never coerce silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceError(Exception):
    """An entry could not be fetched; the message says why and what to do."""


@dataclass
class FetchContext:
    """What a source's fetch may use: HTTP clients, read access to stored snapshots, and a
    place to report warnings (which end up in the run ledger and in ``--json``)."""

    http: HttpFactory
    lookup: Callable[[str, str, str | None], bytes | None] = lambda doc_id, url, commit: None
    warnings: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


@dataclass(frozen=True)
class Source(Generic[Entry]):
    """A registered source: its name, the model of its manifest entries, how to label an
    entry in messages, and its fetch."""

    name: str
    entry_model: type[Entry]
    label: Callable[[Entry], str]
    fetch: Callable[[Entry, FetchContext], Iterable[Listing]]

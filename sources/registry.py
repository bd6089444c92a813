"""The explicit registry of sources. A new source is one package plus one line here.

The wheel registers the upstreams below and nothing else. Benchmarks and tests add their
own scaffolding sources (the synthetic one, test fakes) with :func:`register`; manifest
validation and ingest runs look sources up here when they run, so registration is all a
source needs.
"""

from __future__ import annotations

from typing import Any

from sources.base import Source
from sources.forem import source as forem
from sources.github import source as github
from sources.http import Endpoint
from sources.nhtsa import source as nhtsa

SOURCES: dict[str, Source[Any]] = {
    "github": github.SOURCE,
    "forem": forem.SOURCE,
    "nhtsa": nhtsa.SOURCE,
}


def register(source: Source[Any]) -> Source[Any]:
    """Add a source to the registry (again is harmless); a different source under a name
    already taken is refused."""
    known = SOURCES.get(source.name)
    if known is not None and known is not source:
        raise ValueError(f"a source named {source.name!r} is already registered")
    SOURCES[source.name] = source
    return source


def unregister(name: str) -> None:
    """Take a source out of the registry (tests that registered one for a while)."""
    SOURCES.pop(name, None)


def endpoints() -> list[Endpoint]:
    """Every endpoint of every registered source, in registry order."""
    return [endpoint for source in SOURCES.values() for endpoint in source.endpoints]

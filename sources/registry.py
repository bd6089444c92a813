"""The explicit registry of sources. A new source is one module plus one line here."""

from __future__ import annotations

from typing import Any

from sources import synthetic
from sources.base import Source
from sources.forem import source as forem
from sources.github import source as github
from sources.nhtsa import source as nhtsa

SOURCES: dict[str, Source[Any]] = {
    "synthetic": synthetic.SOURCE,
    "github": github.SOURCE,
    "forem": forem.SOURCE,
    "nhtsa": nhtsa.SOURCE,
}

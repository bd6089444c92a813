"""The explicit registry of sources. A new source is one module plus one line here."""

from __future__ import annotations

from typing import Any

from sources import forem, github, nhtsa, synthetic
from sources.base import Source

SOURCES: dict[str, Source[Any]] = {
    "synthetic": synthetic.SOURCE,
    "github": github.SOURCE,
    "forem": forem.SOURCE,
    "nhtsa": nhtsa.SOURCE,
}

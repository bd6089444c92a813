"""NHTSA's own names of makes and models (``products/vehicle/makes`` and ``models``), asked
when every model year of a first run answered with a zero count: the answer NHTSA gives
both for a vehicle without records and for a make or model it does not know (``CRV`` for
``CR-V``).

The routes and their answers [reference §2.1, §2.2; NHTSA's datasets-and-APIs page]:
``GET /products/vehicle/makes?modelYear=2021&issueType=r`` answers
``{"count", "message", "results": [{"make": "HONDA"}, ...]}`` and
``GET /products/vehicle/models?modelYear=2010&make=acura&issueType=r`` answers
``results: [{"modelYear": "2010", "make": "ACURA", "model": "RDX"}, ...]``; ``issueType``
is ``r`` (recalls) or ``c`` (complaints). Clients read ``results[].make`` and
``results[].model`` (e.g. a Rasa chatbot suggesting models from
``products/vehicle/models?...&issueType=c``; a Next.js route mapping ``results`` to
``model``); a recorded fixture set ("recall-models-<make>-<year>.json", fetched live
2026-10-10) uses them to resolve ``F-250`` to NHTSA's ``F-250 SD``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from sources.http import HttpClient
from sources.nhtsa.api import get_answer

MAKES_ROUTE = "/products/vehicle/makes"
MODELS_ROUTE = "/products/vehicle/models"
# The issue types the products routes take, by the kind of records asked for.
ISSUE_TYPE = {"recalls": "r", "complaints": "c"}
SUGGESTIONS = 3


@dataclass(frozen=True)
class Unknown:
    """A make or model NHTSA's products routes do not list for a model year."""

    what: str  # "make" or "model"
    name: str
    year: int
    url: str
    suggestions: tuple[str, ...]

    def describe(self) -> str:
        closest = (
            f"; closest names NHTSA lists: {', '.join(self.suggestions)}"
            if self.suggestions
            else "; NHTSA lists no name close to it"
        )
        return (
            f"NHTSA does not list the {self.what} {self.name!r} for model year {self.year} "
            f"({self.url}){closest}"
        )


def _folded(name: str) -> str:
    """A name compared without case, spaces or punctuation: ``CRV`` and ``CR-V`` meet."""
    return re.sub(r"[^0-9A-Z]", "", name.upper())


def closest(name: str, names: list[str], n: int = SUGGESTIONS) -> list[str]:
    """The names of ``names`` closest to ``name``: those equal to it but for case and
    punctuation first, then the nearest by spelling."""
    distinct = sorted(dict.fromkeys(names))
    same = [candidate for candidate in distinct if _folded(candidate) == _folded(name)]
    by_folded: dict[str, list[str]] = {}
    for candidate in distinct:
        by_folded.setdefault(_folded(candidate), []).append(candidate)
    near = get_close_matches(_folded(name), list(by_folded), n=n, cutoff=0.6)
    found = same + [c for folded in near for c in by_folded[folded] if c not in same]
    return found[:n]


def _names(results: list[Any], field: str) -> list[str]:
    return [
        r[field].strip()
        for r in results
        if isinstance(r, dict) and isinstance(r.get(field), str) and r[field].strip()
    ]


def unknown_vehicle(
    client: HttpClient, api: str, make: str, model: str, year: int, issue_type: str
) -> Unknown | None:
    """The make or model NHTSA does not list for ``year``, with the closest names it does
    list; None when both are listed (a vehicle NHTSA knows, without records)."""
    makes = get_answer(client, api + MAKES_ROUTE, {"modelYear": year, "issueType": issue_type})
    listed = {name.upper(): name for name in _names(makes.results, "make")}
    known_make = listed.get(make.strip().upper())
    if known_make is None:
        return Unknown("make", make, year, makes.url, tuple(closest(make, list(listed.values()))))
    params = {"modelYear": year, "make": known_make, "issueType": issue_type}
    models = get_answer(client, api + MODELS_ROUTE, params)
    names = _names(models.results, "model")
    if model.strip().upper() in {name.upper() for name in names}:
        return None
    return Unknown("model", model, year, models.url, tuple(closest(model, names)))

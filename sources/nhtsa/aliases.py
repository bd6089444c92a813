"""The spellings NHTSA's JSON routes have used for one field, in one table.

The stored record stays verbatim; curation and the manifest's filters read a field through
:func:`value_of`, which tries every spelling listed here. Each alias names its evidence:
a recorded upstream answer in public code, or the reference (``upstream-apis.md``).

A key of an answer that is none of the known spellings but is close to one (a letter
dropped, swapped or cased differently) is reported by :func:`lookalike_keys`, so a new
misspelling is a warning in the run rather than a field read as empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from typing import Any

# field -> its spellings, in the order they are tried. Evidence:
# - ``Conequence``: recallsByVehicle answers recorded in public code spell the consequence
#   this way, e.g. campaign 19V182000 (ACURA RDX 2012) as kept in a React app's recorded
#   ``recall-yr-mk-model.json``, and several clients read ``Conequence`` first "because the
#   payload sometimes misspells it" (find_string "Conequence": Kotlin/Moshi
#   ``@Json(name = "Conequence")``, a C# ``OdiRecallsResult.Conequence`` model, Python
#   ingesters with ``r.get("Conequence") or r.get("Consequence")``); reference §6 (NHTSA).
#   The flat file's ``CONEQUENCE_DEFECT`` is the same misspelling (reference §2.6, §5).
# - camelCase ``summary``/``consequence``/``correctiveAction``/``notes``/``subject``:
#   the vehicle family of routes (``vehicles/byYmmt``, reference §2.7).
# - ``PotentialNumberofUnitsAffected`` with a lower-case "of": ``campaignNumber`` answers
#   (reference §2.2); ``potentialNumberOfUnitsAffected``: the vehicle family (§2.7).
# - ``dateFiled``: the vehicle family's complaints; ``dateComplaintFiled``:
#   complaintsByVehicle (§2.2, §2.7). ``description``: the vehicle family's complaint text.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "manufacturer": ("Manufacturer", "manufacturer"),
    "make": ("Make", "make"),
    "model": ("Model", "model"),
    "component": ("Component", "component"),
    "subject": ("subject", "Subject"),
    "summary": ("Summary", "summary"),
    "consequence": ("Consequence", "Conequence", "consequence"),
    "remedy": ("Remedy", "correctiveAction"),
    "notes": ("Notes", "notes"),
    "reportReceivedDate": ("ReportReceivedDate", "reportReceivedDate"),
    "potentialUnitsAffected": (
        "PotentialNumberofUnitsAffected",
        "potentialNumberOfUnitsAffected",
    ),
    "complaintSummary": ("summary", "description"),
    "dateFiled": ("dateComplaintFiled", "dateFiled"),
}

# Every other key NHTSA's JSON routes are known to send (reference §2.2, §2.7): not
# aliases of anything, and no misspelling either.
OTHER_KEYS = frozenset(
    {
        "NHTSACampaignNumber",
        "nhtsaCampaignNumber",
        "NHTSAActionNumber",
        "nhtsaActionNumber",
        "ModelYear",
        "parkIt",
        "parkOutSide",
        "overTheAirUpdate",
        "odiNumber",
        "nhtsaIdNumber",
        "crash",
        "fire",
        "numberOfInjuries",
        "numberOfDeaths",
        "dateOfIncident",
        "vin",
        "components",
        "products",
        "id",
        "mfrCampaignNumber",
        "investigations",
        "recalls",
        "consumerLocation",
        "type",
        "dateOpened",
        "dateClosed",
        "manufacturerCommunicationNumber",
        "communicationDate",
        "associatedDocuments",
        "associatedDocumentsCount",
        "associatedProducts",
        "associatedProductsCount",
    }
)
KNOWN_KEYS = frozenset(name for names in FIELD_ALIASES.values() for name in names) | OTHER_KEYS

# How close (difflib's ratio, case folded) an unknown key must be to a known one to be
# taken for its misspelling: ``Consequnce``/``Consequence`` is 0.95, ``Remedy``/``Remedies``
# 0.71; ``Notes``/``Note`` 0.89.
LOOKALIKE_RATIO = 0.85


def value_of(record: Mapping[str, Any], field: str) -> Any:
    """The first non-empty value of ``field`` under any of its known spellings."""
    for key in FIELD_ALIASES[field]:
        value = record.get(key)
        if value is not None and value != "":
            return value
    return None


def spellings(*fields: str) -> tuple[str, ...]:
    """Every known spelling of ``fields``, in table order, each once."""
    return tuple(dict.fromkeys(key for field in fields for key in FIELD_ALIASES[field]))


def lookalike_keys(keys: Iterable[str]) -> list[tuple[str, str]]:
    """The keys that are no known spelling but look like one: (key, the known key)."""
    found = []
    for key in keys:
        if key in KNOWN_KEYS:
            continue
        # The closest known key, case folded; among equals the one closest as written.
        score, best = max(
            (
                (
                    SequenceMatcher(None, key.casefold(), known.casefold()).ratio(),
                    SequenceMatcher(None, key, known).ratio(),
                ),
                known,
            )
            for known in sorted(KNOWN_KEYS)
        )
        if score[0] >= LOOKALIKE_RATIO:
            found.append((key, best))
    return found

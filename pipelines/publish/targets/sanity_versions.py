"""Reading the Content Release versions of a namespace's documents from the Content Lake,
and the API version that makes them visible.

Versions (``versions.<release>.<id>``) are returned only by API versions from 2025-02-19,
and only with the ``raw`` perspective (whose default became ``published`` that day); an
older version hides them, so the plan, the prune and the guard could not see a release
waiting to overwrite the corpus [DOC
https://www.sanity.io/changelog/676aaa9d-2da6-44fb-abe5-580f28047c10 "versions.** documents
are not returned in API versions prior to 2025-02-19"]. Release documents
(``_.releases.<id>``) are read with the same perspective ("set the perspective to raw" to
read release information [DOC
https://www.sanity.io/docs/apis-and-sdks/content-releases-cheat-sheet]).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.publish.versions import (
    RELEASE_PREFIX,
    Release,
    Version,
    group_versions,
    release_from,
    version_from,
)
from warehouse.errors import TargetError, UsageError

VERSIONS_FROM = "2025-02-19"
RELEASES_PER_QUERY = 200

Query = Callable[[str, Mapping[str, Any]], Any]

# A version of one of the namespace's documents: "versions.<release>.<ns>.…" ($ns ends with
# the dot); a foreign namespace's versions are left out the same way.
_OF = 'string::startsWith(_id, "versions." + string::split(_id, ".")[1] + "." + {param})'


def api_version_floor(variable: str, version: str) -> None:
    """Refuse an API version older than 2025-02-19 (``1`` included; ``X``, the experimental
    newest, is accepted): :class:`UsageError` with the reason."""
    if version == "X" or (
        version[:1].isdigit() and len(version) == 10 and version >= VERSIONS_FROM
    ):
        return
    raise UsageError(
        f"{variable}={version!r} is older than {VERSIONS_FROM}: queries of older API versions "
        "never return Content Release versions (versions.*), so a release or scheduled draft "
        "waiting to overwrite the corpus would go unseen by the plan, --prune and the "
        f"unrelated-document guard; set {variable} to {VERSIONS_FROM} or later (or unset it)"
    )


def read_versions(
    query: Query, namespace: str, foreign: Sequence[str], page_size: int
) -> tuple[dict[str, tuple[Version, ...]], dict[str, Release]]:
    """The namespace's versions by published id, and the releases they belong to."""
    params: dict[str, Any] = {"ns": namespace + "."}
    where = 'string::startsWith(_id, "versions.") && ' + _OF.format(param="$ns")
    for number, other in enumerate(foreign):
        params[f"foreign{number}"] = other + "."
        where += " && !" + _OF.format(param=f"$foreign{number}")
    listing = (
        f"*[{where} && _id > $after] | order(_id) [0...{page_size}] "
        '{_id, _rev, "unpublish": _system.delete}'
    )
    versions: list[Version] = []
    after = ""
    while True:
        page = query(listing, {**params, "after": after})
        if not isinstance(page, list):
            raise TargetError("a listing of release versions did not answer a list")
        versions += [v for d in page if isinstance(d, dict) and (v := version_from(d))]
        if len(page) < page_size:
            break
        after = str(page[-1]["_id"])
    ids = sorted({RELEASE_PREFIX + v.release for v in versions})
    releases: dict[str, Release] = {}
    for start in range(0, len(ids), RELEASES_PER_QUERY):
        found = query(
            "*[_id in $ids]{_id, state, publishAt, metadata}",
            {"ids": ids[start : start + RELEASES_PER_QUERY]},
        )
        for body in found if isinstance(found, list) else []:
            release = release_from(body) if isinstance(body, dict) else None
            if release is not None:
                releases[release.id] = release
    return group_versions(versions), releases

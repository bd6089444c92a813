"""Identities: warehouse doc_ids and Sanity document ``_id``s.

A doc_id is a pure function of a document's upstream identity (``nhtsa/complaint/11561420``,
``github/<owner>/<repo>/<path>``, ``forem/comment/3ee98``), never of time, order or run.

A Sanity ``_id`` is ``<namespace>.<kind>.<key>`` and obeys Sanity's ID rules: characters
``a-zA-Z0-9._-``, at most 128 characters, no ``..``, and no path segment starting with ``-``.
A key that is not already safe (other characters, a leading ``-``, too long, or shaped like
our own hashed form) is shortened and given a hash suffix of the original key, so two
different keys never share an ``_id``; the full key stays in the document (its
``provenance.docId``).

A curated ``_id`` is at most :data:`CURATED_ID_MAX` (109) characters, not 128: an editor's
draft is ``drafts.<id>`` and a Content Release (or scheduled draft) version is
``versions.<releaseId>.<id>``, and both must fit Sanity's 128. The Studio's release ids are
``r`` and 8 characters (sanity-io/sanity packages/sanity/src/core/releases/util/
createReleaseId.ts), so ``versions.rXXXXXXXX.`` takes 19. A document whose id used all
128 characters could not be drafted in the Studio at all (sanity-io/sanity#4515: a 126-
character id fails once ``drafts.`` is added); the limit of 128 is the client's
(sanity-io/client#149, ``validateDocumentId``).
"""

from __future__ import annotations

import hashlib
import re

from warehouse.errors import IdentityError

SANITY_ID_MAX = 128
RELEASE_ID_CHARS = 9  # "r" + 8 characters, the Studio's release ids
# Room for "versions.<releaseId>." in front of a curated _id ("drafts." needs less).
VERSION_PREFIX_ROOM = len("versions.") + RELEASE_ID_CHARS + 1
CURATED_ID_MAX = SANITY_ID_MAX - VERSION_PREFIX_ROOM
NAMESPACE_MAX = 64
HASH_SUFFIX_HEX = 16

_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_-]*"
NAMESPACE_RE = re.compile(rf"^{_SEGMENT}(?:\.{_SEGMENT})*\Z")
KIND_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\Z")
_SAFE_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*\Z")
_HASHED_SHAPE_RE = re.compile(rf"-[0-9a-f]{{{HASH_SUFFIX_HEX}}}\Z")
_UNSAFE_CHAR_RE = re.compile(r"[^A-Za-z0-9_-]+")
_SANITY_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
RESERVED_FIRST_SEGMENTS = frozenset({"drafts", "versions"})
_DOC_ID_PART_RE = re.compile(r"^[^\s/][^\s]*\Z")


def doc_id(source: str, kind: str, *key: str) -> str:
    """``<source>/<kind>/<key...>``: the warehouse identity of a document."""
    parts = [source, kind, *key]
    for part in parts:
        if not part or not _DOC_ID_PART_RE.match(part) or part.endswith("/") or "//" in part:
            raise IdentityError(f"invalid doc_id part {part!r} in {parts!r}")
    return "/".join(parts)


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` cannot prefix Sanity IDs, or None when it can."""
    if not namespace:
        return "is empty"
    if len(namespace) > NAMESPACE_MAX:
        return f"is longer than {NAMESPACE_MAX} characters"
    if not NAMESPACE_RE.match(namespace):
        return (
            "must be dot-separated segments of letters, digits, '_' and '-', "
            "each starting with a letter, digit or '_'"
        )
    first = namespace.split(".", 1)[0]
    if first in RESERVED_FIRST_SEGMENTS or first.startswith("_"):
        return f"must not start with the reserved segment {first!r}"
    return None


def is_valid_sanity_id(value: str) -> bool:
    """Sanity's ID rules: allowed characters, length, no ``..``, no segment starting ``-``."""
    if not _SANITY_ID_RE.match(value) or ".." in value:
        return False
    return all(segment and not segment.startswith("-") for segment in value.split("."))


def _hash_suffix(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:HASH_SUFFIX_HEX]


def safe_key(key: str, budget: int) -> str:
    """Map ``key`` to one ID segment of at most ``budget`` characters, injectively."""
    if budget < HASH_SUFFIX_HEX + 2:
        raise IdentityError(f"no room for a key: {budget} characters left")
    if _SAFE_KEY_RE.match(key) and len(key) <= budget and not _HASHED_SHAPE_RE.search(key):
        return key
    readable = _UNSAFE_CHAR_RE.sub("-", key).strip("-")
    readable = readable[: budget - HASH_SUFFIX_HEX - 1].rstrip("-")
    if not readable or readable.startswith("-"):
        readable = "k"
    return f"{readable}-{_hash_suffix(key)}"


def sanity_id(namespace: str, kind: str, key: str) -> str:
    """The deterministic Sanity ``_id`` ``<namespace>.<kind>.<key>`` of a curated document."""
    problem = namespace_problem(namespace)
    if problem:
        raise IdentityError(f"namespace {namespace!r} {problem}")
    if not KIND_RE.match(kind):
        raise IdentityError(f"kind {kind!r} must be letters, digits, '_' or '-'")
    budget = CURATED_ID_MAX - len(namespace) - len(kind) - 2
    result = f"{namespace}.{kind}.{safe_key(key, budget)}"
    assert is_valid_sanity_id(result), result
    return result


def in_namespace(sanity_document_id: str, namespace: str) -> bool:
    """True when the ``_id`` lies strictly under ``<namespace>.`` (not a draft or version)."""
    return sanity_document_id.startswith(namespace + ".") and is_valid_sanity_id(sanity_document_id)

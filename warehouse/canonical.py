"""Canonical JSON and content hashing.

Canonical form v1 ("hash what you store, store what you hash"):

- keys sorted by code point, no insignificant whitespace (``,`` and ``:`` separators);
- UTF-8 output; non-ASCII characters are written as themselves, never ``\\uXXXX``;
  control characters, ``"`` and ``\\`` are escaped as JSON requires, ``/`` is not escaped;
- integers must fit in 64 bits (signed or unsigned); floats must be finite and are written
  in their shortest round-trip form (``1.5``, ``1e-7``, ``1e+300``, ``-0.0``);
- object keys must be strings; ``None``/``True``/``False`` are ``null``/``true``/``false``;
- lone surrogates in strings are refused.

Anything outside this policy raises :class:`CanonicalFormError` rather than being coerced.
Changing any rule is a new canonical-form version and a warehouse migration.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from warehouse.errors import CanonicalFormError

CANONICAL_FORM_VERSION = 1
HASH_ALGORITHM = "sha256"


def _check_floats(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise CanonicalFormError(f"non-finite float {item!r} has no canonical form")
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def canonical_json(value: Any) -> bytes:
    """Serialise ``value`` to its canonical JSON bytes."""
    try:
        encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        raise CanonicalFormError(str(exc)) from exc
    # orjson writes NaN and infinities as null; canonical form refuses them instead. Only
    # output containing a null can hide one, so only then is the value walked.
    if b"null" in encoded:
        _check_floats(value)
    return encoded


def content_hash(data: bytes) -> str:
    """The content hash of stored bytes: lowercase hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id for ``data``: ``sha1(b"blob <len>\\0" + data)``."""
    header = b"blob " + str(len(data)).encode("ascii") + b"\0"
    return hashlib.sha1(header + data).hexdigest()

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

Upstream JSON is parsed with :func:`loads`, which holds to the same integer rule: orjson
would silently turn ``1180591620717411303424`` into the float ``1.1805916207174113e+21``;
:func:`loads` refuses it instead, naming where in the document it sits.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

from warehouse.errors import CanonicalFormError

CANONICAL_FORM_VERSION = 1
HASH_ALGORITHM = "sha256"

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
# Only a run of 19+ digits can hold an integer outside [INT_MIN, INT_MAX]: shorter bodies
# never pay for the exact (slower) parse.
_LONG_DIGITS = re.compile(rb"\d{19,}")


def _path_join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _wide_ints(value: Any, path: str = "") -> Iterator[tuple[str, int]]:
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                yield where or "(the whole document)", item
        elif isinstance(item, dict):
            stack.extend((_path_join(where, str(k)), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((_path_join(where, i), v) for i, v in reversed(list(enumerate(item))))


def loads(data: bytes, origin: str = "JSON") -> Any:
    """Parse upstream JSON, refusing integers canonical form v1 cannot hold.

    Raises ``orjson.JSONDecodeError`` for malformed JSON, and :class:`CanonicalFormError`
    naming ``origin`` and the path of the first integer outside 64 bits (orjson would have
    rounded it to a float)."""
    value = orjson.loads(data)
    if not _LONG_DIGITS.search(data):
        return value
    exact = json.loads(data)  # integers kept exact, to see which ones orjson rounded
    for path, number in _wide_ints(exact):
        raise CanonicalFormError(
            f"{origin}: the integer {number} at {path} does not fit in 64 bits; canonical "
            "form v1 refuses it rather than round it to a float"
        )
    return value


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
    return right_sized(encoded)


def right_sized(encoded: bytes) -> bytes:
    """A copy of orjson's output that holds only its own length in memory.

    What ``orjson.dumps`` returns keeps its write buffer: measured with orjson 3.13, 200,000
    documents of about 1 KiB held 1.56 GB resident (about 8 KiB each) and took two fresh
    page faults apiece, where their copies held 185 MB and took a quarter of one. Copying
    costs a memcpy of the document; it lets the buffer be freed and reused at once, which
    matters wherever bodies are kept (a batch of records, a list for an Arrow insert)."""
    return bytes(memoryview(encoded))


def content_hash(data: bytes) -> str:
    """The content hash of stored bytes: lowercase hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id for ``data``: ``sha1(b"blob <len>\\0" + data)``."""
    header = b"blob " + str(len(data)).encode("ascii") + b"\0"
    return hashlib.sha1(header + data).hexdigest()

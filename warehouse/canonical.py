"""Canonical JSON and content hashing.

A snapshot's bytes are in one of three forms (``snapshots.canonical_form``):

- ``rfc8785`` (:data:`FORM_JCS`), canonical form v2: a JSON record as RFC 8785 (the JSON
  Canonicalization Scheme) writes it, so anyone can re-derive its content hash from the
  upstream JSON with a standard JCS library. What every JSON record is stored as
  (:func:`record_json`), except one holding an integer outside +-(2**53 - 1).
- ``receipts-json-v1`` (:data:`FORM_V1`), canonical form v1, below: JSON records stored
  before v2, and records holding an integer RFC 8785 cannot (I-JSON allows none beyond
  +-(2**53 - 1); v1 holds every 64-bit integer exactly).
- ``raw`` (:data:`FORM_RAW`): bytes stored as served (a GitHub file).

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
import rfc8785

from warehouse.errors import CanonicalFormError

CANONICAL_FORM_VERSION = 2
HASH_ALGORITHM = "sha256"

FORM_JCS = "rfc8785"
FORM_V1 = "receipts-json-v1"
FORM_RAW = "raw"
FORMS = (FORM_JCS, FORM_V1, FORM_RAW)
# What a revision that only re-encodes its document's value records as its reason (in
# ``revisions.tombstone_reason`` and the log entry's ``reason``).
REENCODED = "re-encoded as rfc8785"

# The integers RFC 8785 can hold (I-JSON: those an IEEE double holds exactly).
JCS_INT_MAX = 2**53 - 1
# The first code point whose UTF-16 order differs from its code-point order: RFC 8785 sorts
# keys by UTF-16 code units, where U+E000..U+FFFF sort after the surrogates of U+10000 and
# above; below it both orders agree.
_UTF16_ORDER_DIFFERS = "\ue000"

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


def _jcs_route(value: Any) -> int:
    """How ``value`` (parsed JSON) is written in RFC 8785: 0 when orjson with sorted keys
    writes its RFC 8785 bytes (no float, every integer within +-(2**53 - 1), no key with a
    code point at or above U+E000, only JSON types), 1 when the ``rfc8785`` package must
    (a float or such a key), 2 when it has no RFC 8785 form (an integer beyond the
    doubles', or a type JSON has not: v1 decides what to do with it).

    With none of those, the two agree: both sort keys by code point, escape ``"``, ``\\``
    and the control characters alike (``\\n``, ``\\u001f``, never ``/`` or U+2028),
    write other characters as themselves and integers in decimal; the RFC's test vectors and
    a property test against the package hold them to it (tests/warehouse/test_jcs.py)."""
    route = 0
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is int:
            if not -JCS_INT_MAX <= item <= JCS_INT_MAX:
                return 2
        elif kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    return 2
                if not key.isascii() and max(key) >= _UTF16_ORDER_DIFFERS:
                    route = 1
                push(child)
        elif kind is list or kind is tuple:
            extend(item)
        elif kind is float:
            route = 1
        else:
            return 2
    return route


def jcs(value: Any) -> bytes:
    """``value``'s RFC 8785 bytes; :class:`CanonicalFormError` when it has none (an integer
    outside +-(2**53 - 1), a non-finite float, a lone surrogate, a type JSON has not)."""
    route = _jcs_route(value)
    if route == 0:
        return canonical_json(value)
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise CanonicalFormError(f"no RFC 8785 form: {exc}") from exc


def record_json(value: Any) -> tuple[bytes, str]:
    """A JSON record's bytes to store, and their form: RFC 8785 (:data:`FORM_JCS`), or v1
    (:data:`FORM_V1`) for a record holding an integer outside +-(2**53 - 1), which RFC 8785
    cannot hold and v1 holds exactly (:func:`loads` has refused any beyond 64 bits)."""
    route = _jcs_route(value)
    if route == 2:
        return canonical_json(value), FORM_V1
    if route == 0:
        return canonical_json(value), FORM_JCS
    try:
        return rfc8785.dumps(value), FORM_JCS
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise CanonicalFormError(f"no RFC 8785 form: {exc}") from exc


def stored_form(body: bytes) -> str:
    """The form of JSON bytes stored before forms were recorded: :data:`FORM_JCS` when they
    are their value's RFC 8785 bytes (v1 and RFC 8785 agree on most records: no float, no
    key at or above U+E000), else :data:`FORM_V1`."""
    try:
        value = loads(body)
        return FORM_JCS if _jcs_route(value) != 2 and jcs(value) == body else FORM_V1
    except (orjson.JSONDecodeError, CanonicalFormError):
        return FORM_V1


def same_value(v1_body: bytes, jcs_body: bytes) -> bool:
    """Whether RFC 8785 bytes ``jcs_body`` encode the value v1 bytes ``v1_body`` hold: the
    RFC 8785 form of the value parsed from ``v1_body`` is ``jcs_body``."""
    try:
        return jcs(loads(v1_body)) == jcs_body
    except (orjson.JSONDecodeError, CanonicalFormError):
        return False


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

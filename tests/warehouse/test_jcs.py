"""Canonical form v2 (RFC 8785): the RFC's and the reference implementation's test vectors,
the orjson fast path against the ``rfc8785`` package, and what a record RFC 8785 cannot
hold is stored as."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse.canonical import (
    FORM_JCS,
    FORM_V1,
    JCS_INT_MAX,
    canonical_json,
    jcs,
    loads,
    record_json,
    same_value,
    stored_form,
)
from warehouse.errors import CanonicalFormError

VECTORS = Path(__file__).parent.parent / "fixtures" / "rfc8785"
NAMES = sorted(p.stem for p in (VECTORS / "input").glob("*.json"))


def _numbers() -> list[tuple[str, str]]:
    lines = (VECTORS / "numbers.txt").read_text("utf-8").splitlines()
    return [tuple(line.split()) for line in lines if line and not line.startswith("#")]  # type: ignore[misc]


def test_the_vectors_are_there() -> None:
    assert NAMES == ["french", "structures", "unicode", "values", "weird"]
    assert len(_numbers()) == 24


@pytest.mark.parametrize("name", NAMES)
def test_reference_vectors(name: str) -> None:
    """cyberphone/json-canonicalization testdata: input -> output, byte for byte, through
    the form every JSON record is stored in."""
    value = json.loads((VECTORS / "input" / f"{name}.json").read_text("utf-8"))
    expected = (VECTORS / "output" / f"{name}.json").read_bytes()
    assert record_json(value) == (expected, FORM_JCS)
    assert jcs(value) == expected
    assert stored_form(expected) == FORM_JCS


@pytest.mark.parametrize(("ieee", "expected"), _numbers())
def test_rfc_appendix_b_numbers(ieee: str, expected: str) -> None:
    number = struct.unpack(">d", bytes.fromhex(ieee))[0]
    assert jcs(number) == expected.encode()
    assert jcs({"n": [number]}) == b'{"n":[' + expected.encode() + b"]}"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_have_no_form(number: float) -> None:
    with pytest.raises(CanonicalFormError):
        record_json({"n": number})


def test_keys_sort_by_utf16_code_units() -> None:
    # U+FB33 sorts after U+1F602 in UTF-16 (surrogates D83D...), before it by code point:
    # the fast path must not take such keys.
    value = {"\ufb33": 1, "\U0001f602": 2}
    assert canonical_json(value) == '{"\ufb33":1,"\U0001f602":2}'.encode()
    assert record_json(value) == ('{"\U0001f602":2,"\ufb33":1}'.encode(), FORM_JCS)


# -- the fast path is the package ------------------------------------------------------------
_KEYS = st.text(
    st.characters(codec="utf-8", categories=None)
    | st.sampled_from(["\ufb33", "\ue000", "\uffff", "\U0001f602", "\U00010000", "\x7f", "\u2028"]),
    max_size=6,
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-JCS_INT_MAX, JCS_INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8"), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_record_json_is_the_rfc8785_package(value: Any) -> None:
    assert record_json(value) == (rfc8785.dumps(value), FORM_JCS)


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_v1_bytes_re_encode_to_the_same_value(value: Any) -> None:
    v1 = canonical_json(value)
    v2, _ = record_json(value)
    assert same_value(v1, v2)
    assert stored_form(v1) == (FORM_JCS if v1 == v2 else FORM_V1)


# -- integers RFC 8785 cannot hold -----------------------------------------------------------
@pytest.mark.parametrize("number", [JCS_INT_MAX + 1, -JCS_INT_MAX - 1, 2**63 - 1, 2**64 - 1])
def test_a_wide_integer_keeps_the_record_in_v1(number: int) -> None:
    value = {"id": number, "x": 1.0}
    body, form = record_json(value)
    assert (body, form) == (canonical_json(value), FORM_V1)
    assert loads(body) == value  # v1 holds it exactly
    assert stored_form(body) == FORM_V1
    with pytest.raises(CanonicalFormError, match="RFC 8785"):
        jcs(value)


def test_the_widest_doubles_integers_are_rfc8785() -> None:
    assert record_json([JCS_INT_MAX, -JCS_INT_MAX]) == (
        b"[9007199254740991,-9007199254740991]",
        FORM_JCS,
    )


def test_beyond_64_bits_is_refused_at_parse() -> None:
    with pytest.raises(CanonicalFormError, match="does not fit in 64 bits"):
        loads(b'{"n": 18446744073709551616}')


def test_different_values_are_not_the_same() -> None:
    assert not same_value(b'{"a":1.0}', b'{"a":2}')
    assert same_value(b'{"a":1.0}', b'{"a":1}')
    assert not same_value(b"not json", b'{"a":1}')

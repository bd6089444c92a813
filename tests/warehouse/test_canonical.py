from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warehouse.canonical import canonical_json, content_hash, git_blob_sha1, right_sized
from warehouse.errors import CanonicalFormError

# Fixed vectors: changing any of these is a new canonical-form version and a migration.
VECTORS: list[tuple[Any, bytes]] = [
    ({}, b"{}"),
    ({"b": 1, "a": [1, 2.5, None, True, False]}, b'{"a":[1,2.5,null,true,false],"b":1}'),
    ({"é": 'ü/\n\x01"\\'}, '{"é":"ü/\\n\\u0001\\"\\\\"}'.encode()),
    ({"x": 1e-7}, b'{"x":1e-7}'),
    ({"x": 1e300}, b'{"x":1e+300}'),
    ({"x": -0.0}, b'{"x":-0.0}'),
    ({"x": 2**64 - 1}, b'{"x":18446744073709551615}'),
    ({"x": "a\u2028b"}, '{"x":"a\u2028b"}'.encode()),
    ({"z": {"b": [], "a": {}}}, b'{"z":{"a":{},"b":[]}}'),
]


@pytest.mark.parametrize(("value", "expected"), VECTORS)
def test_canonical_vectors(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_content_hash_vectors() -> None:
    # Pinned with coreutils: printf '%s' '<bytes>' | sha256sum
    record = canonical_json({"b": 1, "a": [1, 2.5, None, True, False]})
    assert (
        content_hash(record) == "afbf2b5984a5e2c35f12dab6dc5e6b5cb8585a62c22028c6eaa1082c8f96b98b"
    )
    assert content_hash(b"{}") == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    assert content_hash(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_git_blob_sha1_vectors() -> None:
    assert git_blob_sha1(b"what is up, doc?") == "bd9dbf5aae1a3862dd1526723246b20206e5fc37"
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


@pytest.mark.parametrize(
    "value",
    [{"x": float("nan")}, {"x": float("inf")}, [float("-inf")], {"x": 2**64}, {1: 2}, "\ud800"],
)
def test_values_without_canonical_form_are_refused(value: Any) -> None:
    with pytest.raises(CanonicalFormError):
        canonical_json(value)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=("Cs",))),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(alphabet=st.characters(exclude_categories=("Cs",))), children, max_size=4
        )
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=6))
def test_canonical_form_is_stable_under_key_order(value: dict[str, Any]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert canonical_json(reordered) == canonical_json(value)


@given(json_values)
def test_canonical_form_round_trips_and_is_a_fixed_point(value: Any) -> None:
    encoded = canonical_json(value)
    decoded = json.loads(encoded)
    assert canonical_json(decoded) == encoded


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(), max_size=6))
def test_matches_the_stdlib_reference_on_typical_records(value: dict[str, Any]) -> None:
    ints_fit = all(not isinstance(v, int) or -(2**63) <= v < 2**64 for v in value.values())
    if not ints_fit:
        return
    reference = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == reference.encode("utf-8")


# -- upstream JSON: integers over 64 bits are refused, never rounded ---------------------------
WIDE = 1180591620717411303424


def test_loads_refuses_an_integer_over_64_bits_naming_its_path() -> None:
    from warehouse.canonical import loads

    body = json.dumps({"results": [{"odiNumber": 1}, {"odiNumber": WIDE}]}).encode()
    with pytest.raises(CanonicalFormError) as caught:
        loads(body, origin="JSON from https://api.test/complaints")
    message = str(caught.value)
    assert "https://api.test/complaints" in message
    assert f"the integer {WIDE} at results[1].odiNumber does not fit in 64 bits" in message


@pytest.mark.parametrize("number", [2**64 - 1, -(2**63), 0, 10**18])
def test_loads_keeps_every_64_bit_integer_exact(number: int) -> None:
    from warehouse.canonical import loads

    assert loads(json.dumps({"n": number, "s": str(WIDE)}).encode()) == {
        "n": number,
        "s": str(WIDE),
    }


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, WIDE])
def test_parse_json_of_an_upstream_body_refuses_wide_integers(number: int) -> None:
    import httpx

    from sources.http import parse_json

    response = httpx.Response(
        200,
        content=json.dumps({"results": [{"id": number}]}).encode(),
        headers={"content-type": "application/json"},
        request=httpx.Request("GET", "https://api.test/records"),
    )
    with pytest.raises(CanonicalFormError, match=r"at results\[0\]\.id does not fit in 64 bits"):
        parse_json(response)


# Run in a fresh interpreter so the heap holds nothing freed before: the resident growth
# is what the bodies themselves keep.
_HELD_BODIES_SCRIPT = """
import sys
from warehouse.canonical import canonical_json
import orjson

def rss_kb():
    with open("/proc/self/status") as status:
        return int(next(l for l in status if l.startswith("VmRSS:")).split()[1])

encode = canonical_json if sys.argv[1] == "canonical" else orjson.dumps
values = [{"id": i, "text": "x" * 900} for i in range(20_000)]
before = rss_kb()
bodies = [encode(value) for value in values]
print((rss_kb() - before) / sum(len(body) for body in bodies) * 1024)
"""


def _resident_per_body_byte(encoder: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _HELD_BODIES_SCRIPT, encoder],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_bodies_held_in_memory_cost_about_their_own_size() -> None:
    # A batch of records holds its bodies until it commits: each must cost about its length.
    # orjson's own output keeps several times that (its write buffer), which the test
    # first confirms, so it cannot pass for want of a difference to see.
    assert _resident_per_body_byte("orjson") > 3
    assert _resident_per_body_byte("canonical") < 2
    assert right_sized(b'{"a":1}') == b'{"a":1}'

"""Where a quote sits in a snapshot: the first JSON string (keys sorted) with a span that
reads as the quote under the bundle's normalisation, and that span's words."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.proofs.locate import find_span, json_strings, locate
from pipelines.proofs.verify_receipt import normalize

# letters in both cases, spaces of several kinds, and characters normalisation changes
CHARS = st.sampled_from([*"abAB  \t\n.-", "\u2019", "'", "\u00e9", "e\u0301", "\u0130", "\u2013"])
WORDS = st.lists(CHARS, min_size=0, max_size=12).map("".join)
VALUES = st.recursive(
    WORDS | st.integers(0, 9),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORDS, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(VALUES, WORDS)
def test_a_json_quote_is_found_in_the_first_string_that_reads_as_it(value: Any, quote: str) -> None:
    location = locate(quote, orjson.dumps(value), "application/json")
    expected = next(
        ((p, s, span) for p, s in json_strings(value) if (span := find_span(s, quote)) is not None),
        None,
    )
    if expected is None:
        assert location is None
        return
    pointer, string, (start, end) = expected
    assert location is not None
    assert (location.pointer, location.start, location.end) == (pointer, start, end)
    assert location.exact == string[start:end]
    assert normalize(location.exact) == normalize(quote)
    assert location.prefix == string[max(0, start - 80) : start]
    assert location.suffix == string[end : end + 80]


@settings(max_examples=300, deadline=None)
@given(WORDS, WORDS, WORDS)
def test_a_span_found_reads_as_the_quote(before: str, quote: str, after: str) -> None:
    text = before + quote + after
    span = find_span(text, quote)
    if normalize(quote):
        assert span is not None  # it is in there
        assert normalize(text[span[0] : span[1]]) == normalize(quote)
    else:
        assert span is None


def test_an_ascii_quote_in_other_case_is_found_as_written() -> None:
    text = "The Dealer  replaced it. the dealer replaced the radar."
    assert find_span(text, "the DEALER replaced the") == (25, 48)
    assert find_span(text, "dealer replaced") == (29, 44)  # as written, before any other
    assert find_span("The Dealer  replaced it.", "dealer replaced") == (4, 20)  # one space

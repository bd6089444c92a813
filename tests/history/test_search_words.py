"""The search index's words never hide a hit: whenever a search finds a phrase in a document,
every word the phrase needs is among the document's words (pipelines/checks/search_words.py),
whatever the document's markup, case, punctuation or characters."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from pipelines.checks.quote import reader_text
from pipelines.checks.search_words import document_words, phrase_words
from pipelines.checks.text_search import hit_in
from warehouse.explore import CurrentBody

PIECES = st.sampled_from(
    [
        "stalled", "Stalled", "STALLED", "warning light", "hood", "latch", "rear-ended",
        "snake_case_name", "42", "x2", "café", "cafe\u0301", "İstanbul", "\u212aelvin", "straße",
        "ﬁle", "Ａ", "’", "—", "…", "&amp;", "&mdash;", "&#39;", "&lt;p&gt;", "<p>", "</p>",
        "<em>", "</em>", "<br>", "<script>x</script>", "<!-- c -->", "*", "**", "_", "`", "#",
        "1.", "- ", "| a | b |\n|---|---|\n| c | d |", "[link](http://x)", "\\", "\"", "'",
        "\u200b", "\u00ad", "\ufeff", "\u202e", "\x1f", "\x00", "\t", "\n", "\n\n", " ", "  ",
        ".", ",", ";", ":", "!", "?", "(", ")", "/", "-", "é", "ß", "ǅ", "½", "²", "٣",
    ]
)  # fmt: skip
TEXT = st.lists(PIECES | st.text(max_size=4), max_size=24).map("".join)
MEDIA = st.sampled_from(["text/plain", "text/html", "text/markdown", "application/json"])


def _body(strings: list[str], media_type: str) -> bytes:
    if media_type == "application/json":
        return json.dumps({"a": strings[0], "b": strings[1:], "stalled": 1}).encode()
    return " ".join(strings).encode("utf-8", "surrogatepass")


def _found(phrase: str, body: bytes, media_type: str) -> bool:
    return hit_in(phrase, CurrentBody("d", 1, "h", media_type, body)) is not None


@settings(max_examples=500, deadline=None)
@given(strings=st.lists(TEXT, min_size=1, max_size=3), media_type=MEDIA, data=st.data())
@example(strings=["The engine STALLED."], media_type="text/plain", data=None)
def test_a_phrase_found_has_every_needed_word(
    strings: list[str], media_type: str, data: st.DataObject | None
) -> None:
    body = _body(strings, media_type)
    text = " ".join(strings)
    if data is None:
        phrase = "stalled"
    else:  # a piece of the document (most hits), or any text
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        phrase = data.draw(st.just(text[start:end]) | TEXT)
    assume(reader_text(phrase))
    if _found(phrase, body, media_type):
        assert phrase_words(phrase) <= document_words(body, media_type)


@pytest.mark.parametrize(
    ("phrase", "body", "media_type"),
    [
        ("stalled", b"The engine STALLED.", "text/plain"),
        ("dealer said", b'{"s":"the dealer said \\"no\\" &amp; left"}', "application/json"),
        ("never buy", b"<p>I'd <em>never</em> buy</p>", "text/html"),
        ("no defect", b"A **no defect** finding", "text/markdown"),
        ("café", "un café noir".encode(), "text/plain"),
    ],
)
def test_the_words_of_known_hits(phrase: str, body: bytes, media_type: str) -> None:
    assert _found(phrase, body, media_type)
    assert phrase_words(phrase) and phrase_words(phrase) <= document_words(body, media_type)


def test_keys_and_markup_are_not_words() -> None:
    assert document_words(b'{"odiNumber":"stalled"}', "application/json") == {"stalled"}
    assert document_words(b"<p>a <em>b</em></p>", "text/html") == {"a", "b"}
    assert phrase_words("...") == set()  # nothing to look up: a search reads every document

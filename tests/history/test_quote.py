"""Quote matching as a reader would judge it: tolerant of what a reader cannot see (whitespace,
invisible characters, canonical equivalence, markup), strict about every visible character."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipelines.checks.quote import (
    RevisionText,
    check_quote,
    find_quote,
    has_markdown_syntax,
    reader_text,
    rendered_markdown,
)
from warehouse.canonical import canonical_json
from warehouse.errors import QuoteError

MATCHES = [
    # (document text, media type, quote)
    ("the quick  brown\n\tfox", "text/plain", "quick brown fox"),
    ("he said \u201cno defect\u201d", "text/plain", "he said \u201cno defect\u201d"),
    ("no\u00a0break", "text/plain", "no break"),
    ("narrow\u202fno-break", "text/plain", "narrow no-break"),
    ("zero\u200bwidth", "text/plain", "zerowidth"),
    ("soft\u00adhyphen", "text/plain", "softhyphen"),
    ("left\u200eto\u200fright", "text/plain", "lefttoright"),
    # canonical equivalence (UAX #15): one code point or a letter plus a combining accent
    ("caf\u00e9 cr\u00e8me", "text/plain", "cafe\u0301 cre\u0300me"),
    ("cafe\u0301", "text/markdown", "caf\u00e9"),
    ("<p>I&#39;d <em>never</em> buy</p>", "text/html", "I'd never buy"),
    ("<p>one</p><p>two</p>", "text/html", "one two"),
    ("line<br>break", "text/html", "line break"),
    ("a &amp; b", "text/html", "a & b"),
    ("a &lt;b&gt; c", "text/html", "a <b> c"),
    ("<style>p{}</style><p>Visible text</p>", "text/html", "Visible text"),
    ("x <!-- note --> y", "text/html", "x y"),
    (
        "see the [returns policy](https://x.test/p) now",
        "text/markdown",
        "see the returns policy now",
    ),
    ("this is **very** _important_", "text/markdown", "this is very important"),
    ("## Heading\n\nbody text", "text/markdown", "Heading body text"),
    ("use `snake_case` names", "text/markdown", "use snake_case names"),
    ("a *b* c", "text/markdown", "a b c"),
    ("a *b* c", "text/markdown", "a *b* c"),
    ("Multiply a*b by c.", "text/markdown", "a*b"),
    ("the `a*b` product", "text/markdown", "the a*b product"),
    ("a \\*b\\* c", "text/markdown", "a *b* c"),
    ("~~old~~ new", "text/markdown", "old new"),
    ("E=mc\u00b2", "text/plain", "E=mc\u00b2"),
    # a GFM table row is read cell after cell, a space between two cells
    (
        "| Check | Result |\n|---|---|\n| 24 h soak | without leaks passed |\n",
        "text/markdown",
        "24 h soak without leaks passed",
    ),
    ("| a | b |\n| - | - |\n| x\\|y | z |\n", "text/markdown", "x|y z"),
    ("<div>\n\n*raw* HTML\n\n</div>", "text/markdown", "raw HTML"),
    # deeper than markdown-it's default nesting limit (20), whose text it drops
    (">" * 30 + " deep text", "text/markdown", "deep text"),
]

MISSES = [
    ("the quick brown fox", "text/plain", "the quick red fox"),
    ("The dealer", "text/plain", "the dealer"),
    ("stalled twice", "text/plain", "stalled thrice"),
    ("no defect", "text/plain", "nodefect"),
    ("<p>one</p><p>two</p>", "text/html", "onetwo"),
    ("a < b and c > d", "text/plain", "a d"),
    # letters must match: an underscore inside a word is not Markdown emphasis
    ("use `snake_case_name` here", "text/markdown", "snakecasename"),
    ("use snake_case_name here", "text/markdown", "use snakecasename here"),
    # attribute values are not visible text, even with a ">" inside them
    ('<a title="x > hidden words">shown</a>', "text/html", "hidden words"),
    ('<img alt="a > b secret">visible', "text/html", "secret"),
    # whole words only
    ("the vehicle stalled", "text/plain", "stall"),
    ("the vehicle stalled", "text/plain", "he vehicle"),
    ("snake_case_name", "text/plain", "case"),
    # compatibility equivalents are other characters (no NFKC): superscript, ligature,
    # ellipsis, full width
    ("E=mc\u00b2", "text/plain", "E=mc2"),
    ("E=mc\u00b2", "text/markdown", "E=mc2"),
    ("\ufb01nal offer", "text/plain", "final offer"),
    ("final offer", "text/plain", "\ufb01nal offer"),
    ("and so on\u2026", "text/plain", "and so on..."),
    ("\uff21BS fault", "text/plain", "ABS fault"),
    # typographic quotes and dashes are visible characters
    ("he said \u201cno defect\u201d", "text/plain", 'he said "no defect"'),
    ('he said "no defect"', "text/plain", "he said \u201cno defect\u201d"),
    ("it\u2019s fine", "text/plain", "it's fine"),
    ("2019\u20132021 models", "text/plain", "2019-2021 models"),
    ("wait \u2014 what", "text/plain", "wait--what"),
    # a "*" or a backtick that is not Markdown syntax is a character of the text
    ("Multiply a*b by c.", "text/markdown", "Multiply ab by c."),
    ("the `a*b` product", "text/markdown", "the ab product"),
    ("a \\*b\\* c", "text/markdown", "a b c"),
    # the pipes of a table are not text a reader sees
    ("| 24 h soak | without leaks passed |\n|---|---|\n", "text/markdown", "soak | without"),
    # an image shows a picture, not its alt text
    ("![a wiring diagram](d.png)", "text/markdown", "a wiring diagram"),
]


@pytest.mark.parametrize(("text", "media_type", "quote"), MATCHES)
def test_quotes_a_reader_would_accept(text: str, media_type: str, quote: str) -> None:
    assert find_quote(quote, text.encode(), media_type) is not None


@pytest.mark.parametrize(("text", "media_type", "quote"), MISSES)
def test_quotes_with_different_words_do_not_match(text: str, media_type: str, quote: str) -> None:
    assert find_quote(quote, text.encode(), media_type) is None


def test_json_records_are_searched_field_by_field() -> None:
    body = canonical_json(
        {"summary": "Engine stalled.", "products": [{"productModel": "CR-V"}], "n": 3}
    )
    match = find_quote("CR-V", body, "application/json")
    assert match is not None and match.where == "field products[0].productModel"
    # a quote never spans two fields
    assert find_quote("stalled. CR-V", body, "application/json") is None


def test_json_escapes_are_read_as_their_characters() -> None:
    body = canonical_json({"body_html": '<p>She said "stop" \u2014 twice</p>'})
    match = find_quote('She said "stop" \u2014 twice', body, "application/json")
    assert match is not None and match.excerpt == 'She said "stop" \u2014 twice'
    assert find_quote("She said \u201cstop\u201d - twice", body, "application/json") is None


def test_content_that_is_not_text_cannot_be_checked() -> None:
    with pytest.raises(QuoteError, match="application/pdf content is not text"):
        find_quote("x", b"%PDF-1.7", "application/pdf")
    with pytest.raises(QuoteError, match="empty"):
        find_quote(" <br> ", b"text", "text/plain")


# Words of letters, digits and underscores, separated by spaces, punctuation and typography.
word = st.text(alphabet="abcdefghijAB019_\u00e9", min_size=1, max_size=8)
gap = st.text(alphabet=" ,.;'\"\u2019\u201c\u201d\u2013\u2014\n", min_size=1, max_size=3)
MEDIA = st.sampled_from(["text/plain", "text/html", "text/markdown"])
ORDERED_ITEM = re.compile(r"(?m)^\s*\d{1,9}[.)](\s|$)")


@st.composite
def texts(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    words = draw(st.lists(word, min_size=1, max_size=12))
    gaps = draw(st.lists(gap, min_size=len(words) - 1, max_size=len(words) - 1))
    return words, gaps


def joined(words: list[str], gaps: list[str]) -> str:
    return "".join(w + g for w, g in zip(words, [*gaps, ""], strict=True))


@given(texts(), MEDIA, st.data())
def test_a_contiguous_run_of_the_words_of_a_text_is_found_in_it(
    parts: tuple[list[str], list[str]], media_type: str, data: st.DataObject
) -> None:
    words, gaps = parts
    start = data.draw(st.integers(0, len(words) - 1))
    end = data.draw(st.integers(start + 1, len(words)))
    quote = joined(words[start:end], gaps[start : end - 1])
    # a word that begins or ends with "_" reads as emphasis in Markdown
    edges = any(w.startswith("_") or w.endswith("_") for w in words[start:end])
    text = joined(words, gaps)
    # so does "019. " at the start of a line: an ordered list item, whose number is not text
    if media_type == "text/markdown" and (edges or ORDERED_ITEM.search(text)):
        return
    assert find_quote(quote, text.encode(), media_type) is not None


@given(texts(), MEDIA, st.data())
def test_a_quote_with_one_letter_changed_never_matches(
    parts: tuple[list[str], list[str]], media_type: str, data: st.DataObject
) -> None:
    words, gaps = parts
    start = data.draw(st.integers(0, len(words) - 1))
    end = data.draw(st.integers(start + 1, len(words)))
    quoted = words[start:end]
    which = data.draw(st.integers(0, len(quoted) - 1))
    position = data.draw(st.integers(0, len(quoted[which]) - 1))
    letter = quoted[which][position]
    # "z" and "Q" never occur in the text's alphabet, so the changed quote occurs nowhere
    other = "z" if letter != "z" else "Q"
    changed = [*quoted]
    changed[which] = changed[which][:position] + other + changed[which][position + 1 :]
    quote = joined(changed, gaps[start : end - 1])
    text = joined(words, gaps)
    assert find_quote(quote, text.encode(), media_type) is None


@given(texts())
def test_a_piece_that_cuts_a_word_is_not_a_quote(parts: tuple[list[str], list[str]]) -> None:
    words, gaps = parts
    longest = max(words, key=len)
    if len(longest) < 2 or longest[1:] in words:
        return
    text = joined(words, gaps)
    # the tail of a word occurs in the text, but never as a word of its own
    assert find_quote(longest[1:], text.encode(), "text/plain") is None


@given(st.text(alphabet="abc \u201c\u201d\u2018\u2019\"'", min_size=1))
def test_straight_and_curly_quotes_stay_apart(text: str) -> None:
    straight = text.translate(str.maketrans("\u201c\u201d\u2018\u2019", "\"\"''"))
    assert (reader_text(text) == reader_text(straight)) is (text == straight)


# Everything but the characters Markdown syntax needs (has_markdown_syntax).
PROSE = st.text(alphabet="ab1 \n\t.,;:'\"?()/\u00e9\u00a0\u2014\u201c", max_size=40)


@given(PROSE)
def test_text_without_markdown_syntax_reads_the_same_parsed(text: str) -> None:
    assume(not has_markdown_syntax(text))  # "1." or "1)": an ordered list item
    rendered = reader_text(rendered_markdown(text), markup=False)
    assert rendered == reader_text(text, markdown=True) == reader_text(text)


# -- verdicts ------------------------------------------------------------------------------
REVISIONS = [
    RevisionText(1, "a" * 64, "text/plain", b"the vehicle stalled on the highway"),
    RevisionText(2, "b" * 64, "text/plain", b"the vehicle stalled on the interstate"),
    RevisionText(3, None, tombstone_reason="gone upstream"),
    RevisionText(4, "c" * 64, "application/pdf", b"%PDF"),
]


@pytest.mark.parametrize(
    ("quote", "cited", "cited_by", "ok", "message"),
    [
        (
            "on the interstate",
            2,
            "revision",
            True,
            "the quote occurs in doc/x/1 revision 2 (hash bbbbbbbbbbbb…)",
        ),
        (
            "on the highway",
            2,
            "revision",
            False,
            "quote matches revision 1 (hash aaaaaaaaaaaa…), but the cited revision 2 does not "
            "contain it",
        ),
        (
            "the vehicle stalled",
            3,
            "current",
            False,
            "quote matches revisions 1 (hash aaaaaaaaaaaa…) and 2 (hash bbbbbbbbbbbb…), but the "
            "current revision 3 is a tombstone (gone upstream) and has no text",
        ),
        (
            "on the highway",
            4,
            "hash",
            False,
            "quote matches revision 1 (hash aaaaaaaaaaaa…), but the cited hash cccccccccccc… "
            "(revision 4) is application/pdf, not text; its words cannot be checked here",
        ),
        (
            "airbag",
            1,
            "revision",
            False,
            "the cited revision 1 does not contain the quote, and no other revision of doc/x/1 "
            "contains it (checked revisions 1, 2, 3 and 4)",
        ),
    ],
)
def test_verdicts_say_which_revisions_contain_the_quote(
    quote: str, cited: int, cited_by: str, ok: bool, message: str
) -> None:
    verdict = check_quote("doc/x/1", quote, REVISIONS, cited, cited_by)
    assert verdict.ok is ok
    assert verdict.message() == message


def test_a_single_revision_says_so() -> None:
    verdict = check_quote("doc/x/1", "airbag", REVISIONS[:1], 1)
    assert verdict.message() == (
        "the cited revision 1 does not contain the quote; it is the only revision of doc/x/1"
    )


def test_a_cited_revision_must_exist() -> None:
    with pytest.raises(ValueError, match="no revision 9"):
        check_quote("doc/x/1", "x", REVISIONS, 9)


# -- the cheap test before reading a document ----------------------------------------------
# Text drawn mostly from ASCII letters, spaces and a few characters reader text treats
# specially, so that both the cheap test's paths (skipped, read) are taken often.
_PIECES = st.sampled_from(
    ["brake", "Brake", "BRAKE", "b", "rake", "light", "warning", " ", "  ", "\n", "\t", "-",
     "&amp;", "&#98;", "<b>", "\\", "\u00e9", "e\u0301", "\u200b", "\x07",
     "\u212a", "k", "\u0130", '"']
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    text=_TEXTS,
    quote=_TEXTS,
    media_type=st.sampled_from(["text/plain", "text/html", "application/json", "text/markdown"]),
    ignore_case=st.booleans(),
)
def test_a_document_passed_over_unread_holds_no_match(
    text: str, quote: str, media_type: str, ignore_case: bool
) -> None:
    """``quote_matches`` answers exactly as it does reading every document in full."""
    import pipelines.checks.quote as quote_module

    body = (
        canonical_json({"narrative": text, "title": quote[:3]})
        if media_type == "application/json"
        else text.encode()
    )

    def outcome() -> object:
        try:
            return list(
                quote_module.quote_matches(quote, body, media_type, ignore_case=ignore_case)
            )
        except QuoteError as exc:
            return str(exc)

    found = outcome()
    cheap = quote_module._may_hold
    quote_module._may_hold = lambda *args, **kwargs: True  # read every document in full
    try:
        full = outcome()
    finally:
        quote_module._may_hold = cheap
    assert found == full


def test_a_document_without_the_words_is_passed_over_unread() -> None:
    from pipelines.checks.quote import _may_hold

    assert not _may_hold(["warning light"], '{"a":"the WARNING lamp"}', ignore_case=True)
    assert _may_hold(["warning light"], '{"a":"the WARNING  LIGHT"}', ignore_case=True)
    assert not _may_hold(["warning light"], '{"a":"the WARNING  LIGHT"}', ignore_case=False)
    # what reader text reads differently is always read: a reference, an escape, non-ASCII
    for text in ('{"a":"warn&#105;ng light"}', '{"a":"warn\\u0069ng light"}', "warn\u0130ng"):
        assert _may_hold(["warning light"], text, ignore_case=True)

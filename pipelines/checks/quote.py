"""Does a quote occur in a snapshot, as a reader of the document would see it?

Both the quote and the document are reduced to reader text before comparison. The rule:
normalise only what a reader cannot see, never turn one visible character into another.

- HTML is read with a real parser (:mod:`html.parser`): only text a browser shows is kept
  (block elements such as ``<p>``, ``<br>`` or a table cell become a space, inline ones such
  as ``<em>`` vanish, ``<script>``/``<style>`` bodies, comments and every attribute value,
  an image's ``alt`` included, are dropped) and character references are decoded (``&amp;``,
  ``&#39;``, ``&mdash;``);
- Markdown is rendered to HTML by a CommonMark parser (markdown-it-py, the ``commonmark``
  preset, https://spec.commonmark.org/) with the two GFM extensions GitHub renders prose
  with, tables and strikethrough (https://github.github.com/gfm/#tables-extension-), and
  that HTML is read as above. So ``a *b* c`` reads ``a b c`` (emphasis), but ``a*b`` stays
  ``a*b`` (a ``*`` that opens no emphasis is text), code spans keep every character, links
  keep their text, raw HTML inside Markdown is read as HTML, and the cells of a table row
  are read one after the other, separated by a space, as a reader sees them side by side
  (``| 24 h soak | without leaks passed |`` reads ``24 h soak without leaks passed``). List
  bullets and numbers are drawn by the browser, not text: they are not read;
- Unicode is NFC-normalised: canonically equivalent sequences (``é`` as one code point or as
  ``e`` plus a combining accent) look the same and compare equal (UAX #15,
  https://unicode.org/reports/tr15/). Compatibility equivalents do not (no NFKC): ``²`` is
  not ``2``, the ligature ``ﬁ`` is not ``fi``, ``…`` is not ``...``, a full-width ``Ａ`` is
  not ``A``; UAX #15 describes them as characters that may look different, and folding some
  of them but not others would be a rule of our own;
- typographic quotes and dashes are characters a reader sees: ``’`` is not ``'``, ``“`` is
  not ``"``, ``—`` is not ``-`` nor ``--``. They are compared as written;
- what a reader cannot see is removed or folded: invisible characters (zero-width spaces and
  joiners, word joiner, soft hyphen, BOM, direction marks), and every run of whitespace
  (no-break and other Unicode spaces, newlines, tabs) becomes one space.

A quote is looked for as the document is read (quoted from the source: its markup or
Markdown read the same way) and as written (copied from the page, where ``*b*`` or ``<b>``
can be literal text; only character references are decoded).

Letters, digits and case are compared exactly: tolerance stops where the words would change.
A quote matches whole words only: where it begins (ends) with a letter, digit or underscore,
the text must not continue the word there (``case`` is not found in ``snake_case_name``).
JSON records are searched one string value at a time, so a match names its field.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt

from pipelines.checks.diffing import is_json_media, is_text_media, path_join
from warehouse.errors import QuoteError

EXCERPT_CHARS = 40

_DROP_ELEMENTS = frozenset({"script", "style"})
_BLOCK_ELEMENTS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "br", "caption", "dd", "details"),
        *("div", "dl", "dt", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5"),
        *("h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary"),
        *("table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"),
    }
)
# CommonMark with GFM tables and strikethrough. The ``commonmark`` preset passes raw HTML
# through (``html``), to be read as HTML; the literal reading escapes it, so that a tag is
# text. (markdown-it-py's ``gfm-like`` preset also turns on linkify, which needs the
# linkify-it-py package and changes no text a reader sees.)
# The preset's ``maxNesting`` (20) drops, without a word, the text of blocks nested deeper
# (a quote in 25 nested block quotes reads as nothing); 100 levels are read (measured: 2,000
# levels render in 30 ms, no recursion error). Text nested deeper is not read, so a quote
# from it fails: never a false match.
_GFM_EXTENSIONS = ["table", "strikethrough"]
_MAX_NESTING = 100
_MARKDOWN = MarkdownIt("commonmark", {"html": True, "maxNesting": _MAX_NESTING}).enable(
    _GFM_EXTENSIONS
)
_MARKDOWN_LITERAL = MarkdownIt("commonmark", {"html": False, "maxNesting": _MAX_NESTING}).enable(
    _GFM_EXTENSIONS
)
# Text without any of these characters, and without a digit followed by "." or ")" (an
# ordered list item), reads the same rendered or not: no CommonMark or GFM construct begins
# without one of them (the parser replaces NUL). Such text skips the parser.
_MARKDOWN_SYNTAX = frozenset("\\`*_[]!<>&#~|=+-\x00")
_ORDERED_ITEM = re.compile(r"\d[.)]")
# Marks word boundaries in :func:`bounded` text; never part of reader text.
WORD_EDGE = "\x1f"
# Characters that take no space and show no glyph: zero-width space, non-joiner and joiner,
# word joiner, invisible operators, soft hyphen, BOM / zero-width no-break space, Mongolian
# vowel separator, and the bidirectional marks, embeddings, overrides and isolates.
_INVISIBLE = dict.fromkeys(
    map(
        ord,
        "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
        "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff" + WORD_EDGE,
    )
)
_WHITESPACE = re.compile(r"\s+")


def is_markdown_media(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base in ("text/markdown", "text/x-markdown")


class _ShownText(HTMLParser):
    """The text of an HTML fragment as a browser shows it: data only (never an attribute
    value, a comment or a declaration), character references decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._dropping: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping is not None:
            return
        if tag in _DROP_ELEMENTS:
            self._dropping = tag
            self.parts.append(" ")
        elif tag in _BLOCK_ELEMENTS:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping is None and tag in _BLOCK_ELEMENTS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._dropping is not None:
            if tag == self._dropping:
                self._dropping = None
            return
        if tag in _BLOCK_ELEMENTS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if self._dropping is None:
            self.parts.append(data)


def strip_markup(text: str) -> str:
    """HTML markup removed the way a browser shows the text; character references decoded."""
    if "<" not in text and "&" not in text:  # no tag and no reference: the text as it is
        return text
    parser = _ShownText()
    parser.feed(text)
    parser.close()
    return "".join(parser.parts)


def has_markdown_syntax(text: str) -> bool:
    """Whether CommonMark could read ``text`` as anything but itself; when not,
    ``reader_text(text, markdown=True) == reader_text(text)``."""
    return not _MARKDOWN_SYNTAX.isdisjoint(text) or _ORDERED_ITEM.search(text) is not None


def rendered_markdown(text: str, *, markup: bool = True) -> str:
    """The text a reader sees in rendered Markdown: rendered to HTML by the CommonMark
    parser, then read as HTML (:func:`strip_markup`). ``markup=False`` escapes raw HTML, so
    that tag-like text stays text (character references are still decoded)."""
    parser = _MARKDOWN if markup else _MARKDOWN_LITERAL
    return strip_markup(parser.render(text))


def shown_markdown(text: str, *, markup: bool = True) -> str:
    """:func:`rendered_markdown`, without running the parser on text that has no Markdown
    syntax (:func:`has_markdown_syntax`): its reader text is the same either way."""
    return rendered_markdown(text, markup=markup) if has_markdown_syntax(text) else text


def is_word_char(char: str) -> bool:
    """A letter, digit or underscore: a quote's end must not cut a run of these."""
    return char.isalnum() or char == "_"


def bounded(text: str) -> str:
    """Reader text with :data:`WORD_EDGE` at every word boundary, so that plain substring
    search of ``bounded(quote)`` in ``bounded(text)`` is exactly the whole-word match of
    :func:`find_quote` (the bulk claims check searches these)."""
    out: list[str] = []
    previous = False
    for char in text:
        word = is_word_char(char)
        if word != previous:
            out.append(WORD_EDGE)
        out.append(char)
        previous = word
    if previous:
        out.append(WORD_EDGE)
    return "".join(out)


def find_words(needle: str, haystack: str, start: int = 0) -> int:
    """Where ``needle`` first occurs in ``haystack`` (from ``start``) on word boundaries,
    or -1."""
    head = bool(needle) and is_word_char(needle[0])
    tail = bool(needle) and is_word_char(needle[-1])
    at = haystack.find(needle, start)
    while at >= 0:
        end = at + len(needle)
        if not (head and at > 0 and is_word_char(haystack[at - 1])) and not (
            tail and end < len(haystack) and is_word_char(haystack[end])
        ):
            return at
        at = haystack.find(needle, at + 1)
    return -1


def reader_text(text: str, *, markdown: bool = False, markup: bool = True) -> str:
    """``text`` as a reader compares it: see the module docstring for every rule.
    ``markup=False`` keeps tag-like text and only decodes character references."""
    if markdown:
        text = shown_markdown(text, markup=markup)
    else:
        text = strip_markup(text) if markup else html.unescape(text)
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    return _WHITESPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote was found: ``where`` is ``text`` or ``field <path>``; ``excerpt`` is the
    reader text around the match."""

    where: str
    excerpt: str


def _json_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path or "(whole record)", value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from _json_strings(value[key], path_join(path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_strings(item, path_join(path, index))


def _excerpt(haystack: str, start: int, length: int) -> str:
    lo = max(0, start - EXCERPT_CHARS)
    hi = min(len(haystack), start + length + EXCERPT_CHARS)
    return ("…" if lo else "") + haystack[lo:hi] + ("…" if hi < len(haystack) else "")


def _needles(quote: str, *, markdown: bool) -> list[str]:
    """The quote as reader text: read as the document is (quoted from the source: its HTML
    markup, or its Markdown, read), and as written (copied from the page, where text such as
    ``<b>`` or ``*b*`` can be literal: only character references are decoded)."""
    needles = [reader_text(quote, markdown=markdown)]
    if not needles[0]:
        raise QuoteError("the quote is empty once markup and whitespace are removed")
    literal = reader_text(quote, markup=False)
    return needles if literal == needles[0] else [*needles, literal]


def _search(
    needles: list[str], text: str, *, markdown: bool, ignore_case: bool = False
) -> Iterator[str]:
    """The excerpt around each whole-word occurrence of the first of ``needles`` that
    occurs in ``text`` read as reader text. ``ignore_case``: letters compared in lower case
    (where lowering keeps the text's length, so excerpts stay where the match is)."""
    if not markdown and not _may_hold(needles, text, ignore_case=ignore_case):
        return
    haystack = reader_text(text, markdown=markdown)
    fold = ignore_case and len(haystack.lower()) == len(haystack)
    folded = haystack.lower() if fold else haystack
    for needle in needles:
        if fold and len(needle.lower()) == len(needle):
            needle = needle.lower()
        at = find_words(needle, folded)
        if at < 0:
            continue
        while at >= 0:
            yield _excerpt(haystack, at, len(needle))
            at = find_words(needle, folded, at + len(needle))
        return


# Characters that make reader text differ from the characters as stored (besides runs of
# whitespace): markup, character references, JSON escapes, control characters (some are
# invisible) and anything beyond ASCII (Unicode normalisation, invisible characters).
_REREAD = re.compile(r"[&<\\\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _may_hold(needles: list[str], text: str, *, ignore_case: bool) -> bool:
    """False only when no needle can occur in ``text``'s reader text (not Markdown): the text
    is ASCII without :data:`_REREAD` characters, so each of its strings reads as its own
    characters with whitespace runs made one space, and some word of every needle (as
    :func:`_search` compares it) is nowhere in it. A cheap test before parsing a document
    that cannot hold the quote (``receipts search`` reads every document)."""
    if not text.isascii() or _REREAD.search(text):
        return True
    folded = text.lower() if ignore_case else text
    for needle in needles:
        if ignore_case and len(needle.lower()) == len(needle):
            needle = needle.lower()
        if all(word in folded for word in needle.split(" ")):
            return True
    return False


def is_searchable(media_type: str) -> bool:
    return is_json_media(media_type) or is_text_media(media_type)


def find_quote(quote: str, body: bytes, media_type: str) -> QuoteMatch | None:
    """The first place ``quote`` occurs in ``body`` as reader text, or None.

    Raises :class:`QuoteError` for a quote with no reader text, and for a body that is not
    text (a PDF, an image): its words cannot be read here.
    """
    return next(quote_matches(quote, body, media_type), None)


def quote_matches(
    quote: str, body: bytes, media_type: str, *, ignore_case: bool = False
) -> Iterator[QuoteMatch]:
    """Every place ``quote`` occurs in ``body`` as reader text, in reading order (a JSON
    record's string fields by path); ``ignore_case`` compares letters in lower case (what
    ``receipts search`` does). Raises as :func:`find_quote` does."""
    markdown = is_markdown_media(media_type)
    needles = _needles(quote, markdown=markdown)
    if not is_searchable(media_type):
        raise QuoteError(f"{media_type} content is not text; the quote cannot be checked")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise QuoteError(f"{media_type} content is not UTF-8 text") from None
    if not markdown and not _may_hold(needles, text, ignore_case=ignore_case):
        return
    if is_json_media(media_type):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        else:
            for path, string in _json_strings(value):
                for excerpt in _search(needles, string, markdown=False, ignore_case=ignore_case):
                    yield QuoteMatch(f"field {path}", excerpt)
            return
    for excerpt in _search(needles, text, markdown=markdown, ignore_case=ignore_case):
        yield QuoteMatch("text", excerpt)


# -- a quote against every revision of a document -------------------------------------------
@dataclass(frozen=True)
class RevisionText:
    """One revision of a document as the quote check sees it (no body for a tombstone)."""

    revision: int
    content_hash: str | None
    media_type: str | None = None
    body: bytes | None = None
    tombstone_reason: str | None = None

    @property
    def tombstone(self) -> bool:
        return self.content_hash is None


@dataclass(frozen=True)
class RevisionOutcome:
    revision: int
    content_hash: str | None
    contains: bool
    where: str | None = None
    excerpt: str | None = None
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "content_hash": self.content_hash,
            "contains": self.contains,
            "where": self.where,
            "excerpt": self.excerpt,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class QuoteVerdict:
    """The answer to "does the cited revision contain this quote?", with every revision's
    outcome so a mismatch can say which revisions do contain it."""

    doc_id: str
    quote: str
    cited: RevisionOutcome
    cited_by: str
    revisions: list[RevisionOutcome]

    @property
    def ok(self) -> bool:
        return self.cited.contains

    @property
    def containing(self) -> list[RevisionOutcome]:
        return [r for r in self.revisions if r.contains]

    def message(self) -> str:
        cited = _cited_phrase(self.cited, self.cited_by)
        if self.ok:
            where = f", in {self.cited.where}" if self.cited.where != "text" else ""
            return (
                f"the quote occurs in {self.doc_id} revision {self.cited.revision} "
                f"(hash {short_hash(self.cited.content_hash)}){where}"
            )
        others = [r for r in self.containing if r.revision != self.cited.revision]
        if others:
            failure = self.cited.problem or "does not contain it"
            listed = _join(f"{r.revision} (hash {short_hash(r.content_hash)})" for r in others)
            plural = "s" if len(others) > 1 else ""
            return f"quote matches revision{plural} {listed}, but {cited} {failure}"
        failure = self.cited.problem or "does not contain the quote"
        if len(self.revisions) == 1:
            return f"{cited} {failure}; it is the only revision of {self.doc_id}"
        checked = _join(str(r.revision) for r in self.revisions)
        return (
            f"{cited} {failure}, and no other revision of {self.doc_id} contains it "
            f"(checked revisions {checked})"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "quote": self.quote,
            "ok": self.ok,
            "cited_by": self.cited_by,
            "cited": self.cited.as_json(),
            "revisions_containing": [r.revision for r in self.containing],
            "revisions": [r.as_json() for r in self.revisions],
            "message": self.message(),
        }


def short_hash(content_hash: str | None, length: int = 12) -> str:
    return "-" if content_hash is None else content_hash[:length] + "…"


def _join(items: Iterable[str]) -> str:
    parts = list(items)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _cited_phrase(cited: RevisionOutcome, cited_by: str) -> str:
    if cited_by == "hash":
        return f"the cited hash {short_hash(cited.content_hash)} (revision {cited.revision})"
    if cited_by == "current":
        return f"the current revision {cited.revision}"
    return f"the cited revision {cited.revision}"


def _outcome(quote: str, rev: RevisionText) -> RevisionOutcome:
    if rev.tombstone or rev.body is None or rev.media_type is None:
        reason = rev.tombstone_reason or "no stored bytes"
        return RevisionOutcome(
            rev.revision, None, False, problem=f"is a tombstone ({reason}) and has no text"
        )
    if not is_searchable(rev.media_type):
        problem = f"is {rev.media_type}, not text; its words cannot be checked here"
        return RevisionOutcome(rev.revision, rev.content_hash, False, problem=problem)
    try:
        match = find_quote(quote, rev.body, rev.media_type)
    except QuoteError as exc:
        return RevisionOutcome(rev.revision, rev.content_hash, False, problem=f"fails: {exc}")
    if match is None:
        return RevisionOutcome(rev.revision, rev.content_hash, False)
    return RevisionOutcome(rev.revision, rev.content_hash, True, match.where, match.excerpt)


def check_quote(
    doc_id: str,
    quote: str,
    revisions: list[RevisionText],
    cited_revision: int,
    cited_by: str = "revision",
) -> QuoteVerdict:
    """Check ``quote`` against every revision; the verdict is about ``cited_revision``.

    ``cited_by`` (``revision``, ``hash`` or ``current``) only shapes the message.
    Raises :class:`QuoteError` for an empty quote, and ``ValueError`` when the cited revision
    is not among ``revisions``.
    """
    if not reader_text(quote):
        raise QuoteError("the quote is empty once markup and whitespace are removed")
    outcomes = [_outcome(quote, rev) for rev in revisions]
    cited = next((o for o in outcomes if o.revision == cited_revision), None)
    if cited is None:
        raise ValueError(f"{doc_id} has no revision {cited_revision}")
    return QuoteVerdict(doc_id, quote, cited, cited_by, outcomes)

"""The words of the search index: which words a document's reader text has, and which
words a phrase needs, such that a document ``receipts search`` finds always has every word
its phrase needs. The index may list more documents than hold the phrase (they are read and
passed over), never fewer.

A word is a maximal run of letters, digits and underscores (:func:`pipelines.checks.quote.
is_word_char`, which is what a whole-word match checks at the ends of a phrase), compared in
lower case, and stored as its CRC-32 (two words with one hash only add candidates).

Why the rule holds: a search compares a needle (the phrase as reader text, read as the
document is and as written) with a document's reader text, both lower-cased when lowering
keeps the text's length, else as they are (:func:`pipelines.checks.quote._search`); the
match is on word boundaries at the phrase's ends and character for character inside, so
every maximal run of word characters of the needle is one of the reader text's. The words
of a document are therefore the runs of its reader text as the search compares it (each
string of a JSON record, Markdown rendered), lower-cased; a phrase needs the words that
every way of reading it has (as HTML or Markdown, as written, lowered or not).

A string (a JSON record's string value, or a whole text that is not Markdown) without
markup (``<``) reads as its own characters with character references decoded; when that is
ASCII without control characters, whitespace aside (no word character), its words are its
runs, without reading it further.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from pipelines.checks.diffing import is_json_media
from pipelines.checks.quote import (
    _needles,
    is_markdown_media,
    is_searchable,
    reader_text,
)
from warehouse.errors import QuoteError

# Bump when the rule changes: an index built under another version is not used.
WORDS_VERSION = 1
_RUN = re.compile(r"\w+")  # for str patterns: runs of characters that are alnum or "_"
# What makes a string's reader text (not Markdown, references decoded) other than its own
# characters, whitespace aside: markup, and control characters (some are invisible).
# ASCII text to its words: a word character lowered, any other byte a space.
_ASCII_WORDS = bytes(
    ord(chr(b).lower()) if b < 128 and (chr(b).isalnum() or b == ord("_")) else ord(" ")
    for b in range(256)
)
_AS_WRITTEN_BREAKERS = re.compile(r"[<\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def word_hash(word: str) -> int:
    """The CRC-32 of a word's UTF-8 bytes."""
    return zlib.crc32(word.encode("utf-8", "surrogatepass"))


def _runs(text: str) -> Iterator[str]:
    """The maximal runs of word characters of ``text``, lower-cased."""
    return (run.lower() for run in _RUN.findall(text))


def _compared(text: str) -> str:
    """``text`` as a search compares it: lower-cased when that keeps its length."""
    folded = text.lower()
    return folded if len(folded) == len(text) else text


def _strings(value: Any) -> list[str]:
    """Every string value of a JSON value (keys are not text), in no particular order."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _encoded(words: Iterable[str]) -> Iterator[bytes]:
    return (word.encode("utf-8", "surrogatepass") for word in words)


def _words(body: bytes, media_type: str) -> set[bytes]:
    """:func:`document_words`, UTF-8 encoded."""
    if not is_searchable(media_type):
        return set()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return set()
    markdown = is_markdown_media(media_type)
    strings: list[str] = [text]
    if is_json_media(media_type):
        with contextlib.suppress(ValueError):  # not JSON: searched as text
            strings = _strings(json.loads(text))
    if not markdown:
        joined = "\n".join(strings)
        if "&" in joined and "<" not in joined:  # references only: the parser unescapes them
            joined = html.unescape(joined)
        if joined.isascii() and not _AS_WRITTEN_BREAKERS.search(joined):
            return set(joined.encode("ascii").translate(_ASCII_WORDS).split())
    words: set[bytes] = set()
    for string in strings:
        words.update(_encoded(_runs(_compared(reader_text(string, markdown=markdown)))))
    return words


def document_words(body: bytes, media_type: str) -> set[str]:
    """The words of a document's reader text (empty for one a search never reads: not text,
    not UTF-8)."""
    return {word.decode("utf-8", "surrogatepass") for word in _words(body, media_type)}


def document_hashes(body: bytes, media_type: str) -> set[int]:
    """:func:`document_words` as the index stores them (:func:`word_hash`)."""
    return {zlib.crc32(word) for word in _words(body, media_type)}


def phrase_words(phrase: str) -> set[str]:
    """The words every document holding ``phrase`` has (empty: none is certain, e.g. a
    phrase without letters or digits, and the index cannot narrow the search). Raises
    :class:`QuoteError` for a phrase without reader text."""
    readings: list[set[str]] = []
    for markdown in (False, True):
        try:
            needles = _needles(phrase, markdown=markdown)
        except QuoteError:  # nothing to find in a document read this way
            if not markdown:
                raise
            continue
        for needle in needles:
            readings.append(set(_runs(needle)))
            readings.append(set(_runs(_compared(needle))))
    return set.intersection(*readings)

"""Where a quote sits in a snapshot, as a proof bundle states it (pure).

A bundle's locator is a JSON Pointer (RFC 6901) to a string value of a JSON snapshot, or
none for a text snapshot, plus code-point offsets into that string; the words there must
read as the quote under the bundle's simple normalisation
(:func:`pipelines.proofs.verify_receipt.normalize`: NFKC, typographic quotes and dashes
folded, whitespace runs as one space, lower case). Receipts' own reading rules
(:mod:`pipelines.checks.quote`: rendered Markdown, HTML read as a browser shows it) decide
whether a quote holds; this module only finds the span a verifier without those rules can
check. A quote that holds across Markdown or HTML markup has no such span.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from pipelines.checks.diffing import is_json_media
from pipelines.checks.quote import is_word_char
from pipelines.proofs.verify_receipt import CONTEXT_CHARS, SPACES, normalize

# Candidates tried per string before giving up (each is checked by normalising the slice).
MAX_CANDIDATES = 1_000
_SPACE_SET = frozenset(SPACES)


class Location(NamedTuple):
    pointer: str | None
    start: int
    end: int
    exact: str
    prefix: str
    suffix: str


def pointer_token(key: str | int) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def json_strings(value: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a JSON value with its JSON Pointer, keys in sorted order."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from json_strings(value[key], f"{pointer}/{pointer_token(key)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_strings(item, f"{pointer}/{index}")


def _whole_words(text: str, start: int, end: int) -> bool:
    head = start > 0 and is_word_char(text[start - 1]) and is_word_char(text[start])
    tail = end < len(text) and is_word_char(text[end]) and is_word_char(text[end - 1])
    return not head and not tail


def _direct(text: str, target: str) -> Iterator[tuple[int, int]]:
    """Candidate spans where the lower-cased text holds the target as it is (the quote
    copied as written: one code point of text per code point of the target)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return
    at = lowered.find(target)
    while at >= 0:
        yield at, at + len(target)
        at = lowered.find(target, at + 1)


def _units(text: str) -> list[tuple[int, int]]:
    """The text cut before every starter (combining class 0): NFKC composes within these."""
    cuts = [i for i, char in enumerate(text) if i == 0 or unicodedata.combining(char) == 0]
    return list(zip(cuts, [*cuts[1:], len(text)], strict=True))


def _mapped(text: str, target: str) -> Iterator[tuple[int, int]]:
    """Candidate spans found in the text normalised unit by unit, mapped back to it."""
    units = _units(text)
    out: list[str] = []
    owner: list[int] = []  # the unit each normalised character comes from
    for number, (lo, hi) in enumerate(units):
        piece = normalize_piece(text[lo:hi])
        for char in piece:
            if char in _SPACE_SET:
                if out and out[-1] == " ":
                    continue
                char = " "
            out.append(char)
            owner.append(number)
    folded = "".join(out)
    at = folded.find(target)
    while at >= 0:
        yield units[owner[at]][0], units[owner[at + len(target) - 1]][1]
        at = folded.find(target, at + 1)


def normalize_piece(text: str) -> str:
    """:func:`normalize` without the whitespace steps, for one unit of text."""
    return normalize("\x00" + text + "\x00")[1:-1]


def find_span(text: str, quote: str, target: str | None = None) -> tuple[int, int] | None:
    """The first span of ``text`` that reads as ``quote`` under :func:`normalize`, whole
    words preferred; None when there is none. The quote as written is looked for first (a
    lower-cased search, each hit checked); only then the text normalised piece by piece.
    ``target`` is ``normalize(quote)``, when the caller has it."""
    if target is None:
        target = normalize(quote)
    if not target:
        return None
    for finder in (_direct, _mapped):
        if finder is _mapped and target not in normalize(text):
            return None
        fallback = None
        for tried, (start, end) in enumerate(finder(text, target)):
            if tried >= MAX_CANDIDATES:
                break
            found = text[start:end]
            # an ASCII span the lower-cased search found is the target itself once lower-cased
            # (the target has no whitespace run and none at its ends, and ASCII has nothing to
            # fold): normalising it again would only say so
            if not (finder is _direct and found.isascii()) and normalize(found) != target:
                continue
            if _whole_words(text, start, end):
                return start, end
            fallback = fallback or (start, end)
        if fallback:
            return fallback
    return None


def _location(pointer: str | None, text: str, span: tuple[int, int]) -> Location:
    start, end = span
    return Location(
        pointer,
        start,
        end,
        text[start:end],
        text[max(0, start - CONTEXT_CHARS) : start],
        text[end : end + CONTEXT_CHARS],
    )


_UNPARSED = object()


def _parsed(text: str) -> Any:
    """The JSON value of ``text`` (orjson, several times the standard library's speed; the
    standard library for what orjson refuses and Python reads: integers beyond 64 bits,
    ``NaN``), else :data:`_UNPARSED`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return _UNPARSED


def _first_span(
    value: Any, quote: str, target: str
) -> tuple[list[str], str, tuple[int, int]] | None:
    """The first string of a JSON value (keys in sorted order) with a span that reads as the
    quote: its pointer's tokens (innermost first), the string and the span. Pointers are
    written only for the string found: the first of :func:`json_strings` with such a span."""
    if isinstance(value, str):
        span = find_span(value, quote, target)
        return None if span is None else ([], value, span)
    if isinstance(value, dict):
        items: Iterator[tuple[str | int, Any]] = ((key, value[key]) for key in sorted(value))
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _first_span(item, quote, target)
        if found is not None:
            found[0].append(pointer_token(key))
            return found
    return None


def locate(quote: str, body: bytes, media_type: str) -> Location | None:
    """Where ``quote`` sits in a snapshot: the first JSON string value (by pointer, keys
    sorted) or, for text, the whole text; None when no span reads as the quote."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if is_json_media(media_type):
        value = _parsed(text)
        if value is not _UNPARSED:
            found = _first_span(value, quote, normalize(quote))
            if found is None:
                return None
            tokens, string, where = found
            return _location("".join("/" + t for t in reversed(tokens)), string, where)
    span = find_span(text, quote)
    return None if span is None else _location(None, text, span)

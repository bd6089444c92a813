"""Upstream text made safe to print: control characters shown, not obeyed.

Upstream bytes are stored verbatim, escape sequences and all (``show`` writes them back
unchanged). Whatever a report, a diff or a quote check *prints* of them goes through
:func:`visible` first, so ``\\x1b]0;…\\x07`` in a comment appears as those characters on the
terminal instead of retitling the window, moving the cursor or hiding text. Line breaks and
tabs stay; every other C0 and C1 control character and DEL becomes ``\\xNN``, and the
characters a reader cannot see that change what is shown become ``\\uNNNN`` (``\\UNNNNNNNN``
past U+FFFF): bidi embeddings, overrides, isolates and marks (which reorder text),
zero-width spaces, the word joiner and invisible operators, the byte order mark, the line
and paragraph separators, and the tag characters (invisible ASCII look-alikes). The
zero-width joiner and non-joiner stay: they shape visible letters in many scripts and in
emoji. A table's cell, an identifier or a value inside a sentence (:func:`visible_cell`)
keeps to its line: tabs and line feeds are written out too, as ``\\t`` and ``\\n``.

:func:`hidden_character` names the first such character, for inputs that refuse them
(manifests).
"""

from __future__ import annotations

import re
import unicodedata

# What visible() writes out: C0 controls but tab and line feed, DEL, C1 controls; the
# Arabic letter mark, the Mongolian vowel separator, zero-width space, left-to-right and
# right-to-left marks, line and paragraph separators, bidi embeddings and overrides, word
# joiner and invisible operators, bidi isolates, the byte order mark, tag characters.
_HIDDEN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f"
)
_CONTROL = re.compile(f"[{_HIDDEN}]")
_HIDDEN_IN_LINE = re.compile(f"[{_HIDDEN}\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with control characters written out visibly (see the module docstring)."""
    return _CONTROL.sub(_escape, text)


_LINE_BREAKING = str.maketrans({"\t": "\\t", "\n": "\\n"})


def visible_cell(text: str) -> str:
    """:func:`visible`, on one line: tabs and line feeds written out as well."""
    return visible(text).translate(_LINE_BREAKING)


def hidden_character(text: str, *, in_line: bool = False, controls: bool = True) -> str | None:
    """The first character of ``text`` that :func:`visible` writes out (with ``in_line``:
    that :func:`visible_cell` does, tab and line feed too; without ``controls``: leaving
    out control characters, for the invisible and direction characters alone), as
    ``U+XXXX`` and its Unicode name when it has one (``U+202E RIGHT-TO-LEFT OVERRIDE``);
    None when there is none."""
    for found in (_HIDDEN_IN_LINE if in_line else _CONTROL).finditer(text):
        char = found.group()
        if controls or unicodedata.category(char) != "Cc":
            name = unicodedata.name(char, "")
            return f"U+{ord(char):04X}" + (f" {name}" if name else "")
    return None


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character past U+FFFF
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_visible(text: str) -> str:
    """JSON text with the characters :func:`visible` escapes written as JSON ``\\uNNNN``
    escapes: the same JSON value, nothing a terminal obeys. (``json.dumps`` escapes C0
    controls itself, but with ``ensure_ascii=False`` not C1 controls or bidi overrides.)"""
    return _CONTROL.sub(_json_escape, text)


def hidden_pieces(text: str) -> list[tuple[str, bool]]:
    """``text`` cut at the characters :func:`visible` writes out: ``(piece, hidden)`` pairs
    in order, each hidden character as its written-out form (``\\u202e``), for a page that
    marks them instead of obeying them."""
    pieces: list[tuple[str, bool]] = []
    start = 0
    for match in _CONTROL.finditer(text):
        if match.start() > start:
            pieces.append((text[start : match.start()], False))
        pieces.append((_escape(match), True))
        start = match.end()
    if start < len(text):
        pieces.append((text[start:], False))
    return pieces

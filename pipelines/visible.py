"""Upstream text made safe to print: control characters shown, not obeyed.

Upstream bytes are stored verbatim, escape sequences and all (``show`` writes them back
unchanged). Whatever a report, a diff or a quote check *prints* of them goes through
:func:`visible` first, so ``\\x1b]0;…\\x07`` in a comment appears as those characters on the
terminal instead of retitling the window, moving the cursor or hiding text. Line breaks and
tabs stay; every other C0 and C1 control character and DEL becomes ``\\xNN``, and bidi
overrides and isolates (which reorder what a reader sees) become ``\\uNNNN``. A table's
cell (:func:`visible_cell`) keeps to its line: tabs and line feeds are written out too, as
``\\t`` and ``\\n``.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with control characters written out visibly (see the module docstring)."""
    return _CONTROL.sub(_escape, text)


_LINE_BREAKING = str.maketrans({"\t": "\\t", "\n": "\\n"})


def visible_cell(text: str) -> str:
    """:func:`visible`, on one line: tabs and line feeds written out as well."""
    return visible(text).translate(_LINE_BREAKING)


def json_visible(text: str) -> str:
    """JSON text with the characters :func:`visible` escapes written as JSON ``\\uNNNN``
    escapes: the same JSON value, nothing a terminal obeys. (``json.dumps`` escapes C0
    controls itself, but with ``ensure_ascii=False`` not C1 controls or bidi overrides.)"""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

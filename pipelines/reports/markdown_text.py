"""Text from outside (upstream values, identifiers, file names) written into Markdown so
that it reads as the characters it is and never as Markdown or HTML: a code span that no
backtick inside can close, or text with every character CommonMark acts on escaped.

Both keep to one line (:func:`pipelines.visible.visible_cell`: control, invisible and
direction characters, tabs and line feeds written out), so a value never starts a block of
its own. In a GFM table cell pipes are escaped as well (``cell=True``): the table splits its
cells on them before anything else is read.
"""

from __future__ import annotations

import re

from pipelines.visible import visible_cell

_BACKTICKS = re.compile(r"`+")
# Every ASCII punctuation character CommonMark reads inline: escapes, code, emphasis,
# links and images, raw HTML and autolinks, entities, strikethrough (GFM), table pipes.
_INLINE = re.compile(r"([\\`*_\[\]<>&~|!])")
# What makes a line a block of its own when it starts it: a heading, a list item, a
# thematic break or setext underline, a block quote, a fence.
_BLOCK_START = re.compile(r"^( *)([#+\-=>~]|\d{1,9}(?=[.)]))")


def md_code(text: str, *, cell: bool = False) -> str:
    """``text`` as an inline code span: fenced by one backtick more than its longest run of
    backticks, and padded with a space where CommonMark would otherwise eat one or read a
    backtick as part of the fence."""
    body = visible_cell(text)
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * (longest + 1)
    both_spaces = body.startswith(" ") and body.endswith(" ") and body.strip(" ")
    if body.startswith("`") or body.endswith("`") or both_spaces or not body:
        body = f" {body} "
    if cell:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def md_text(text: str) -> str:
    """``text`` as Markdown that renders as exactly these characters (on one line), however
    it begins: every character CommonMark acts on inline is backslash-escaped, and so is
    one that would start a block."""
    escaped = _INLINE.sub(r"\\\1", visible_cell(text))
    return _BLOCK_START.sub(_escape_block_start, escaped, count=1)


def _escape_block_start(match: re.Match[str]) -> str:
    spaces, marker = match.group(1), match.group(2)
    # leading spaces would make an indented code block of a list item's text: &#32; is a
    # space that is no indentation
    spaces = "&#32;" * len(spaces)
    if marker[0].isdigit():  # "1." or "1)": escape what follows the number
        return f"{spaces}{marker}\\"
    return f"{spaces}\\{marker}"

"""Pipes in code spans of tables, written for GitHub and for the site alike.

GitHub's tables need ``\\|`` for a pipe inside a code span (`` `--json\\|--csv` ``);
Python-Markdown does not split cells inside code spans and would show the backslash. This
MkDocs hook drops it there, so the pages read the same in both places.
"""

from __future__ import annotations

import re
from typing import Any

CODE_SPAN = re.compile(r"`[^`\n]*`")


def unescape(markdown: str) -> str:
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.lstrip().startswith("|"):
            line = CODE_SPAN.sub(lambda span: span.group(0).replace("\\|", "|"), line)
        lines.append(line)
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: ``\\|`` inside a table's code spans becomes ``|``."""
    return unescape(markdown)

"""Upstream text as the web view shows it: escaped, with invisible and control characters
marked instead of obeyed, a JSON record as a tree of ``<details>``, a document's title, and
a unified diff laid out side by side. Pure functions over text; no warehouse."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from pipelines.checks.diffing import is_json_media
from pipelines.visible import hidden_pieces

# A JSON tree shows at most this many values; a longer record ends with a note.
MAX_TREE_VALUES = 5_000
# A text body is shown up to this many characters.
MAX_TEXT_CHARS = 500_000
MAX_TITLE_CHARS = 200
# The fields a record's title is read from, in this order.
TITLE_FIELDS = ("title", "name", "subject", "headline", "summary", "description")


_HIDDEN_MARK = Markup('<mark class="hidden-char" title="a hidden character">{}</mark>')


def marked(text: object) -> Markup:
    """``text`` escaped for HTML, each invisible or control character (bidi overrides, zero
    width spaces, escape codes) replaced by a visible mark naming it."""
    out = []
    for piece, hidden in hidden_pieces(str(text)):
        if hidden:
            out.append(_HIDDEN_MARK.format(piece))
        else:
            out.append(escape(piece))
    return Markup("").join(out)


def _leaf(value: Any) -> Markup:
    if isinstance(value, str):
        return Markup('<span class="v-str">"{}"</span>').format(marked(value))
    if value is None:
        return Markup('<span class="v-null">null</span>')
    if isinstance(value, bool):
        return Markup('<span class="v-bool">{}</span>').format("true" if value else "false")
    return Markup('<span class="v-num">{}</span>').format(json.dumps(value))


def json_tree(value: Any) -> Markup:
    """A JSON value as nested lists: objects and arrays as open ``<details>`` with their
    keys, strings marked (:func:`marked`); after :data:`MAX_TREE_VALUES` values, a note."""
    shown = [0]

    def node(item: Any) -> Markup:
        if not isinstance(item, dict | list):
            shown[0] += 1
            return _leaf(item)
        pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item))
        opener = "{" if isinstance(item, dict) else "["
        summary = Markup("<summary>{} {} {}</summary>").format(
            opener, len(pairs), "keys" if isinstance(item, dict) else "items"
        )
        rows = []
        for key, child in pairs:
            if shown[0] >= MAX_TREE_VALUES:
                rows.append(Markup('<li class="more">… the rest is not shown</li>'))
                break
            label = marked(key) if isinstance(key, str) else escape(str(key))
            rows.append(
                Markup('<li><span class="key">{}</span>: {}</li>').format(label, node(child))
            )
        return Markup('<details open class="tree">{}<ul>{}</ul></details>').format(
            summary, Markup("").join(rows)
        )

    return node(value)


@dataclass(frozen=True)
class Body:
    """A snapshot as a page shows it: ``kind`` is ``json`` (``tree``; ``text`` the record as
    stored), ``text`` (``text``, cut at :data:`MAX_TEXT_CHARS` when ``cut``) or ``binary``."""

    kind: str
    media_type: str
    size: int
    text: str = ""
    tree: Markup | None = None
    cut: bool = False


def body_view(body: bytes, media_type: str) -> Body:
    """How a page shows ``body``: JSON as a tree, text (Markdown included) as text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Body("binary", media_type, len(body))
    if is_json_media(media_type):
        try:
            tree = json_tree(json.loads(text))
            return Body("json", media_type, len(body), text=text, tree=tree)
        except ValueError:
            pass
    cut = len(text) > MAX_TEXT_CHARS
    return Body("text", media_type, len(body), text=text[:MAX_TEXT_CHARS], cut=cut)


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+|^\s*[-*>]\s+")
_TAGS = re.compile(r"<[^>]*>")


def _short(text: str) -> str:
    text = " ".join(_TAGS.sub(" ", text).split())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def title_of(body: bytes, media_type: str) -> str | None:
    """A line that names a document for a person: a JSON record's first field of
    :data:`TITLE_FIELDS` (at the top or one level down), else a text's first line (a
    Markdown heading without its ``#``); None when there is none."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if is_json_media(media_type):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        records = [value, *(v for v in value.values() if isinstance(v, dict))]
        for record in records:
            for name in TITLE_FIELDS:
                found = record.get(name)
                if isinstance(found, str) and found.strip():
                    return _short(found)
        return None
    for line in text.splitlines():
        if line.strip():
            return _short(_HEADING.sub("", line))
    return None


@dataclass(frozen=True)
class SideRow:
    """One row of a side-by-side diff: ``kind`` is ``hunk`` (a ``@@`` line in ``left``),
    ``same``, ``changed``, ``removed`` or ``added``; a side is None where it has no line."""

    kind: str
    left_number: int | None
    left: str | None
    right_number: int | None
    right: str | None


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def side_by_side(lines: list[str]) -> list[SideRow]:
    """A unified diff (as :func:`pipelines.checks.diffing.text_diff` writes it) as rows of
    old and new lines side by side: removed lines face the added lines that replace them."""
    rows: list[SideRow] = []
    removed: list[str] = []
    added: list[str] = []
    left_no = right_no = 0

    def flush() -> None:
        nonlocal left_no, right_no
        for index in range(max(len(removed), len(added))):
            old = removed[index] if index < len(removed) else None
            new = added[index] if index < len(added) else None
            kind = (
                "changed"
                if old is not None and new is not None
                else ("removed" if old is not None else "added")
            )
            rows.append(
                SideRow(
                    kind,
                    left_no + 1 if old is not None else None,
                    old,
                    right_no + 1 if new is not None else None,
                    new,
                )
            )
            left_no += old is not None
            right_no += new is not None
        removed.clear()
        added.clear()

    for line in lines:
        if line.startswith(("--- ", "+++ ")) and not rows and not removed and not added:
            continue
        hunk = _HUNK.match(line)
        if hunk:
            flush()
            left_no, right_no = int(hunk.group(1)) - 1, int(hunk.group(2)) - 1
            rows.append(SideRow("hunk", None, line, None, None))
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
        else:
            flush()
            left_no += 1
            right_no += 1
            text = line[1:] if line.startswith(" ") else line
            rows.append(SideRow("same", left_no, text, right_no, text))
    flush()
    return rows

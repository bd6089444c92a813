"""What changed between two snapshots of a document, in a form a person can read.

Pure functions over bytes: JSON records are compared field by field (one path per changed
leaf, e.g. ``results[0].summary``); text is compared as a short unified diff; anything else
only by size. The media type chooses the comparison; bytes that do not parse as the media
type claims fall back to text, then to binary.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_FIELDS = 50
MAX_DIFF_LINES = 40
MAX_VALUE_CHARS = 160
CONTEXT_LINES = 2
WORD_DIFF_MIN_CHARS = 60
WORD_DIFF_MAX_CHARS = 50_000
MAX_DIFF_BYTES = 2_000_000
CONTEXT_WORDS = 6

_TEXT_MEDIA = (
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/javascript",
    "application/x-ndjson",
)
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class FieldChange:
    """One changed leaf of a JSON record: ``change`` is added, removed or changed; ``old``
    and ``new`` are compact JSON, shortened to :data:`MAX_VALUE_CHARS`. A changed long
    string also carries ``words``: its word diff (see :func:`word_diff`)."""

    path: str
    change: str
    old: str | None
    new: str | None
    words: list[tuple[str, str]] | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "change": self.change,
            "old": self.old,
            "new": self.new,
        }
        if self.words is not None:
            out["words"] = [list(segment) for segment in self.words]
        return out


@dataclass(frozen=True)
class Diff:
    """The difference between two snapshots.

    ``kind`` is ``json`` (``fields`` holds the changed paths), ``text`` (``lines`` holds a
    unified diff), ``binary`` or ``large`` (over the byte cap; only ``old_size`` and
    ``new_size``). ``omitted`` counts fields or diff lines left out to keep the diff short.
    """

    kind: str
    old_size: int
    new_size: int
    fields: list[FieldChange] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    omitted: int = 0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "old_size": self.old_size,
            "new_size": self.new_size,
            "omitted": self.omitted,
        }
        if self.kind == "json":
            out["fields"] = [f.as_json() for f in self.fields]
        elif self.kind == "text":
            out["lines"] = list(self.lines)
        return out


def is_json_media(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base == "application/json" or base.endswith("+json")


def is_text_media(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_MEDIA or base.endswith("+xml")


def path_join(parent: str, key: str | int) -> str:
    """``parent.key``, ``parent[3]``, or ``parent["odd key"]`` for a key that is not a name."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _PLAIN_KEY.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def short_value(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """Compact JSON of ``value``, cut to ``limit`` characters with a trailing ``…``."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_changes(old: Any, new: Any, path: str = "") -> list[FieldChange]:
    """Every changed leaf between two JSON values, in key order; lists compare by index."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for key in sorted(set(old) | set(new)):
            sub = path_join(path, key)
            if key not in new:
                out.append(FieldChange(sub, "removed", short_value(old[key]), None))
            elif key not in old:
                out.append(FieldChange(sub, "added", None, short_value(new[key])))
            else:
                out.extend(json_changes(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for index in range(max(len(old), len(new))):
            sub = path_join(path, index)
            if index >= len(new):
                out.append(FieldChange(sub, "removed", short_value(old[index]), None))
            elif index >= len(old):
                out.append(FieldChange(sub, "added", None, short_value(new[index])))
            else:
                out.extend(json_changes(old[index], new[index], sub))
        return out
    if old == new and type(old) is type(new):
        return []
    words = None
    chars = len(old) + len(new) if isinstance(old, str) and isinstance(new, str) else 0
    if WORD_DIFF_MIN_CHARS <= chars <= WORD_DIFF_MAX_CHARS:
        words = word_diff(old, new)
    path = path or "(whole record)"
    return [FieldChange(path, "changed", short_value(old), short_value(new), words)]


_TOKEN = re.compile(r"\s+|[^\s]+")


def _trim_equal(text: str, keep_start: bool, keep_end: bool) -> str:
    """Shorten unchanged text between changes to a few words of context on each side."""
    tokens = _TOKEN.findall(text)
    budget = CONTEXT_WORDS * 2  # words and the spaces between them
    if len(tokens) <= budget * (keep_start + keep_end) + 1:
        return text
    head = "".join(tokens[:budget]) if keep_start else ""
    tail = "".join(tokens[-budget:]) if keep_end else ""
    return f"{head}…{tail}"


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """The changes between two strings word by word, as ``(op, text)`` segments: ``=`` kept
    (long runs shortened to a few words around each change, ``…`` marking the cut), ``-``
    removed, ``+`` added. Consecutive changed words (only whitespace between them) are one
    removed and one added segment, as ``git diff --word-diff`` shows them."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    segments: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    # A run of changes is one ``[-…-]{+…+}``, as in git's word diff: whitespace kept
    # between two changes joins them instead of splitting them word by word.
    ops = matcher.get_opcodes()
    groups: list[list[str]] = []  # ["=", kept] or ["~", removed, added]
    for index, (tag, i1, i2, j1, j2) in enumerate(ops):
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        # Opcodes alternate, so an "equal" that is neither first nor last lies between
        # two changes.
        joins = tag == "equal" and removed.isspace() and 0 < index < len(ops) - 1
        if tag == "equal" and not joins:
            groups.append(["=", removed])
        elif groups and groups[-1][0] == "~":
            groups[-1][1] += removed
            groups[-1][2] += added
        else:
            groups.append(["~", removed, added])
    for group in groups:
        if group[0] == "=":
            segments.append(("=", group[1]))
            continue
        if group[1]:
            segments.append(("-", group[1]))
        if group[2]:
            segments.append(("+", group[2]))
    last = len(segments) - 1
    return [
        (op, _trim_equal(text, keep_start=index > 0, keep_end=index < last) if op == "=" else text)
        for index, (op, text) in enumerate(segments)
    ]


def render_words(words: list[tuple[str, str]]) -> str:
    """A word diff in git's ``--word-diff=plain`` notation: ``[-removed-]{+added+}``."""
    marks = {"=": ("", ""), "-": ("[-", "-]"), "+": ("{+", "+}")}
    return "".join(marks[op][0] + text + marks[op][1] for op, text in words)


def text_diff(
    old: str,
    new: str,
    *,
    old_label: str = "old",
    new_label: str = "new",
    context: int = CONTEXT_LINES,
) -> list[str]:
    """A unified diff of two texts, one list item per line, without line terminators."""
    return [
        line.rstrip("\r\n")
        for line in difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            fromfile=old_label,
            tofile=new_label,
            n=context,
            lineterm="",
        )
    ]


def _decode_text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _parse_json(data: bytes) -> tuple[bool, Any]:
    try:
        return True, json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False, None


def diff_snapshots(
    old: bytes,
    old_media_type: str,
    new: bytes,
    new_media_type: str,
    *,
    old_label: str = "old",
    new_label: str = "new",
    max_fields: int = MAX_FIELDS,
    max_lines: int = MAX_DIFF_LINES,
    max_bytes: int | None = MAX_DIFF_BYTES,
) -> Diff:
    """Compare two snapshots, choosing the comparison by media type. Snapshots over
    ``max_bytes`` are only compared by size (kind ``large``)."""
    sizes = (len(old), len(new))
    if max_bytes is not None and max(sizes) > max_bytes:
        return Diff("large", *sizes)
    if is_json_media(old_media_type) and is_json_media(new_media_type):
        old_ok, old_value = _parse_json(old)
        new_ok, new_value = _parse_json(new)
        if old_ok and new_ok:
            changes = json_changes(old_value, new_value)
            kept = changes[:max_fields]
            return Diff("json", *sizes, fields=kept, omitted=len(changes) - len(kept))
    textual = (is_text_media(old_media_type) and is_text_media(new_media_type)) or (
        is_json_media(old_media_type) and is_json_media(new_media_type)
    )
    if textual:
        old_text, new_text = _decode_text(old), _decode_text(new)
        if old_text is not None and new_text is not None:
            lines = text_diff(old_text, new_text, old_label=old_label, new_label=new_label)
            shown = lines[:max_lines]
            return Diff("text", *sizes, lines=shown, omitted=len(lines) - len(shown))
    return Diff("binary", *sizes)

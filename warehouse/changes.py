"""What kind of change one revision of a JSON record is: content, or metadata only.

A source may declare which fields of its stored JSON record are *metadata*: things about
the record rather than the record itself, which change without anyone editing it (Forem's
author profile inside every comment, fields the API adds over time). The bytes are stored
as served; this classification is read from two stored bodies when drift is read. Pure
logic: no I/O, no SQL.

A field is named by its dotted path (``user.name``); a declared pattern matches a path, or
anything below it, with shell wildcards per the whole dotted text (``ai_disclosure_*``
matches ``ai_disclosure_label``; ``user`` matches ``user`` and ``user.website_url``).
A list is one value: a change inside it is a change of the list's path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import orjson

CONTENT = "content"
METADATA = "metadata"


@dataclass(frozen=True)
class Change:
    """The fields that differ between two revisions, split into content and metadata.
    A change is ``metadata`` when every differing field is declared metadata."""

    content_paths: tuple[str, ...]
    metadata_paths: tuple[str, ...]

    @property
    def kind(self) -> str:
        return METADATA if self.metadata_paths and not self.content_paths else CONTENT

    @property
    def metadata_only(self) -> bool:
        return self.kind == METADATA

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "content_fields": list(self.content_paths),
            "metadata_fields": list(self.metadata_paths),
        }


def changed_paths(old: Any, new: Any, prefix: str = "") -> Iterator[str]:
    """The dotted paths at which two JSON values differ, in sorted key order: into objects
    on both sides; anything else (a list, a scalar, an object on one side only) is one
    value at its path."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                yield path
            elif old[key] != new[key]:
                yield from changed_paths(old[key], new[key], path)
    elif old != new or type(old) is not type(new):
        yield prefix


def is_metadata(path: str, patterns: Sequence[str]) -> bool:
    """True when ``path`` or one of the objects it is inside matches a declared pattern."""
    parts = path.split(".")
    prefixes = [".".join(parts[: n + 1]) for n in range(len(parts))]
    return any(fnmatchcase(p, pattern) for pattern in patterns for p in prefixes)


def classify(old_body: bytes, new_body: bytes, patterns: Sequence[str]) -> Change:
    """The change from one stored JSON body to another under the declared metadata
    ``patterns``. Bodies that are not both JSON objects change as a whole: content."""
    try:
        old, new = orjson.loads(old_body), orjson.loads(new_body)
    except orjson.JSONDecodeError:
        return Change(("",), ())
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return Change(("",) if old != new else (), ())
    content: list[str] = []
    metadata: list[str] = []
    for path in changed_paths(old, new):
        (metadata if is_metadata(path, patterns) else content).append(path)
    return Change(tuple(content), tuple(metadata))

"""The transparency log's entries: one small canonical byte string per snapshot-citing fact
(pure: no warehouse here).

An entry is UTF-8 text, one field a line, in a fixed order per kind::

    receipts-log-entry v1
    kind revision
    doc_id nhtsa/complaint/11561420
    document complaint
    revision 1
    content_hash 9f2c...
    reason
    source_url https://api.nhtsa.gov/complaints/...
    source_commit
    seen_at 2026-01-02T03:04:05.123456Z
    run 12

- The first line names the format and its version.
- Each later line is ``<name> <value>``; a value that is absent (SQL NULL) is written as the
  name alone, with no space, so an absent value and an empty one differ.
- In a value, ``\\`` is written ``\\\\``, a line feed ``\\n`` and a carriage return ``\\r``;
  nothing else is escaped.
- Integers are decimal; instants are UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (microseconds).
- Every line, the last included, ends with a line feed.

The kinds: ``revision`` (a document's content), ``restoration`` (content after a tombstone),
``tombstone`` (the document disappeared upstream or left the manifest) share the revision
fields (:data:`REVISION_FIELDS`); ``push`` (a publish's receipt) has :data:`PUSH_FIELDS`.
The SQL that builds the same bytes from the warehouse's rows is
:mod:`warehouse.tlog.entries_sql`; the two are tested to agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from warehouse.errors import LogEntryError as EntryError

HEADER = "receipts-log-entry v1"
REVISION_KINDS = ("revision", "restoration", "tombstone")
PUSH_KIND = "push"
KINDS = (*REVISION_KINDS, PUSH_KIND)

REVISION_FIELDS = (
    "kind",
    "doc_id",
    "document",
    "revision",
    "content_hash",
    "reason",
    "source_url",
    "source_commit",
    "seen_at",
    "run",
)
PUSH_FIELDS = (
    "kind",
    "push_id",
    "target",
    "namespace",
    "manifest",
    "run",
    "status",
    "applied",
    "unrelated_before",
    "unrelated_after",
    "touched_by_us",
    "transaction_ids",
)

Value = str | int | datetime | None


@dataclass(frozen=True)
class Entry:
    """A parsed entry: its kind and its fields (every field of the kind, in order; absent
    values are None), all as text."""

    kind: str
    fields: tuple[tuple[str, str | None], ...]

    def get(self, name: str) -> str | None:
        return dict(self.fields).get(name)


def instant(value: datetime) -> str:
    """An instant as an entry writes it: UTC, microseconds, ``Z``."""
    if value.tzinfo is None:
        raise ValueError("a log entry's instant needs a time zone")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def unescape(text: str) -> str:
    out = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "")
        replaced = {"\\": "\\", "n": "\n", "r": "\r"}.get(following)
        if replaced is None:
            raise EntryError(f"unknown escape \\{following} in a log entry")
        out.append(replaced)
    return "".join(out)


def _text(value: Value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a log entry has no boolean values")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return instant(value)
    return value


def fields_for(kind: str) -> tuple[str, ...]:
    if kind in REVISION_KINDS:
        return REVISION_FIELDS
    if kind == PUSH_KIND:
        return PUSH_FIELDS
    raise EntryError(f"unknown log entry kind {kind!r} (known: {', '.join(KINDS)})")


def format_entry(values: Mapping[str, Value]) -> bytes:
    """The canonical bytes of an entry whose ``values`` name every field of its kind."""
    kind = str(values["kind"])
    names = fields_for(kind)
    missing = [n for n in names if n not in values]
    extra = [n for n in values if n not in names]
    if missing or extra:
        raise ValueError(f"a {kind} entry has the fields {', '.join(names)}")
    lines = [HEADER]
    for name in names:
        text = _text(values[name])
        lines.append(name if text is None else f"{name} {escape(text)}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def parse(entry: bytes) -> Entry:
    """The fields of an entry's bytes; :class:`EntryError` for anything but the canonical
    form of a known version and kind (an entry parsed and formatted again is the same)."""
    try:
        text = entry.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EntryError("a log entry is UTF-8 text") from exc
    if not text.endswith("\n"):
        raise EntryError("a log entry ends with a line feed")
    lines = text[:-1].split("\n")
    if lines[0] != HEADER:
        raise EntryError(f"a log entry starts with {HEADER!r}, not {lines[0][:40]!r}")
    pairs: list[tuple[str, str | None]] = []
    for line in lines[1:]:
        name, space, value = line.partition(" ")
        pairs.append((name, unescape(value) if space else None))
    if not pairs or pairs[0][0] != "kind" or pairs[0][1] is None:
        raise EntryError("a log entry's first field is its kind")
    kind = pairs[0][1]
    names = fields_for(kind)
    if tuple(name for name, _ in pairs) != names:
        raise EntryError(f"a {kind} entry has the fields {', '.join(names)}, in that order")
    return Entry(kind, tuple(pairs))


def revision_entry(
    *,
    doc_id: str,
    document: str | None,
    revision: int,
    content_hash: str | None,
    tombstone: bool,
    reason: str | None,
    restores: bool,
    source_url: str | None,
    source_commit: str | None,
    seen_at: datetime | None,
    run: int,
) -> bytes:
    """The entry of a revision row (``document``: its document's kind, from ``documents``;
    ``restores``: the revision before it is a tombstone)."""
    kind = "tombstone" if tombstone else ("restoration" if restores else "revision")
    return format_entry(
        {
            "kind": kind,
            "doc_id": doc_id,
            "document": document,
            "revision": revision,
            "content_hash": content_hash,
            "reason": reason,
            "source_url": source_url,
            "source_commit": source_commit,
            "seen_at": seen_at,
            "run": run,
        }
    )


def push_entry(
    *,
    push_id: int,
    target: str,
    namespace: str,
    manifest: str | None,
    run: int | None,
    status: str | None,
    applied: int | None,
    unrelated_before: int | None,
    unrelated_after: int | None,
    touched_by_us: int | None,
    transaction_ids: list[str],
) -> bytes:
    """The entry of a push's receipt (its 'finished' row); ``transaction_ids`` are written
    space-separated, in the order the push sent them."""
    return format_entry(
        {
            "kind": PUSH_KIND,
            "push_id": push_id,
            "target": target,
            "namespace": namespace,
            "manifest": manifest,
            "run": run,
            "status": status,
            "applied": applied,
            "unrelated_before": unrelated_before,
            "unrelated_after": unrelated_after,
            "touched_by_us": touched_by_us,
            "transaction_ids": " ".join(transaction_ids),
        }
    )

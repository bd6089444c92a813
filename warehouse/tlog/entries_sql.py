"""The SQL that builds a revision's log entry (:mod:`warehouse.tlog.entries`) from the
columns of the statement that writes it, or of the row that records it: one expression,
evaluated in bulk, that produces the same bytes as :func:`warehouse.tlog.entries.revision_entry`.
"""

from __future__ import annotations

from typing import NamedTuple

from warehouse.tlog.entries import HEADER, REVISION_FIELDS


class RevisionColumns(NamedTuple):
    """SQL expressions for each value of a revision entry."""

    doc_id: str
    document: str  # the document's kind (``documents.kind``)
    revision: str
    content_hash: str
    tombstone: str  # a boolean
    reason: str
    restores: str  # a boolean: the revision before is a tombstone
    source_url: str
    source_commit: str
    seen_at: str  # a TIMESTAMPTZ
    run: str


def _escaped(value: str) -> str:
    return f"replace(replace(replace({value}, '\\', '\\\\'), chr(10), '\\n'), chr(13), '\\r')"


def instant_sql(value: str) -> str:
    """A TIMESTAMPTZ as UTC text: its microseconds since the epoch made a plain timestamp,
    formatted (a third of the time of ``timezone('UTC', ...)``, whatever the session's
    time zone)."""
    return f"strftime(make_timestamp(epoch_us({value})), '%Y-%m-%dT%H:%M:%S.%fZ')"


def revision_kind(c: RevisionColumns) -> str:
    return (
        f"CASE WHEN {c.tombstone} THEN 'tombstone' "
        f"WHEN coalesce({c.restores}, false) THEN 'restoration' ELSE 'revision' END"
    )


# The fields whose values are text from upstream or the rows (escaped when they hold a
# backslash, a line feed or a carriage return); the others are a kind, integers and an
# instant, which never do.
_TEXT_FIELDS = ("doc_id", "document", "content_hash", "reason", "source_url", "source_commit")


def _lines(values: dict[str, str], escape: bool) -> str:
    """``concat`` of the header and each ``name value\\n`` (``name\\n`` when the value is
    NULL: ``' ' || NULL`` is NULL, which ``concat`` leaves out), the text values escaped if
    ``escape``."""
    parts = [f"'{HEADER}', chr(10)"]
    for name in REVISION_FIELDS:
        value = values[name]
        if escape and name in _TEXT_FIELDS:
            value = _escaped(value)
        parts.append(f"'{name}', ' ' || {value}, chr(10)")
    return f"concat({', '.join(parts)})"


def revision_entry(c: RevisionColumns) -> str:
    """An expression whose value is the entry's bytes (a BLOB).

    One ``concat`` per row; the escaping (three ``replace`` per text value) only for the
    rows with a character to escape, found by one look at their text values together (it
    made an ingest batch's entries three times faster to build)."""
    values = {
        "kind": revision_kind(c),
        "doc_id": c.doc_id,
        "document": c.document,
        "revision": f"CAST({c.revision} AS VARCHAR)",
        "content_hash": c.content_hash,
        "reason": c.reason,
        "source_url": c.source_url,
        "source_commit": c.source_commit,
        "seen_at": instant_sql(c.seen_at),
        "run": f"CAST({c.run} AS VARCHAR)",
    }
    for name in _TEXT_FIELDS:
        values[name] = f"CAST({values[name]} AS VARCHAR)"
    text = f"concat({', '.join(values[name] for name in _TEXT_FIELDS)})"
    special = f"(contains({text}, '\\') OR contains({text}, chr(10)) OR contains({text}, chr(13)))"
    return (
        f"encode(CASE WHEN {special} THEN {_lines(values, True)} ELSE {_lines(values, False)} END)"
    )


# The entry of each row of ``revisions`` (aliased ``r``), rebuilt from the rows: its
# document's kind from ``documents`` (``d``), and whether it restores from the revision
# before it (``p``).
ROW_COLUMNS = RevisionColumns(
    doc_id="r.doc_id",
    document="d.kind",
    revision="r.revision",
    content_hash="r.content_hash",
    tombstone="r.tombstone",
    reason="r.tombstone_reason",
    restores="p.tombstone",
    source_url="r.source_url",
    source_commit="r.source_commit",
    seen_at="r.fetched_at",
    run="r.valid_from_run",
)

# The rows of ``revisions`` with their document's kind and the revision before each,
# restricted by ``where`` (on ``r``) and ``docs`` (a condition on ``doc_id`` that holds
# for every row ``where`` keeps: the documents and earlier revisions read are only theirs);
# ``revisions`` and ``documents`` name FROM items holding at least those rows (the tables,
# unless warehouse.row_hints says where they are).
_ROWS_WITH_CONTEXT = """
FROM {revisions} r
LEFT JOIN (SELECT doc_id, min(kind) AS kind FROM {documents} WHERE {docs} GROUP BY doc_id) d
    ON d.doc_id = r.doc_id
LEFT JOIN (SELECT doc_id, revision, tombstone FROM {revisions} WHERE {docs}) p
    ON p.doc_id = r.doc_id AND p.revision = r.revision - 1
WHERE {where}
"""


def rows_with_context(
    where: str = "true",
    docs: str = "true",
    *,
    revisions: str = "revisions",
    documents: str = "documents",
) -> str:
    """The FROM and WHERE clauses of revision rows with their context (see above)."""
    return _ROWS_WITH_CONTEXT.format(
        where=where, docs=docs, revisions=revisions, documents=documents
    )

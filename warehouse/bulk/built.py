"""A backfill's built documents as Arrow: the lines a block's build reads, the documents it
builds (each body hashed), and the ones handed over for a commit."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.bulk.spec import RowJudge
from warehouse.value_hashes import value_sha256

LINES_SCHEMA = pa.schema(
    [
        ("number", pa.int64()),
        ("text", pa.string()),
        ("key", pa.string()),
        ("end_line", pa.int64()),
        ("n", pa.int32()),
        ("year", pa.int32()),
        ("plain_doc", pa.bool_()),
        ("doc_rows", pa.int64()),
    ]
)

BUILT_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("end_line", pa.int64()),
        ("body", pa.binary()),
        ("content_hash", pa.string()),
        ("size", pa.int64()),
        ("source_format", pa.string()),
        ("lines", pa.string()),
    ]
)


def hashed(table: pa.Table) -> pa.Table:
    """``table`` (``doc_id, end_line, body, source_format, lines``) with each body's
    ``content_hash`` and ``size`` (the columns of a batch's built documents). Hashed here, not in
    SQL: OpenSSL's SHA-256 runs several times faster than DuckDB's. The bodies are read
    where they are, chunk by chunk: joined into one array first, they were copied once more
    (about 5% of a first backfill's page faults)."""
    bodies = table["body"]
    hashes = [digest for chunk in bodies.chunks for digest in value_sha256(chunk)]
    sizes = pc.binary_length(bodies).cast(pa.int64())
    return pa.table(
        [table["doc_id"], table["end_line"], bodies, pa.array(hashes, pa.string()), sizes,
         table["source_format"], table["lines"]],
        schema=BUILT_SCHEMA,
    )  # fmt: skip


def with_text(planned: pa.Table, chunk: pa.Table, first: int) -> pa.Table:
    """``planned`` (lines of a block, as :data:`BLOCK_LINES` reads them) with each line's
    text, taken from ``chunk`` (the block's ``number``, ``text``; line ``first`` first)."""
    text = chunk["text"].take(pc.subtract(planned["number"], first))
    columns = {name: planned[name] for name in planned.column_names}
    return pa.table({**columns, "text": text}).select(LINES_SCHEMA.names).cast(LINES_SCHEMA)


def split_built(tables: Sequence[pa.Table], hi: int) -> tuple[list[pa.Table], list[pa.Table]]:
    """Built documents ending by line ``hi``, and the others. Each table holds one block's
    documents, so all but the block a commit's last line falls in are wholly on one side:
    only that one is filtered (copied); the bytes of the rest are passed on as they are."""
    due: list[pa.Table] = []
    later: list[pa.Table] = []
    for table in tables:
        if not len(table):
            continue
        lowest, highest = pc.min_max(table["end_line"]).values()
        if highest.as_py() <= hi:
            due.append(table)
        elif lowest.as_py() > hi:
            later.append(table)
        else:
            now_due = pc.less_equal(table["end_line"], hi)
            due.append(table.filter(now_due))
            later.append(table.filter(pc.invert(now_due)))
    return due, later


def judged_documents(lines: pa.Table, doc_prefix: str, judge: RowJudge) -> pa.Table:
    """The documents of ``lines`` (``key``, ``number``, ``text``: the lines of documents with
    a control character in a row, which JSON escapes as ``\\u00XX``), built by the source's
    judge, as :data:`BUILT_SCHEMA`."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for row in sorted(
        lines.select(["key", "number", "text"]).to_pylist(),
        key=lambda r: (r["key"], r["number"]),
    ):
        grouped.setdefault(str(row["key"]), []).append((row["number"], row["text"]))
    built = []
    for key, doc_lines in grouped.items():
        body, source_format = judge.body([text for _, text in doc_lines])
        numbers = [number for number, _ in doc_lines]
        built.append((doc_prefix + key, numbers[-1], body, source_format, numbers))
    return pa.table(
        {
            "doc_id": [b[0] for b in built],
            "end_line": [b[1] for b in built],
            "body": [b[2] for b in built],
            "content_hash": [hashlib.sha256(b[2]).hexdigest() for b in built],
            "size": [len(b[2]) for b in built],
            "source_format": [b[3] for b in built],
            "lines": [",".join(map(str, b[4])) for b in built],
        },
        schema=BUILT_SCHEMA,
    )

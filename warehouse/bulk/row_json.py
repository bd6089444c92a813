"""A block's planned lines as canonical JSON v1, in Arrow: each row's object, and the whole
bytes of each document of one row.

A row's object is its fields in key order (code-point order of the names), each value
escaped (``\\`` and ``"``; a line with a control character is not plain, and its document
is built by the row judge). The line is escaped whole, split at its tabs, and each field is
put between the literal pieces around it by one element-wise join: Arrow kernels over the
whole block, no per-row Python and no GIL held. Three documents in four are of one row: their
bytes are assembled here too. Only the rows of documents of several rows are grouped in SQL
(:func:`warehouse.bulk.build_sql.build_sql`, in the build engine's own database).

(A block of 3,667 complaints, 4 MB: 15-19 ms for the rows' objects, where splitting and
concatenating them in DuckDB took 50-70 ms; the block's documents, 30 ms against 50-70 ms.)
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from warehouse.bulk.spec import FlatSpec, ShapeSpec
from warehouse.errors import WarehouseError

# A block's lines with each row's object: what :func:`warehouse.bulk.build_sql.build_sql`
# groups, and what :func:`single_row_documents` turns into documents.
ROWED_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("end_line", pa.int64()),
        ("number", pa.int64()),
        ("year", pa.int32()),
        ("doc_rows", pa.int64()),
        ("row_json", pa.string()),
        ("label", pa.string()),
    ]
)


def json_name(name: str) -> str:
    """A field name as a JSON string (names are plain ASCII words)."""
    if any(c in name for c in '"\\') or not name.isprintable():
        raise ValueError(f"field name {name!r} needs escaping")
    return '"' + name + '"'


def _row_objects(text: pa.Array, shape: ShapeSpec) -> pa.Array:
    """Each line of ``text`` (all of ``shape``) as its row's JSON object."""
    escaped = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
    fields = pc.split_pattern(escaped, "\t")
    pieces: list[object] = []
    for position, (name, index) in enumerate(zip(shape.sorted_names, shape.order, strict=True)):
        pieces.append(("{" if position == 0 else '",') + json_name(name) + ':"')
        pieces.append(pc.list_element(fields, index))
    pieces.append('"}')
    return pc.binary_join_element_wise(*pieces, "")


def rowed(lines: pa.Table, spec: FlatSpec) -> pa.Table:
    """``lines`` (plain lines of whole documents: ``number``, ``text``, ``key``,
    ``end_line``, ``n``, ``year``, ``doc_rows``) with each row's object and its layout's
    label (:data:`ROWED_SCHEMA`), grouped by layout."""
    parts = []
    left = len(lines)
    for shape in spec.shapes:
        of_shape = pc.equal(lines["n"], shape.count)
        some = lines if pc.all(of_shape).as_py() else lines.filter(of_shape)
        if not len(some):
            continue
        left -= len(some)
        objects = _row_objects(some["text"].combine_chunks(), shape)
        columns = [some[name] for name in ROWED_SCHEMA.names[:-2]]
        parts.append(
            pa.table(
                [*columns, objects, pa.repeat(pa.scalar(shape.label), len(some))],
                schema=ROWED_SCHEMA,
            )
        )
    if left:  # every planned plain line was accepted as a row of one of the layouts
        raise WarehouseError(f"{left} planned lines have a number of fields of no layout")
    return pa.concat_tables(parts) if parts else ROWED_SCHEMA.empty_table()


def single_row_documents(rows: pa.Table, spec: FlatSpec) -> pa.Table:
    """The documents of one row of ``rows`` (:data:`ROWED_SCHEMA`, ``doc_rows`` 1 each):
    ``doc_id, end_line, body, source_format, lines``, as the grouping statement gives those
    of several."""
    years = pc.fill_null(pc.cast(rows["year"], pa.string()), "")
    body = pc.binary_join_element_wise(
        '{"modelYears":[', years, '],"rows":[', rows["row_json"], "]}", ""
    )
    return pa.table(
        {
            "doc_id": pc.binary_join_element_wise(spec.doc_prefix, rows["key"], ""),
            "end_line": rows["end_line"],
            "body": pc.cast(body, pa.binary()),
            "source_format": pc.binary_join_element_wise(
                spec.source_format + "/", rows["label"], ""
            ),
            "lines": pc.cast(rows["number"], pa.string()),
        }
    )

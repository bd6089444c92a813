"""The SQL of a backfill's second pass: a block's planned lines, then the statement, made
from the spec, that turns them into documents (run in the build engine's own database,
:mod:`warehouse.bulk.build_engine`)."""

from __future__ import annotations

from warehouse.bulk.plan_sql import SCRATCH
from warehouse.bulk.spec import FlatSpec, ShapeSpec

# What the plan says of the lines of documents to build that a block holds; their text is
# taken from the block by position (in Arrow: no join).
BLOCK_LINES = f"""
SELECT number, key, end_line, n, year, plain_doc, doc_rows FROM {SCRATCH}.lines
WHERE number BETWEEN $first AND $last
"""


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _json_name(name: str) -> str:
    """A field name as a JSON string (names are plain ASCII words)."""
    if any(c in name for c in '"\\') or not name.isprintable():
        raise ValueError(f"field name {name!r} needs escaping")
    return '"' + name + '"'


def _field(index: int) -> str:
    return f"p[{index + 1}]"


def _by_count(spec: FlatSpec, expr: object, otherwise: str = "NULL") -> str:
    if not spec.shapes:
        return otherwise
    cases = " ".join(f"WHEN {s.count} THEN {expr(s)}" for s in spec.shapes)  # type: ignore[operator]
    return f"CASE n {cases} ELSE {otherwise} END"


def _row_json(shape: ShapeSpec) -> str:
    """One row as canonical JSON: its fields in key order, each value escaped (the line was
    escaped whole before it was split: tabs are not escaped)."""
    parts = []
    for position, (name, index) in enumerate(zip(shape.sorted_names, shape.order, strict=True)):
        opening = "{" if position == 0 else ","
        parts.append(literal(f'{opening}{_json_name(name)}:"'))
        parts.append(_field(index))
        parts.append("'\"'")
    parts.append("'}'")
    return "concat(" + ", ".join(parts) + ")"


def _label(shape: ShapeSpec) -> str:
    return literal(shape.label)


def build_sql(spec: FlatSpec) -> str:
    """The documents of ``_flat_lines`` (whole and plain) with their bytes: rows in line
    order (a sorted list of ``(line, row)``: cheaper than an ordered aggregate). A document
    of one row, as most are, is its row: it is not grouped at all."""
    row_json = _by_count(spec, _row_json)
    label = _by_count(spec, _label)
    prefix = literal(spec.doc_prefix)
    format_prefix = literal(spec.source_format + "/")
    return f"""
    WITH rowed AS (
        SELECT key, end_line, number, year, doc_rows, {row_json} AS row_json, {label} AS label
        FROM (
            SELECT key, end_line, number, year, n, doc_rows,
                   string_split(replace(replace(text, '\\', '\\\\'), '"', '\\"'), chr(9))
                       AS p
            FROM _flat_lines
        )
    )
    SELECT doc_id, end_line,
           encode(concat('{{"modelYears":[', coalesce(array_to_string(years, ','), ''),
                         '],"rows":[', array_to_string(list_transform(rs, lambda e: e.j), ','),
                         ']}}')) AS body,
           {format_prefix} || array_to_string(labels, '+') AS source_format,
           array_to_string(list_transform(rs, lambda e: e.n), ',') AS lines
    FROM (
        SELECT {prefix} || key AS doc_id, max(end_line) AS end_line,
               list_sort(list({{'n': number, 'j': row_json}})) AS rs,
               list_sort(list_distinct(list(year) FILTER (WHERE year IS NOT NULL))) AS years,
               list_sort(list_distinct(list(label))) AS labels
        FROM rowed WHERE doc_rows > 1
        GROUP BY key
    )
    UNION ALL
    SELECT {prefix} || key, end_line,
           encode(concat('{{"modelYears":[', coalesce(CAST(year AS VARCHAR), ''), '],"rows":[',
                         row_json, ']}}')),
           {format_prefix} || label, CAST(number AS VARCHAR)
    FROM rowed WHERE doc_rows = 1
    """

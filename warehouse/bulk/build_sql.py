"""The SQL of a backfill's second pass: a block's planned lines, then the statement, made
from the spec, that groups the rows of documents of several rows into documents (run in the
build engine's own database, :mod:`warehouse.bulk.build_engine`; each row's object is made
in Arrow first, :mod:`warehouse.bulk.row_json`)."""

from __future__ import annotations

from warehouse.bulk.plan_sql import SCRATCH
from warehouse.bulk.spec import FlatSpec
from warehouse.sql_literal import string as literal

# What the plan says of the lines of documents to build that a block holds; their text is
# taken from the block by position (in Arrow: no join).
BLOCK_LINES = f"""
SELECT number, key, end_line, n, year, plain_doc, doc_rows FROM {SCRATCH}.lines
WHERE number BETWEEN $first AND $last
"""


def build_sql(spec: FlatSpec) -> str:
    """The documents of several rows of ``_flat_rows`` (whole, plain, each row's object
    made: :data:`warehouse.bulk.row_json.ROWED_SCHEMA`) with their bytes: rows in line order
    (a sorted list of ``(line, row)``: cheaper than an ordered aggregate). Those of one row
    are assembled in Arrow (:func:`warehouse.bulk.row_json.single_row_documents`)."""
    prefix = literal(spec.doc_prefix)
    format_prefix = literal(spec.source_format + "/")
    return f"""
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
        FROM _flat_rows
        GROUP BY key
    )
    """

"""A flat file's rows into documents, in bulk inside DuckDB.

A backfill hands over its file a few MB at a time as Arrow tables of ``(number, text, h)``
(``h``: the SHA-256 of the raw line, 32 bytes). Work per line runs vectorised here, on every
core:

1. **Check** (:meth:`FlatBulk.check`, in Arrow: :mod:`warehouse.flatcheck`). A line is
   accepted when it fully matches its layout's pattern: field count, identity, dates and
   model year of the plain shapes the rules of :class:`FlatSpec` allow, and no control
   character; the vehicle filter is applied to accepted rows. Lines this cannot vouch for
   come back to the caller, whose line-at-a-time checker has the last word
   (:meth:`FlatBulk.add_checked`). Wanted rows are kept in a scratch database as
   ``(number, key, h, field count, model year, plain)``: no text.
2. **Plan** (:meth:`FlatBulk.plan`). Rows are grouped into documents: each one's last line
   and the fingerprint of its lines. A document whose fingerprint is the latest recorded
   for it (``input_fingerprints``), and whose current revision still has the content hash
   that fingerprint produced, is unchanged: its bytes are never built.
3. **Build** (:meth:`FlatBulk.build`). The file is read again for the lines of the other
   documents; when a document's last line has been read, its canonical JSON v1 is assembled
   from its rows' fields (keys in code-point order, ``\\`` and ``"`` escaped) and hashed.
   A document with a control character in a row is left to the caller (JSON escapes those
   as ``\\u00XX``; :meth:`FlatBulk.add_built` takes its bytes).
4. **Commit** (:meth:`FlatBulk.commit`). Documents are committed in the order of their last
   line, a range of lines per transaction, classified as the ingest engine classifies
   (new, changed, unchanged, restored); the range's end is the checkpoint a resumed run
   starts after. A range whose documents the plan found unchanged and already sighted at
   this file (every range, when the same file is backfilled again) writes only that. A
   commit may run in another thread while the next block is built: the build reads the
   plan's lines on a connection of its own and runs its statement in a database of its
   own (:mod:`warehouse.build_engine`; :meth:`FlatBulk.take_built` hands a range's
   documents over). On
   a DuckDB file the backfill is the only writer from start to end, so the warehouse's
   state read by the plan still holds and no batch scans the growing tables; on a lake
   each batch is classified inside its transaction, and a document the plan left unbuilt
   whose current revision another writer has since changed stops the run (run it again:
   the new plan builds it).

The scratch database is attached to the warehouse's connection, so it is bounded by the
warehouse's memory limit: in memory, spilling to the warehouse's temporary directory, or a
DuckDB file in a directory the caller names. The plan's steps (grouping, and the joins with
what the warehouse knows) may be given a larger limit (``plan_memory_limit``): they run
before the build database opens, and the backfill gives them its allowance too. The plan
kept for pass 2 is made under the warehouse's own limit: a pass 2 that follows a plan whose
tables were all made under the larger one faulted in more pages (11.2-11.4 million against
9.5-9.6 million at two million rows). (In memory, its tables are neither compressed
nor checkpointed: 600,000 rows backfilled ~5% faster, and re-run ~15% faster, than with a
file.)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from duckdb import DuckDBPyConnection

from warehouse.build_engine import DEFAULT_MEMORY_LIMIT as DEFAULT_BUILD_MEMORY_LIMIT
from warehouse.build_engine import BuildEngine
from warehouse.clock import now
from warehouse.conflicts import retrying_conflicts
from warehouse.errors import WarehouseError
from warehouse.flatcheck import LineCheck
from warehouse.ingest import Counts
from warehouse.slices import in_slices
from warehouse.store import Warehouse
from warehouse.value_hashes import value_sha256

SCRATCH = "backfill_scratch"


@dataclass(frozen=True)
class ShapeSpec:
    """One layout of a flat file (its rows have ``count`` fields), for the bulk path.

    Indexes are 0-based positions in a line's fields. A row is accepted in bulk when its
    identity field fully matches ``key_pattern`` (the identity is then the field itself,
    through an integer when ``key_numeric``), each date field is blank, ``00000000`` or a
    calendar date ``YYYYMMDD``, the model year is blank or four digits, and it holds no
    control character (:func:`warehouse.flatcheck.line_pattern`)."""

    count: int
    label: str
    sorted_names: tuple[str, ...]
    order: tuple[int, ...]
    key_index: int | None
    key_pattern: str
    key_numeric: bool
    date_indexes: tuple[int, ...]
    year_index: int | None
    make_index: int | None
    model_index: int | None


@dataclass(frozen=True)
class FlatSpec:
    """A flat file's layouts and what a backfill of it keeps."""

    shapes: tuple[ShapeSpec, ...]
    doc_prefix: str  # "nhtsa/complaint/": a document's id is the prefix and its key
    kind: str  # the documents' kind
    source_format: str  # "flat:FLAT_CMPL"; a document's is this, "/" and its rows' labels
    salt: str  # what else the bytes depend on: canonical form version, layout names
    make: str | None = None
    model: str | None = None
    years: tuple[int, int] | None = None

    def only(self, counts: frozenset[int]) -> FlatSpec:
        """This spec with only the layouts of ``counts`` fields: SQL made from it treats the
        rows of the others as it treats rows of no layout."""
        return replace(self, shapes=tuple(s for s in self.shapes if s.count in counts))


@dataclass(frozen=True)
class Checked:
    rows: int  # lines checked (not empty, not the header)
    matched: int  # rows accepted here that the vehicle filter keeps
    suspects: list[int]  # lines the caller must check itself


@dataclass(frozen=True)
class Plan:
    documents: int
    to_build: int
    rows: int  # rows of the planned documents
    last_needed_line: int  # 0 when nothing is to be built
    boundaries: list[int]  # the last line of each commit's range


# -- SQL text built from the spec --------------------------------------------------------
def _literal(text: str) -> str:
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
        parts.append(_literal(f'{opening}{_json_name(name)}:"'))
        parts.append(_field(index))
        parts.append("'\"'")
    parts.append("'}'")
    return "concat(" + ", ".join(parts) + ")"


def _label(shape: ShapeSpec) -> str:
    return _literal(shape.label)


def build_sql(spec: FlatSpec) -> str:
    """The documents of ``_flat_lines`` (whole and plain) with their bytes: rows in line
    order (a sorted list of ``(line, row)``: cheaper than an ordered aggregate). A document
    of one row, as most are, is its row: it is not grouped at all."""
    row_json = _by_count(spec, _row_json)
    label = _by_count(spec, _label)
    prefix = _literal(spec.doc_prefix)
    format_prefix = _literal(spec.source_format + "/")
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
        schema=_PY_BUILT_SCHEMA,
    )  # fmt: skip


# -- fixed SQL ----------------------------------------------------------------------------
_CREATE_SCRATCH = f"""
CREATE TABLE {SCRATCH}.rows (
    number BIGINT, key VARCHAR, h BLOB, n INTEGER, year INTEGER, plain BOOLEAN
)
"""

# Documents and their fingerprints; then what the warehouse knows of them.
#
# A fingerprint is the SHA-256 of the salt and of its lines' digests in lowercase hex, in
# line order (kept as 32 bytes here, as the lines' are). Most documents are of one line:
# one aggregate without lists groups every row, and fingerprints those; only the rows of
# documents of several lines are then grouped again, into lists. (Two million rows, three
# in four documents of one line: 2.7-2.9 s, where grouping every document into a list took
# 5.1 s.)
_GROUP = f"""
CREATE TABLE {SCRATCH}.groups AS
SELECT key, max(number) AS end_line, count(*) AS rows,
       CASE WHEN count(*) = 1 THEN unhex(sha256($salt || lower(hex(any_value(h))))) END
           AS fingerprint,
       bool_and(plain) AS plain
FROM {SCRATCH}.rows
GROUP BY key
HAVING max(number) > $after
"""

_MULTI_ROWS = f"SELECT coalesce(sum(rows), 0) FROM {SCRATCH}.groups WHERE rows > 1"

_CREATE_MULTI = f"CREATE TABLE {SCRATCH}.multi (key VARCHAR, fingerprint BLOB)"

# One share of the documents of several lines (by a hash of their key) at a time: the lists
# of a share's rows are all in memory at once. The rows are put in order by sorting each
# document's list of (line, digest): cheaper than an ordered aggregate
# (``string_agg(... ORDER BY number)``).
_GROUP_MULTI = f"""
INSERT INTO {SCRATCH}.multi
SELECT key,
       unhex(sha256($salt || lower(array_to_string(
           list_transform(list_sort(list({{'n': number, 'h': h}})), lambda e: hex(e.h)), ''
       )))) AS fingerprint
FROM {SCRATCH}.rows
WHERE key IN (SELECT key FROM {SCRATCH}.groups WHERE rows > 1) AND hash(key) % $shares = $share
GROUP BY key
"""

# Rows grouped into lists at a time, at most.
ROWS_PER_SHARE = 400_000

# What the warehouse knows of the planned documents, one step at a time, each step's result
# kept in the scratch database: a step holds one aggregate or one join in memory, never
# several hash tables at once (which a small memory limit cannot hold for millions of
# documents), and what it made can be spilled while the next step runs. Each step's table is
# made from its query, and the tables no later step reads are dropped as soon as it is made
# (:data:`_LAST_READ_BY`): the scratch database holds no more than the next steps need, and
# spills less (re-running 600,000 rows, these steps took 2.9-3.0 s where they took 4.4-4.9 s
# while every step's table was kept until the last was made). The last one, ``docs``, is
# the plan.
#
# Documents are named by their key (the id without the kind's prefix: short enough to be
# held inline) and hashes are held as 32 bytes, not 64 hex digits: rows about half as wide
# as with ids and hex, so that two million documents spill far less under the default
# memory limit. :data:`_BATCH` gives each batch its ids and hex back.
_KEY_OF_ID = "substr(doc_id, length($prefix) + 1)"

_PLAN_STEPS = (
    (
        "plan_fingerprints",
        f"""
    SELECT {_KEY_OF_ID} AS key, unhex(arg_max(fingerprint, run_id)) AS fingerprint,
           unhex(arg_max(content_hash, run_id)) AS content_hash
    FROM input_fingerprints
    WHERE starts_with(doc_id, $prefix)
    GROUP BY key
    """,
    ),
    (
        "plan_current",
        f"""
    SELECT {_KEY_OF_ID} AS key, max(revision) AS revision,
           unhex(arg_max(content_hash, revision)) AS content_hash,
           arg_max(tombstone, revision) AS tombstone
    FROM revisions
    WHERE starts_with(doc_id, $prefix)
    GROUP BY key
    """,
    ),
    (
        "plan_a",
        f"""
    SELECT d.* REPLACE (coalesce(d.fingerprint, m.fingerprint) AS fingerprint),
           f.fingerprint AS recorded, f.content_hash AS fingerprint_hash
    FROM {SCRATCH}.groups d LEFT JOIN {SCRATCH}.multi m USING (key)
        LEFT JOIN {SCRATCH}.plan_fingerprints f USING (key)
    """,
    ),
    (
        "plan_b",
        f"""
    SELECT a.*, cur.revision AS current_revision, cur.content_hash AS current_hash,
           cur.tombstone AS current_tombstone
    FROM {SCRATCH}.plan_a a LEFT JOIN {SCRATCH}.plan_current cur USING (key)
    """,
    ),
    (
        "plan_c",
        f"""
    SELECT b.*, b.key IN (
        SELECT {_KEY_OF_ID} FROM documents WHERE starts_with(doc_id, $prefix)
    ) AS known
    FROM {SCRATCH}.plan_b b
    """,
    ),
    (
        "plan_sightings",
        f"""
    SELECT {_KEY_OF_ID} AS key, unhex(content_hash) AS hash
    FROM sightings
    WHERE starts_with(doc_id, $prefix) AND source_url = $url AND source_commit = ''
    """,
    ),
    (
        "plan_d",
        f"""
    SELECT c.*, EXISTS (
        SELECT 1 FROM {SCRATCH}.plan_sightings s WHERE s.key = c.key AND s.hash = c.current_hash
    ) AS sighted
    FROM {SCRATCH}.plan_c c
    """,
    ),
    # In line order, so that each batch reads only its own (by the zone maps of end_line).
    (
        "docs",
        f"""
    SELECT key, end_line, rows, fingerprint, plain, fingerprint_hash,
           NOT coalesce(recorded = fingerprint AND NOT current_tombstone
                        AND current_hash = fingerprint_hash, false) AS build,
           current_revision, current_hash, current_tombstone, known, sighted
    FROM {SCRATCH}.plan_d
    ORDER BY end_line
    """,
    ),
)


def _last_read_by(steps: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Each step → the scratch tables made before it (``groups``, ``multi`` and earlier
    steps') that it reads and no later step does: they can go once it is made."""

    def reads(query: str, table: str) -> bool:
        return re.search(rf"\b{SCRATCH}\.{table}\b", query) is not None

    made = ["groups", "multi"]
    last: dict[str, tuple[str, ...]] = {}
    for position, (table, query) in enumerate(steps):
        later = [q for _, q in steps[position + 1 :]]
        last[table] = tuple(
            t for t in made if reads(query, t) and not any(reads(q, t) for q in later)
        )
        made.append(table)
    return last


_LAST_READ_BY = _last_read_by(_PLAN_STEPS)

_PLAN_LINES = f"""
CREATE TABLE {SCRATCH}.lines AS
SELECT r.number, r.key, d.end_line, r.n, r.year, d.plain AS plain_doc, d.rows AS doc_rows
FROM {SCRATCH}.rows r JOIN {SCRATCH}.docs d USING (key)
WHERE d.build
ORDER BY r.number
"""

_PLAN_SUMMARY = f"""
SELECT count(*), count(*) FILTER (WHERE build), coalesce(sum(rows), 0),
       coalesce(max(end_line) FILTER (WHERE build), 0)
FROM {SCRATCH}.docs
"""

_BOUNDARIES = f"""
SELECT end_line FROM (
    SELECT end_line, row_number() OVER (ORDER BY end_line) AS position, count(*) OVER () AS total
    FROM {SCRATCH}.docs
)
WHERE position % $size = 0 OR position = total
ORDER BY end_line
"""

# What the plan says of the lines of documents to build that a block holds; their text is
# taken from the block by position (in Arrow: no join).
_BLOCK_LINES = f"""
SELECT number, key, end_line, n, year, plain_doc, doc_rows FROM {SCRATCH}.lines
WHERE number BETWEEN $first AND $last
"""

# A batch's documents: what the plan says of each, and its bytes' hash when it was built.
_BATCH_ROWS = f"""
SELECT d.*, b.content_hash, b.size, b.source_format, b.lines
FROM (
    SELECT $prefix || key AS doc_id, lower(hex(fingerprint)) AS fingerprint,
           lower(hex(fingerprint_hash)) AS fingerprint_hash, build, rows, current_revision,
           lower(hex(current_hash)) AS current_hash, current_tombstone, known, sighted
    FROM {SCRATCH}.docs
    WHERE end_line > $lo AND end_line <= $hi
) d
LEFT JOIN (SELECT doc_id, content_hash, size, source_format, lines FROM _flat_built) b
    USING (doc_id)
"""

_BATCH = f"CREATE OR REPLACE TEMP TABLE _flat_batch AS {_BATCH_ROWS}"

_MISSING_BYTES = "SELECT count(*) FROM {table} WHERE build AND content_hash IS NULL"

# Whether every document of a range is one the plan found unchanged and already sighted at
# this file (as every one is when the same file is backfilled again): such a range writes
# nothing but its checkpoint, so it is not classified row by row. Its count of documents
# and of rows, and the answer (NULL for an empty range).
_QUIET_RANGE = f"""
SELECT count(*), coalesce(sum(rows), 0), bool_and(NOT build AND sighted)
FROM {SCRATCH}.docs
WHERE end_line > $lo AND end_line <= $hi
"""

# Classification, as the ingest engine's. On a DuckDB file this backfill is the only writer
# from start to end, so the warehouse's state read when the run was planned still holds:
# no batch scans the warehouse's growing tables, and a batch is classified as it is read
# from the plan, before its transaction (one statement: the batch is not first made a table
# of its own, as on a lake).
_CLASSIFY_PLANNED = f"""
CREATE OR REPLACE TEMP TABLE _flat_classified AS
SELECT b.* EXCLUDE (current_revision, current_hash, current_tombstone),
       coalesce(b.content_hash, b.current_hash) AS hash, b.current_revision,
       CASE
           WHEN b.current_revision IS NULL THEN 'new'
           WHEN b.current_tombstone THEN 'restored'
           WHEN NOT b.build OR b.current_hash = b.content_hash THEN 'unchanged'
           ELSE 'changed'
       END AS outcome,
       false AS stale
FROM ({_BATCH_ROWS}) b
"""

# On a lake other writers may commit between two batches: each batch is classified against
# the revisions as they are, inside its transaction; what the plan read is only checked.
_CLASSIFY_LIVE = """
CREATE OR REPLACE TEMP TABLE _flat_classified AS
WITH cur AS (
    SELECT doc_id, max(revision) AS revision, arg_max(content_hash, revision) AS content_hash,
           arg_max(tombstone, revision) AS tombstone
    FROM revisions
    WHERE doc_id IN (SELECT doc_id FROM _flat_batch)
    GROUP BY doc_id
)
SELECT b.* EXCLUDE (current_revision, current_hash, current_tombstone, known, sighted),
       coalesce(b.content_hash, cur.content_hash) AS hash, cur.revision AS current_revision,
       CASE
           WHEN cur.doc_id IS NULL THEN 'new'
           WHEN cur.tombstone THEN 'restored'
           WHEN NOT b.build OR cur.content_hash = b.content_hash THEN 'unchanged'
           ELSE 'changed'
       END AS outcome,
       NOT b.build AND (cur.doc_id IS NULL OR cur.tombstone
                        OR cur.content_hash IS DISTINCT FROM b.fingerprint_hash) AS stale,
       EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = b.doc_id) AS known,
       false AS sighted
FROM _flat_batch b LEFT JOIN cur USING (doc_id)
"""

_COUNT_OUTCOMES = """
SELECT outcome, count(*), sum(rows), count(*) FILTER (WHERE stale) FROM _flat_classified
GROUP BY outcome
"""

_INSERT_DOCUMENTS = """
INSERT INTO documents
SELECT c.doc_id, split_part(c.doc_id, '/', 1), $kind, $run
FROM _flat_classified c
WHERE c.outcome = 'new' AND NOT c.known
"""

# The bytes of each hash a batch writes are stored once: the first document's (by doc_id) of
# those written with it. (Only written ones are ranked: a hash an unchanged document of the
# batch holds is stored already, and found so.)
_FIRST_OF_HASH = "QUALIFY row_number() OVER (PARTITION BY c.hash ORDER BY c.doc_id) = 1"

_INSERT_SNAPSHOTS = f"""
INSERT INTO snapshots
SELECT c.hash, c.size, 'application/json', b.body, $run
FROM _flat_classified c JOIN _flat_built b USING (doc_id)
WHERE c.outcome <> 'unchanged'
  AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.content_hash = c.hash)
{_FIRST_OF_HASH}
"""

# On a DuckDB file, which stored hashes a batch's bytes might repeat is answered from a
# 64-bit digest of every hash in ``snapshots`` (read once by the plan, then added to by each
# batch): a join on integers with a few MB, not a scan of every stored hash per batch. Only
# the hashes whose digest is there (a stored body, or a digest collision) are looked up in
# ``snapshots`` itself.
_STORED_DIGESTS = """
CREATE OR REPLACE TEMP TABLE _flat_stored AS SELECT hash(content_hash) AS digest FROM snapshots
"""

# The digests are matched with a semi-join whose hash table holds the batch's digests, and
# which scans the stored ones: a join whose table held every stored digest would build it
# again for each batch, over more digests each time (two million rows: 5.5 s for the 94
# batches, where this takes 2.4 s).
_FRESH = f"""
CREATE OR REPLACE TEMP TABLE _flat_fresh AS
WITH fresh AS (
    SELECT c.doc_id, c.hash, c.size, hash(c.hash) AS digest
    FROM _flat_classified c
    WHERE c.outcome <> 'unchanged'
    {_FIRST_OF_HASH}
)
SELECT f.*, s.digest IS NOT NULL AS maybe_stored
FROM fresh f LEFT JOIN (
    SELECT DISTINCT digest FROM _flat_stored WHERE digest IN (SELECT digest FROM fresh)
) s USING (digest)
"""

_NONE_FOUND = "CREATE OR REPLACE TEMP TABLE _flat_found (hash VARCHAR)"

_FOUND = """
CREATE OR REPLACE TEMP TABLE _flat_found AS
SELECT DISTINCT content_hash AS hash FROM snapshots
WHERE content_hash IN (SELECT hash FROM _flat_fresh WHERE maybe_stored)
"""

# The bodies stream through a semi-join on the (small) set of documents to store: a join
# would hold every body of the batch in its hash table.
_INSERT_FRESH_SNAPSHOTS = """
INSERT INTO snapshots
SELECT b.content_hash, b.size, 'application/json', b.body, $run
FROM _flat_built b
WHERE b.doc_id IN (
    SELECT f.doc_id FROM _flat_fresh f
    WHERE NOT EXISTS (SELECT 1 FROM _flat_found s WHERE s.hash = f.hash)
)
"""

_KEEP_DIGESTS = "INSERT INTO _flat_stored SELECT digest FROM _flat_fresh"

_INSERT_REVISIONS = """
INSERT INTO revisions
SELECT c.doc_id, coalesce(c.current_revision, 0) + 1, c.hash, false, NULL,
       $run, $at, $scope, $url, NULL, c.source_format, $fetched_at, NULL, NULL,
       concat('{"file_sha256":"', $file_sha256, '","input_fingerprint":"', c.fingerprint,
              '","lines":[', c.lines, ']}')
FROM _flat_classified c
WHERE c.outcome <> 'unchanged'
"""

# A sighting of each document at this file, unless there is one: a new document has none,
# an unchanged one was looked up when the run was planned (``sighted``); only a new hash of
# a known document (or every document, on a lake) is looked up here.
_INSERT_SIGHTINGS = """
INSERT INTO sightings
SELECT c.doc_id, c.hash, $url, '', $run, $fetched_at
FROM _flat_classified c
WHERE c.outcome = 'new' OR (c.outcome = 'unchanged' AND NOT c.sighted AND NOT $live)
"""

_SIGHTINGS_TO_LOOK_UP = """
SELECT count(*) FROM _flat_classified
WHERE outcome IN ('changed', 'restored') OR (outcome = 'unchanged' AND $live)
"""

_INSERT_LOOKED_UP_SIGHTINGS = """
INSERT INTO sightings
SELECT c.doc_id, c.hash, $url, '', $run, $fetched_at
FROM _flat_classified c
WHERE (c.outcome IN ('changed', 'restored') OR (c.outcome = 'unchanged' AND $live))
  AND NOT EXISTS (
      SELECT 1 FROM sightings s
      WHERE s.doc_id = c.doc_id AND s.content_hash = c.hash
        AND s.source_url = $url AND s.source_commit = ''
  )
"""

_INSERT_FINGERPRINTS = """
INSERT INTO input_fingerprints
SELECT doc_id, fingerprint, hash, $run FROM _flat_classified WHERE build
"""

_INSERT_PROGRESS = """
INSERT INTO run_progress VALUES
($run, $batch, $source, $scope, $at, $records, $new, $changed, $unchanged, 0, $restored,
 $checkpoint)
"""

_LINES_SCHEMA = pa.schema(
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

_PY_BUILT_SCHEMA = pa.schema(
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


def _with_text(planned: pa.Table, chunk: pa.Table, first: int) -> pa.Table:
    """``planned`` (lines of a block, as :data:`_BLOCK_LINES` reads them) with each line's
    text, taken from ``chunk`` (the block's ``number``, ``text``; line ``first`` first)."""
    text = chunk["text"].take(pc.subtract(planned["number"], first))
    columns = {name: planned[name] for name in planned.column_names}
    return pa.table({**columns, "text": text}).select(_LINES_SCHEMA.names).cast(_LINES_SCHEMA)


def _split_built(tables: Sequence[pa.Table], hi: int) -> tuple[list[pa.Table], list[pa.Table]]:
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


@dataclass(frozen=True)
class CommitContext:
    """What every revision of a backfill run carries."""

    run_id: int
    source: str
    scope: str
    url: str
    fetched_at: datetime
    file_sha256: str


class FlatBulk:
    """One backfill's scratch database and its bulk work; see the module docstring."""

    def __init__(
        self,
        warehouse: Warehouse,
        spec: FlatSpec,
        scratch: Path | None = None,
        build_memory_limit: str = DEFAULT_BUILD_MEMORY_LIMIT,
        plan_memory_limit: str | None = None,
    ) -> None:
        """``scratch``: a directory for the scratch database's file; without one it is kept
        in memory. ``build_memory_limit``: DuckDB's limit for the build statements' own
        database (:mod:`warehouse.build_engine`), which spills beyond it to ``scratch``, or
        beside the warehouse's own spill files (``<file>.tmp``), or, for a lake, to the
        system's temporary directory. ``plan_memory_limit``: the warehouse's
        limit while :meth:`plan` groups the rows and joins them with what the warehouse
        knows (default: the limit it has); the plan it keeps for pass 2 is made under the
        limit it has."""
        self.warehouse = warehouse
        self.spec = spec
        self._con = warehouse._con
        # Pass 2 reads the plan's lines on a connection of its own, so that a batch can
        # commit on the warehouse's connection while the next block is built (see
        # :meth:`commit`), and builds in a database of its own.
        self._build_con = self._con.cursor()
        self._engine = BuildEngine(
            build_memory_limit, scratch if scratch is not None else warehouse.spill_directory
        )
        self._plan_memory_limit = plan_memory_limit
        location = ":memory:" if scratch is None else str(scratch / "backfill.duckdb")
        # Build statements for the layouts a block holds: planning one costs several ms per
        # block, much of it per layout (the row JSON of each).
        self._build_sqls: dict[frozenset[int], str] = {}
        self._line_check = LineCheck(spec)
        self._batch_no = 0
        self._live = warehouse.is_lake
        self._con.execute(f"ATTACH {_literal(location)} AS {SCRATCH}")
        self._con.execute(_CREATE_SCRATCH)
        self._built: list[pa.Table] = []  # built documents not yet committed
        self._carry = _LINES_SCHEMA.empty_table()  # lines of documents still open

    def close(self) -> None:
        for table in ("_flat_batch", "_flat_classified", "_flat_stored",
                      "_flat_fresh", "_flat_found"):  # fmt: skip
            self._con.execute(f"DROP TABLE IF EXISTS {table}")
        self._build_con.close()
        self._engine.close()
        self._con.execute(f"DETACH {SCRATCH}")

    @contextmanager
    def _registered(
        self, table: pa.Table, name: str = "_flat_chunk", con: DuckDBPyConnection | None = None
    ) -> Iterator[None]:
        con = self._con if con is None else con
        con.register(name, in_slices(table))
        try:
            yield
        finally:
            con.unregister(name)

    def _build_sql_for(self, counts: frozenset[int]) -> str:
        if counts not in self._build_sqls:
            self._build_sqls[counts] = build_sql(self.spec.only(counts))
        return self._build_sqls[counts]

    # -- pass 1 --------------------------------------------------------------------------
    def check(
        self,
        chunk: pa.Table,
        skip_line: int = 0,
        keep: Callable[[pa.Table], None] | None = None,
    ) -> Checked:
        """Check the lines of ``chunk`` (``number``, ``text``, ``h``; see
        :mod:`warehouse.flatcheck`); keep the wanted rows (:meth:`add_checked`, or hand them
        to ``keep``, which must add them in the order it is given them); name the lines
        only the caller's checker can judge."""
        verdicts = self._line_check(chunk, skip_line)
        if len(verdicts.kept):
            (keep or self.add_checked)(verdicts.kept)
        return Checked(verdicts.rows, len(verdicts.kept), verdicts.suspects)

    def add_checked(self, rows: pa.Table) -> None:
        """Rows the caller accepted and wants: ``number, key, h, n, year, plain``."""
        with self._registered(rows):
            self._con.execute(
                f"INSERT INTO {SCRATCH}.rows SELECT number, key, h, n, year, plain FROM _flat_chunk"
            )

    # -- planning ------------------------------------------------------------------------
    def plan(self, after_line: int, batch_size: int, url: str) -> Plan:
        """Group the kept rows into documents (those ending after ``after_line``) and decide
        which must be built; the last line of each commit of ``batch_size`` documents."""
        params = {"prefix": self.spec.doc_prefix, "url": url}
        with self._planning_memory():
            self._con.execute(_GROUP, {"salt": self.spec.salt, "after": after_line})
            self._con.execute(_CREATE_MULTI)
            multi_rows = int(self.warehouse._scalar(_MULTI_ROWS))
            shares = -(-multi_rows // ROWS_PER_SHARE)
            for share in range(shares):
                self._con.execute(
                    _GROUP_MULTI, {"salt": self.spec.salt, "shares": shares, "share": share}
                )
            for table, query in _PLAN_STEPS[:-1]:
                self._plan_step(table, query, params)
        # The plan itself is kept through pass 2: made under the warehouse's own limit.
        self._plan_step(*_PLAN_STEPS[-1], params)
        self._con.execute(_PLAN_LINES)
        self._con.execute(f"DROP TABLE {SCRATCH}.rows")  # the plan's lines hold what is needed
        if not self._live:
            self._con.execute(_STORED_DIGESTS)
        documents, to_build, rows, last_needed = self._con.execute(_PLAN_SUMMARY).fetchall()[0]
        boundaries = [
            int(b) for (b,) in self._con.execute(_BOUNDARIES, {"size": batch_size}).fetchall()
        ]
        return Plan(int(documents), int(to_build), int(rows), int(last_needed), boundaries)

    def _planning_memory(self) -> AbstractContextManager[None]:
        if self._plan_memory_limit is None:
            return nullcontext()
        return self.warehouse.memory_limit(self._plan_memory_limit)

    def _plan_step(self, table: str, query: str, params: Mapping[str, object]) -> None:
        """Make the scratch table ``table`` from ``query`` (given the parameters it names);
        drop the tables no later step reads."""
        self._con.execute(
            f"CREATE TABLE {SCRATCH}.{table} AS {query}",
            {k: v for k, v in params.items() if f"${k}" in query},
        )
        for done in _LAST_READ_BY.get(table, ()):
            self._con.execute(f"DROP TABLE {SCRATCH}.{done}")

    # -- pass 2 --------------------------------------------------------------------------
    def build(
        self, chunk: pa.Table, first: int, last: int
    ) -> list[tuple[str, list[tuple[int, str]]]]:
        """Build the documents whose last line is in ``chunk`` (lines ``first``..``last``,
        ``number`` and ``text``); return the ones with a control character in a row, as
        ``(key, [(number, text), ...])``, for the caller to build."""
        leftover: dict[str, list[tuple[int, str]]] = {}
        planned = self._build_con.sql(_BLOCK_LINES, params={"first": first, "last": last})
        lines = _with_text(planned.to_arrow_table(), chunk, first)
        if len(self._carry):  # lines of documents still open from earlier blocks
            lines = pa.concat_tables([self._carry, lines])
        self._carry = _LINES_SCHEMA.empty_table()
        if len(lines):
            if pc.max(lines["end_line"]).as_py() > last:
                due = pc.less_equal(lines["end_line"], last)
                self._carry = lines.filter(pc.invert(due))
                lines = lines.filter(due)
            plain = lines["plain_doc"]
            if not pc.all(plain).as_py():
                for row in sorted(
                    lines.filter(pc.invert(plain)).select(["key", "number", "text"]).to_pylist(),
                    key=lambda r: (r["key"], r["number"]),
                ):
                    leftover.setdefault(str(row["key"]), []).append((row["number"], row["text"]))
                lines = lines.filter(plain)
            if len(lines):
                counts = frozenset(pc.unique(lines["n"]).to_pylist())
                built = self._engine.run(self._build_sql_for(counts), lines, "_flat_lines")
                self._built.append(hashed(built))
        return list(leftover.items())

    def add_built(self, built: Sequence[tuple[str, int, bytes, str, Sequence[int]]]) -> None:
        """Documents the caller built: ``(doc_id, last line, body, source format, lines)``."""
        if not built:
            return
        table = pa.table(
            {
                "doc_id": [b[0] for b in built],
                "end_line": [b[1] for b in built],
                "body": [b[2] for b in built],
                "content_hash": [hashlib.sha256(b[2]).hexdigest() for b in built],
                "size": [len(b[2]) for b in built],
                "source_format": [b[3] for b in built],
                "lines": [",".join(map(str, b[4])) for b in built],
            },
            schema=_PY_BUILT_SCHEMA,
        )
        self._built.append(table)

    def leftover_lines(self) -> int:
        """Lines of documents still open (their last line not yet read)."""
        return len(self._carry)

    # -- commits -------------------------------------------------------------------------
    def take_built(self, hi: int) -> pa.Table:
        """The built documents ending by line ``hi``, handed over for :meth:`commit`."""
        due, self._built = _split_built(self._built, hi)
        return pa.concat_tables(due) if due else _PY_BUILT_SCHEMA.empty_table()

    def commit(
        self, context: CommitContext, lo: int, hi: int, built: pa.Table
    ) -> tuple[Counts, int]:
        """Commit the documents whose last line is in ``(lo, hi]`` (``built``: those of them
        that were built, from :meth:`take_built`) in one transaction, with the checkpoint
        ``<file digest>:<hi>``: their counts and rows.

        It may run in another thread while :meth:`build` builds the next block: each uses a
        connection of its own."""
        if not self._live and not len(built):
            documents, rows, quiet = self._con.execute(
                _QUIET_RANGE, {"lo": lo, "hi": hi}
            ).fetchall()[0]
            if quiet:
                counts = Counts(records=int(documents), unchanged=int(documents))
                with self.warehouse._transaction():
                    self._insert_progress(context, hi, counts)
                return counts, int(rows)
        with self._registered(built, "_flat_built"):
            if self._live:  # classified inside the commit's transaction
                statement, table = _BATCH, "_flat_batch"
            else:
                statement, table = _CLASSIFY_PLANNED, "_flat_classified"
            self._con.execute(statement, {"lo": lo, "hi": hi, "prefix": self.spec.doc_prefix})
            missing = int(self.warehouse._scalar(_MISSING_BYTES.format(table=table)))
            if missing:
                raise WarehouseError(f"{missing} documents ending by line {hi} were not built")

            def attempt() -> tuple[Counts, int]:
                return self._commit_once(context, hi)

            return retrying_conflicts(self.warehouse, context.scope, attempt)

    def _commit_once(self, context: CommitContext, hi: int) -> tuple[Counts, int]:
        con = self._con
        at = now()
        counts = Counts()
        rows = 0
        base = {"run": context.run_id}
        with self.warehouse._transaction():
            if self._live:
                con.execute(_CLASSIFY_LIVE)
            for outcome, n, outcome_rows, stale in con.execute(_COUNT_OUTCOMES).fetchall():
                if stale:
                    raise WarehouseError(
                        f"{stale} documents of {context.scope} changed in the warehouse while "
                        "this backfill ran (another writer); run the backfill again"
                    )
                setattr(counts, str(outcome), int(n))
                counts.records += int(n)
                rows += int(outcome_rows)
            if counts.new or counts.changed or counts.restored:
                con.execute(_INSERT_DOCUMENTS, {**base, "kind": self.spec.kind})
                self._insert_snapshots(base)
                con.execute(
                    _INSERT_REVISIONS,
                    {
                        **base,
                        "at": at,
                        "scope": context.scope,
                        "url": context.url,
                        "fetched_at": context.fetched_at,
                        "file_sha256": context.file_sha256,
                    },
                )
            sighting = {**base, "url": context.url, "fetched_at": context.fetched_at}
            con.execute(_INSERT_SIGHTINGS, {**sighting, "live": self._live})
            if self.warehouse._scalar(_SIGHTINGS_TO_LOOK_UP, {"live": self._live}):
                con.execute(_INSERT_LOOKED_UP_SIGHTINGS, {**sighting, "live": self._live})
            con.execute(_INSERT_FINGERPRINTS, base)
            self._insert_progress(context, hi, counts, at)
        return counts, rows

    def _insert_progress(
        self, context: CommitContext, hi: int, counts: Counts, at: datetime | None = None
    ) -> None:
        """The batch's row of ``run_progress``: its counts and checkpoint (inside the
        transaction)."""
        self._batch_no += 1
        self._con.execute(
            _INSERT_PROGRESS,
            {
                "run": context.run_id,
                "batch": self._batch_no,
                "source": context.source,
                "scope": context.scope,
                "at": now() if at is None else at,
                "records": counts.records,
                "new": counts.new,
                "changed": counts.changed,
                "unchanged": counts.unchanged,
                "restored": counts.restored,
                "checkpoint": f"{context.file_sha256[:16]}:{hi}",
            },
        )

    def _insert_snapshots(self, base: Mapping[str, object]) -> None:
        """Store the bytes of the batch's new hashes, each once (inside the transaction)."""
        con = self._con
        if self._live:
            con.execute(_INSERT_SNAPSHOTS, base)
            return
        con.execute(_FRESH)
        maybe_stored = self.warehouse._scalar("SELECT count(*) FROM _flat_fresh WHERE maybe_stored")
        con.execute(_FOUND if maybe_stored else _NONE_FOUND)
        con.execute(_INSERT_FRESH_SNAPSHOTS, base)
        con.execute(_KEEP_DIGESTS)

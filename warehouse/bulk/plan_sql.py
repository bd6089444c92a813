"""The SQL of a backfill's first pass and its plan, in the order it runs.

Pass 1 stages each wanted row in a scratch database attached to the warehouse's connection
(:data:`STAGE_ROWS`): ``(number, key, h, field count, model year, plain)``, no text. The
plan then groups the rows into documents, fingerprints them (:data:`GROUP`,
:data:`GROUP_MULTI`), joins them with what the warehouse knows (:data:`PLAN_STEPS`), keeps
the lines of the documents to build (:data:`PLAN_LINES`) and cuts the documents into
commits (:data:`BOUNDARIES`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SCRATCH = "backfill_scratch"

CREATE_SCRATCH = f"""
CREATE TABLE {SCRATCH}.rows (
    number BIGINT, key VARCHAR, h BLOB, n INTEGER, year INTEGER, plain BOOLEAN
)
"""

STAGE_ROWS = f"INSERT INTO {SCRATCH}.rows SELECT number, key, h, n, year, plain FROM _flat_chunk"

LAST_LINE = f"SELECT coalesce(max(number), 0) FROM {SCRATCH}.rows"

# Documents and their fingerprints; then what the warehouse knows of them.
#
# A fingerprint is the SHA-256 of the salt and of its lines' digests in lowercase hex, in
# line order (kept as 32 bytes here, as the lines' are). Most documents are of one line:
# one window over every row keeps each document's last row, with its count of rows, and
# fingerprints the documents of one line; only the rows of documents of several lines are
# then grouped again, into lists. (Two million rows, three in four documents of one line:
# 2.7-2.9 s, where grouping every document into a list took 5.1 s.) A window, not an
# aggregate: DuckDB 1.5.5 holds the states of an aggregate over strings (``any_value(h)``,
# ``arg_max(content_hash, ...)``) in memory, unspilled, one per document, where a window's
# partitions spill. The latest fingerprint and revision of each document are found by
# windows too (:data:`PLAN_STEPS`): as aggregates they ran out of memory on the identical
# re-run of two million rows under the default limit.
GROUP = f"""
CREATE TABLE {SCRATCH}.groups AS
SELECT key, number AS end_line, rows,
       CASE WHEN rows = 1 THEN unhex(sha256($salt || lower(hex(h)))) END AS fingerprint, plain
FROM (
    SELECT key, number, h, count(*) OVER doc AS rows, bool_and(plain) OVER doc AS plain,
           row_number() OVER doc AS from_last
    FROM {SCRATCH}.rows
    WINDOW doc AS (PARTITION BY key ORDER BY number DESC
                   ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
WHERE from_last = 1 AND number > $after
"""

MULTI_ROWS = f"SELECT coalesce(sum(rows), 0) FROM {SCRATCH}.groups WHERE rows > 1"

CREATE_MULTI = f"CREATE TABLE {SCRATCH}.multi (key VARCHAR, fingerprint BLOB)"

# One share of the documents of several lines (by a hash of their key) at a time: the lists
# of a share's rows are all in memory at once. The rows are put in order by sorting each
# document's list of (line, digest): cheaper than an ordered aggregate
# (``string_agg(... ORDER BY number)``).
GROUP_MULTI = f"""
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
# (:data:`LAST_READ_BY`): the scratch database holds no more than the next steps need, and
# spills less (re-running 600,000 rows, these steps took 2.9-3.0 s where they took 4.4-4.9 s
# while every step's table was kept until the last was made). The last one, ``docs``, is
# the plan.
#
# Documents are named by their key (the id without the kind's prefix: short enough to be
# held inline) and hashes are held as 32 bytes, not 64 hex digits: rows about half as wide
# as with ids and hex, so that two million documents spill far less under the default
# memory limit. :data:`BATCH` gives each batch its ids and hex back.
KEY_OF_ID = "substr(doc_id, length($prefix) + 1)"

PLAN_STEPS = (
    (
        "plan_fingerprints",
        f"""
    SELECT {KEY_OF_ID} AS key, unhex(fingerprint) AS fingerprint,
           unhex(content_hash) AS content_hash
    FROM input_fingerprints
    WHERE starts_with(doc_id, $prefix)
    QUALIFY row_number() OVER (PARTITION BY doc_id ORDER BY run_id DESC) = 1
    """,
    ),
    (
        "plan_current",
        f"""
    SELECT {KEY_OF_ID} AS key, revision, unhex(content_hash) AS content_hash, tombstone
    FROM revisions
    WHERE starts_with(doc_id, $prefix)
    QUALIFY row_number() OVER (PARTITION BY doc_id ORDER BY revision DESC) = 1
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
        SELECT {KEY_OF_ID} FROM documents WHERE starts_with(doc_id, $prefix)
    ) AS known
    FROM {SCRATCH}.plan_b b
    """,
    ),
    (
        "plan_sightings",
        f"""
    SELECT {KEY_OF_ID} AS key, unhex(content_hash) AS hash
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
    WHERE end_line > $lo AND end_line <= $hi
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


LAST_READ_BY = _last_read_by(PLAN_STEPS)


def _reads_warehouse(query: str) -> bool:
    """Whether ``query`` reads a table outside the scratch database."""
    return re.search(rf"\b(?:FROM|JOIN)\s+(?!{SCRATCH}\.)\w", query) is not None


# The steps that read the warehouse's tables (the others read only the scratch database,
# and run on a connection of its own: :class:`~warehouse.bulk.engine.FlatBulk`).
READS_WAREHOUSE = frozenset(table for table, query in PLAN_STEPS if _reads_warehouse(query))

# The lines of the documents to build, in line order: each block of pass 2 reads its own.
PLAN_LINES = f"""
SELECT r.number, r.key, d.end_line, r.n, r.year, d.plain AS plain_doc, d.rows AS doc_rows
FROM {SCRATCH}.rows r JOIN {SCRATCH}.docs d USING (key)
WHERE d.build AND r.number > $lo AND r.number <= $hi AND d.end_line > $lo
ORDER BY r.number
"""

# The plan and its lines are put in line order a range of lines at a time: DuckDB 1.5.5's
# sort could not spill rows this wide (a re-run's plan holds three hashes per document) under
# a small limit, and a range's rows are sorted within a bounded memory whatever the file's
# size. Each range scans the step's input again (a few ms per million documents in memory).
ORDERED_LINES = 500_000

PLAN_SUMMARY = f"""
SELECT count(*), count(*) FILTER (WHERE build), coalesce(sum(rows), 0),
       coalesce(max(end_line) FILTER (WHERE build), 0)
FROM {SCRATCH}.docs
"""

BOUNDARIES = f"""
SELECT end_line FROM (
    SELECT end_line, row_number() OVER (ORDER BY end_line) AS position, count(*) OVER () AS total
    FROM {SCRATCH}.docs
)
WHERE position % $size = 0 OR position = total
ORDER BY end_line
"""

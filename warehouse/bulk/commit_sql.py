"""The SQL of a backfill's commits, in the order it runs: a range's documents, classified as
the ingest engine classifies them, then their documents, bytes, revisions, sightings,
fingerprints and checkpoint."""

from __future__ import annotations

from warehouse.backends import LAKE_ALIAS
from warehouse.bulk.plan_sql import SCRATCH
from warehouse.canonical import FORM_JCS
from warehouse.tlog.appends import select_entries
from warehouse.tlog.entries_sql import RevisionColumns

# A batch's documents: what the plan says of each, and its bytes' hash when it was built.
BATCH_ROWS = f"""
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

BATCH = f"CREATE OR REPLACE TEMP TABLE _flat_batch AS {BATCH_ROWS}"

MISSING_BYTES = "SELECT count(*) FROM {table} WHERE build AND content_hash IS NULL"

# Whether every document of a range is one the plan found unchanged and already sighted at
# this file (as every one is when the same file is backfilled again): such a range writes
# nothing but its checkpoint, so it is not classified row by row. Its count of documents
# and of rows, and the answer (NULL for an empty range).
QUIET_RANGE = f"""
SELECT count(*), coalesce(sum(rows), 0), bool_and(NOT build AND sighted)
FROM {SCRATCH}.docs
WHERE end_line > $lo AND end_line <= $hi
"""

# On a lake, a range the plan found quiet is still quiet when no revision of its documents
# was committed since the plan read the warehouse (revisions are only ever appended, so the
# revisions a lake's snapshots inserted after the plan's are all that can differ): then it
# writes only its checkpoint, as on a file, and is not classified again row by row against
# every revision. ``$since`` is the first snapshot after the plan's, ``$until`` the latest.
CHANGED_SINCE_PLAN = f"""
SELECT count(*) FROM {LAKE_ALIAS}.table_insertions('revisions', $since, $until) r
WHERE r.doc_id IN (
    SELECT $prefix || key FROM {SCRATCH}.docs WHERE end_line > $lo AND end_line <= $hi
)
"""

LAKE_SNAPSHOT = f"SELECT id FROM {LAKE_ALIAS}.current_snapshot()"

# Classification, as the ingest engine's. On a DuckDB file this backfill is the only writer
# from start to end, so the warehouse's state read when the run was planned still holds:
# no batch scans the warehouse's growing tables, and a batch is classified as it is read
# from the plan, before its transaction (one statement: the batch is not first made a table
# of its own, as on a lake).
CLASSIFY_PLANNED = f"""
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
FROM ({BATCH_ROWS}) b
"""

# On a lake other writers may commit between two batches: each batch is classified against
# the revisions as they are, inside its transaction; what the plan read is only checked.
CLASSIFY_LIVE = """
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

COUNT_OUTCOMES = """
SELECT outcome, count(*), sum(rows), count(*) FILTER (WHERE stale) FROM _flat_classified
GROUP BY outcome
"""

INSERT_DOCUMENTS = """
INSERT INTO documents
SELECT c.doc_id, split_part(c.doc_id, '/', 1), $kind, $run
FROM _flat_classified c
WHERE c.outcome = 'new' AND NOT c.known
"""

# The bytes of each hash a batch writes are stored once: the first document's (by doc_id) of
# those written with it. (Only written ones are ranked: a hash an unchanged document of the
# batch holds is stored already, and found so.)
FIRST_OF_HASH = "QUALIFY row_number() OVER (PARTITION BY c.hash ORDER BY c.doc_id) = 1"

# On a lake, the documents whose bytes the batch stores (the first of each hash not stored
# yet) are found once and kept: the bytes' forms and the bytes are then inserted by a
# semi-join on them. The bodies stream through that semi-join: a join would hold every body
# of the batch in its hash table, and ranking the joined rows would sort the bodies with
# them. The stored hashes are scanned once, probing a hash table of the batch's own (an
# anti-join of the batch with every stored hash would build its table of those instead:
# 36 ms against 14 ms for 16,384 documents beside 153,624 stored, on a lake in S3; and each
# insert scanned them itself before, 2.5 s of a first backfill of 200,000 rows in S3).
TO_STORE = f"""
CREATE OR REPLACE TEMP TABLE _flat_to_store AS
WITH written AS (
    SELECT c.doc_id, c.hash FROM _flat_classified c WHERE c.outcome <> 'unchanged'
), stored AS (
    SELECT DISTINCT s.content_hash FROM snapshots s
    WHERE s.content_hash IN (SELECT hash FROM written)
)
SELECT c.doc_id FROM written c
WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE s.content_hash = c.hash)
{FIRST_OF_HASH}
"""
INSERT_SNAPSHOTS = """
INSERT INTO snapshots
SELECT b.content_hash, b.size, 'application/json', b.body, $run
FROM _flat_built b
WHERE b.doc_id IN (SELECT doc_id FROM _flat_to_store)
"""
# A backfill's bytes are RFC 8785 (canonical form v2) bytes: objects of strings under ASCII
# names, and model years; on those, v2 writes what v1 did (tests/backfill check the bodies).
INSERT_FORMS = f"""
INSERT INTO snapshot_forms
SELECT b.content_hash, '{FORM_JCS}' FROM _flat_built b
WHERE b.doc_id IN (SELECT doc_id FROM _flat_to_store)
"""

# On a DuckDB file, which stored hashes a batch's bytes might repeat is answered from a
# 64-bit digest of every hash in ``snapshots`` (read once by the plan, then added to by each
# batch): a join on integers with a few MB, not a scan of every stored hash per batch. Only
# the hashes whose digest is there (a stored body, or a digest collision) are looked up in
# ``snapshots`` itself.
STORED_DIGESTS = """
CREATE OR REPLACE TEMP TABLE _flat_stored AS SELECT hash(content_hash) AS digest FROM snapshots
"""

# The digests are matched with a semi-join whose hash table holds the batch's digests, and
# which scans the stored ones: a join whose table held every stored digest would build it
# again for each batch, over more digests each time (two million rows: 5.5 s for the 94
# batches, where this takes 2.4 s).
FRESH = f"""
CREATE OR REPLACE TEMP TABLE _flat_fresh AS
WITH fresh AS (
    SELECT c.doc_id, c.hash, c.size, hash(c.hash) AS digest
    FROM _flat_classified c
    WHERE c.outcome <> 'unchanged'
    {FIRST_OF_HASH}
)
SELECT f.*, s.digest IS NOT NULL AS maybe_stored
FROM fresh f LEFT JOIN (
    SELECT DISTINCT digest FROM _flat_stored WHERE digest IN (SELECT digest FROM fresh)
) s USING (digest)
"""

MAYBE_STORED = "SELECT count(*) FROM _flat_fresh WHERE maybe_stored"

NONE_FOUND = "CREATE OR REPLACE TEMP TABLE _flat_found (hash VARCHAR)"

FOUND = """
CREATE OR REPLACE TEMP TABLE _flat_found AS
SELECT DISTINCT content_hash AS hash FROM snapshots
WHERE content_hash IN (SELECT hash FROM _flat_fresh WHERE maybe_stored)
"""

# The bodies stream through a semi-join on the (small) set of documents to store: a join
# would hold every body of the batch in its hash table.
_FRESH_TO_STORE = """
SELECT f.doc_id FROM _flat_fresh f
WHERE NOT EXISTS (SELECT 1 FROM _flat_found s WHERE s.hash = f.hash)
"""
INSERT_FRESH_SNAPSHOTS = f"""
INSERT INTO snapshots
SELECT b.content_hash, b.size, 'application/json', b.body, $run
FROM _flat_built b
WHERE b.doc_id IN ({_FRESH_TO_STORE})
"""
INSERT_FRESH_FORMS = f"""
INSERT INTO snapshot_forms
SELECT b.content_hash, '{FORM_JCS}' FROM _flat_built b WHERE b.doc_id IN ({_FRESH_TO_STORE})
"""

KEEP_DIGESTS = "INSERT INTO _flat_stored SELECT digest FROM _flat_fresh"

INSERT_REVISIONS = """
INSERT INTO revisions
SELECT c.doc_id, coalesce(c.current_revision, 0) + 1, c.hash, false, NULL,
       $run, $at, $scope, $url, NULL, c.source_format, $fetched_at, NULL, NULL,
       concat('{"file_sha256":"', $file_sha256, '","input_fingerprint":"', c.fingerprint,
              '","lines":[', c.lines, ']}')
FROM _flat_classified c
WHERE c.outcome <> 'unchanged'
"""

# The transparency log's entries of the revisions INSERT_REVISIONS wrote (appended by
# warehouse.tlog.store.append in the same transaction, in LOG_ORDER).
LOG_ENTRIES = select_entries(
    RevisionColumns(
        doc_id="c.doc_id",
        document="$kind",
        revision="coalesce(c.current_revision, 0) + 1",
        content_hash="c.hash",
        tombstone="false",
        reason="CAST(NULL AS VARCHAR)",
        restores="c.outcome = 'restored'",
        source_url="$url",
        source_commit="CAST(NULL AS VARCHAR)",
        seen_at="$fetched_at",
        run="$run",
    ),
    "FROM _flat_classified c WHERE c.outcome <> 'unchanged'",
)
LOG_ORDER = "doc_id, revision"

# A sighting of each document at this file, unless there is one: a new document has none,
# an unchanged one was looked up when the run was planned (``sighted``); only a new hash of
# a known document (or every document, on a lake) is looked up here.
INSERT_SIGHTINGS = """
INSERT INTO sightings
SELECT c.doc_id, c.hash, $url, '', $run, $fetched_at
FROM _flat_classified c
WHERE c.outcome = 'new' OR (c.outcome = 'unchanged' AND NOT c.sighted AND NOT $live)
"""

SIGHTINGS_TO_LOOK_UP = """
SELECT count(*) FROM _flat_classified
WHERE outcome IN ('changed', 'restored') OR (outcome = 'unchanged' AND $live)
"""

INSERT_LOOKED_UP_SIGHTINGS = """
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

INSERT_FINGERPRINTS = """
INSERT INTO input_fingerprints
SELECT doc_id, fingerprint, hash, $run FROM _flat_classified WHERE build
"""

INSERT_PROGRESS = """
INSERT INTO run_progress VALUES
($run, $batch, $source, $scope, $at, $records, $new, $changed, $unchanged, 0, $restored,
 $checkpoint)
"""

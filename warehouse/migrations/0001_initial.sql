-- receipts warehouse, migration 1: the ledgers, identities, snapshots and revisions.
-- Every table is append-only. No PRIMARY KEY or UNIQUE constraint carries correctness:
-- writers de-duplicate by anti-join inside their transaction.

CREATE TABLE warehouse_meta (
    key         VARCHAR NOT NULL,
    value       VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- The run ledger: a 'started' row, then a 'finished' row (status ok | failed).
-- A run with no 'finished' row whose process is gone was interrupted.
CREATE TABLE runs (
    run_id        BIGINT NOT NULL,
    event         VARCHAR NOT NULL,
    recorded_at   TIMESTAMPTZ NOT NULL,
    command       VARCHAR NOT NULL,
    manifest_name VARCHAR,
    manifest_hash VARCHAR,
    pid           INTEGER,
    host          VARCHAR,
    status        VARCHAR,
    counts        JSON,
    failures      JSON,
    warnings      JSON,
    resumes_run   BIGINT
);

-- One row per committed batch, in the same transaction as the batch's data.
CREATE TABLE run_progress (
    run_id     BIGINT NOT NULL,
    batch_no   INTEGER NOT NULL,
    source     VARCHAR NOT NULL,
    scope      VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    records    INTEGER NOT NULL,
    new        INTEGER NOT NULL,
    changed    INTEGER NOT NULL,
    unchanged  INTEGER NOT NULL,
    gone       INTEGER NOT NULL,
    restored   INTEGER NOT NULL,
    checkpoint VARCHAR
);

-- Identity: one row per doc_id, written the first time it is seen.
CREATE TABLE documents (
    doc_id         VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,
    first_seen_run BIGINT NOT NULL
);

-- Content-addressed bytes: sha256(body) == content_hash, stored once.
CREATE TABLE snapshots (
    content_hash VARCHAR NOT NULL,
    size         BIGINT NOT NULL,
    media_type   VARCHAR NOT NULL,
    body         BLOB NOT NULL,
    stored_run   BIGINT NOT NULL
);

-- The n-th distinct content of a document; a tombstone has no content_hash.
CREATE TABLE revisions (
    doc_id           VARCHAR NOT NULL,
    revision         INTEGER NOT NULL,
    content_hash     VARCHAR,
    tombstone        BOOLEAN NOT NULL,
    tombstone_reason VARCHAR,
    valid_from_run   BIGINT NOT NULL,
    valid_from       TIMESTAMPTZ NOT NULL,
    scope            VARCHAR NOT NULL,
    source_url       VARCHAR,
    source_commit    VARCHAR,
    source_format    VARCHAR,
    fetched_at       TIMESTAMPTZ,
    etag             VARCHAR,
    last_modified    VARCHAR,
    attributes       JSON
);

-- Every distinct place (URL, commit) at which a document's bytes were seen.
CREATE TABLE sightings (
    doc_id        VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,
    source_url    VARCHAR NOT NULL,
    source_commit VARCHAR NOT NULL,
    run_id        BIGINT NOT NULL,
    fetched_at    TIMESTAMPTZ
);

-- The push ledger: a 'started' row, then a 'finished' row with the receipt.
CREATE TABLE pushes (
    push_id          BIGINT NOT NULL,
    event            VARCHAR NOT NULL,
    recorded_at      TIMESTAMPTZ NOT NULL,
    target           VARCHAR NOT NULL,
    namespace        VARCHAR NOT NULL,
    manifest_name    VARCHAR,
    run_id           BIGINT,
    plan_counts      JSON,
    applied          INTEGER,
    transaction_ids  JSON,
    unrelated_before BIGINT,
    unrelated_after  BIGINT,
    touched_by_us    BIGINT,
    status           VARCHAR,
    message          VARCHAR
);

-- A revision is valid until the next revision of the same document.
CREATE VIEW revision_validity AS
SELECT
    r.*,
    lead(r.valid_from_run) OVER w AS valid_until_run,
    lead(r.valid_from) OVER w AS valid_until,
    lead(r.revision) OVER w IS NULL AS is_current
FROM revisions r
WINDOW w AS (PARTITION BY r.doc_id ORDER BY r.revision);

CREATE VIEW current_revisions AS
SELECT * EXCLUDE (is_current, valid_until_run, valid_until)
FROM revision_validity
WHERE is_current;

-- One row per run: its start, its end (if any) and its status.
CREATE VIEW run_summary AS
SELECT
    s.run_id,
    s.command,
    s.manifest_name,
    s.manifest_hash,
    s.pid,
    s.host,
    s.resumes_run,
    s.recorded_at AS started_at,
    f.recorded_at AS finished_at,
    coalesce(f.status, 'unfinished') AS status,
    f.counts,
    f.failures,
    f.warnings
FROM runs s
LEFT JOIN runs f ON f.run_id = s.run_id AND f.event = 'finished'
WHERE s.event = 'started';

-- receipts warehouse, migration 3: the push ledger's batches, and what a push reported.
-- Append-only like the rest: a batch row is written once, as the batch's outcome is known.

-- One row per transaction a push sent: committed, conflict (a revision moved under it) or
-- failed. Committed rows survive a push that fails later, so the record is never lost.
CREATE TABLE push_batches (
    push_id        BIGINT NOT NULL,
    batch_no       INTEGER NOT NULL,
    recorded_at    TIMESTAMPTZ NOT NULL,
    transaction_id VARCHAR NOT NULL,
    mutations      INTEGER NOT NULL,
    bytes          BIGINT NOT NULL,
    status         VARCHAR NOT NULL,
    message        VARCHAR
);

-- Documents left alone because they moved in the target (conflicts), and the plan's notices
-- (open drafts, dangling references), on a push's 'finished' row.
ALTER TABLE pushes ADD COLUMN conflicts JSON;
ALTER TABLE pushes ADD COLUMN notices JSON;

-- One row per push: its start, its end (if any), its receipt, and its committed batches.
CREATE VIEW push_summary AS
SELECT
    s.push_id,
    s.target,
    s.namespace,
    s.manifest_name,
    s.run_id,
    s.plan_counts,
    s.recorded_at AS started_at,
    f.recorded_at AS finished_at,
    coalesce(f.status, 'unfinished') AS status,
    f.message,
    coalesce(f.applied, b.applied, 0) AS applied,
    coalesce(f.transaction_ids, b.transaction_ids) AS transaction_ids,
    s.unrelated_before,
    f.unrelated_after,
    f.touched_by_us,
    f.conflicts,
    f.notices
FROM pushes s
LEFT JOIN pushes f ON f.push_id = s.push_id AND f.event = 'finished'
LEFT JOIN (
    SELECT push_id, sum(mutations)::BIGINT AS applied,
           to_json(list(transaction_id ORDER BY batch_no)) AS transaction_ids
    FROM push_batches WHERE status = 'committed' GROUP BY push_id
) b ON b.push_id = s.push_id
WHERE s.event = 'started';

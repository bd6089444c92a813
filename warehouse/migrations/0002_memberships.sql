-- receipts warehouse, migration 2: corpus membership.
-- A document joins a corpus the first time one of the corpus's entries yields it, and leaves
-- it when a complete run of the manifest no longer yields it (its entry was removed or
-- its filter no longer matches). Membership is per corpus, so several corpora can share a
-- warehouse (and documents) without retiring each other's content. Append-only: the
-- current membership is the latest event per (corpus, doc_id).

CREATE TABLE memberships (
    corpus      VARCHAR NOT NULL,
    doc_id      VARCHAR NOT NULL,
    event       VARCHAR NOT NULL,
    run_id      BIGINT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

CREATE VIEW corpus_members AS
SELECT corpus, doc_id, run_id AS joined_run
FROM (
    SELECT *, row_number() OVER (PARTITION BY corpus, doc_id ORDER BY run_id DESC, event) AS n
    FROM memberships
)
WHERE n = 1 AND event = 'joined';

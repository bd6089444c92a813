-- receipts warehouse, migration 7: the fingerprint of the input each document was built from.
--
-- A flat-file backfill reads a document's raw lines; their fingerprint (a SHA-256 over the
-- SHA-256 of each line, salted with the canonical-form version and the layout) decides
-- "unchanged" before any JSON is built. One row each time a document is built from new
-- input, naming the content hash that input produced: a later run whose fingerprint is the
-- latest one here, and whose current revision still has that hash, need not build it.
-- Append-only, written in the same transaction as the document's revision.
CREATE TABLE input_fingerprints (
    doc_id       VARCHAR NOT NULL,
    fingerprint  VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    run_id       BIGINT NOT NULL
);

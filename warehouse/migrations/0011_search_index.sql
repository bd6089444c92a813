-- receipts warehouse, migration 11: the search index (`receipts index` writes it).
--
-- A prefilter for `receipts search` and the web view's search: for each indexed document,
-- the words of its reader text (pipelines/checks/search_words.py), so that a search reads
-- only the documents that hold every word of the phrase; which of them hold the phrase is
-- decided by reading their bytes, as without an index. Nothing else writes these tables
-- (an ingest or a backfill does not), and a search never trusts them alone: a document
-- with a transparency log entry at or past search_index.log_size changed after the build
-- and is read as it is now.
CREATE TABLE search_index (
    built_at      TIMESTAMPTZ NOT NULL,  -- when the build committed
    log_size      BIGINT NOT NULL,       -- log entries the build saw; later ones are read directly
    words_version INTEGER NOT NULL,      -- the word rules the postings were made with
    documents     BIGINT NOT NULL,       -- documents indexed
    postings      BIGINT NOT NULL,       -- (word, document) pairs stored
    seconds       DOUBLE NOT NULL        -- how long the build took
);

CREATE TABLE search_documents (
    ordinal      INTEGER NOT NULL,  -- the document's place in doc_id order at the build
    doc_id       VARCHAR NOT NULL,
    source       VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    revision     INTEGER NOT NULL,  -- the current revision the build read
    content_hash VARCHAR NOT NULL,
    valid_from_run BIGINT NOT NULL,
    valid_from   TIMESTAMPTZ NOT NULL,
    snapshot_row BIGINT             -- where its bytes were (snapshots rowid), a hint checked on use
);

CREATE TABLE search_postings (
    word    BIGINT NOT NULL,   -- CRC-32 of a word (a collision only adds candidates)
    block   INTEGER NOT NULL,  -- a block of 65,536 ordinals: ordinal // 65536
    offsets BLOB NOT NULL      -- the block's ordinals that hold the word, ordinal % 65536, 2 bytes each (big-endian)
);

-- receipts warehouse, migration 9: the transparency log.
--
-- One entry per snapshot-citing fact (a revision, a tombstone, a restoration, a push's
-- receipt), appended in commit order, in the same transaction as the rows it describes;
-- the entry's bytes are the canonical form of docs/transparency-log.md. The Merkle tree
-- over them (RFC 6962) is kept as its stored hashes, Go's tlog layout: every complete
-- subtree's hash at its stored-hash index. A checkpoint is the tree's size and root at the
-- end of a writing run, as a C2SP signed note (signed when a key is configured).
-- Append-only like every table; an older warehouse's history is logged when this
-- migration is applied.
CREATE TABLE tlog_entries (
    idx      BIGINT NOT NULL,
    kind     VARCHAR NOT NULL,
    doc_id   VARCHAR,
    revision INTEGER,
    push_id  BIGINT,
    entry    BLOB NOT NULL
);

CREATE TABLE tlog_hashes (
    idx  BIGINT NOT NULL,
    hash BLOB NOT NULL
);

CREATE TABLE tlog_checkpoints (
    size        BIGINT NOT NULL,
    root        BLOB NOT NULL,
    note        VARCHAR NOT NULL,
    key_name    VARCHAR,
    run_id      BIGINT,
    recorded_at TIMESTAMPTZ NOT NULL
);

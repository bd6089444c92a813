-- receipts warehouse, migration 4: the claims ledger, and the reader text claims are checked
-- against.

-- One row per claim per check: what the claim cites, the status found, and the revisions
-- that status names. Append-only: a check writes its rows once, in one transaction, so the
-- history of a claim is every row with its claim_id.
CREATE TABLE claim_checks (
    check_id         BIGINT NOT NULL,
    claim_set        VARCHAR NOT NULL,   -- the corpus, or the claims file, checked
    run_id           BIGINT,             -- the refresh run the check followed, if any
    recorded_at      TIMESTAMPTZ NOT NULL,
    claim_id         VARCHAR NOT NULL,
    doc_id           VARCHAR NOT NULL,
    quote_hash       VARCHAR NOT NULL,   -- sha256 of the quote as cited
    cited_revision   INTEGER,
    cited_hash       VARCHAR,
    status           VARCHAR NOT NULL,   -- holds stale misattributed missing gone unseen unknown
    checked_revision INTEGER,            -- the current revision at the time of the check
    at_revision      INTEGER,            -- stale: where it stopped; gone: the tombstone
    found_in         INTEGER[]           -- the revisions that contain the quote
);

-- The reader text of a snapshot under one version of the quote rules (``rules``), computed
-- once so a claim check is a scan, not a re-parse. NULL text with a problem for bytes that
-- cannot be read as text. Rows are added, never changed; new rules add new rows.
CREATE TABLE reader_texts (
    content_hash VARCHAR NOT NULL,
    rules        VARCHAR NOT NULL,
    markdown     BOOLEAN NOT NULL,
    text         VARCHAR,
    problem      VARCHAR
);

-- The latest check of every claim of every claim set.
CREATE VIEW claim_status AS
SELECT * EXCLUDE (n)
FROM (
    SELECT *, row_number() OVER (PARTITION BY claim_set, claim_id ORDER BY check_id DESC) AS n
    FROM claim_checks
)
WHERE n = 1;

-- receipts warehouse, migration 6: the search strings of each claimed quote.
--
-- A claim check searches the reader text of snapshots for a quote as reader text, word
-- boundaries marked, once as the quote's words and once as literal text, for plain and for
-- Markdown snapshots (pipelines.audit.claims.claim_query). Claims are re-checked on every
-- refresh, so these are computed once per quote and version of the quote rules (``rules``,
-- as for reader_texts) and kept here. Rows are added, never changed; new rules add new rows.
CREATE TABLE quote_needles (
    quote_hash VARCHAR NOT NULL,   -- sha256 of the quote as cited (claim_checks.quote_hash)
    rules      VARCHAR NOT NULL,
    needle     VARCHAR NOT NULL,   -- the quote as reader text, markup removed
    literal    VARCHAR,            -- as literal text, where that differs
    needle_md  VARCHAR,            -- in a Markdown snapshot (NULL: no reader text there)
    literal_md VARCHAR             -- literal, in a Markdown snapshot, where that differs
);

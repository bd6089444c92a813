-- receipts warehouse, migration 13: where each document's rows are, for reading one document.
--
-- A DuckDB file keeps min/max statistics of only the first 8 bytes of a text column, and
-- every NHTSA complaint's doc_id starts "nhtsa/co": a lookup by doc_id or content hash reads
-- the whole column of every table it touches (50-300 ms per statement on 1.5 million
-- documents). `receipts index` records, beside the search index, the rowid of every row of
-- the tables a document's page reads, keyed by a number derived from its doc_id (or its
-- snapshot's content hash) and stored in key order, so a lookup reads one row group here
-- and then only those rows (warehouse/row_hints.py). A hint, never an answer: each read
-- still filters by doc_id (or content hash), checks that the hinted rows are the
-- document's, reads rows added since the build (rowid at or past search_row_ends.rows)
-- directly, and reads the whole table when a hint does not hold. Written only with the
-- search index, and replaced with it; a lake has none (its row ids are DuckLake's).
CREATE TABLE search_rows (
    key     UBIGINT NOT NULL,  -- md5_number_upper(doc_id), or of content_hash for snapshot tables
    tbl     VARCHAR NOT NULL,  -- the table
    row     BIGINT NOT NULL    -- the row's rowid at the build
);

CREATE TABLE search_row_ends (
    tbl     VARCHAR NOT NULL,  -- the table
    rows    BIGINT NOT NULL    -- its rowids at the build ran below this; later rows are read directly
);

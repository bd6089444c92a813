-- receipts warehouse, migration 8: snapshot bodies stored with zstd.
-- backend: duckdb
--
-- DuckDB chooses how each column is compressed when it checkpoints; for bodies (JSON,
-- Markdown, a few KB each) it picked FSST or dictionary. zstd stores them about three times
-- smaller and checkpoints faster. A 600,000-row complaints backfill: file 624 MB -> 179 MB,
-- its three checkpoints 10.3 s -> 5.9 s, the run 42-45 s -> 39-40 s. Readers see the same
-- bytes. The table is rebuilt once, its rows copied as they are.
--
-- A lake keeps its rows in Parquet files, compressed by DuckLake, and a DuckDB file in a
-- storage format older than v1.2.0 has no zstd: there this migration is recorded and has
-- nothing to do.
CREATE TABLE snapshots_zstd (
    content_hash VARCHAR NOT NULL,
    size         BIGINT NOT NULL,
    media_type   VARCHAR NOT NULL,
    body         BLOB USING COMPRESSION zstd NOT NULL,
    stored_run   BIGINT NOT NULL
);
INSERT INTO snapshots_zstd SELECT content_hash, size, media_type, body, stored_run FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_zstd RENAME TO snapshots;

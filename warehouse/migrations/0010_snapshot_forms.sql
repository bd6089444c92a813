-- receipts warehouse, migration 10: each snapshot's canonical form.
--
-- snapshot_forms.canonical_form says how a snapshot's bytes were made (one row per
-- snapshot, written with it; warehouse/canonical.py):
--   rfc8785           a JSON record as RFC 8785 (JCS) writes it: canonical form v2, what
--                     every JSON record is stored as;
--   receipts-json-v1  canonical form v1: a JSON record whose v1 bytes are not its RFC 8785
--                     bytes (a float such as 1.0, a key at or above U+E000), or that holds
--                     an integer outside +-(2^53 - 1), which RFC 8785 cannot;
--   raw               the bytes as served (a GitHub file's content).
-- A table beside snapshots, not a column of it: rows are never updated, and a column added
-- now would need the rows stored before it filled in. They are filled when this migration
-- is applied (warehouse/snapshot_forms.py): a GitHub file's bytes, and any snapshot whose
-- media type is not JSON, are raw; every other one is a JSON record in canonical form v1,
-- labelled rfc8785 where its bytes are their value's RFC 8785 bytes (v1 and RFC 8785 agree
-- on most records), each checked.
CREATE TABLE snapshot_forms (
    content_hash   VARCHAR NOT NULL,
    canonical_form VARCHAR NOT NULL
);

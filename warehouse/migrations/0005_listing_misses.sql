-- receipts warehouse, migration 5: documents a listing missed without proving them gone.
--
-- A listing that is not provably complete for its scope (a comment tree smaller than its
-- article's comments_count, a list that is never complete) cannot retire what it lacks, so
-- no tombstone records it. One row per live document of the scope that such a listing of
-- a run did not contain: the drift report calls it "unseen since run N", N being the last
-- run that listed the scope and did not miss it. Append-only, written with the listing.
CREATE TABLE listing_misses (
    run_id      BIGINT NOT NULL,
    scope       VARCHAR NOT NULL,
    doc_id      VARCHAR NOT NULL,
    revision    INTEGER NOT NULL,   -- the document's current revision when it was missed
    recorded_at TIMESTAMPTZ NOT NULL
);

-- The misses that stand: a document that another listing of the same run yielded after
-- all (a revision or a sighting written by that run) was seen, not missed.
CREATE VIEW run_misses AS
SELECT m.run_id, m.doc_id, min(m.scope) AS scope
FROM listing_misses m
WHERE NOT EXISTS (
        SELECT 1 FROM revisions r WHERE r.doc_id = m.doc_id AND r.valid_from_run = m.run_id
    )
  AND NOT EXISTS (
        SELECT 1 FROM sightings g WHERE g.doc_id = m.doc_id AND g.run_id = m.run_id
    )
GROUP BY m.run_id, m.doc_id;

-- receipts warehouse, migration 12: a revision's log entry is rebuilt from its rows.
--
-- A revision's, tombstone's or restoration's entry (docs/transparency-log.md) is a function
-- of the rows it describes: its revision row, its document's kind and whether the revision
-- before it is a tombstone. From this migration on, such an entry is appended with its
-- bytes NULL; its leaf hash (in tlog_hashes) is what the log keeps of it, and whoever
-- reads the entry rebuilds it from the rows (warehouse/tlog/store.py) and checks it
-- against that leaf. A push's entry, whose receipt's transaction ids are not rows of
-- their own, is still stored. Entries stored before keep their bytes.
ALTER TABLE tlog_entries ALTER COLUMN entry DROP NOT NULL;

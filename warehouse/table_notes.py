"""What each table and view of the warehouse means, for ``receipts schema``.

The tables' meanings are kept here, one line each (a test checks that every table and view
the migrations create has one, and that none is left for a table that is gone). A column's
meaning is the comment written after it in the migration that creates it
(``quote_hash VARCHAR NOT NULL,   -- sha256 of the quote as cited``), where there is one.
"""

from __future__ import annotations

import re

from warehouse.schema import migrations

TABLE_NOTES: dict[str, str] = {
    "claim_checks": "One row per claim per check: what the claim cites, the status found "
    "and the revisions it names.",
    "claim_status": "The latest check of every claim of every claim set.",
    "corpus_members": "The documents that are members of each corpus now, and the run they "
    "joined in.",
    "current_revisions": "Each document's current revision (the last one; a tombstone if it "
    "is gone).",
    "documents": "Identity: one row per doc_id (source and kind), written when first seen.",
    "input_fingerprints": "The fingerprint of the raw input a backfill built each document "
    "from, and the content hash it produced.",
    "listing_misses": "Documents an incomplete listing did not contain, without proof they "
    "are gone (drift calls them unseen).",
    "memberships": "Corpus membership events: a document joined or left a corpus in a run.",
    "push_batches": "One row per transaction a push sent: committed, conflict or failed.",
    "push_summary": "One row per push: its start, its end, its receipt and its batches.",
    "pushes": "The push ledger: a 'started' row, then a 'finished' row with the receipt.",
    "quote_needles": "Each claimed quote's search strings under one version of the quote rules.",
    "reader_texts": "Each snapshot's text as a reader sees it, under one version of the "
    "quote rules.",
    "revision_validity": "Every revision with its validity: until which run and time, and "
    "whether it is current.",
    "revisions": "The n-th distinct content of a document (or a tombstone), with its "
    "provenance. Append-only.",
    "run_misses": "The listing misses that stand (no other listing of the run yielded the "
    "document).",
    "run_progress": "One row per committed batch of a run, in the batch's own transaction.",
    "run_summary": "One row per run: its start, its end (if any), its status and counts.",
    "runs": "The run ledger: a 'started' row, then a 'finished' row.",
    "schema_migrations": "The migrations applied to this warehouse, with their checksums.",
    "search_documents": "The documents the search index holds: each one's place in doc_id "
    "order and the current revision its build read.",
    "search_index": "The search index's build: when, the log entries it saw (later ones are "
    "read directly), its word rules and size.",
    "search_postings": "The search index: which indexed documents hold each word (by its "
    "CRC-32), one row per word and block of 65,536 documents.",
    "search_row_ends": "Each table's rowids at the search index's build ran below this; later "
    "rows are read directly.",
    "search_rows": "Where each document's rows are (rowids by a number made from the doc_id "
    "or content hash), in that number's order: a hint, checked on use.",
    "sightings": "Every distinct place (URL, commit) at which a document's bytes were seen.",
    "snapshot_forms": "Each snapshot's canonical form: rfc8785 (RFC 8785 JSON), "
    "receipts-json-v1 (canonical JSON v1) or raw (bytes as served).",
    "snapshots": "Content-addressed bytes: sha256(body) = content_hash, stored once.",
    "tlog_checkpoints": "The transparency log's checkpoints: size, root hash and the C2SP "
    "signed note, one per writing run that added entries.",
    "tlog_entries": "The transparency log's entries, one per revision, tombstone, "
    "restoration and push receipt, in commit order (docs/transparency-log.md).",
    "tlog_hashes": "The log's Merkle tree as stored hashes (Go tlog's layout): every "
    "complete subtree's hash at its stored-hash index.",
    "warehouse_meta": "Settings of the warehouse itself (key, value), append-only.",
}

_CREATE = re.compile(r"^CREATE\s+(?:TABLE|VIEW)\s+(\w+)", re.IGNORECASE)
_COLUMN_NOTE = re.compile(r"^\s+(\w+)\s+[A-Z][^-]*?--\s*(.+?)\s*$")


def column_notes() -> dict[tuple[str, str], str]:
    """``(table, column) -> meaning``, from the comments after column definitions in the
    migrations (a later migration's comment wins)."""
    notes: dict[tuple[str, str], str] = {}
    for migration in migrations():
        table: str | None = None
        for line in migration.sql.splitlines():
            created = _CREATE.match(line)
            if created is not None:
                table = created.group(1)
                continue
            if line.startswith(")"):
                table = None
                continue
            found = _COLUMN_NOTE.match(line)
            if table is not None and found is not None:
                notes[(table, found.group(1))] = found.group(2)
    return notes

"""A one-off backfill of an NHTSA flat file: one run, resumable, in bulk (the pipeline's half:
the ledger, the threads, memory, resuming).

The rows of one identity are one document (a complaint appears once per vehicle and
component, a recall once per make/model/year), and they need not be adjacent in the file.
The file is streamed twice, a few MB at a time, so memory does not grow with it; the work
per line runs inside DuckDB (:mod:`warehouse.bulk`), on every core:

1. **Check.** Every line is validated against the layout of the kind; malformed rows (wrong
   field count, bad date, no identity) are counted and reported with their line numbers
   (lines the bulk check cannot vouch for are judged by the source's row judge,
   :class:`sources.nhtsa.flatfile.rows.RowChecker`, one at a time). For the rows of the
   wanted vehicle, the line number, identity and a SHA-256 of the raw line go to a scratch
   database attached to the warehouse.
2. **Plan.** Rows are grouped into documents; each one's *fingerprint* (a digest of its
   lines' digests and of the rules that build its bytes) is compared with the one recorded
   when it was last built. Documents whose input did not change are not built again.
3. **Build and commit.** The file is read again up to the last line a document to build
   needs; each such document's canonical JSON is assembled at its last line and hashed.
   Documents are committed in the order of their last line, ``--batch-size`` per
   transaction, each carrying the checkpoint ``<file digest>:<last line>``; each batch
   commits in a thread of its own (:class:`pipelines.in_order.InOrder`) while the next
   blocks are built, one batch at a time.

An interrupted backfill of the same file resumes after the last committed line and never
counts a document twice; a checkpoint of a different file is ignored (start over).

- :mod:`.request`: what to backfill, and what a run reports.
- :mod:`.run`: :func:`~.run.run_backfill`, one run from start to ledger.
- :mod:`.passes`: pass 1 (check and stage) and pass 2 (build and commit), with their threads.
- :mod:`.ledger`: the run's ledger counts, warnings and failure (an unexpected exception is
  an internal error, as in an ingest).
- :mod:`.resume`, :mod:`.scratch`, :mod:`.memory`: the checkpoint to resume after, the
  scratch directory, and the memory limits and allocators.
"""

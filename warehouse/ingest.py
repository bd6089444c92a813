"""The ingest engine: batches of records in, snapshots and revisions out.

Each batch moves through Arrow and is compared with the current revisions in one bulk join;
its new snapshots, revisions, sightings and the run's progress row commit in one
transaction. Nothing is updated or deleted; de-duplication is by anti-join inside the
writing transaction, never by a key constraint. The statements are in
:mod:`warehouse.ingest_sql`, the batch's Arrow tables in :mod:`warehouse.ingest_batch`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import pyarrow as pa

from warehouse import ingest_sql as sql
from warehouse.backends import ROW_GROUP_SIZE
from warehouse.canonical import FORM_JCS, same_value
from warehouse.clock import now
from warehouse.conflicts import retrying_conflicts
from warehouse.errors import IntegrityError, MassRetireRefused
from warehouse.ingest_batch import (
    first_per_doc,
    key_table,
    payload_table,
    shared_prefix,
    snapshot_table,
)
from warehouse.records import Listing, Record
from warehouse.sightings import record_misses
from warehouse.store import Warehouse
from warehouse.tlog import appends
from warehouse.tlog.ahead import Ahead
from warehouse.tlog.store import has_log
from warehouse.tlog.transactions import logged_transaction

# Records per transaction. Each batch is classified with one scan of the current revisions,
# so fewer, larger batches cost less; a crash loses at most one batch's work. One row group
# of a DuckDB file: a batch of new records is written straight into the file (see
# warehouse.backends.ROW_GROUP_SIZE). Measured on 200,000 ~1 KB records: a first ingest took
# 3.3-4.5 s in batches of 16,384 on the file's row groups, 5.0-5.5 s in batches of 20,000
# on DuckDB's default row groups (through the WAL); batches of 20,000 on the smaller row
# groups, each ending in a partly filled one, left a file twice the size (71 MB, 36 MB).
DEFAULT_BATCH_SIZE = ROW_GROUP_SIZE
COUNT_KEYS = ("new", "changed", "unchanged", "gone", "restored")


@dataclass
class Counts:
    records: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    gone: int = 0
    restored: int = 0

    def add(self, other: Counts) -> None:
        for name in ("records", *COUNT_KEYS):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNT_KEYS}


@dataclass
class Ingestor:
    """Writes the listings of one run into the warehouse."""

    warehouse: Warehouse
    run_id: int
    batch_size: int = DEFAULT_BATCH_SIZE
    allow_mass_retire: bool = False
    on_batch: Callable[[Counts], None] | None = None
    corpus: str | None = None
    _batch_no: int = field(default=0, init=False)
    _run_seen_ready: bool = field(default=False, init=False)
    # The doc_id prefix of the listing's known tables, while they are there.
    _known: str | None = field(default=None, init=False)
    # Whether ``_known_stored`` has been read (at the listing's first batch that writes).
    _stored_read: bool = field(default=False, init=False)
    # Batches whose commit conflicted with another writer of a lake and were written again.
    conflicts_retried: int = field(default=0, init=False)
    # Whether the warehouse has the log's tables (asked once: inside a lake's transaction,
    # the catalog took 30-40 ms to answer, each batch).
    _has_log: bool | None = field(default=None, init=False)

    @property
    def _logged(self) -> bool:
        if self._has_log is None:
            self._has_log = has_log(self.warehouse._con)
        return self._has_log

    def _ensure_run_seen(self) -> None:
        if not self._run_seen_ready:
            self.warehouse._con.execute(sql.RUN_SEEN)
            self._run_seen_ready = True

    def retire_departed(self) -> list[str]:
        """End of a complete run: members of the corpus that no entry yielded leave it.

        Only call this when every entry of the manifest succeeded; membership is per corpus,
        so nothing is tombstoned and other corpora sharing the documents are untouched.
        """
        if self.corpus is None:
            return []
        self._ensure_run_seen()
        con = self.warehouse._con
        with self.warehouse._transaction():
            departed = [d for (d,) in con.execute(sql.DEPARTED, {"corpus": self.corpus}).fetchall()]
            if not departed:
                return []
            members = int(self.warehouse._scalar(sql.MEMBERS, {"c": self.corpus}))
            if len(departed) * 2 > members and not self.allow_mass_retire:
                raise MassRetireRefused(f"corpus {self.corpus!r}", len(departed), members)
            con.register("_departed", pa.table({"doc_id": departed}))
            try:
                con.execute(
                    sql.LEAVE_CORPUS, {"corpus": self.corpus, "run": self.run_id, "at": now()}
                )
            finally:
                con.unregister("_departed")
        return departed

    def ingest(self, source: str, listing: Listing) -> Counts:
        """Ingest one listing; tombstone what a complete listing no longer contains.

        On a DuckDB file, the batches of a listing of several are looked up in what the
        warehouse knows of the listing's documents, read once at its second batch (see
        :data:`warehouse.ingest_sql.KNOWN_CURRENT`)."""
        con = self.warehouse._con
        total = Counts()
        self._ensure_run_seen()
        con.execute(sql.SEEN)
        records = iter(listing.records)
        first_ids: tuple[str, str] | None = None  # the lowest and highest of the first batch
        try:
            with self.warehouse.bulk_writes():
                while batch := list(islice(records, self.batch_size)):
                    ids = [r.doc_id for r in batch]
                    if first_ids is None:
                        first_ids = (min(ids), max(ids))
                    elif self._known is None and not self.warehouse.is_lake:
                        self._read_known(shared_prefix(*first_ids, *ids))
                    total.add(self._commit_batch(source, listing.scope, batch, ids))
                    del batch, ids  # before the next batch is read: one batch at a time
                if total.records == 0:  # an empty listing still records its run's progress
                    total.add(self._commit_batch(source, listing.scope, [], []))
        finally:
            self._forget_known()
        if listing.complete:
            total.add(self._retire_missing(source, listing.scope))
        else:  # what an incomplete listing lacks is not gone, but it is recorded as unseen
            record_misses(self.warehouse, self.run_id, listing.scope)
        if listing.lower_bound:
            # What the listing missed stays in the corpus: it was not seen to go.
            con.execute(sql.KEEP_SCOPE, {"scope": listing.scope})
        return total

    def _read_known(self, prefix: str) -> None:
        """Read what the warehouse knows of the listing's documents whose doc_id starts with
        ``prefix`` (see :data:`warehouse.ingest_sql.KNOWN_CURRENT`)."""
        con = self.warehouse._con
        con.execute(sql.KNOWN_CURRENT, {"prefix": prefix})
        con.execute(sql.KNOWN_SIGHTINGS, {"prefix": prefix})
        if self.corpus is not None:
            con.execute(sql.KNOWN_MEMBERS, {"prefix": prefix, "corpus": self.corpus})
        self._known = prefix

    def _forget_known(self) -> None:
        if self._known is not None:
            for table in sql.KNOWN_TABLES:
                self.warehouse._con.execute(f"DROP TABLE IF EXISTS {table}")
        self._known = None
        self._stored_read = False

    def _commit_batch(
        self, source: str, scope: str, records: list[Record], ids: list[str]
    ) -> Counts:
        """Commit a batch of ``records`` (``ids``: their doc_ids)."""
        rows, ids = first_per_doc(records, ids)
        hashes = [hashlib.sha256(r.body).hexdigest() for r in rows]
        checkpoint = next((r.checkpoint for r in reversed(records) if r.checkpoint), None)
        keys = key_table(rows, ids, hashes)
        prefix = self._known
        known = prefix is not None and all(i.startswith(prefix) for i in ids)
        return self._commit(source, scope, keys, rows, hashes, len(records), checkpoint, known)

    def _commit(
        self,
        source: str,
        scope: str,
        keys: pa.Table,
        rows: list[Record],
        hashes: list[str],
        records: int,
        checkpoint: str | None,
        known: bool = False,
    ) -> Counts:
        """Classify a batch's key table and write what is new, changed or restored; ``rows``
        holds (at least) the records of those, with their bytes, and ``hashes`` their hashes.
        ``known``: the batch is looked up in the listing's known tables (:meth:`_read_known`),
        not in the warehouse's.

        A commit that conflicts with another writer of a lake is retried, the whole batch
        (classified again against what the other writer committed), at most
        :data:`warehouse.conflicts.CONFLICT_RETRIES` times, and counted in
        :attr:`conflicts_retried`."""

        def attempt() -> Counts:
            return self._commit_once(source, scope, keys, rows, hashes, records, checkpoint, known)

        def retried() -> None:
            self.conflicts_retried += 1

        counts = retrying_conflicts(self.warehouse, scope, attempt, retried)
        if self.on_batch is not None:
            self.on_batch(counts)
        return counts

    def _commit_once(
        self,
        source: str,
        scope: str,
        keys: pa.Table,
        rows: list[Record],
        hashes: list[str],
        records: int,
        checkpoint: str | None,
        known: bool,
    ) -> Counts:
        con = self.warehouse._con
        counts = Counts(records=records)
        params = {"run": self.run_id, "at": now(), "scope": scope}
        con.register("_batch", keys)
        try:
            with logged_transaction(self.warehouse):
                con.execute(sql.CLASSIFY_KNOWN if known else sql.CLASSIFY)
                for outcome, n in con.execute(sql.COUNT_OUTCOMES).fetchall():
                    setattr(counts, outcome, int(n))
                if counts.new or counts.changed or counts.restored:
                    # A re-encoding writes a revision, but the document's value is unchanged.
                    reencoded = self._write(rows, hashes, params, known)
                    counts.changed -= reencoded
                    counts.unchanged += reencoded
                con.execute(
                    sql.INSERT_SIGHTINGS_KNOWN if known else sql.INSERT_SIGHTINGS,
                    {"run": self.run_id},
                )
                con.execute(sql.KEEP_SEEN)
                con.execute(sql.KEEP_RUN_SEEN)
                if self.corpus is not None:
                    con.execute(
                        sql.JOIN_CORPUS_KNOWN if known else sql.JOIN_CORPUS,
                        {"corpus": self.corpus, "run": self.run_id, "at": params["at"]},
                    )
                self._record_progress(source, scope, counts, checkpoint)
        finally:
            con.unregister("_batch")
        return counts

    def _write(
        self, rows: list[Record], hashes: list[str], params: dict[str, Any], known: bool
    ) -> int:
        """The documents, snapshots and revisions of a classified batch's new, changed and
        restored records (inside the batch's transaction); ``known``: with the listing's
        known tables. Returns how many of the changed ones only changed canonical form."""
        con = self.warehouse._con
        classified = con.execute(sql.TO_WRITE).fetchall()
        to_write = {doc_id: current for doc_id, current, _ in classified}
        if len(to_write) == len(rows):
            # The batch's doc_ids are distinct and include every one to write, so all of
            # them are (a row that was not would fail its lookup in to_write below).
            payload, digests = rows, hashes
        else:
            kept = [(r, h) for r, h in zip(rows, hashes, strict=True) if r.doc_id in to_write]
            if len(kept) != len(to_write):  # the classification came from these very rows
                raise IntegrityError(
                    f"{len(to_write) - len(kept)} documents classified to write are not "
                    "among the batch's records"
                )
            payload = [r for r, _ in kept]
            digests = [h for _, h in kept]
        new = self._new_hashes(known)
        current = [to_write[r.doc_id] for r in payload]
        reencoded = self._reencoded(payload, current)
        revisions = payload_table(payload, digests, current, reencoded)
        con.register("_payload", revisions)
        try:
            # A DuckDB file's log entries are made beside the inserts (warehouse.tlog.ahead).
            ahead = None
            if self._logged and not self.warehouse.is_lake:
                restored = [d for d, _, outcome in classified if outcome == "restored"]
                ahead = Ahead(con, revisions, restored, self.run_id)
            with ahead or nullcontext():
                if None in current:  # a new document: otherwise no row qualifies
                    con.execute(sql.INSERT_DOCUMENTS, {"run": self.run_id})
                if new:  # bytes no snapshot holds yet
                    con.register("_snapshots", snapshot_table(payload, digests, new))
                    try:
                        con.execute(sql.INSERT_SNAPSHOTS, {"run": self.run_id})
                        con.execute(sql.INSERT_FORMS)
                        if self._stored_read:  # any batch's, in the prefix or not
                            con.execute(sql.KEEP_STORED)
                    finally:
                        con.unregister("_snapshots")
                con.execute(sql.INSERT_REVISIONS, params)
                if ahead is not None:
                    ahead.write(con)
                else:
                    appends.append_ingest_batch(
                        con, self.run_id, lake=self.warehouse.is_lake, logged=self._logged
                    )
        finally:
            con.unregister("_payload")
        return len(reencoded)

    def _reencoded(self, payload: list[Record], current: list[int | None]) -> frozenset[str]:
        """The documents of ``payload`` (``current``: their current revisions) that only
        change canonical form: classified changed, their current bytes canonical form v1,
        their new bytes the RFC 8785 bytes of the same value
        (:func:`warehouse.canonical.same_value`). Only documents with a current revision
        and RFC 8785 bytes are looked up (a first ingest looks up none)."""
        jcs_changed = [
            r.doc_id
            for r, revision in zip(payload, current, strict=True)
            if revision is not None and r.canonical_form == FORM_JCS
        ]
        if not jcs_changed:
            return frozenset()
        con = self.warehouse._con
        con.register("_jcs_changed", pa.table({"doc_id": pa.array(jcs_changed, pa.string())}))
        try:
            old = {str(d): bytes(b) for d, b in con.execute(sql.V1_CURRENT).fetchall()}
        finally:
            con.unregister("_jcs_changed")
        return frozenset(
            r.doc_id for r in payload if r.doc_id in old and same_value(old[r.doc_id], r.body)
        )

    def _new_hashes(self, known: bool) -> set[str]:
        """The hashes the classified batch writes whose bytes no snapshot holds yet."""
        con = self.warehouse._con
        if not known:
            return {h for (h,) in con.execute(sql.NEW_SNAPSHOTS).fetchall()}
        if not self._stored_read:
            con.execute(sql.KNOWN_STORED)
            self._stored_read = True
        written = con.execute(sql.WRITTEN_HASHES).fetchall()
        maybe = [h for h, maybe_stored in written if maybe_stored]
        if not maybe:
            return {h for h, _ in written}
        con.register("_maybe_stored", pa.table({"content_hash": pa.array(maybe, pa.string())}))
        try:
            stored = {h for (h,) in con.execute(sql.STORED_AMONG).fetchall()}
        finally:
            con.unregister("_maybe_stored")
        return {h for h, _ in written if h not in stored}

    def _retire_missing(self, source: str, scope: str) -> Counts:
        con = self.warehouse._con
        counts = Counts()
        with logged_transaction(self.warehouse):
            gone = con.execute(sql.GONE, {"scope": scope}).fetchall()
            if not gone:
                return counts
            live = int(self.warehouse._scalar(sql.LIVE_IN_SCOPE, {"scope": scope}))
            if len(gone) * 2 > live and not self.allow_mass_retire:
                raise MassRetireRefused(f"scope {scope!r}", len(gone), live)
            at = now()
            table = pa.table(
                {
                    "doc_id": [d for d, _ in gone],
                    "revision": [int(r) + 1 for _, r in gone],
                }
            )
            con.register("_gone", table)
            try:
                con.execute(sql.INSERT_TOMBSTONES, {"run": self.run_id, "at": at, "scope": scope})
                appends.append_tombstones(
                    con, self.run_id, lake=self.warehouse.is_lake, logged=self._logged
                )
            finally:
                con.unregister("_gone")
            counts.gone = len(gone)
            self._record_progress(source, scope, counts, None)
        if self.on_batch is not None:
            self.on_batch(counts)
        return counts

    def _record_progress(
        self, source: str, scope: str, counts: Counts, checkpoint: str | None
    ) -> None:
        self._batch_no += 1
        self.warehouse._con.execute(
            sql.RECORD_PROGRESS,
            {
                "run": self.run_id,
                "batch": self._batch_no,
                "source": source,
                "scope": scope,
                "at": now(),
                "records": counts.records,
                "checkpoint": checkpoint,
                **counts.as_dict(),
            },
        )


def ingest_records(
    warehouse: Warehouse,
    run_id: int,
    source: str,
    scope: str,
    records: Iterable[Record],
    *,
    complete: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Counts:
    """Convenience: ingest one listing in a run that already started."""
    ingestor = Ingestor(warehouse, run_id, batch_size=batch_size)
    return ingestor.ingest(source, Listing(scope=scope, records=records, complete=complete))

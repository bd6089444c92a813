"""The ingest engine: batches of records in, snapshots and revisions out.

Each batch moves through Arrow and is compared with the current revisions in one bulk join;
its new snapshots, revisions, sightings and the run's progress row commit in one
transaction. Nothing is updated or deleted; de-duplication is by anti-join inside the
writing transaction, never by a key constraint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import orjson
import pyarrow as pa

from warehouse.backends import ROW_GROUP_SIZE
from warehouse.clock import now
from warehouse.conflicts import retrying_conflicts
from warehouse.errors import IntegrityError, MassRetireRefused
from warehouse.records import Listing, Record
from warehouse.scopes import CURRENT_IN_SCOPE
from warehouse.sightings import record_misses
from warehouse.store import Warehouse

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


# Every record of a batch is classified from this small table; only the rows that need
# writing (new, changed, restored) are turned into the payload table, and only the bytes no
# snapshot holds yet into the snapshot table. Both are built in the order the statements
# insert them, so no statement joins or groups rows that carry bodies. Measured on a first
# ingest of 200,000 ~1 KB records: the snapshot insert took 0.63 s (and finding the new
# hashes 0.22 s) where joining and grouping the bodies took 1.23 s; the process faulted in
# 156,000-161,000 pages where it had 235,000.
_KEY_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("content_hash", pa.string()),
        ("source_url", pa.string()),
        ("source_commit", pa.string()),
        ("fetched_at", pa.timestamp("us", tz="UTC")),
    ]
)
_PAYLOAD_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("kind", pa.string()),
        ("content_hash", pa.string()),
        ("current_revision", pa.int64()),
        ("source_url", pa.string()),
        ("source_commit", pa.string()),
        ("fetched_at", pa.timestamp("us", tz="UTC")),
        ("source_format", pa.string()),
        ("etag", pa.string()),
        ("last_modified", pa.string()),
        ("attributes", pa.string()),
    ]
)
_SNAPSHOT_SCHEMA = pa.schema(
    [
        ("content_hash", pa.string()),
        ("size", pa.int64()),
        ("media_type", pa.string()),
        ("body", pa.binary()),
    ]
)


def _first_per_doc(records: list[Record], ids: list[str]) -> tuple[list[Record], list[str]]:
    """A listing carries each document once: the first record for a doc_id wins (here within
    the batch; across batches the classification skips doc_ids the listing already had).
    ``ids`` are the records' doc_ids; the kept records and theirs are returned."""
    if len(set(ids)) == len(ids):  # the usual case, decided without a loop in Python
        return records, ids
    first: dict[str, Record] = {}
    for record in records:
        first.setdefault(record.doc_id, record)
    return list(first.values()), list(first)


def _shared_prefix(*ids: str) -> str:
    """The longest prefix every one of ``ids`` starts with (of a batch's, the prefix its lowest
    and highest doc_ids share)."""
    low, high = min(ids), max(ids)
    size = 0
    for a, b in zip(low, high, strict=False):
        if a != b:
            break
        size += 1
    return low[:size]


def _key_table(rows: list[Record], ids: list[str], hashes: list[str]) -> pa.Table:
    return pa.table(
        {
            "doc_id": ids,
            "content_hash": hashes,
            "source_url": [r.provenance.url for r in rows],
            "source_commit": [r.provenance.commit for r in rows],
            "fetched_at": [r.provenance.fetched_at for r in rows],
        },
        schema=_KEY_SCHEMA,
    )


def _payload_table(rows: list[Record], hashes: list[str], current: list[int | None]) -> pa.Table:
    """The revisions to write: ``rows`` with their ``hashes`` and ``current`` revisions."""
    return pa.table(
        {
            "doc_id": [r.doc_id for r in rows],
            "kind": [r.kind for r in rows],
            "content_hash": hashes,
            "current_revision": current,
            "source_url": [r.provenance.url for r in rows],
            "source_commit": [r.provenance.commit for r in rows],
            "fetched_at": [r.provenance.fetched_at for r in rows],
            "source_format": [r.provenance.source_format for r in rows],
            "etag": [r.provenance.etag for r in rows],
            "last_modified": [r.provenance.last_modified for r in rows],
            "attributes": [
                None
                if r.attributes is None
                else orjson.dumps(r.attributes, option=orjson.OPT_SORT_KEYS).decode()
                for r in rows
            ],
        },
        schema=_PAYLOAD_SCHEMA,
    )


def _snapshot_table(rows: list[Record], hashes: list[str], new: set[str]) -> pa.Table:
    """The first of ``rows`` for each hash in ``new`` (the hashes no snapshot holds yet, all
    of them among ``hashes``)."""
    if len(new) == len(rows):  # every row's bytes are new, and no two rows share them
        kept, digests = rows, hashes
    else:
        first: dict[str, Record] = {}
        for row, digest in zip(rows, hashes, strict=True):
            if digest in new:
                first.setdefault(digest, row)
        kept, digests = list(first.values()), list(first)
    return pa.table(
        {
            "content_hash": digests,
            "size": [len(r.body) for r in kept],
            "media_type": [r.media_type for r in kept],
            "body": [r.body for r in kept],
        },
        schema=_SNAPSHOT_SCHEMA,
    )


# The current revision of each document of the batch. A tombstone's hash is NULL, which
# arg_max skips, but the classification looks at the tombstone flag before it compares hashes.
_CURRENT = """
SELECT doc_id, max(revision) AS revision, arg_max(content_hash, revision) AS content_hash,
       arg_max(tombstone, revision) AS tombstone
FROM revisions
WHERE {where}
GROUP BY doc_id
"""

# -- What the warehouse knows of a listing's documents, read once per listing ---------------
# Each batch is classified against the current revisions, and its sightings and corpus
# memberships are looked up, with a scan of the table concerned: every revision, sighting and
# membership of the warehouse, again for each batch, however few of them are the listing's.
# An identical re-ingest of 200,000 records took 1.4 s in a warehouse of those alone and 5.5 s
# in one of 2,000,000 documents. On a DuckDB file (one writer: nothing else changes the
# warehouse while the listing is written), a listing of several batches instead reads once,
# at its second batch, what the warehouse knows of the documents whose doc_id starts with the
# prefix its first two batches share: their current revisions, their sightings and their
# memberships of the corpus; the batches whose every doc_id has that prefix are looked up
# there. What a batch writes never makes these tables stale for a later batch: a doc_id is
# written once per listing (later records for it are skipped), and only by its own batch.
_KNOWN_CURRENT = "CREATE OR REPLACE TEMP TABLE _known_current AS " + _CURRENT.format(
    where="starts_with(doc_id, $prefix)"
)
_KNOWN_SIGHTINGS = """
CREATE OR REPLACE TEMP TABLE _known_sightings AS
SELECT doc_id, content_hash, source_url, source_commit FROM sightings
WHERE starts_with(doc_id, $prefix)
"""
_KNOWN_MEMBERS = """
CREATE OR REPLACE TEMP TABLE _known_members AS
SELECT doc_id FROM memberships
WHERE corpus = $corpus AND starts_with(doc_id, $prefix)
GROUP BY doc_id
HAVING arg_max(event, run_id) = 'joined'
"""
_KNOWN_TABLES = ("_known_current", "_known_sightings", "_known_members", "_known_stored")

_CLASSIFY_TEMPLATE = """
CREATE OR REPLACE TEMP TABLE _classified AS
WITH cur AS ({current})
SELECT
    b.*,
    cur.revision AS current_revision,
    CASE
        WHEN cur.doc_id IS NULL THEN 'new'
        WHEN cur.tombstone THEN 'restored'
        WHEN cur.content_hash = b.content_hash THEN 'unchanged'
        ELSE 'changed'
    END AS outcome
FROM _batch b LEFT JOIN cur ON cur.doc_id = b.doc_id
-- NOT EXISTS, not NOT IN: an anti-join DuckDB builds on the batch and probes with _seen,
-- where NOT IN (a mark join, for its NULL rule) built a hash table of everything the
-- listing had seen so far, again for every batch.
WHERE NOT EXISTS (SELECT 1 FROM _seen s WHERE s.doc_id = b.doc_id)
"""
_CLASSIFY = _CLASSIFY_TEMPLATE.format(
    current=_CURRENT.format(where="doc_id IN (SELECT doc_id FROM _batch)")
)
_CLASSIFY_KNOWN = _CLASSIFY_TEMPLATE.format(
    current="SELECT * FROM _known_current WHERE doc_id IN (SELECT doc_id FROM _batch)"
)

_TO_WRITE = "SELECT doc_id, current_revision FROM _classified WHERE outcome <> 'unchanged'"

_NEW_SNAPSHOTS = """
SELECT DISTINCT c.content_hash FROM _classified c
WHERE c.outcome <> 'unchanged'
  AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.content_hash = c.content_hash)
"""

# With the known tables, which bytes are stored already is answered from a 64-bit digest of
# every stored hash (read at the listing's first batch that writes, then added to by each
# batch that stores bytes), not by a scan of every stored hash for each batch: a written hash
# whose digest is not there is new; only the others (bytes stored already, or a digest
# collision) are looked up in ``snapshots``. A listing that writes nothing, as an identical
# re-ingest, never reads it (2,200,000 stored hashes: 0.05-0.11 s and a 17 MB table).
_KNOWN_STORED = """
CREATE OR REPLACE TEMP TABLE _known_stored AS SELECT hash(content_hash) AS digest FROM snapshots
"""
# (The batch's digests are matched first, so that no statement builds a hash table of every
# stored digest.)
_WRITTEN_HASHES = """
WITH written AS (
    SELECT DISTINCT content_hash, hash(content_hash) AS digest FROM _classified
    WHERE outcome <> 'unchanged'
)
SELECT w.content_hash, w.digest IN (
    SELECT digest FROM _known_stored WHERE digest IN (SELECT digest FROM written)
)
FROM written w
"""
_STORED_AMONG = """
SELECT DISTINCT content_hash FROM snapshots WHERE content_hash IN (SELECT * FROM _maybe_stored)
"""
_KEEP_STORED = "INSERT INTO _known_stored SELECT hash(content_hash) FROM _snapshots"

_INSERT_DOCUMENTS = """
INSERT INTO documents
SELECT p.doc_id, split_part(p.doc_id, '/', 1), p.kind, $run
FROM _payload p
WHERE p.current_revision IS NULL
  AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = p.doc_id)
"""

_INSERT_SNAPSHOTS = """
INSERT INTO snapshots SELECT content_hash, size, media_type, body, $run FROM _snapshots
"""

_INSERT_REVISIONS = """
INSERT INTO revisions
SELECT doc_id, coalesce(current_revision, 0) + 1, content_hash, false, NULL,
       $run, $at, $scope, source_url, source_commit, source_format, fetched_at,
       etag, last_modified, attributes
FROM _payload
"""

_INSERT_SIGHTINGS_TEMPLATE = """
INSERT INTO sightings
SELECT c.doc_id, c.content_hash, c.source_url, coalesce(c.source_commit, ''), $run, c.fetched_at
FROM _classified c
WHERE c.source_url IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM {sightings} s
    WHERE s.doc_id = c.doc_id AND s.content_hash = c.content_hash
      AND s.source_url = c.source_url AND s.source_commit = coalesce(c.source_commit, '')
)
"""
_INSERT_SIGHTINGS = _INSERT_SIGHTINGS_TEMPLATE.format(sightings="sightings")
_INSERT_SIGHTINGS_KNOWN = _INSERT_SIGHTINGS_TEMPLATE.format(sightings="_known_sightings")

_COUNT_OUTCOMES = "SELECT outcome, count(*) FROM _classified GROUP BY outcome"

_JOIN_CORPUS_TEMPLATE = """
INSERT INTO memberships
SELECT $corpus, c.doc_id, 'joined', $run, $at
FROM _classified c
WHERE c.doc_id NOT IN ({members})
"""
_JOIN_CORPUS = _JOIN_CORPUS_TEMPLATE.format(
    members="""
    SELECT doc_id FROM memberships
    WHERE corpus = $corpus AND doc_id IN (SELECT doc_id FROM _classified)
    GROUP BY doc_id
    HAVING arg_max(event, run_id) = 'joined'
    """
)
_JOIN_CORPUS_KNOWN = _JOIN_CORPUS_TEMPLATE.format(
    members="SELECT doc_id FROM _known_members WHERE doc_id IN (SELECT doc_id FROM _classified)"
)

_DEPARTED = """
SELECT doc_id FROM corpus_members
WHERE corpus = $corpus AND doc_id NOT IN (SELECT doc_id FROM _run_seen)
ORDER BY doc_id
"""

_GONE = f"""
SELECT c.doc_id, c.revision
FROM {CURRENT_IN_SCOPE} c
WHERE c.scope = $scope AND NOT c.tombstone
  AND c.doc_id NOT IN (SELECT doc_id FROM _seen)
ORDER BY c.doc_id
"""

_KEEP_SCOPE = f"""
INSERT INTO _run_seen
SELECT doc_id FROM {CURRENT_IN_SCOPE} c WHERE scope = $scope AND NOT tombstone
"""

_LIVE_IN_SCOPE = f"SELECT count(*) FROM {CURRENT_IN_SCOPE} c WHERE scope = $scope AND NOT tombstone"


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

    def _ensure_run_seen(self) -> None:
        if not self._run_seen_ready:
            self.warehouse._con.execute("CREATE OR REPLACE TEMP TABLE _run_seen (doc_id VARCHAR)")
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
            departed = [d for (d,) in con.execute(_DEPARTED, {"corpus": self.corpus}).fetchall()]
            if not departed:
                return []
            members = int(
                self.warehouse._scalar(
                    "SELECT count(*) FROM corpus_members WHERE corpus = $c", {"c": self.corpus}
                )
            )
            if len(departed) * 2 > members and not self.allow_mass_retire:
                raise MassRetireRefused(f"corpus {self.corpus!r}", len(departed), members)
            con.register("_departed", pa.table({"doc_id": departed}))
            try:
                con.execute(
                    "INSERT INTO memberships SELECT $corpus, doc_id, 'left', $run, $at "
                    "FROM _departed",
                    {"corpus": self.corpus, "run": self.run_id, "at": now()},
                )
            finally:
                con.unregister("_departed")
        return departed

    def ingest(self, source: str, listing: Listing) -> Counts:
        """Ingest one listing; tombstone what a complete listing no longer contains.

        On a DuckDB file, the batches of a listing of several are looked up in what the
        warehouse knows of the listing's documents, read once at its second batch (see
        :data:`_KNOWN_CURRENT`)."""
        con = self.warehouse._con
        total = Counts()
        self._ensure_run_seen()
        con.execute("CREATE OR REPLACE TEMP TABLE _seen (doc_id VARCHAR)")
        records = iter(listing.records)
        first_ids: tuple[str, str] | None = None  # the lowest and highest of the first batch
        try:
            with self.warehouse.bulk_writes():
                while batch := list(islice(records, self.batch_size)):
                    ids = [r.doc_id for r in batch]
                    if first_ids is None:
                        first_ids = (min(ids), max(ids))
                    elif self._known is None and not self.warehouse.is_lake:
                        self._read_known(_shared_prefix(*first_ids, *ids))
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
            con.execute(_KEEP_SCOPE, {"scope": listing.scope})
        return total

    def _read_known(self, prefix: str) -> None:
        """Read what the warehouse knows of the listing's documents whose doc_id starts with
        ``prefix`` (see :data:`_KNOWN_CURRENT`)."""
        con = self.warehouse._con
        con.execute(_KNOWN_CURRENT, {"prefix": prefix})
        con.execute(_KNOWN_SIGHTINGS, {"prefix": prefix})
        if self.corpus is not None:
            con.execute(_KNOWN_MEMBERS, {"prefix": prefix, "corpus": self.corpus})
        self._known = prefix

    def _forget_known(self) -> None:
        if self._known is not None:
            for table in _KNOWN_TABLES:
                self.warehouse._con.execute(f"DROP TABLE IF EXISTS {table}")
        self._known = None
        self._stored_read = False

    def _commit_batch(
        self, source: str, scope: str, records: list[Record], ids: list[str]
    ) -> Counts:
        """Commit a batch of ``records`` (``ids``: their doc_ids)."""
        rows, ids = _first_per_doc(records, ids)
        hashes = [hashlib.sha256(r.body).hexdigest() for r in rows]
        checkpoint = next((r.checkpoint for r in reversed(records) if r.checkpoint), None)
        keys = _key_table(rows, ids, hashes)
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
            with self.warehouse._transaction():
                con.execute(_CLASSIFY_KNOWN if known else _CLASSIFY)
                for outcome, n in con.execute(_COUNT_OUTCOMES).fetchall():
                    setattr(counts, outcome, int(n))
                if counts.new or counts.changed or counts.restored:
                    self._write(rows, hashes, params, known)
                con.execute(
                    _INSERT_SIGHTINGS_KNOWN if known else _INSERT_SIGHTINGS, {"run": self.run_id}
                )
                con.execute("INSERT INTO _seen SELECT doc_id FROM _classified")
                con.execute("INSERT INTO _run_seen SELECT doc_id FROM _classified")
                if self.corpus is not None:
                    con.execute(
                        _JOIN_CORPUS_KNOWN if known else _JOIN_CORPUS,
                        {"corpus": self.corpus, "run": self.run_id, "at": params["at"]},
                    )
                self._record_progress(source, scope, counts, checkpoint)
        finally:
            con.unregister("_batch")
        return counts

    def _write(
        self, rows: list[Record], hashes: list[str], params: dict[str, Any], known: bool
    ) -> None:
        """The documents, snapshots and revisions of a classified batch's new, changed and
        restored records (inside the batch's transaction); ``known``: with the listing's
        known tables."""
        con = self.warehouse._con
        to_write = dict(con.execute(_TO_WRITE).fetchall())
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
        con.register("_payload", _payload_table(payload, digests, current))
        try:
            if None in current:  # a new document: otherwise no row qualifies
                con.execute(_INSERT_DOCUMENTS, {"run": self.run_id})
            if new:  # bytes no snapshot holds yet
                con.register("_snapshots", _snapshot_table(payload, digests, new))
                try:
                    con.execute(_INSERT_SNAPSHOTS, {"run": self.run_id})
                    if self._stored_read:  # any batch's, in the prefix or not
                        con.execute(_KEEP_STORED)
                finally:
                    con.unregister("_snapshots")
            con.execute(_INSERT_REVISIONS, params)
        finally:
            con.unregister("_payload")

    def _new_hashes(self, known: bool) -> set[str]:
        """The hashes the classified batch writes whose bytes no snapshot holds yet."""
        con = self.warehouse._con
        if not known:
            return {h for (h,) in con.execute(_NEW_SNAPSHOTS).fetchall()}
        if not self._stored_read:
            con.execute(_KNOWN_STORED)
            self._stored_read = True
        written = con.execute(_WRITTEN_HASHES).fetchall()
        maybe = [h for h, maybe_stored in written if maybe_stored]
        if not maybe:
            return {h for h, _ in written}
        con.register("_maybe_stored", pa.table({"content_hash": pa.array(maybe, pa.string())}))
        try:
            stored = {h for (h,) in con.execute(_STORED_AMONG).fetchall()}
        finally:
            con.unregister("_maybe_stored")
        return {h for h, _ in written if h not in stored}

    def _retire_missing(self, source: str, scope: str) -> Counts:
        con = self.warehouse._con
        counts = Counts()
        with self.warehouse._transaction():
            gone = con.execute(_GONE, {"scope": scope}).fetchall()
            if not gone:
                return counts
            live = int(self.warehouse._scalar(_LIVE_IN_SCOPE, {"scope": scope}))
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
                con.execute(
                    """
                    INSERT INTO revisions
                    SELECT g.doc_id, g.revision, NULL, true, 'gone upstream', $run, $at,
                           $scope, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                    FROM _gone g
                    """,
                    {"run": self.run_id, "at": at, "scope": scope},
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
            "INSERT INTO run_progress VALUES "
            "($run, $batch, $source, $scope, $at, $records, $new, $changed, $unchanged, "
            "$gone, $restored, $checkpoint)",
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

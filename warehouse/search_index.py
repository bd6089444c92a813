"""The search index (migration 0011): which indexed documents hold a word, so that a search
reads only the documents that hold every word of its phrase, in doc_id order.

What a word is, and which words a body and a phrase have, is the caller's (the build is
given a function from a body to its words' hashes; a search gives the hashes of its
phrase's words): the index only stores and intersects them. It is a prefilter, never an
answer: a search reads every candidate's bytes (checked against their hash) and decides
there.

Freshness: the build records how many transparency log entries it saw (``log_size``);
every revision, tombstone and restoration is a log entry in commit order, so the documents
with an entry at or past ``log_size`` are exactly those that changed since, and a search
reads those as they are now instead of trusting their postings (:func:`changed_since_build`).

Written only by :func:`build_index` (``receipts index``), in one transaction that replaces
the whole index; an ingest or a backfill never writes it.
"""

from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import duckdb
import pyarrow as pa

from warehouse import row_hints
from warehouse.asof import Point
from warehouse.clock import now
from warehouse.explore import filter_sql
from warehouse.snapshots import checked_body
from warehouse.staged import fetched
from warehouse.store import Warehouse
from warehouse.tlog.store import size as log_size

_TABLES = ("search_index", "search_documents", "search_postings", "search_rows", "search_row_ends")
# A posting is kept in memory during the build as one integer: word << 31 | ordinal.
_ORDINAL_BITS = 31
# Postings are stored by word and block of ordinals (few rows: a reader that opens the
# warehouse reads every row group's metadata once), each block's as 2-byte offsets.
BLOCK_BITS = 16
# DuckDB's memory limit during a build (the join of every current document with its bytes,
# and each block's postings); the build's own list of postings takes 8 bytes each besides.
BUILD_MEMORY_LIMIT = "1GB"


@dataclass(frozen=True)
class IndexState:
    """What the index covers: the build's time, the log entries it saw, its word rules,
    its size and how long it took."""

    built_at: datetime
    log_size: int
    words_version: int
    documents: int
    postings: int
    seconds: float

    def as_json(self) -> dict[str, Any]:
        return {
            "built_at": self.built_at.isoformat(),
            "log_size": self.log_size,
            "words_version": self.words_version,
            "documents": self.documents,
            "postings": self.postings,
            "seconds": round(self.seconds, 1),
        }


def index_state(warehouse: Warehouse) -> IndexState | None:
    """The index as built, or None when there is none (never built, or a warehouse whose
    schema predates it)."""
    try:
        row = warehouse._con.execute(
            "SELECT built_at, log_size, words_version, documents, postings, seconds "
            "FROM search_index ORDER BY built_at DESC LIMIT 1"
        ).fetchone()
    except duckdb.CatalogException:  # a schema older than migration 0011
        return None
    if row is None:
        return None
    return IndexState(row[0], int(row[1]), int(row[2]), int(row[3]), int(row[4]), float(row[5]))


Progress = Callable[[int, int], None]  # (documents read, documents to read)


def build_index(
    warehouse: Warehouse,
    words_of: Callable[[bytes, str], Iterable[int]],
    words_version: int,
    progress: Progress | None = None,
) -> IndexState:
    """Replace the index with one of every current (not tombstoned) document: each body
    read once, checked against its hash, and ``words_of(body, media_type)`` (hashes below
    2**32) stored as its postings. One transaction: a search sees the old index or the new
    one."""
    started = time.monotonic()
    con = warehouse._con
    with warehouse.memory_limit(BUILD_MEMORY_LIMIT), warehouse._transaction():
        seen_log = log_size(con)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _search_build AS "
            "SELECT (row_number() OVER (ORDER BY c.doc_id) - 1)::INTEGER AS ordinal, c.doc_id, "
            "d.source, d.kind, c.revision, c.content_hash, c.valid_from_run, c.valid_from "
            "FROM current_revisions c JOIN documents d USING (doc_id) WHERE NOT c.tombstone"
        )
        [(total,)] = con.execute("SELECT count(*) FROM _search_build").fetchall()
        row_hint = "NULL::BIGINT" if warehouse.is_lake else "s.rowid"
        result = con.execute(
            f"SELECT b.ordinal, b.content_hash, {row_hint}, s.media_type, s.body "
            "FROM (SELECT ordinal, content_hash FROM _search_build) b "
            "JOIN snapshots s ON s.content_hash = b.content_hash"
        )
        read = bytearray(total)  # a snapshot stored twice is read once
        postings = array("q")
        ordinals, rows = array("i"), array("q")
        done = 0
        for batch in fetched(result):
            for ordinal, content_hash, row, media_type, body in batch:
                if read[ordinal]:
                    continue
                read[ordinal] = 1
                data = checked_body(warehouse, content_hash, bytes(body))
                postings.extend(
                    (word << _ORDINAL_BITS) | ordinal for word in words_of(data, media_type)
                )
                if row is not None:
                    ordinals.append(ordinal)
                    rows.append(int(row))
                done += 1
            if progress is not None:
                progress(done, total)
        for table in _TABLES:
            con.execute(f"DELETE FROM {table}")
        con.register(
            "_search_rows",
            pa.table({"ordinal": _ints(ordinals, pa.int32()), "row": _ints(rows, pa.int64())}),
        )
        con.register("_search_postings", pa.table({"key": _ints(postings, pa.int64())}))
        try:
            con.execute(
                "INSERT INTO search_documents SELECT b.ordinal, b.doc_id, b.source, b.kind, "
                "b.revision, b.content_hash, b.valid_from_run, b.valid_from, r.row "
                "FROM _search_build b LEFT JOIN _search_rows r USING (ordinal) ORDER BY b.ordinal"
            )
            ordinal = f"(key & {(1 << _ORDINAL_BITS) - 1})"
            for block in range((total >> BLOCK_BITS) + 1):  # one block at a time: bounded memory
                con.execute(
                    f"INSERT INTO search_postings SELECT key >> {_ORDINAL_BITS} AS word, "
                    f"{block}, unhex(string_agg(lpad(to_hex({ordinal} & "
                    f"{(1 << BLOCK_BITS) - 1}), 4, '0'), '')) FROM _search_postings "
                    f"WHERE {ordinal} >> {BLOCK_BITS} = {block} GROUP BY word ORDER BY word"
                )
        finally:
            con.unregister("_search_rows")
            con.unregister("_search_postings")
        con.execute("DROP TABLE _search_build")
        if not warehouse.is_lake:  # where each document's rows are (a lake's have no rowids)
            row_hints.build(con)
        state = IndexState(
            now(), seen_log, words_version, total, len(postings), time.monotonic() - started
        )
        con.execute(
            "INSERT INTO search_index VALUES ($1, $2, $3, $4, $5, $6)",
            [state.built_at, state.log_size, state.words_version, state.documents,
             state.postings, state.seconds],
        )  # fmt: skip
    return state


def _ints(values: array[int], kind: pa.DataType) -> pa.Array:
    """An Arrow array over an :class:`array.array`'s buffer, without copying it."""
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _listed(numbers: Iterable[int]) -> str:
    """Integers written into a statement (bound parameters cost more than the query here)."""
    return ", ".join(str(int(n)) for n in sorted(numbers))


def changed_since_build(warehouse: Warehouse, state: IndexState) -> set[str]:
    """The documents with a log entry the build did not see: revised, tombstoned or
    restored since, or new."""
    rows = warehouse._con.execute(
        "SELECT DISTINCT doc_id FROM tlog_entries "
        f"WHERE idx >= {int(state.log_size)} AND doc_id IS NOT NULL"
    ).fetchall()
    return {str(doc_id) for (doc_id,) in rows}


class Candidate(NamedTuple):
    """An indexed document that holds every word asked for, as the build read it."""

    ordinal: int
    doc_id: str
    revision: int
    content_hash: str
    snapshot_row: int | None


def matching_ordinals(warehouse: Warehouse, words: Collection[int]) -> Iterator[int]:
    """The ordinals of the indexed documents whose postings hold every one of ``words`` (at
    least one), ascending: a block of 65,536 ordinals at a time (a block's offsets are
    stored in no particular order), intersected from the word with the fewest there."""
    wanted = sorted(set(words))
    con = warehouse._con
    listed = _listed(wanted)
    blocks = con.execute(  # the blocks that hold every word, without reading their offsets
        f"SELECT block FROM search_postings WHERE word IN ({listed}) GROUP BY block "
        f"HAVING count(DISTINCT word) = {len(wanted)} ORDER BY block"
    ).fetchall()
    for (block,) in blocks:
        rows = con.execute(
            f"SELECT offsets FROM search_postings WHERE word IN ({listed}) AND block = {int(block)}"
        ).fetchall()
        lists = sorted((_offsets(bytes(offsets)) for (offsets,) in rows), key=len)
        kept = set(lists[0]).intersection(*lists[1:])
        base = int(block) << BLOCK_BITS
        yield from (base + offset for offset in sorted(kept))


def _offsets(data: bytes) -> array[int]:
    offsets = array("H", data)
    if sys.byteorder == "little":
        offsets.byteswap()
    return offsets


def candidates(
    warehouse: Warehouse,
    ordinals: list[int],
    *,
    source: str | None = None,
    kind: str | None = None,
    corpus: str | None = None,
    changed_since: Point | None = None,
) -> list[Candidate]:
    """The indexed documents at ``ordinals`` that pass the filters, in doc_id order."""
    if not ordinals:
        return []
    where, params = filter_sql(source, kind, corpus, changed_since, doc="c")
    rows = warehouse._con.execute(
        "SELECT c.ordinal, c.doc_id, c.revision, c.content_hash, c.snapshot_row "
        f"FROM search_documents c WHERE c.ordinal BETWEEN {min(ordinals)} AND {max(ordinals)} "
        f"AND c.ordinal IN ({_listed(ordinals)}) AND {where} ORDER BY c.ordinal",
        params or None,
    ).fetchall()
    return [Candidate(int(o), str(d), int(r), str(h), s) for o, d, r, h, s in rows]


def candidate_bodies(
    warehouse: Warehouse, found: list[Candidate]
) -> list[tuple[Candidate, str, bytes]]:
    """Each candidate with its media type and bytes, checked against its hash, in the
    order given: read where the build saw them (``snapshot_row``), else by content hash."""
    con = warehouse._con
    by_row = {c.snapshot_row: c for c in found if c.snapshot_row is not None}
    read: dict[str, tuple[str, bytes]] = {}
    if by_row:
        rows = con.execute(
            "SELECT content_hash, media_type, body FROM snapshots "
            f"WHERE rowid BETWEEN {min(by_row)} AND {max(by_row)} AND rowid IN ({_listed(by_row)})"
        ).fetchall()
        read = {str(h): (str(m), bytes(b)) for h, m, b in rows}
    missing = sorted({c.content_hash for c in found} - set(read))
    if missing:  # rows moved (a copy, a rebuilt table) or not recorded (a lake)
        rows = con.execute(
            "SELECT content_hash, any_value(media_type), any_value(body) FROM snapshots "
            "WHERE content_hash IN (SELECT unnest($h)) GROUP BY content_hash",
            {"h": missing},
        ).fetchall()
        read.update({str(h): (str(m), bytes(b)) for h, m, b in rows})
    out = []
    for c in found:
        media_type, body = read[c.content_hash]
        body = checked_body(warehouse, c.content_hash, body, doc_id=c.doc_id, revision=c.revision)
        out.append((c, media_type, body))
    return out

"""Finding things in the warehouse: documents with their current revision, the current
bytes of every document (what a search reads), and an export of documents, revisions and
snapshots through DuckDB's COPY.

Every function here that reads snapshot bytes checks them against their hash first (a
search verifies every body it reads; an export refuses to write if any snapshot it would
write no longer hashes to its address).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from warehouse.asof import Point
from warehouse.errors import SnapshotCorrupted, UsageError
from warehouse.snapshots import checked_body
from warehouse.staged import PREVIOUS, build_in_stages, fetched, staged_rows
from warehouse.store import Warehouse
from warehouse.streamed_export import write_ndjson, write_snapshots
from warehouse.timestamps import DUCKDB_TIMESTAMP_FORMAT
from warehouse.tlog.check import check_revisions
from warehouse.tlog.store import has_log


class DocumentRow(NamedTuple):
    """A document and its current revision."""

    doc_id: str
    source: str
    kind: str
    revision: int
    content_hash: str | None
    tombstone: bool
    valid_from_run: int
    valid_from: datetime
    size: int | None


def filter_sql(
    source: str | None,
    kind: str | None,
    corpus: str | None,
    changed_since: Point | None,
    *,
    doc: str = "d",
    current: str = "c",
) -> tuple[str, dict[str, Any]]:
    """The condition keeping documents of ``source``, of ``kind``, members of ``corpus``
    and made current after ``changed_since`` (those given), over a table aliased ``doc``
    (source, kind) and one aliased ``current`` (doc_id and the revision's validity)."""
    conditions, params = ["TRUE"], {}
    if source is not None:
        conditions.append(f"{doc}.source = $source")
        params["source"] = source
    if kind is not None:
        conditions.append(f"{doc}.kind = $kind")
        params["kind"] = kind
    if corpus is not None:
        conditions.append(
            f"{current}.doc_id IN (SELECT doc_id FROM corpus_members WHERE corpus = $corpus)"
        )
        params["corpus"] = corpus
    if changed_since is not None:
        condition, extra = changed_since.condition(current, "since")
        conditions.append(f"NOT ({condition})")
        params.update(extra)
    return " AND ".join(conditions), params


def iter_documents(
    warehouse: Warehouse,
    *,
    source: str | None = None,
    kind: str | None = None,
    corpus: str | None = None,
    changed_since: Point | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> Iterator[DocumentRow]:
    """Documents with their current revision, by doc_id, read as a stream (see
    :mod:`warehouse.staged`); ``changed_since`` keeps those whose current revision became
    valid after that point; ``limit`` and ``offset`` take a page of them."""
    where, params = filter_sql(source, kind, corpus, changed_since)
    stages = [
        (
            "SELECT doc_id, revision, content_hash, tombstone, valid_from_run, valid_from "
            "FROM current_revisions",
            {},
        ),
        (
            "SELECT c.doc_id, d.source, d.kind, c.revision, c.content_hash, c.tombstone, "
            f"c.valid_from_run, c.valid_from FROM {PREVIOUS} c JOIN documents d USING (doc_id) "
            f"WHERE {where}",
            params,
        ),
        (
            f"SELECT c.*, s.size FROM {PREVIOUS} c "
            "LEFT JOIN snapshots s ON s.content_hash = c.content_hash",
            {},
        ),
    ]
    for row in staged_rows(warehouse, stages, "doc_id", limit, offset):
        yield DocumentRow(*row)


class CurrentBody(NamedTuple):
    """A document's current revision with its bytes, checked against their hash."""

    doc_id: str
    revision: int
    content_hash: str
    media_type: str
    body: bytes


def iter_current_bodies(
    warehouse: Warehouse,
    *,
    source: str | None = None,
    corpus: str | None = None,
    kind: str | None = None,
    changed_since: Point | None = None,
    doc_ids: Collection[str] | None = None,
) -> Iterator[CurrentBody]:
    """Every current (not tombstoned) revision, of one source, of one kind, of the members
    of one corpus, or made current after ``changed_since``, if given (of ``doc_ids`` only,
    if given), with its bytes, in no particular order, read as a stream: the revisions are
    listed into a temporary table first (:mod:`warehouse.staged`), then joined with the
    snapshots a few thousand rows at a time. Each body is checked against its hash
    (:class:`SnapshotCorrupted` if it no longer matches)."""
    where, params = filter_sql(source, kind, corpus, changed_since)
    if doc_ids is not None:
        where += " AND c.doc_id IN (SELECT unnest($doc_ids))"
        params["doc_ids"] = sorted(doc_ids)
    listed = f"_search_current_{id(warehouse)}"
    build_in_stages(
        warehouse,
        [
            (
                f"{listed}_0",
                "SELECT doc_id, revision, content_hash, valid_from_run, valid_from "
                "FROM current_revisions WHERE NOT tombstone",
                {},
            ),
            (
                listed,
                "SELECT c.doc_id, c.revision, c.content_hash "
                f"FROM {listed}_0 c JOIN documents d USING (doc_id) WHERE {where}",
                params,
            ),
        ],
    )
    con = warehouse._con
    try:
        result = con.execute(
            "SELECT c.doc_id, c.revision, c.content_hash, s.media_type, s.body "
            f"FROM snapshots s JOIN {listed} c ON s.content_hash = c.content_hash"
        )
        seen: set[str] = set()  # a snapshot stored twice is read once
        for rows in fetched(result):
            for doc_id, revision, content_hash, media_type, body in rows:
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                checked = checked_body(
                    warehouse, content_hash, bytes(body), doc_id=doc_id, revision=revision
                )
                yield CurrentBody(doc_id, int(revision), content_hash, str(media_type), checked)
    finally:
        with contextlib.suppress(duckdb.ConnectionException):
            con.execute(f"DROP TABLE IF EXISTS {listed}")


EXPORT_FORMATS = ("parquet", "csv", "ndjson")


@dataclass(frozen=True)
class Exported:
    table: str
    path: Path
    rows: int


def export_tables(
    warehouse: Warehouse,
    out: Path,
    fmt: str,
    *,
    corpus: str | None = None,
    point: Point | None = None,
) -> list[Exported]:
    """``documents``, ``revisions`` (each with its validity: ``valid_until_run`` and
    ``is_current`` as of ``point``) and ``snapshots`` (the bytes those revisions cite) into
    ``out/<table>.<ext>``. Parquet keeps bytes as BLOB; CSV and NDJSON carry them as
    ``body_base64``. Snapshots, and NDJSON files, are written as streams, snapshots in the
    order they were stored (:mod:`warehouse.streamed_export`). Refuses (nothing written)
    when a snapshot's bytes no longer hash to their address."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown format {fmt!r}; valid: {', '.join(EXPORT_FORMATS)}")
    params: dict[str, Any] = {}
    kept = "TRUE"
    if point is not None:
        kept, params = point.condition("r", "point")
    members = ""
    if corpus is not None:
        members = " AND r.doc_id IN (SELECT doc_id FROM corpus_members WHERE corpus = $corpus)"
        params["corpus"] = corpus
    revisions = (
        "SELECT r.*, lead(r.valid_from_run) OVER w AS valid_until_run, "
        "lead(r.valid_from) OVER w AS valid_until, lead(r.revision) OVER w IS NULL AS is_current "
        f"FROM revisions r WHERE {kept}{members} "
        "WINDOW w AS (PARTITION BY r.doc_id ORDER BY r.revision)"
    )
    con = warehouse._con
    con.execute(f"CREATE OR REPLACE TEMP TABLE export_revisions AS {revisions}", params)
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE export_cited AS SELECT DISTINCT content_hash "
            "FROM export_revisions WHERE content_hash IS NOT NULL"
        )
        bad = con.execute(
            "SELECT s.content_hash, sha256(s.body) FROM snapshots s "
            "SEMI JOIN export_cited c USING (content_hash) "
            "WHERE sha256(s.body) <> s.content_hash LIMIT 1"
        ).fetchone()
        if bad is not None:
            raise SnapshotCorrupted(warehouse.location, str(bad[0]), str(bad[1]), None, None)
        if has_log(con):  # refuses revisions whose rows disagree with their log entries
            current = con.execute(
                "SELECT doc_id, revision FROM export_revisions WHERE is_current"
            ).fetchall()
            check_revisions(warehouse, [(str(d), int(r)) for d, r in current])
        queries = {
            "documents": "SELECT d.* FROM documents d WHERE d.doc_id IN "
            "(SELECT doc_id FROM export_revisions) ORDER BY d.doc_id",
            "revisions": "SELECT * FROM export_revisions ORDER BY doc_id, revision",
        }
        # CSV writes each moment as every listing does: ISO-8601 in UTC with Z.
        con.execute("SET TimeZone = 'UTC'")
        csv_options = f"FORMAT csv, HEADER, TIMESTAMPFORMAT '{DUCKDB_TIMESTAMP_FORMAT}'"
        options = {"parquet": "FORMAT parquet", "csv": csv_options}.get(fmt)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for table, query in queries.items():
            path = out / f"{table}.{fmt}"
            if fmt == "ndjson":  # DuckDB's JSON writer buffers tens of MB at a time
                written.append(Exported(table, path, write_ndjson(warehouse, query, path)))
                continue
            target = str(path).replace("'", "''")
            con.execute(f"COPY ({query}) TO '{target}' ({options})")
            rows = con.execute(f"SELECT count(*) FROM ({query})").fetchone()
            written.append(Exported(table, path, int(rows[0]) if rows else 0))
        path = out / f"snapshots.{fmt}"
        written.append(
            Exported("snapshots", path, write_snapshots(warehouse, "export_cited", path, fmt))
        )
        return written
    finally:
        con.execute("DROP TABLE IF EXISTS export_revisions")
        con.execute("DROP TABLE IF EXISTS export_cited")

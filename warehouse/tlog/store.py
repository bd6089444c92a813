"""The transparency log in the warehouse: its entries, its stored hashes and its checkpoints
(tables of migration 0009), appended inside the transaction that writes the rows they
describe.

An append takes the entries a statement selects, numbers them from the log's size in the
order it gives, and stores their bytes and the tree's new stored hashes (Go's tlog layout,
:mod:`warehouse.tlog.merkle`). :func:`append_hashes` computes the same hashes in SQL, one
statement per level of the tree: the full check rebuilds the tree with it, so what the
writers stored is compared with a second computation. Nothing here is updated or deleted.

On a lake, writers that log take turns (:mod:`warehouse.tlog.transactions`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.errors import LogDamaged
from warehouse.tlog import merkle
from warehouse.tlog.entries_sql import ROW_COLUMNS, revision_entry, rows_with_context

ENTRIES = "tlog_entries"
HASHES = "tlog_hashes"
CHECKPOINTS = "tlog_checkpoints"


def stored_index_sql(level: int | str, n: str) -> str:
    """SQL for the stored-hash index of the ``n``-th subtree of ``level`` (``n``, and
    ``level`` when not a number, SQL expressions): with ``m = (n + 1) * 2**level - 1`` its
    last leaf, ``2m - popcount(m) + level`` (see
    :func:`warehouse.tlog.merkle.stored_hash_index`)."""
    width = f"(CAST(1 AS BIGINT) << ({level}))" if isinstance(level, str) else str(1 << level)
    last = f"((({n}) + 1) * {width} - 1)"
    return f"(2 * {last} - bit_count({last}::BIGINT) + {level})"


# The migration that makes the log's tables.
LOG_MIGRATION = 9
# Connections to warehouses known to have the log's tables, which nothing drops: those whose
# committed migrations include LOG_MIGRATION, as read when the warehouse was opened or
# migrated. (Asking the catalog took 25-46 ms on a lake on PostgreSQL, each time.)
_with_log: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def note_migrations(con: duckdb.DuckDBPyConnection, applied: Iterable[int]) -> None:
    """What the schema read of the warehouse ``con`` is connected to: its applied migrations."""
    if LOG_MIGRATION in applied:
        _with_log.add(con)


def has_log(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse has the log's tables (a warehouse a version before migration
    0009 keeps writing has not)."""
    if con in _with_log:
        return True
    row = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = $t "
        "AND table_catalog = current_database()",
        {"t": ENTRIES},
    ).fetchone()
    return bool(row and row[0])


def size(con: duckdb.DuckDBPyConnection) -> int:
    """How many entries the log holds."""
    row = con.execute(f"SELECT count(*) FROM {ENTRIES}").fetchone()
    return int(row[0]) if row else 0


def append(
    con: duckdb.DuckDBPyConnection,
    rows: str,
    order: str,
    params: Mapping[str, Any] | None = None,
    *,
    logged: bool | None = None,
    keep_entries: bool = True,
) -> tuple[int, int]:
    """Append the entries ``rows`` selects (columns ``kind, doc_id, revision, push_id,
    entry``), numbered in the order of ``order`` (an ORDER BY list over those columns and
    any other ``rows`` has), and their stored hashes; inside the caller's transaction.
    Returns the log's size before and after (nothing is appended to a warehouse without
    the log's tables; ``logged``: whether it has them, when the caller knows: asked of
    the catalog inside a lake's transaction, it took 30-40 ms, each batch).

    Every entry's bytes are stored unless ``keep_entries`` is false, which the ingest's and
    the backfill's writers of a DuckDB file ask (their entries are revisions', tombstones'
    and restorations', rebuilt from their rows): then those bytes are NULL (migration 0012),
    the leaf hash is stored, and the readers rebuild an entry from its rows and check it
    against that leaf (:func:`entries_sql`); a push's entry is stored whatever is asked. A
    lake stores every entry (DuckLake's flush of inlined rows refuses a NULL one), and
    copying a file into a lake stores them rebuilt (:mod:`warehouse.copy`). (Measured on a
    first backfill of 2,000,000 FLAT_CMPL rows into a DuckDB file, one run each: the log
    added 16% with the entries stored, none measurable without them, the committing thread
    being the one the backfill waits for; see warehouse.tlog.appends for the ingest.)

    The entries come to Python once, in order, through Arrow; their numbers are added
    there and they go back to the table through Arrow. The tree's new stored hashes are
    computed in Python by :meth:`warehouse.tlog.merkle.Appender.extend`, which reads the
    tree's right edge once (O(log n) hashes) and hashes a level of the tree at a time; their
    stored-hash indexes are computed in SQL. (Measured on 100,000 entries: computing the
    hashes in SQL, one statement per level of the tree, took about 1.1 s; here about
    0.15 s.)"""
    if not (has_log(con) if logged is None else logged):
        return 0, 0
    return write(con, prepare(con, rows, order, params), keep_entries=keep_entries)


@dataclass(frozen=True)
class Prepared:
    """Entries ready to append: numbered from ``old`` (the log's size they were made
    against), ``rows`` (``kind, doc_id, revision, push_id, entry, idx``, in order) and
    ``hashes``, the tree's new stored hashes (:func:`hashes_table`)."""

    old: int
    rows: pa.Table
    hashes: pa.Table | None

    @property
    def new(self) -> int:
        return self.old + int(self.rows.num_rows)


def prepare(
    con: duckdb.DuckDBPyConnection,
    rows: str,
    order: str,
    params: Mapping[str, Any] | None = None,
) -> Prepared:
    """The entries ``rows`` selects, in the order of ``order``, and their hashes, made
    against the log as ``con`` sees it; nothing is written (see :func:`write`)."""
    old = size(con)
    table = con.execute(
        f"SELECT kind, doc_id, CAST(revision AS INTEGER) AS revision, CAST(push_id AS BIGINT) "
        f"AS push_id, entry FROM ({rows}) ORDER BY {order}",
        dict(params or {}),
    ).arrow()
    if isinstance(table, pa.RecordBatchReader):  # DuckDB 2 answers a reader
        table = table.read_all()
    count = table.num_rows
    if not count:
        return Prepared(old, table, None)
    appender = merkle.Appender(old, lambda indexes: read_hashes(con, indexes))
    levels = appender.extend(table.column("entry").to_pylist())
    numbered = table.append_column("idx", pa.array(range(old, old + count), pa.int64()))
    return Prepared(old, numbered, hashes_table(levels))


def write(
    con: duckdb.DuckDBPyConnection, prepared: Prepared, *, keep_entries: bool = True
) -> tuple[int, int]:
    """Store ``prepared``'s entries and hashes (inside the caller's transaction, in which
    the log is still the size they were made against); the log's size before and after."""
    old, new = prepared.old, prepared.new
    if new == old:
        return old, old
    con.register("_tlog_new", prepared.rows)
    try:
        con.execute(
            f"INSERT INTO {ENTRIES} SELECT idx, kind, doc_id, revision, push_id, "
            f"CASE WHEN kind = 'push' OR {bool(keep_entries)} THEN entry END FROM _tlog_new"
        )
    finally:
        con.unregister("_tlog_new")
    insert_hashes(con, prepared.hashes)
    return old, new


# The stored hashes are SHA-256 digests, which no string compression shrinks: while a DuckDB
# file appends them, its string methods are disabled, so their row groups are stored as they
# are rather than after DuckDB has tried each method on them (its analysis chose
# dictionary/FSST for them and saved nothing); the index column is bit-packed as before.
# Measured on 13 appends of 16,384 entries (32,768 hashes each): the hashes' insert took
# 0.23 s of CPU, 0.06-0.09 s with these disabled, and the file was no larger. A lake's
# Parquet files are written by DuckLake, which this setting does not govern.
_HASHES_DISABLED_COMPRESSION = "dict_fsst,fsst,dictionary,zstd"


def hashes_table(levels: Sequence[tuple[int, int, list[bytes]]]) -> pa.Table | None:
    """The hashes :meth:`warehouse.tlog.merkle.Appender.extend` gives, a level at a time, as
    a table of ``level, n`` (the position in the level) and ``hash``; None if there are
    none."""
    if not levels:
        return None
    return pa.table(
        {
            "level": pa.concat_arrays(
                [pa.repeat(pa.scalar(lv, pa.int64()), len(run)) for lv, _, run in levels]
            ),
            "n": pa.concat_arrays(
                [pa.array(range(first, first + len(run)), pa.int64()) for _, first, run in levels]
            ),
            "hash": pa.concat_arrays([pa.array(run, pa.binary()) for _, _, run in levels]),
        }
    )


def insert_hashes(con: duckdb.DuckDBPyConnection, hashes: pa.Table | None) -> None:
    """Insert the hashes of a :func:`hashes_table` at their stored-hash indexes (computed in
    SQL from each one's level and position), without string compression
    (:data:`_HASHES_DISABLED_COMPRESSION`). (A read looks hashes up by index, and each
    append's hashes fill a range of indexes of their own: they need not be in order within
    it.)"""
    if hashes is None:
        return
    con.register("_tlog_hashes_new", hashes)
    con.execute(f"SET disabled_compression_methods = '{_HASHES_DISABLED_COMPRESSION}'")
    try:
        con.execute(
            f"INSERT INTO {HASHES} SELECT {stored_index_sql('level', 'n')}, hash "
            "FROM _tlog_hashes_new"
        )
    finally:
        con.execute("RESET disabled_compression_methods")
        con.unregister("_tlog_hashes_new")


def append_hashes(
    con: duckdb.DuckDBPyConnection,
    old: int,
    new: int,
    *,
    source: str = "_tlog_new",
    target: str = HASHES,
    hashed: bool = False,
) -> None:
    """Into ``target``, the stored hashes of leaves ``old``..``new - 1`` (``idx, entry`` in
    ``source``; ``idx, leaf``, their leaf hashes, if ``hashed``) and of every subtree they
    complete (those completed before are read from ``target``)."""
    leaf = "leaf" if hashed else leaf_hash_sql("entry")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _tlog_level AS "
        f"SELECT idx AS n, {leaf} AS h FROM {source} "
        "WHERE idx >= $old AND idx < $new",
        {"old": old, "new": new},
    )
    con.execute(f"INSERT INTO {target} SELECT {stored_index_sql(0, 'n')}, h FROM _tlog_level")
    level = 0
    while True:
        lo, hi = old >> (level + 1), new >> (level + 1)  # the level + 1 subtrees completed now
        if lo >= hi:
            break
        if 2 * lo < old >> level:  # the first one's left child was stored before
            con.execute(
                "INSERT INTO _tlog_level "
                f"SELECT $n, hash FROM {target} WHERE idx = {stored_index_sql(level, '$n')}",
                {"n": 2 * lo},
            )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _tlog_level AS "
            "SELECT l.n // 2 AS n, unhex(sha256('\\x01'::BLOB || l.h || r.h)) AS h "
            "FROM _tlog_level l JOIN _tlog_level r ON r.n = l.n + 1 "
            "WHERE l.n % 2 = 0 AND l.n // 2 >= $lo AND l.n // 2 < $hi",
            {"lo": lo, "hi": hi},
        )
        level += 1
        con.execute(
            f"INSERT INTO {target} SELECT {stored_index_sql(level, 'n')}, h FROM _tlog_level"
        )
    con.execute("DROP TABLE IF EXISTS _tlog_level")


def read_hashes(con: duckdb.DuckDBPyConnection, indexes: Sequence[int]) -> list[bytes]:
    """The stored hashes at ``indexes``, in their order (a :data:`HashReader`)."""
    wanted = sorted(set(indexes))
    if not wanted:
        return []
    if len(wanted) <= 64:  # a proof's few: a list in the statement
        rows = con.execute(
            f"SELECT idx, hash FROM {HASHES} WHERE idx IN ({', '.join(map(str, wanted))})"
        ).fetchall()
    else:  # many proofs' at once: a semi-join on a registered table
        con.register("_tlog_wanted_hashes", pa.table({"idx": pa.array(wanted, pa.int64())}))
        try:
            rows = con.execute(
                f"SELECT idx, hash FROM {HASHES} SEMI JOIN _tlog_wanted_hashes USING (idx)"
            ).fetchall()
        finally:
            con.unregister("_tlog_wanted_hashes")
    found = {int(i): bytes(h) for i, h in rows}
    missing = [i for i in wanted if i not in found]
    if missing:
        raise LogDamaged(f"the log's stored hash {missing[0]} is missing")
    return [found[i] for i in indexes]


# The leaf hash of a log entry, in SQL (RFC 6962: SHA-256 of 0x00 and the entry's bytes).
def leaf_hash_sql(entry: str) -> str:
    return f"unhex(sha256('\\x00'::BLOB || {entry}))"


def stored_entries_sql(where: str = "true") -> str:
    """The stored entries of :func:`entries_sql` (``where`` on ``e``), with its columns and one
    row per entry: every entry, when :func:`any_unstored` is false, without the join that
    rebuilds the others."""
    return f"""SELECT e.idx, e.kind, e.doc_id, e.revision, e.push_id, e.entry, true AS stored
    FROM {ENTRIES} e
    WHERE e.entry IS NOT NULL AND {where}
    QUALIFY row_number() OVER (PARTITION BY e.idx) = 1"""


def any_unstored(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether an entry's bytes are NULL (a revision's, in a DuckDB file a backfill wrote:
    see :func:`append`)."""
    row = con.execute(f"SELECT count(*) FROM {ENTRIES} WHERE entry IS NULL").fetchone()
    return bool(row and row[0])


def entries_sql(where: str = "true", docs: str = "true", rows: str = "true") -> str:
    """A subquery of the log's entries (``idx, kind, doc_id, revision, push_id, entry,
    stored``) with every entry's bytes: those stored (``stored``), else a revision's rebuilt
    from its rows as they are now (migration 0012), NULL if they are gone. ``where``
    restricts the entries (aliased ``e``); ``docs`` (a condition on ``doc_id``) and ``rows``
    (the same on ``r.doc_id``) hold for each of their documents: only those documents' rows
    are read. One row per entry, whatever the rows hold (a duplicated row: one of its
    copies)."""
    unstored = f"SELECT e.doc_id, e.revision FROM {ENTRIES} e WHERE e.entry IS NULL AND {where}"
    context = rows_with_context(
        where=f"({rows}) AND (r.doc_id, r.revision) IN ({unstored})", docs=docs
    )
    # the stored entries as they are; only the unstored ones join their rebuilt rows (a join
    # of every entry read with every row rebuilt cost 1.5 s of 10,000 proof bundles' 2 s)
    return f"""(
    {stored_entries_sql(where)}
    UNION ALL
    SELECT e.idx, e.kind, e.doc_id, e.revision, e.push_id, x.entry, false AS stored
    FROM {ENTRIES} e
    LEFT JOIN (SELECT r.doc_id, r.revision, {revision_entry(ROW_COLUMNS)} AS entry {context}) x
        ON x.doc_id = e.doc_id AND x.revision = e.revision
    WHERE e.entry IS NULL AND {where}
    QUALIFY row_number() OVER (PARTITION BY e.idx ORDER BY x.entry) = 1
)"""


@dataclass(frozen=True)
class StoredEntry:
    index: int
    kind: str
    doc_id: str | None
    revision: int | None
    push_id: int | None
    entry: bytes | None  # None: not stored (a revision's, rebuilt from its rows when read)


# Entries read as they read (stored or rebuilt), a range of indexes at a time: the rebuilt
# entries of a whole log read at once ran out of memory at the default limit (the 1,537,672
# of a 2,000,000-row backfill's DuckDB file); a range at a time they read in 5.2 s.
ENTRY_RANGE = 100_000


def entry_ranges_sql(con: duckdb.DuckDBPyConnection, step: int = ENTRY_RANGE) -> list[str]:
    """FROM items that together hold every entry of the log as it reads (the columns of
    :func:`entries_sql`), each a range of ``step`` indexes, whose rebuilt entries read only
    their own documents' rows."""
    row = con.execute(f"SELECT coalesce(max(idx) + 1, 0) FROM {ENTRIES}").fetchone()
    end = int(row[0]) if row else 0
    items = []
    for lo in range(0, max(end, 1), step):
        where = f"e.idx >= {lo} AND e.idx < {lo + step}"
        docs = f"SELECT doc_id FROM {ENTRIES} WHERE idx >= {lo} AND idx < {lo + step}"
        items.append(f"{entries_sql(where, f'doc_id IN ({docs})', f'r.doc_id IN ({docs})')} AS e")
    return items


# The entries of the revisions in ``_tlog_rebuild`` (``doc_id, revision``), rebuilt from
# their rows: only those documents' rows are read.
_REBUILD = (
    f"SELECT r.doc_id, r.revision, {revision_entry(ROW_COLUMNS)} AS entry "
    + rows_with_context(
        where="(r.doc_id, r.revision) IN (SELECT doc_id, revision FROM _tlog_rebuild)",
        docs="doc_id IN (SELECT doc_id FROM _tlog_rebuild)",
    )
)


def read_entries(con: duckdb.DuckDBPyConnection, start: int, end: int) -> list[bytes]:
    """The bytes of entries ``start``..``end - 1``, in order: stored, or rebuilt from their
    rows (those rebuilt read in one query of just their documents' rows);
    :class:`LogDamaged` for an entry whose rows are gone."""
    rows = con.execute(
        f"SELECT idx, doc_id, revision, entry FROM {ENTRIES} WHERE idx >= $s AND idx < $e "
        "ORDER BY idx",
        {"s": start, "e": end},
    ).fetchall()
    missing = [(doc, revision) for _, doc, revision, entry in rows if entry is None]
    rebuilt: dict[tuple[str, int], bytes] = {}
    if missing:
        wanted = pa.table(
            {
                "doc_id": pa.array([doc for doc, _ in missing], pa.string()),
                "revision": pa.array([revision for _, revision in missing], pa.int32()),
            }
        )
        con.register("_tlog_rebuild", wanted)
        try:
            for doc, revision, entry in con.execute(_REBUILD).fetchall():
                rebuilt.setdefault((doc, int(revision)), bytes(entry))
        finally:
            con.unregister("_tlog_rebuild")
    out = []
    for index, doc, revision, entry in rows:
        if entry is None:
            entry = rebuilt.get((doc, revision))
        if entry is None:
            raise LogDamaged(f"the rows of log entry {index} are gone: its bytes cannot be read")
        out.append(bytes(entry))
    return out


def entries_of_revision(
    con: duckdb.DuckDBPyConnection, doc_id: str, revision: int | None = None
) -> list[StoredEntry]:
    """Every entry the log holds for ``doc_id``'s ``revision`` (one, unless tampered with),
    or, without one, for the newest revision the log holds an entry of: one scan. The bytes
    as stored (None for those rebuilt from the rows)."""
    # Plain equality filters only: DuckDB pushes them into the scan (an OR or a window
    # here doubled the time of a lookup in two million entries).
    query = f"SELECT idx, kind, doc_id, revision, push_id, entry FROM {ENTRIES} WHERE doc_id = $d"
    params: dict[str, object] = {"d": doc_id}
    if revision is not None:
        query += " AND revision = $r"
        params["r"] = revision
    rows = [row for row in con.execute(query, params).fetchall() if row[3] is not None]
    if revision is None and rows:
        newest = max(int(row[3]) for row in rows)
        rows = [row for row in rows if int(row[3]) == newest]
    rows.sort(key=lambda row: int(row[0]))
    return [
        StoredEntry(int(i), str(k), d, int(r), p, None if e is None else bytes(e))
        for i, k, d, r, p, e in rows
    ]


@dataclass(frozen=True)
class StoredCheckpoint:
    size: int
    root: bytes
    note: str
    key_name: str | None
    run_id: int | None
    recorded_at: datetime


_CHECKPOINT_COLUMNS = "size, root, note, key_name, run_id, recorded_at"


def _checkpoint(row: Sequence[Any]) -> StoredCheckpoint:
    return StoredCheckpoint(
        int(row[0]),
        bytes(row[1]),
        str(row[2]),
        row[3],
        None if row[4] is None else int(row[4]),
        row[5],
    )


def latest_checkpoint(con: duckdb.DuckDBPyConnection) -> StoredCheckpoint | None:
    row = con.execute(
        f"SELECT {_CHECKPOINT_COLUMNS} FROM {CHECKPOINTS} ORDER BY size DESC, recorded_at DESC "
        "LIMIT 1"
    ).fetchall()
    return _checkpoint(row[0]) if row else None


def covering_checkpoint_sizes(con: duckdb.DuckDBPyConnection) -> list[tuple[int, str]]:
    """The size of every checkpoint recorded, ascending, each once, with the origin line of
    the first checkpoint recorded at that size (the log's name as its readers know it)."""
    rows = con.execute(
        f"SELECT size, arg_min(split_part(note, chr(10), 1), recorded_at) FROM {CHECKPOINTS} "
        "GROUP BY size ORDER BY size"
    ).fetchall()
    return [(int(s), str(o)) for s, o in rows]


def record_checkpoint(
    con: duckdb.DuckDBPyConnection,
    *,
    tree_size: int,
    root: bytes,
    note: str,
    key_name: str | None,
    run_id: int | None,
    at: datetime,
) -> None:
    con.execute(
        f"INSERT INTO {CHECKPOINTS} VALUES ($s, $root, $note, $key, $run, $at)",
        {"s": tree_size, "root": root, "note": note, "key": key_name, "run": run_id, "at": at},
    )

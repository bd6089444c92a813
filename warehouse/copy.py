"""Moving a warehouse between backends (a DuckDB file into a DuckLake and back), verified by
a digest of every table."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from warehouse import schema
from warehouse.backends import (
    LAKE_ALIAS,
    ROW_GROUP_SIZE,
    SNAPSHOTS_ROW_GROUP_SIZE,
    set_row_groups,
)
from warehouse.digests import Progress, row_counts, rows_read, table_digests
from warehouse.errors import IntegrityError, UsageError
from warehouse.schema import Table
from warehouse.sql_literal import string as _quote
from warehouse.store import Warehouse, _local_path
from warehouse.streamed_export import rows_per_batch
from warehouse.tlog import store as tlog_store

# Each table is copied by one INSERT. From a DuckDB file, the destination's connection
# attaches the file read-only and reads it itself, within its own memory limit. From a lake
# into a DuckDB file, the lake's connection attaches the new file and writes it
# (_handed_over). From a lake into a lake, the INSERT reads the source as a stream of Arrow
# batches, each holding as many rows as fit in streamed_export.BATCH_BYTES by the table's
# widest row. (Measured on the 461,291
# snapshots of a 600,000-row backfill, 1.1 GB of bodies, copied into a new DuckDB file at
# a 256 MB limit, the INSERT alone: read through the attached file, the process peaked at
# 490 MB in 5.2 s; from the Arrow stream, at 1,476 MB in 6.6 s, memory DuckDB does not
# account for growing with the rows written. Inserting the batches one statement at a time
# held them all: 1.9 GB for the whole copy.)
SOURCE_ALIAS = "copy_source"
# A new DuckDB file, attached to a lake source's connection (see _handed_over).
TARGET_ALIAS = "copy_target"
# Columns whose values can be large; the others are a few bytes each.
_WIDE = {"VARCHAR": "strlen", "JSON": "strlen", "BLOB": "octet_length"}


def _rebuilds_entries(source: Warehouse, destination: Warehouse) -> bool:
    """Whether the log's entries are copied as they read (:func:`warehouse.digests.rows_read`):
    into a lake, which stores every entry's bytes (DuckLake's flush of inlined rows refuses
    a NULL one), from a DuckDB file that left some unstored (rebuilt from their rows when
    read). An unstored entry whose revision row is gone cannot be rebuilt: the copy is
    refused, naming it, before anything is written."""
    con = source._con
    if not destination.is_lake or not tlog_store.has_log(con) or not tlog_store.any_unstored(con):
        return False
    lost = source._first_row(
        f"SELECT min(e.idx), count(*) FROM {tlog_store.ENTRIES} e WHERE e.entry IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM revisions r "
        "WHERE r.doc_id = e.doc_id AND r.revision = e.revision)"
    )
    if lost is not None and lost[1]:
        raise IntegrityError(
            f"{lost[1]} log entries of {source.location} cannot be rebuilt from their rows "
            f"(the first: entry {lost[0]}); run `receipts log verify --warehouse "
            f"{source.location}` and restore it from a backup"
        )
    return True


@contextmanager
def _attached(source: Warehouse, destination: Warehouse) -> Iterator[str | None]:
    """The source's DuckDB file attached read-only to the destination's connection, as
    :data:`SOURCE_ALIAS` (the source holds it read-only too, which DuckDB allows); None
    for a source that is not a local file (a lake)."""
    path = None if source.is_lake else _local_path(source.location)
    if path is None:
        yield None
        return
    con = destination._con
    con.execute(f"ATTACH {_quote(str(path))} AS {SOURCE_ALIAS} (READ_ONLY)")
    try:
        yield SOURCE_ALIAS
    finally:
        con.execute(f"DETACH {SOURCE_ALIAS}")


@contextmanager
def _handed_over(source: Warehouse, destination: Warehouse) -> Iterator[bool]:
    """A new DuckDB file copied from a lake: its connection closed and the file attached, as
    :data:`TARGET_ALIAS`, to the lake's connection, which then writes it (True); a new
    connection to it after. False for any other pair. (Measured on a lake of 384,397
    documents, every table inserted at a 256 MB limit: read by the lake's connection into
    the attached file, the process peaked at 457 MB, and at 446 MB for 153,624 documents;
    inserted by the file's connection from the lake's Arrow stream, at 1,127 MB. Records of
    10 KB under a 160 MB limit, 2 threads: 526, 682 and 639 MB for 20,000, 40,000 and
    80,000 of them, where the Arrow stream took 592, 891 and 1,249 MB.)"""
    path = _local_path(destination.location)
    if not source.is_lake or destination.is_lake or path is None:
        yield False
        return
    destination._con.close()
    try:
        source._con.execute(f"ATTACH {_quote(str(path))} AS {TARGET_ALIAS}")
        try:
            yield True
        finally:
            source._con.execute(f"DETACH {TARGET_ALIAS}")
    finally:
        destination.reconnect_file()


def _insert_into_attached(source: Warehouse, tables: list[Table], location: str) -> None:
    """The schema and every table's rows, in one transaction of the lake's connection, into
    the file attached as :data:`TARGET_ALIAS`."""
    con = source._con
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"USE {TARGET_ALIAS}")
        schema.create_schema(con, location, is_lake=False)
        con.execute(f"USE {LAKE_ALIAS}")
        for table in tables:
            columns = ", ".join(f'"{c.name}"' for c in table.columns)
            con.execute(
                f'INSERT INTO {TARGET_ALIAS}.main."{table.name}" ({columns}) '
                f'SELECT {columns} FROM {LAKE_ALIAS}.main."{table.name}"'
            )
        con.execute("COMMIT")
    except BaseException:
        source._rollback()  # one that fails (the catalog gone) keeps the connection open
        raise
    finally:
        con.execute(f"USE {LAKE_ALIAS}")


def _insert(
    source: Warehouse,
    destination: Warehouse,
    tables: list[Table],
    counts: dict[str, int],
    rebuild: bool,
    progress: Progress | None,
) -> int:
    """The schema and every table's rows, in one transaction of the destination's
    connection, read from the attached file or the source's Arrow stream; the rows
    copied."""
    copied = 0
    with _attached(source, destination) as attached, destination._transaction() as con:
        destination.create_schema()
        # 100,000 documents ran out of memory without (the snapshots' own option is set
        # once they are committed: here they are written with the lake-wide one lowered)
        destination.bound_row_groups(snapshots=False)
        theirs = {t.name for t in destination.tables() if not t.view}
        missing = [t.name for t in tables if t.name not in theirs]
        if missing:
            raise UsageError(f"{destination.location} has no table {', '.join(missing)}")
        for table in tables:
            if progress is not None:
                progress("rows copied", copied, sum(counts.values()))
            columns = ", ".join(f'"{c.name}"' for c in table.columns)
            grouped = destination.is_lake and table.name == "snapshots"
            if grouped:
                set_row_groups(con, SNAPSHOTS_ROW_GROUP_SIZE)
            insert = f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} FROM '
            # The entries a copy rebuilds are read by the source's own statements.
            if attached is not None and not (rebuild and table.name == tlog_store.ENTRIES):
                con.execute(f'{insert}{attached}.main."{table.name}"')
            else:
                for read in rows_read(source, table.name) if rebuild else [f'"{table.name}"']:
                    rows = source._con.sql(f"SELECT {columns} FROM {read}")
                    con.register("_copy_rows", rows.to_arrow_reader(_batch_rows(source, table)))
                    try:
                        con.execute(f"{insert}_copy_rows")
                    finally:
                        con.unregister("_copy_rows")
            if grouped:
                set_row_groups(con, ROW_GROUP_SIZE)
            copied += counts[table.name]
    return copied


@dataclass(frozen=True)
class CopyReport:
    source: str
    destination: str
    rows: dict[str, int]
    digests: dict[str, str]


def _batch_rows(source: Warehouse, table: Table) -> int:
    """Rows of ``table`` per Arrow batch, by its widest row."""
    lengths = [
        f'coalesce({_WIDE[c.data_type]}("{c.name}"), 0)'
        for c in table.columns
        if c.data_type in _WIDE
    ]
    widest = 0
    if lengths:
        widest = source._scalar(f'SELECT max({" + ".join(lengths)}) FROM "{table.name}"') or 0
    return rows_per_batch(int(widest) + 64 * len(table.columns))


def copy_warehouse(
    source: Warehouse, destination: Warehouse, progress: Progress | None = None
) -> CopyReport:
    """Copy every row of ``source`` into ``destination`` (opened with ``migrate=False``, a
    new warehouse) in one transaction with its schema, each table read as a stream, then
    check that every table of both has the same digest: a copy that fails or is killed
    leaves no table behind, and running it again makes it whole. ``progress(step, done,
    total)`` hears of the rows copied (a table at a time) and digested."""
    tables = [t for t in source.tables() if not t.view]
    counts = row_counts(source, [t.name for t in tables])
    rebuild = _rebuilds_entries(source, destination)
    copied = 0
    with _handed_over(source, destination) as handed:
        if handed:
            if progress is not None:
                progress("rows copied", 0, sum(counts.values()))
            _insert_into_attached(source, tables, destination.location)
            copied = sum(counts.values())
    if not handed:
        copied = _insert(source, destination, tables, counts, rebuild, progress)
    destination.bound_row_groups()
    if not destination.is_lake:
        # DuckDB 1.5.5: rows inserted from an Arrow stream into a table renamed earlier in
        # the same transaction (migration 0008 rebuilds ``snapshots`` that way, and a copy
        # makes its schema in its own transaction) are committed, but this connection reads
        # none of them until the next checkpoint (seen from 122,879 rows; a new connection
        # reads them all). The copy of a file holding 461,291 snapshots was refused as
        # differing in ``snapshots``; checkpointed, it digests as its source.
        destination._con.execute("CHECKPOINT")
    if progress is not None:
        progress("rows copied", copied, sum(counts.values()))
    before = table_digests(source, progress, "rows digested in the source")
    after = table_digests(destination, progress, "rows digested in the copy")
    differ = sorted(t for t in before if before[t] != after.get(t))
    if differ:
        raise IntegrityError(
            f"the copy in {destination.location} differs from {source.location} in "
            f"{', '.join(differ)}; do not use it"
        )
    return CopyReport(source.location, destination.location, counts, after)

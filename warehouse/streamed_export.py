"""Writing an export's files as streams of Arrow batches.

DuckDB's ``COPY`` buffers what it writes (whole Parquet row groups; its JSON writer, tens of
MB at a time) and the export sorted the bodies by content hash: on the 1.5 million
snapshots of a two-million-row backfill it ran out of memory under the default 256 MB
limit in every format, and ``revisions`` as NDJSON did too. Here rows are read as batches
(of at most :data:`BATCH_BYTES` of bodies, for snapshots) and each is written before the
next is read:

- snapshots, in the order they were stored: Parquet through pyarrow; CSV quoting only where
  needed, as DuckDB's ``COPY`` does (through Arrow's CSV writer where nothing needs quotes,
  else Python's ``csv``: :func:`_csv`); NDJSON through orjson,
  the lines DuckDB wrote (bodies in base64 are too large for DuckDB to render a vector of
  rows at a time under a small limit);
- NDJSON of the other tables: each row as DuckDB's ``to_json`` writes it, which is what its
  ``COPY`` wrote, byte for byte.

A file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from warehouse.store import Warehouse

BATCH_BYTES = 16 << 20
MAX_BATCH_ROWS = 8_192


def rows_per_batch(widest_row: int) -> int:
    """Rows of at most ``widest_row`` bytes that fill :data:`BATCH_BYTES` (each Arrow batch
    is one allocation in DuckDB, under its memory limit), at most :data:`MAX_BATCH_ROWS`."""
    return max(1, min(MAX_BATCH_ROWS, BATCH_BYTES // max(1, widest_row)))


def _complete(path: Path, write: Callable[[Path], int]) -> int:
    """``write(partial)``, then ``partial`` renamed to ``path``: no half-written file."""
    partial = path.with_name(path.name + ".partial")
    try:
        written = write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return written


def write_ndjson(warehouse: Warehouse, query: str, path: Path) -> int:
    """The rows of ``query`` (of small values: DuckDB renders each row whole) to ``path``,
    one JSON object a line; how many."""
    lines = warehouse._con.sql(f"SELECT to_json(t)::VARCHAR AS line FROM ({query}) t")
    batches = lines.to_arrow_reader(MAX_BATCH_ROWS)

    def write(partial: Path) -> int:
        written = 0
        with partial.open("w", encoding="utf-8") as out:
            for batch in batches:
                out.write("".join(line + "\n" for line in batch.column(0).to_pylist()))
                written += batch.num_rows
        return written

    return _complete(path, write)


def _batch_rows(warehouse: Warehouse, cited: str) -> int:
    """Snapshots a batch holds: :data:`BATCH_BYTES` over twice the largest body ``cited``
    names (base64 is a third larger)."""
    largest = warehouse._scalar(
        f"SELECT max(s.size) FROM snapshots s SEMI JOIN {cited} c USING (content_hash)"
    )
    return rows_per_batch(int(largest or 0) * 2 + 256)


def write_snapshots(warehouse: Warehouse, cited: str, path: Path, fmt: str) -> int:
    """Write the snapshots whose ``content_hash`` the table ``cited`` holds to ``path`` as
    ``fmt`` (``parquet``: bytes as BLOB; ``csv`` and ``ndjson``: as ``body_base64``), in
    the order they were stored; return how many.

    A parallel scan keeps that order, but joined (to keep only the cited ones) its rows come
    in an order that differs from run to run; on one thread they come in stored order. So
    Parquet of a warehouse whose every snapshot is cited (an export of the whole warehouse,
    as a rule) scans the table alone, on every thread; the rest run on one thread (each
    thread renders a vector of bodies in base64 at a time: two of them did not fit where
    one did). Either way the same warehouse exports the same bytes."""
    body = "s.body" if fmt == "parquet" else "to_base64(s.body) AS body_base64"
    columns = f"s.content_hash, s.size, s.media_type, s.stored_run, {body}"
    threads: AbstractContextManager[None]
    if fmt == "parquet" and _all_cited(warehouse, cited):
        query, threads = f"SELECT {columns} FROM snapshots s", nullcontext()
    else:
        query = f"SELECT {columns} FROM snapshots s SEMI JOIN {cited} c USING (content_hash)"
        threads = _one_thread(warehouse)
    writer = {"parquet": _parquet, "csv": _csv, "ndjson": _ndjson}[fmt]
    rows = _batch_rows(warehouse, cited)
    with threads:
        batches = warehouse._con.sql(query).to_arrow_reader(rows)
        return _complete(path, lambda partial: writer(batches, partial))


def _all_cited(warehouse: Warehouse, cited: str) -> bool:
    """Whether every row of ``snapshots`` is cited: the join keeps a subset of them, so when
    it keeps as many as there are, it keeps them all."""
    every = int(warehouse._scalar("SELECT count(*) FROM snapshots"))
    return int(warehouse._scalar(_CITED_STORED.format(cited=cited))) == every


_CITED_STORED = "SELECT count(*) FROM snapshots s SEMI JOIN {cited} c USING (content_hash)"


@contextmanager
def _one_thread(warehouse: Warehouse) -> Iterator[None]:
    """DuckDB on one thread inside the block: a scan joined in parallel hands its rows over
    in an order that differs from run to run; on one thread they come in stored order, so
    the same warehouse exports the same bytes."""
    threads = int(warehouse._scalar("SELECT current_setting('threads')"))
    warehouse._con.execute("SET threads = 1")
    try:
        yield
    finally:
        warehouse._con.execute(f"SET threads = {threads}")


def _parquet(batches: pa.RecordBatchReader, path: Path) -> int:
    written = 0
    with pq.ParquetWriter(path, batches.schema) as out:
        for batch in batches:
            out.write_batch(batch)
            written += batch.num_rows
    return written


# A value Python's csv (and DuckDB's COPY) would quote: one holding the delimiter, a quote or
# a line end. Hex hashes, base64 bodies and integers never do.
_NEEDS_QUOTES = '[,"\r\n]'
_UNQUOTED = pacsv.WriteOptions(include_header=False, quoting_style="none")


def _csv(batches: pa.RecordBatchReader, path: Path) -> int:
    """Snapshot rows as CSV quoted only where needed. A batch none of whose strings needs
    quotes (every batch, but for an odd media type) is written by Arrow's CSV writer without
    quoting: the same bytes as Python's ``csv``, which took most of the time (the 1.5 million
    snapshots of a two-million-row backfill: 58 s for the whole export, where it took
    89-105 s); any other batch by Python's ``csv``."""
    written = 0
    with path.open("wb") as out:
        out.write(_csv_text([batches.schema.names]).encode("utf-8"))
        for batch in batches:
            if _plain(batch):
                sink = pa.BufferOutputStream()
                pacsv.write_csv(batch, sink, write_options=_UNQUOTED)
                out.write(sink.getvalue().to_pybytes())
            else:
                columns = (column.to_pylist() for column in batch.columns)
                out.write(_csv_text(zip(*columns, strict=True)).encode("utf-8"))
            written += batch.num_rows
    return written


def _plain(batch: pa.RecordBatch) -> bool:
    """Whether no string of ``batch`` needs quotes."""
    strings = (
        column
        for column in batch.columns
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    )
    return not any(pc.any(pc.match_substring_regex(c, _NEEDS_QUOTES)).as_py() for c in strings)


def _csv_text(rows: Iterable[Iterable[object]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _ndjson(batches: pa.RecordBatchReader, path: Path) -> int:
    """Snapshot rows (strings and integers) as DuckDB's ``to_json`` writes them: compact,
    in column order, ``/`` and non-ASCII characters as they are."""
    written = 0
    with path.open("wb") as out:
        for batch in batches:
            out.write(b"".join(orjson.dumps(row) + b"\n" for row in batch.to_pylist()))
            written += batch.num_rows
    return written
